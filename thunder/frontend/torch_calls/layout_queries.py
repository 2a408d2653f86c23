"""Layout queries while tracing: ``x.stride()``, ``x.is_contiguous(memory_format=...)``,
``x.storage_offset()`` get eager's answers, and ``x.as_strided(...)``, which reads memory, is
checked against them.

A proxy has no memory; eager's layout of a value is found by replaying, on meta tensors, the
torch calls that made it (``Layouts.made``, recorded as the mode handles each call), from
meta tensors laid out as the caller's inputs are. The prologue checks what the answer rested
on: the strides of every input the replay started from and, for ``storage_offset()``, their
offsets; a later call with other strides misses the cache and traces again. A value whose
making cannot be replayed is refused with the op and the line rather than answered with a guess.

One kind of value is laid out by assumption (``Layouts.assume``): the cotangent a custom
``autograd.Function``'s backward is traced with, before the gradients that reach it exist. Its
layout is the autograd engine's choice, not the program's (eager's engine passes a contiguous
tensor after ``mean()`` or a matmul, an expanded one after ``sum()``); thunder's backward takes the
engine's place and passes a contiguous one, so answers resting on it need no check and the
backward's values are eager's on a contiguous gradient. A read of memory (``as_strided``, and
so a result that would differ from eager's run after ``sum()``) resting on it is refused.
"""

from __future__ import annotations

import torch

from thunder.core.errors import UnsupportedOpError, at, describe
from thunder.core.proxies import TensorProxy, proxies_in
from thunder.core.pytree import tree_flatten, tree_leaves, tree_unflatten
from thunder.core.source import user_location
from thunder.core.subclass import is_plain_tensor
from thunder.core.symbolic import has_symbols, is_symbolic
from thunder.ops.langs import TORCH_TO_THUNDER


class Layouts:
    """How each value of one trace was made, and the meta tensors replayed from it."""

    def __init__(self, inputs):
        self.inputs = inputs
        self.made: dict[str, tuple] = {}  # value name -> (torch callable, args, kwargs, output index)
        self.metas: dict[str, torch.Tensor] = {}  # value name -> its eager layout as a meta tensor
        self.roots: dict[str, set[str]] = {}  # value name -> the inputs its layout rests on
        self.offset_reads: dict[str, tuple] = {}  # input name -> (proxy, offset) a storage_offset() read
        self.assumed: set[str] = set()  # values laid out by assumption (``assume``)

    def assume(self, p: TensorProxy) -> None:
        """``p``, which nothing in the trace made, is taken as contiguous (see the docstring); at
        symbolic sizes it is not (its strides would rest on sizes nothing checks)."""
        if has_symbols(p.meta_shape):
            return
        with torch._C.DisableTorchFunction():  # (called while tracing: not a traced op)
            self.metas[p.name] = torch.empty(p.meta_shape, dtype=p.meta_dtype, device="meta")
        self.roots[p.name] = {p.name}
        self.assumed.add(p.name)

    def record(self, func, args, kwargs, result) -> None:
        """``result`` came from ``func(*args, **kwargs)`` (arguments as current proxies). A
        result that is one of the arguments (``x.reshape(x.shape)``: thunder returns ``x``) was
        made before, by what made that argument."""
        given = {id(a) for a in proxies_in((args, kwargs))}
        for i, leaf in enumerate(tree_leaves(result)):
            if (
                isinstance(leaf, TensorProxy)
                and id(leaf) not in given
                and leaf.name not in self.made
                and leaf.name not in self.inputs.sources
            ):
                self.made[leaf.name] = (func, args, kwargs, i)

    def meta(self, p: TensorProxy, *, symbols: bool = True) -> torch.Tensor | None:
        """A meta tensor laid out as eager's value for ``p``; None when it cannot be replayed
        (with ``symbols`` False, also where a call to replay takes a symbolic size: replaying it
        would pin the symbol to this call's value)."""
        stack = [p]
        waiting: set[str] = set()  # values whose arguments are being replayed first (a path)
        while stack:
            q = stack[-1]
            if q.name in self.metas:
                stack.pop()
                continue
            inner = self.inputs.inner_layouts.get(q.name)
            if inner is not None:  # an inner tensor of a subclass input (the prologue checks its strides)
                self.metas[q.name] = inner
                self.roots[q.name] = {q.name}
                stack.pop()
                continue
            src = self.inputs.sources.get(q.name)
            if src is not None:
                real = src[2]
                if not (isinstance(real, torch.Tensor) and is_plain_tensor(real)):
                    return None
                self.metas[q.name] = torch.empty(0, dtype=real.dtype, device="meta").as_strided(
                    real.shape, real.stride(), real.storage_offset()
                )
                self.roots[q.name] = {q.name}
                stack.pop()
                continue
            how = self.made.get(q.name)
            if how is None:
                return None
            func, args, kwargs, index = how
            missing = [
                a
                for a in proxies_in((args, kwargs))
                if isinstance(a, TensorProxy) and a.name not in self.metas
            ]
            if missing:
                # an argument that waits for this value is a cycle (not replayable); one that
                # is merely pending (``x * x.abs().max()`` reaches ``x`` twice) is replayed first
                if any(a.name in waiting for a in missing):
                    return None
                waiting.add(q.name)
                stack.extend(missing)
                continue
            waiting.discard(q.name)
            leaves, spec = tree_flatten((args, kwargs))
            if not symbols and any(is_symbolic(v) for v in leaves if not isinstance(v, TensorProxy)):
                return None
            a, k = tree_unflatten(
                [self.metas[v.name] if isinstance(v, TensorProxy) else v for v in leaves], spec
            )
            try:
                with torch._C.DisableTorchFunction():
                    out = tree_flatten(func(*a, **k))[0][index]
            except Exception:
                return None
            if not isinstance(out, torch.Tensor):
                return None
            self.metas[q.name] = out
            self.roots[q.name] = set().union(
                *(self.roots[v.name] for v in leaves if isinstance(v, TensorProxy))
            )
            stack.pop()
        return self.metas[p.name]


def layout_query(mode, func, args, kwargs):
    """``x.stride()``, ``x.is_contiguous(...)``, ``x.storage_offset()`` as eager answers them;
    the inputs the answer rests on are checked by the prologue."""
    state = mode.state
    p = args[0] if args else None
    if not isinstance(p, TensorProxy):
        return func(*args, **kwargs)
    m = state.layouts.meta(state.resolve(p))
    if m is None:
        raise UnsupportedOpError(
            f"thunder: {describe(func)} on {p.name}: its layout in eager cannot be worked out while tracing "
            "(it was made by an op that cannot be replayed on meta tensors); not supported"
            + at(user_location())
        )
    rests_on_inputs(state, state.resolve(p), offset=func is torch.Tensor.storage_offset)
    return func(m, *args[1:], **kwargs)


def rests_on_inputs(state, p: TensorProxy, *, offset: bool = False) -> None:
    """An answer was given from eager's layout of ``p`` (``Layouts.meta``): the prologue checks
    the strides (and, with ``offset``, the storage offsets) of the inputs it was replayed from."""
    for name in state.layouts.roots[p.name]:
        if name in state.layouts.assumed:  # (no input to check: see ``Layouts.assume``)
            continue
        if name in state.inputs.inner_layouts:  # (its strides are checked already; not its offset)
            if offset:
                raise UnsupportedOpError(
                    f"thunder: the storage offset of {p.name}, made from {name}, an inner tensor of a tensor "
                    "subclass input, is not followed by thunder's checks; not supported" + at(user_location())
                )
            continue
        proxy, _, real = state.inputs.sources[name]
        state.views.layout_reads[name] = (proxy, real.stride())
        if offset:
            state.layouts.offset_reads[name] = (proxy, real.storage_offset())


def check_memory_read(m: torch.Tensor | None, storage_offset, what: str, where: str) -> None:
    """A view reading memory (``as_strided``) of a tensor laid out as ``m`` (eager's layout; None
    when unknown): thunder gathers it from the tensor's elements in order, which is its memory
    where eager's tensor is contiguous (and, for a given ``storage_offset``, starts its storage)."""
    if m is None:
        reason = "its layout in eager cannot be worked out while tracing"
    elif not m.is_contiguous():
        reason = f"it is not contiguous in eager (strides {tuple(m.stride())})"
    elif storage_offset is not None and m.storage_offset():
        reason = f"a storage_offset is given and it does not start its storage (offset {m.storage_offset()})"
    else:
        return
    raise UnsupportedOpError(
        f"thunder: {what} reads a tensor's memory, which thunder does not track: it is supported where the "
        f"memory is the tensor's elements in order; here {reason}; .contiguous() it first" + where
    )


def as_strided(mode, func, args, kwargs):
    """``x.as_strided(size, stride, storage_offset)``: checked against eager's layout of ``x``
    (``check_memory_read``), whose inputs the prologue checks."""
    state = mode.state
    p = args[0] if args else kwargs.get("input", kwargs.get("self"))  # (operands by keyword)
    if isinstance(p, TensorProxy):
        storage_offset = args[3] if len(args) > 3 else kwargs.get("storage_offset")
        m = state.layouts.meta(state.resolve(p))
        assumed = m is not None and sorted(state.layouts.roots[state.resolve(p).name] & state.layouts.assumed)
        if assumed:
            raise UnsupportedOpError(
                f"thunder: {describe(func)} reads the memory of {p.name}, which rests on {assumed[0]}, the "
                "gradient reaching a custom torch.autograd.Function's backward: its layout in eager depends on "
                "the ops after the Function, which thunder does not know while tracing; not supported"
                + at(user_location())
            )
        check_memory_read(m, storage_offset, describe(func), at(user_location()))
        rests_on_inputs(state, state.resolve(p), offset=storage_offset is not None)
    return mode._thunder_op(func, TORCH_TO_THUNDER[func], args, kwargs)
