"""Inputs: give every input value a proxy named after its provenance, and build the
prologue that unpacks and checks it on each call.

``fn(x, (a, b), n=2)`` gives proxies ``x``, ``args_1_0``... named by the parameter path;
Python values are specialised (the prologue checks them: ``check_literal(n, 2)``).
Module parameters and buffers are unpacked by their module path
(``t_fc1_weight = m_fc1._parameters['weight']``).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import torch

from thunder.core.proxies import AnyProxy, NumberProxy, TensorProxy
from thunder.core.symbol import BoundSymbol
from thunder.core.trace import Trace, sanitize_name
from thunder.frontend.errors import UnsupportedValueError
from thunder.ops import python as pyops

_LITERAL_TYPES = (int, float, bool, str, complex, type(None), torch.dtype, torch.device, type(Ellipsis))


@dataclasses.dataclass
class Unpack:
    """How one value is reached: ``kind`` (item, attr, param, buffer, submodule) of ``parent``."""

    parent: Any  # the parent's proxy (AnyProxy or the root proxies ``args``/``kwargs``)
    kind: str
    key: Any


_UNPACK_SYMS = {
    "item": pyops.unpack_item,
    "attr": pyops.unpack_attr,
    "param": pyops.unpack_param,
    "buffer": pyops.unpack_buffer,
    "submodule": pyops.unpack_submodule,
    "captured": pyops.unpack_captured,
}


class Inputs:
    """Collects input proxies with their provenance while the computation is traced."""

    def __init__(self, computation: Trace):
        self.computation = computation
        self.prologue = Trace("prologue", tags=("prologue",))
        self.args_proxy = AnyProxy(self.prologue.add_name("args"), tuple)
        self.kwargs_proxy = AnyProxy(self.prologue.add_name("kwargs"), dict)
        # what is known of each proxy: name -> (proxy, Unpack, real value)
        self.sources: dict[str, tuple[Any, Unpack, Any]] = {}
        self.checks: list[BoundSymbol] = []  # checks on containers, made eagerly
        self.tensor_inputs: list[TensorProxy] = []  # every tensor proxy made for an input
        self.captured: dict[int, TensorProxy] = {}
        self.module_proxy: AnyProxy | None = None

    # -- names ----------------------------------------------------------------------------
    def _name(self, path: str, prefix: str) -> str:
        name = sanitize_name(path) if path else prefix
        if prefix == "t" and path and not path[0].isalpha():
            name = "t" + name
        name = self.computation.add_name(name)
        self.prologue.names.add(name)
        return name

    # -- tensors and values ---------------------------------------------------------------
    def tensor(self, t: torch.Tensor, path: str, unpack: Unpack) -> TensorProxy:
        p = TensorProxy(self._name(path, "t"), tuple(t.shape), t.dtype, t.device, t.requires_grad)
        self.sources[p.name] = (p, unpack, t)
        self.tensor_inputs.append(p)
        return p

    def value(self, v, path: str, unpack: Unpack, depth: int = 0):
        """The value user code sees for input ``v`` (proxies for tensors, containers rebuilt)."""
        if isinstance(v, torch.Tensor):
            if type(v) is not torch.Tensor and not isinstance(v, torch.nn.Parameter):
                raise UnsupportedValueError(
                    f"thunder: the input {path or 'argument'} is a {type(v).__qualname__}, a tensor subclass; "
                    "tensor subclasses are not supported yet"
                )
            return self.tensor(v, path, unpack)
        if isinstance(v, _LITERAL_TYPES):
            p = NumberProxy(self._name(path or "i", "i"), v) if isinstance(v, (int, float)) else None
            holder = p or AnyProxy(self._name(path or "p", "p"), type(v))
            self.sources[holder.name] = (holder, unpack, v)
            self.checks.append(BoundSymbol(pyops.check_literal, (holder, v), {}, None))
            return v
        if type(v) in (tuple, list) or (isinstance(v, tuple) and hasattr(type(v), "_fields")):
            holder = self._container(v, path, unpack)
            self.checks.append(BoundSymbol(pyops.check_type, (holder, type(v)), {}, None))
            self.checks.append(BoundSymbol(pyops.check_len, (holder, len(v)), {}, None))
            items = [self.value(x, f"{path}_{i}", Unpack(holder, "item", i), depth + 1) for i, x in enumerate(v)]
            return type(v)(*items) if hasattr(type(v), "_fields") else type(v)(items)
        if type(v) is dict:
            holder = self._container(v, path, unpack)
            self.checks.append(BoundSymbol(pyops.check_type, (holder, dict), {}, None))
            self.checks.append(BoundSymbol(pyops.check_keys, (holder, tuple(v.keys())), {}, None))
            return {k: self.value(x, f"{path}_{k}", Unpack(holder, "item", k), depth + 1) for k, x in v.items()}
        return self.object(v, path, unpack)

    def object(self, v, path: str, unpack: Unpack):
        """Any other object: checked by identity; extended by object wrappers."""
        raise UnsupportedValueError(
            f"thunder: the input {path or 'argument'} has type {type(v).__qualname__}, which is not supported "
            "(supported: tensors, numbers, strings, dtypes, devices, None, and tuples, lists and dicts of them)"
        )

    def _container(self, v, path: str, unpack: Unpack) -> AnyProxy:
        holder = AnyProxy(self._name(path or "p", "p"), type(v))
        self.sources[holder.name] = (holder, unpack, v)
        return holder

    # -- the prologue ---------------------------------------------------------------------
    def bind_arguments(self, fn, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """Proxies for ``fn(*args, **kwargs)``, named after ``fn``'s parameters."""
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):  # a builtin or C callable: no names to use
            sig = None
        if sig is not None:
            try:
                sig.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"{getattr(fn, '__qualname__', fn)}(): {e}") from None
        names = _positional_names(sig, len(args)) if sig is not None else [f"args_{i}" for i in range(len(args))]
        self.checks.append(BoundSymbol(pyops.check_len, (self.args_proxy, len(args)), {}, None))
        self.checks.append(BoundSymbol(pyops.check_keys, (self.kwargs_proxy, tuple(kwargs)), {}, None))
        pargs = tuple(
            self.value(a, names[i], Unpack(self.args_proxy, "item", i)) for i, a in enumerate(args)
        )
        pkwargs = {k: self.value(v, k, Unpack(self.kwargs_proxy, "item", k)) for k, v in kwargs.items()}
        return pargs, pkwargs

    def build_prologue(self, used: list[TensorProxy], epilogue_inputs: list) -> Trace:
        """Unpack and check what the computation uses; return ``(computation args, epilogue args)``."""
        pro = self.prologue
        pro.args = [self.args_proxy, self.kwargs_proxy]
        pro.signature = "*args, **kwargs"
        emitted: set[str] = {self.args_proxy.name, self.kwargs_proxy.name}
        checks_by_holder: dict[str, list[BoundSymbol]] = {}
        for c in self.checks:
            checks_by_holder.setdefault(c.args[0].name, []).append(c)

        def emit(proxy):
            if proxy.name in emitted:
                return
            src = self.sources.get(proxy.name)
            if src is None:
                return
            _, unpack, real = src
            emit(unpack.parent)
            emitted.add(proxy.name)
            pro.bound_symbols.append(
                BoundSymbol(
                    _UNPACK_SYMS[unpack.kind],
                    (unpack.parent,) if unpack.kind == "captured" else (unpack.parent, unpack.key),
                    {},
                    proxy,
                    tags=frozenset({"unpack"}),
                )
            )
            for c in checks_by_holder.get(proxy.name, ()):
                pro.bound_symbols.append(c)
            if isinstance(proxy, TensorProxy):
                pro.bound_symbols.append(_tensor_check(proxy))

        for c in checks_by_holder.get(self.args_proxy.name, []) + checks_by_holder.get(self.kwargs_proxy.name, []):
            pro.bound_symbols.append(c)
        # every user argument is checked (a call with other values must miss the cache);
        # module state and captured tensors only when the computation uses them.
        for name, (proxy, unpack, _) in self.sources.items():
            if _is_argument_path(unpack, self) and not isinstance(proxy, TensorProxy):
                emit(proxy)
        for p in used:
            emit(p)
        for p in epilogue_inputs:
            emit(p)
        pro.bound_symbols.append(BoundSymbol(pyops.check_grad_enabled, (torch.is_grad_enabled(),), {}, None))
        pro.output = (tuple(used), tuple(epilogue_inputs))
        return pro


def _is_argument_path(unpack: Unpack, inputs: Inputs) -> bool:
    while True:
        parent = unpack.parent
        if parent is inputs.args_proxy or parent is inputs.kwargs_proxy:
            return True
        src = inputs.sources.get(parent.name)
        if src is None:
            return False
        unpack = src[1]


def _tensor_check(p: TensorProxy) -> BoundSymbol:
    return BoundSymbol(
        pyops.check_tensor,
        (p, p.meta_shape, p.meta_dtype, p.meta_device, p.meta_requires_grad),
        {},
        None,
        tags=frozenset({"prologue_check"}),
    )


def _positional_names(sig: inspect.Signature, n: int) -> list[str]:
    names = []
    for param in sig.parameters.values():
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            names.append(param.name)
        elif param.kind == param.VAR_POSITIONAL:
            names += [f"{param.name}_{i}" for i in range(n - len(names))]
            break
    return (names + [f"args_{i}" for i in range(len(names), n)])[:n]
