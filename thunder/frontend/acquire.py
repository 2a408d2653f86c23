"""Acquisition: run the user's function natively with proxies under ``AcquisitionMode`` and
produce the prologue, computation and epilogue traces.

Nothing of the user's is changed: module parameters and buffers are swapped for proxies
only while tracing and always restored; a failed trace leaves every input as it was.
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager

import torch

from thunder.core.proxies import TensorProxy
from thunder.core.pytree import tree_flatten, tree_unflatten
from thunder.core.symbol import BoundSymbol
from thunder.core.trace import Trace, tracectx
from thunder.frontend.errors import UnsupportedOpError, at
from thunder.frontend.inputs import Inputs, Unpack
from thunder.frontend.mode import AcquisitionMode
from thunder.frontend.outputs import build_epilogue
from thunder.frontend.source import user_location
from thunder.ops import prims


@dataclasses.dataclass
class Acquired:
    prologue: Trace
    computation: Trace
    epilogue: Trace


class Acquisition:
    """The state of one trace: inputs, the rebinding of in-place writes, views."""

    def __init__(self):
        self.computation = Trace("computation", tags=("computation",))
        self.computation.source_finder = lambda: user_location(3)
        self.inputs = Inputs(self.computation)
        self.latest: dict[int, TensorProxy] = {}  # id(proxy) -> its current value after in-place writes
        self.views: dict[str, tuple] = {}  # view proxy name -> (base proxy, index key or None, op name)
        self._keepalive: list = []

    # -- values met in ops ----------------------------------------------------------------
    def resolve(self, x):
        """Current values for the proxies in ``x``; real tensors become captured inputs."""
        leaves, spec = tree_flatten(x)
        changed = False
        for i, v in enumerate(leaves):
            if isinstance(v, torch.Tensor):
                if not isinstance(v, TensorProxy):
                    v = self.capture(v)
                    changed = True
                new = self.latest.get(id(v), v)
                if new is not leaves[i]:
                    leaves[i] = new
                    changed = True
        return tree_unflatten(leaves, spec) if changed else x

    def capture(self, t: torch.Tensor) -> TensorProxy:
        """A real tensor from a closure or a global becomes an input of its own."""
        p = self.inputs.captured.get(id(t))
        if p is None:
            self._keepalive.append(t)
            holder = self.inputs.prologue.add_name(f"captured{len(self.inputs.captured)}")
            self.inputs.prologue.ctx_objects = {**self.inputs.prologue.ctx_objects, holder: t}
            from thunder.core.proxies import AnyProxy

            root = AnyProxy(holder, type(t))
            p = self.inputs.tensor(t, f"c{len(self.inputs.captured)}", Unpack(root, "captured", None))
            self.inputs.captured[id(t)] = p
        return p

    def rebind(self, target, value, op: str):
        """After an in-place op: ``target`` now holds ``value`` (and so does its view base)."""
        if not isinstance(target, TensorProxy):
            raise UnsupportedOpError(f"thunder: {op} on a non-tensor is not supported" + at(user_location()))
        original = target
        current = self.latest.get(id(original), original)
        if isinstance(value, TensorProxy):
            value = self._cast_for_inplace(value, current, op)
        self.latest[id(original)] = value
        self._keepalive.append(original)
        view = self.views.get(current.name) or self.views.get(original.name)
        if view is not None:
            base, key, view_op = view
            if key is None and view_op != "getitem":
                raise UnsupportedOpError(
                    f"thunder: {op} writes into a view made by {view_op}; in-place writes are supported on "
                    "tensors and on views made by indexing (x[i] / x[:, a:b])" + at(user_location())
                )
            from thunder.ops import ltorch

            base_now = self.latest.get(id(base), base)
            self.rebind(base, ltorch.setitem(base_now, key, value), op)
        return original

    def _cast_for_inplace(self, value: TensorProxy, current: TensorProxy, op: str) -> TensorProxy:
        if value.meta_dtype is not current.meta_dtype:
            if not torch.can_cast(value.meta_dtype, current.meta_dtype):
                raise UnsupportedOpError(
                    f"thunder: {op}: the result type {value.meta_dtype} cannot be cast to the tensor's "
                    f"{current.meta_dtype}" + at(user_location())
                )
            value = prims.convert_element_type(value, current.meta_dtype)
        if value.meta_shape != current.meta_shape:
            from thunder.ops import ltorch

            value = ltorch.expand(value, current.meta_shape)
        return value

    def copy_value(self, dst, src):
        """The value ``dst`` holds after ``dst.copy_(src)``."""
        if not isinstance(src, torch.Tensor):
            src = prims.full(dst.meta_shape, src, dtype=dst.meta_dtype, device=dst.meta_device)
        if src.meta_device != dst.meta_device:
            src = prims.device_put(src, dst.meta_device)
        return src

    # -- modules --------------------------------------------------------------------------
    @contextmanager
    def module_proxies(self, module: torch.nn.Module):
        """Swap ``module``'s parameters and buffers for proxies; always restore them."""
        from thunder.core.proxies import AnyProxy

        inputs = self.inputs
        root = AnyProxy(inputs.prologue.add_name("module"), type(module))
        inputs.module_proxy = root
        inputs.prologue.ctx_objects = {**inputs.prologue.ctx_objects, root.name: module}
        saved = []
        made: dict[int, TensorProxy] = {}
        holders = {"": root}
        try:
            for path, mod in module.named_modules(remove_duplicate=False):
                holder = holders.get(path)
                if holder is None:
                    parent_path, _, name = path.rpartition(".")
                    holder = AnyProxy(inputs.computation.add_name("m_" + path.replace(".", "_")), type(mod))
                    inputs.prologue.names.add(holder.name)
                    inputs.sources[holder.name] = (holder, Unpack(holders[parent_path], "submodule", name), mod)
                    holders[path] = holder
                for kind, table in (("param", mod._parameters), ("buffer", mod._buffers)):
                    for name, t in list(table.items()):
                        if t is None:
                            continue
                        p = made.get(id(t))
                        if p is None:
                            full = f"{path}.{name}" if path else name
                            p = inputs.tensor(t, "t_" + full.replace(".", "_"), Unpack(holder, kind, name))
                            made[id(t)] = p
                        saved.append((table, name, t))
                        table[name] = p
            yield root
        finally:
            for table, name, t in reversed(saved):
                table[name] = t


@contextmanager
def _compiling_flag():
    """Library code (transformers' masking) takes its traceable path while this is set."""
    compiler = getattr(torch, "compiler", None)
    has = compiler is not None and hasattr(compiler, "_is_compiling_flag")
    old = compiler._is_compiling_flag if has else None
    if has:
        compiler._is_compiling_flag = True
    try:
        yield
    finally:
        if has:
            compiler._is_compiling_flag = old


def acquire(fn, args: tuple, kwargs: dict, *, module: torch.nn.Module | None = None) -> Acquired:
    """Trace ``fn(*args, **kwargs)`` (``module``: its parameters and buffers become inputs)."""
    state = Acquisition()
    comp = state.computation
    with tracectx(comp), _compiling_flag():
        pargs, pkwargs = state.inputs.bind_arguments(
            module.forward if module is not None else fn, args, kwargs
        )
        if module is not None:
            with state.module_proxies(module), AcquisitionMode(state):
                result = fn(*pargs, **pkwargs)
        else:
            with AcquisitionMode(state):
                result = fn(*pargs, **pkwargs)
        result = state.resolve(result)
        _write_back_inputs(state)
    epilogue, comp_outputs, epilogue_inputs = build_epilogue(result, state)
    comp.output = tuple(comp_outputs)
    used = _used_inputs(comp, state)
    comp.args = used
    prologue = state.inputs.build_prologue(used, epilogue_inputs)
    return Acquired(prologue, comp, epilogue)


def _write_back_inputs(state: Acquisition) -> None:
    """In-place writes into input tensors reach the user's tensors: ``prims.copy_(t3, x)``."""
    for p in state.inputs.tensor_inputs:
        new = state.latest.get(id(p))
        if new is not None and new is not p:
            state.computation.add_bsym(
                BoundSymbol(prims.copy_, (new, p), {}, None, source=None, tags=frozenset({"inplace", "writeback"}))
            )


def _used_inputs(comp: Trace, state: Acquisition) -> list[TensorProxy]:
    names: set[str] = set()
    for bsym in comp.bound_symbols:
        names.update(p.name for p in bsym.flat_proxy_args)
    names.update(p.name for p in tree_flatten(comp.output)[0] if isinstance(p, TensorProxy))
    return [p for p in state.inputs.tensor_inputs if p.name in names]
