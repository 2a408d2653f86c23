"""Custom operators (``torch.library.custom_op`` and other non-aten ``torch.ops`` operators) as
opaque symbols.

A model may call an operator its library registered with torch
(``torch.ops.transformers.grouped_mm_fallback``, a kernel of a CUDA extension). thunder cannot
see inside it, so it is one symbol that the torch executor runs whole, printed as torch names
it (``torch.ops.transformers.grouped_mm_fallback.default(t0, t1, offs=t2)``). Its output
metadata comes from the operator's own fake (meta) implementation, run on fake tensors with the
inputs' shapes, dtypes and devices, as ``torch.compile`` does.

What cannot be traced soundly is an error naming the operator: one that writes into or returns
a view of an input (its schema says so; the trace would lose the write or the alias), one with
no fake implementation, and one whose output shape depends on the input values.
"""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import DynamicOutputShapeException, FakeTensorMode

from thunder.core.proxies import TensorProxy
from thunder.core.pytree import tree_map
from thunder.core.symbol import Symbol, register
from thunder.core.tags import Tag
from thunder.ops.meta import ShapeError, device_of, dtype_of, new_tensor, shape_of
from thunder.ops.vjp import VJPS, custom_op_rule

# OpOverload -> its symbol (made on first use)
CUSTOM: dict = {}


class CustomOpError(ShapeError):
    """A custom operator that cannot be traced (the message names it and says why)."""


def is_custom_op(func) -> bool:
    """``func`` is a ``torch.ops`` operator outside the aten and prims namespaces."""
    if not isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return False
    qualified = func._qualified_op_name if isinstance(func, torch._ops.OpOverloadPacket) else func.name()
    return qualified.split("::", 1)[0] not in ("aten", "prims", "prim")


def overload_of(func) -> torch._ops.OpOverload:
    """The overload a call of ``func`` means (a packet with one overload means that one)."""
    if isinstance(func, torch._ops.OpOverload):
        return func
    names = func.overloads()
    if names == ["default"] or len(names) == 1:
        return getattr(func, names[0])
    raise CustomOpError(
        f"torch.ops.{func._qualified_op_name.replace('::', '.')} has overloads {names}: "
        "call one of them (torch.ops.<namespace>.<op>.<overload>)"
    )


def symbol_for(func) -> Symbol:
    """The opaque symbol of the custom operator ``func`` (an OpOverload or its packet)."""
    overload = overload_of(func)
    sym = CUSTOM.get(overload)
    if sym is None:
        sym = CUSTOM[overload] = _declare(overload)
    return sym


def _path(overload) -> str:
    ns, op = overload._schema.name.split("::", 1)
    return f"torch.ops.{ns}.{op}.{overload._overloadname}"


def _declare(overload) -> Symbol:
    path = _path(overload)
    schema = overload._schema
    if schema.is_mutable:
        raise CustomOpError(
            f"the custom operator {path} writes into its input ({schema}); thunder runs operators as functions and would "
            "lose the write: write a version that returns the result"
        )
    if any(r.alias_info is not None for r in schema.returns):
        raise CustomOpError(f"{path} returns a view of its input ({schema}); thunder cannot track that alias")
    module, name = path.rsplit(".", 2)[0], ".".join(path.rsplit(".", 2)[1:])

    def meta(*args, **kwargs):
        return _fake_outputs(path, overload, args, kwargs)

    sym = register(
        Symbol(
            name,
            module,
            meta=meta,
            tags=(Tag.CUSTOM,),
            torch_impl=path,
            doc=f"{path}: {schema} (a custom operator, run whole)",
        )
    )
    VJPS[sym] = custom_op_rule(path)
    return sym


def _fake_outputs(path: str, overload, args: tuple, kwargs: dict):
    inputs = [a for a in (*args, *kwargs.values()) if isinstance(a, TensorProxy)]
    with FakeTensorMode(allow_non_fake_inputs=False) as mode:

        def fake(x):
            if isinstance(x, TensorProxy):
                shape = shape_of(x)
                return torch.empty_strided(
                    shape, _contiguous_strides(shape), dtype=dtype_of(x), device=device_of(x)
                )
            return x

        fargs, fkwargs = tree_map(fake, args), tree_map(fake, kwargs)
        try:
            out = overload(*fargs, **fkwargs)
        except DynamicOutputShapeException as e:
            raise CustomOpError(
                f"the custom operator {path}: its output shape depends on the input values "
                "(data-dependent), which thunder cannot trace"
            ) from e
        except Exception as e:  # the operator's own fake implementation refused, or has none
            raise CustomOpError(
                f"the custom operator {path} has no usable fake (meta) implementation, so thunder cannot know its output "
                f"shapes ({type(e).__name__}: {e}); register one with torch.library.register_fake"
            ) from e
    del mode

    def proxy(t):
        if not isinstance(t, torch.Tensor):
            return t
        if any(not isinstance(s, int) for s in t.shape):
            raise CustomOpError(
                f"the custom operator {path}: its output shape {tuple(t.shape)} depends on the input values "
                "(data-dependent), which thunder cannot trace"
            )
        return new_tensor(tuple(t.shape), t.dtype, t.device, *inputs)

    return tree_map(proxy, out)


def _contiguous_strides(shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(tuple(shape)):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))
