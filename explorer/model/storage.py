"""Whether a line of a trace makes new storage or shares an input's, for the memory model
(``explorer/model/memory.py``): what each line does to memory (``classify``: frees, writes in
place, is a view or another shape op, is elementwise, makes new tensors), and the layouts torch
gives values, learnt by running shape ops on ``meta`` tensors with the strides their inputs have
(``MetaViews``: a ``reshape`` of a transposed tensor copies; an elementwise result takes its
input's order)."""

from __future__ import annotations

import torch

from thunder.core.proxies import TensorProxy, proxies_in
from thunder.core.symbolic import hints
from thunder.core.tags import Tag
from thunder.executors.registry import find_executor


def _contiguous(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(int(s), 1)
    return tuple(reversed(strides))


PLAIN, DEL, INPLACE, VIEW, SHAPE, ELEMENTWISE = range(6)


def classify(b) -> int:
    """What a line does to memory: frees (a ``del``), writes into its input, is a view (or
    another shape op, whose outputs may alias its input), or makes new tensors."""
    if Tag.DEL in b.sym.tags or Tag.DEL in b.tags:
        return DEL
    if _stands_for(b, _INPLACE):
        return INPLACE
    if _stands_for(b, _VIEW):
        return VIEW
    if _stands_for(b, _SHAPE):
        return SHAPE
    return ELEMENTWISE if _stands_for(b, _ELEMENTWISE) else PLAIN


def _stands_for(b, tags: frozenset) -> bool:
    """``b``'s symbol, or the one op it stands for (its only subsymbol, and so on), carries one
    of ``tags``."""
    while True:
        if not (b.sym.tags | b.tags).isdisjoint(tags):
            return True
        if len(b.subsymbols) != 1:
            return False
        b = b.subsymbols[0]


_INPLACE, _VIEW = frozenset({Tag.INPLACE}), frozenset({Tag.VIEW})
_SHAPE, _ELEMENTWISE = frozenset({Tag.SHAPE, Tag.VIEW}), frozenset({Tag.ELEMENTWISE})


class Kinds(dict):
    """``classify`` per (symbol, the symbol of its only subsymbol): tags are read once per op,
    not once per line (reading a tag costs a Python-level hash: seconds on 80,000 lines)."""

    def of(self, b) -> int:
        if b.tags:
            return classify(b)
        subs = b.subsymbols
        key = (id(b.sym), id(subs[0].sym) if len(subs) == 1 and not subs[0].tags else len(subs))
        k = self.get(key)
        if k is None:
            k = self[key] = classify(b)
        return k


def _dense_like(m) -> tuple[int, ...]:
    """Dense strides for ``m``'s shape in the order of ``m``'s strides (innermost first: the
    smallest stride, a later dimension on ties), as torch lays out an elementwise result."""
    shape, strides = tuple(m.shape), m.stride()
    out, step = [0] * len(shape), 1
    for d in sorted(range(len(shape)), key=lambda d: (strides[d], -d)):
        out[d] = step
        step *= max(int(shape[d]), 1)
    return tuple(out)


class MetaViews:
    """Runs shape ops on meta tensors to learn whether their outputs alias an input.

    name -> meta tensor of every value that went through a shape op, so a chain of views
    keeps torch's own strides (a ``transpose`` then a ``reshape`` copies)."""

    def __init__(self, strides: dict[str, tuple[int, ...]] | None = None):
        self.metas: dict[str, object] = {}
        self.strides = strides or {}  # input name -> its strides (the prologue's checks)
        self.skewed = bool(self.strides)  # a value laid out otherwise than contiguous may be met

    def meta(self, p):
        m = self.metas.get(p.name)
        if m is None:
            shape = hints(tuple(p.meta_shape))
            strides = self.strides.get(p.name)
            if strides is None or len(strides) != len(shape):
                strides = _contiguous(shape)
            m = self.metas[p.name] = torch.empty_strided(shape, strides, dtype=p.meta_dtype, device="meta")
        return m

    def follow(self, b, outs, elementwise: bool) -> None:
        """Record the layout of the new outputs of a line that reads a value laid out otherwise
        (so that a reshape of them later is judged right): an elementwise result takes the
        order of its first input of the same shape (torch's rule; no meta run, a long chain of
        them stays fast), another op is run on meta."""
        if not elementwise:
            self.aliases(b, outs)
            return
        ins = [p for p in proxies_in((b.args, b.kwargs)) if type(p) is TensorProxy]
        for q in outs:
            if type(q) is not TensorProxy:
                continue
            shape = tuple(q.meta_shape)
            src = next((p for p in ins if tuple(p.meta_shape) == shape), None)
            if src is None or (m := self.meta(src)).is_contiguous():
                continue
            self.metas[q.name] = torch.empty_strided(
                hints(shape), _dense_like(m), dtype=q.meta_dtype, device="meta"
            )

    def strided(self, b) -> bool:
        """``b`` reads a value whose layout is known not to be contiguous."""
        if not self.skewed:
            return False
        for p in proxies_in((b.args, b.kwargs)):
            m = self.metas.get(p.name)
            if m is None and p.name in self.strides and type(p) is TensorProxy:
                m = self.meta(p)
            if m is not None and not m.is_contiguous():
                return True
        return False

    def aliases(self, b, outs) -> list[str | None] | None:
        """For each output, the name of the input whose storage it shares (None: a new
        tensor); None when the op cannot be run on meta."""
        impl = getattr(b.sym, "impl", None)
        executor = find_executor(getattr(b.sym, "executor", None))
        if not callable(impl) or executor is None or not executor.runs_on_meta:
            return None
        ins = [p for p in proxies_in((b.args, b.kwargs)) if type(p) is TensorProxy]
        swap = {id(p): self.meta(p) for p in ins}

        def sub(x):
            if id(x) in swap:
                return swap[id(x)]
            if type(x) in (tuple, list):
                return type(x)(sub(v) for v in x)
            if type(x) is dict:
                return {k: sub(v) for k, v in x.items()}
            return x

        try:
            with torch.no_grad():
                result = impl(*sub(b.args), **sub(b.kwargs))
        except Exception:
            return None
        got = [r for r in (result if isinstance(result, (tuple, list)) else (result,))]
        if len(got) != len(outs) or not all(isinstance(r, torch.Tensor) for r in got):
            return None
        storages = {self.meta(p).untyped_storage()._cdata: p.name for p in ins}
        out = []
        for p, r in zip(outs, got):
            self.metas[p.name] = r
            self.skewed = self.skewed or not r.is_contiguous()
            out.append(storages.get(r.untyped_storage()._cdata))
        return out
