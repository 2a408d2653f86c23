"""The epilogue: build the return value from what the function really returned.

The computation returns only tensors; the epilogue receives them (and input objects that
are returned as they are) and rebuilds the value: tuples, lists, dicts and namedtuples,
dataclasses field by field (``any0 = __main___MyContainer(res=t0, num=1)``), constants
as they are. Anything else is an error that names the type.
"""

from __future__ import annotations

import dataclasses

import torch

from thunder.core.proxies import AnyProxy, TensorProxy
from thunder.core.symbol import BoundSymbol
from thunder.core.trace import Trace, tracectx
from thunder.frontend.errors import UnsupportedValueError
from thunder.ops import python as pyops

_CONSTANTS = (int, float, bool, str, complex, type(None), torch.dtype, torch.device, type(Ellipsis))


def build_epilogue(result, state) -> tuple[Trace, list, list]:
    """(epilogue trace, tensors the computation returns, objects the prologue passes)."""
    epi = Trace("epilogue", tags=("epilogue",))
    epi.names |= state.computation.names
    comp_outputs: list[TensorProxy] = []
    seen: set[str] = set()
    epilogue_inputs: list = []

    def build(v, path: str):
        if isinstance(v, TensorProxy):
            if v.name not in seen:
                seen.add(v.name)
                comp_outputs.append(v)
            return v
        if isinstance(v, _CONSTANTS):
            return v
        t = type(v)
        if t is tuple or t is list:
            return t(build(x, f"{path}[{i}]") for i, x in enumerate(v))
        if isinstance(v, tuple) and hasattr(t, "_fields"):
            return t(*(build(x, f"{path}.{f}") for f, x in zip(t._fields, v)))
        if t is dict:
            return {k: build(x, f"{path}[{k!r}]") for k, x in v.items()}
        obj = state_object(state, v)
        if obj is not None:
            if obj.name not in {p.name for p in epilogue_inputs}:
                epilogue_inputs.append(obj)
            return obj
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return _construct(epi, v, build, path)
        if isinstance(v, torch.Tensor):
            return build(state.resolve(v), path)
        raise UnsupportedValueError(
            f"thunder: the function returned {path or 'a value'} of type {t.__qualname__}, which thunder cannot "
            "rebuild; return tensors, numbers, strings, None, tuples/lists/dicts/namedtuples, dataclasses, "
            "or input objects"
        )

    with tracectx(epi):
        out = build(result, "the result")
    epi.args = comp_outputs + epilogue_inputs
    epi.output = out
    return epi, comp_outputs, epilogue_inputs


def state_object(state, v) -> AnyProxy | None:
    """The proxy of ``v`` if it is an input object (returned as the very same object)."""
    find = getattr(state, "object_proxy", None)
    return find(v) if find is not None else None


def _construct(epi: Trace, v, build, path: str) -> AnyProxy:
    cls = type(v)
    fields = {}
    for f in dataclasses.fields(v):
        if hasattr(v, f.name):
            fields[f.name] = build(getattr(v, f.name), f"{path}.{f.name}")
    out = AnyProxy(epi.make_name("any"), cls)
    init_fields = {f.name for f in dataclasses.fields(v) if f.init}
    if set(fields) <= init_fields:
        bsym = BoundSymbol(pyops.construct, (cls,), fields, out, tags=frozenset({"dataclass_new"}))
    else:
        raise UnsupportedValueError(
            f"thunder: the returned dataclass {cls.__qualname__} has fields that __init__ does not take "
            f"({sorted(set(fields) - init_fields)}); it cannot be rebuilt"
        )
    epi.add_bsym(bsym)
    return out
