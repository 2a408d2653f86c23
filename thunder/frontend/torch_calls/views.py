"""Views while tracing: results of view ops (``x[0]``, ``x.view(...)``, ``x.t()``) that alias
their base in eager, so an in-place write into one reaches the base and every other view of it
(``thunder/frontend/torch_calls/inplace.py``).

Whether eager's ``reshape`` or ``contiguous()`` gives a view or a copy depends on the tensor's
layout: an input's is the caller's (the prologue checks the strides it was decided on), a chain
of views of one is replayed on meta tensors, and a computed tensor is taken as contiguous, which
is a guess while an input is laid out otherwise (channels_last).
"""

from __future__ import annotations

import dataclasses

import torch

from thunder.core.proxies import TensorProxy
from thunder.core.pytree import tree_flatten, tree_unflatten
from thunder.core.subclass import is_plain_tensor
from thunder.core.symbolic import contiguous_strides, has_symbols, hints, specialize
from thunder.core.versions import Versions


@dataclasses.dataclass
class View:
    """``value`` is output ``index`` of ``op(base, *args, **kwargs)``, a view of ``base``."""

    base: TensorProxy
    op: object
    args: tuple
    kwargs: dict
    index: int
    value: TensorProxy
    func: object = None  # the torch callable that made it (replayed on meta tensors for its layout)


class Views:
    """The views of one trace, and the eager layouts decided on."""

    def __init__(self, inputs, versions: Versions):
        self.inputs = inputs
        self.versions = versions
        self.by_name: dict[str, View] = {}  # by the view value's name
        self.of_base: dict[int, list[View]] = {}  # by the id of the base value they were computed from
        self.layout_reads: dict[str, tuple] = {}  # input name -> (proxy, strides) views were decided on
        # results of view-or-copy decisions made on a guessed layout (``layout_guessed``): no writes
        self.guessed_layouts: set[str] = set()
        self._permuted_inputs = (0, False)  # (inputs seen, whether one is laid out permuted)
        # a value the program laid out otherwise (``x.contiguous(memory_format=...)``,
        # frontend/torch_calls/handlers.py): as a permuted input, eager's layouts then follow it
        self.permuted_made = False

    def add(self, view: View) -> None:
        self.by_name[view.value.name] = view
        self.versions.view(view.value.name, view.base.name)
        self.of_base.setdefault(id(view.base), []).append(view)

    def chain(self, p: TensorProxy):
        """The views from ``p`` down to the value it is a chain of views of, ``p``'s own first
        (none for a value that is no view)."""
        while (view := self.by_name.get(p.name)) is not None and view.value is p:
            yield view
            p = view.base

    def meta_of(self, p: TensorProxy, *, pin: bool = True):
        """A meta tensor laid out as eager's tensor for ``p``: its chain of views replayed
        from an input with the caller's strides (computed tensors are contiguous); None when a
        view in the chain cannot be replayed.

        With symbolic sizes the chain is replayed at the call's sizes; a chain of contiguous
        views is laid out alike at every size, another chain's layout may not be: its sizes are
        pinned to this call's (``pin``), or the meta tensor says so (``sized_layout``: a
        decision taken on it holds at these sizes only)."""
        chain = list(self.chain(p))
        if any(view.func is None for view in chain):
            return None
        p = chain[-1].base if chain else p
        src = self.inputs.sources.get(p.name)
        real = src[2] if src is not None else None
        symbolic = has_symbols(p.meta_shape) or any(has_symbols((v.args, v.kwargs)) for v in chain)
        if isinstance(real, torch.Tensor) and is_plain_tensor(real):  # an input: as the caller laid it out
            m = torch.empty_strided(real.shape, real.stride(), device="meta")
            strides = real.stride()
            if has_symbols(p.meta_shape):  # a contiguous input's strides follow its sizes
                if real.is_contiguous():
                    strides = contiguous_strides(p.meta_shape)
                else:
                    specialize(p.meta_shape)
            self.layout_reads[p.name] = (p, strides)  # the prologue checks the strides
        else:
            m = torch.empty(hints(p.meta_shape), device="meta")
        dense = m.is_contiguous()
        try:
            for view in reversed(chain):
                m = tree_flatten(view.func(m, *hints(view.args), **hints(view.kwargs)))[0][view.index]
                dense = dense and m.is_contiguous()
        except Exception:  # arguments that are proxies (reshape_as(other)): not replayable
            return None
        if symbolic and not dense:
            if pin:  # the entry holds at these sizes only
                specialize(p.meta_shape)
                for view in chain:
                    specialize((view.args, view.kwargs))
            else:
                m.sized_layout = True
        return m

    def root_of(self, p: TensorProxy) -> str:
        """The name of the value ``p`` is (a chain of views of): two values with one root
        may share memory."""
        for view in self.chain(p):
            p = view.base
        return p.name

    def is_input_view(self, p: TensorProxy) -> bool:
        """``p`` is an input or (a chain of views of) one: its eager layout is the caller's."""
        for view in self.chain(p):
            p = view.base
        return p.name in self.inputs.sources

    def layout_guessed(self, p: TensorProxy) -> bool:
        """Whether deciding on ``p``'s eager layout would be a guess: ``p`` is (a view of) a
        computed tensor, taken as contiguous, while a tensor input is laid out otherwise
        (channels_last), or the program laid a value out so: eager's elementwise ops keep such a
        layout, which this table of views does not track."""
        if self.is_input_view(p):
            return False
        if self.permuted_made:
            return True
        sources = self.inputs.sources
        if self._permuted_inputs[0] != len(sources):  # (inputs are added while tracing)
            found = any(
                isinstance(real, torch.Tensor) and _dense_permuted(real) for _, _, real in sources.values()
            )
            self._permuted_inputs = (len(sources), found)
        return self._permuted_inputs[1]

    def is_contiguous(self, p: TensorProxy) -> bool:
        m = self.meta_of(p)
        return m is None or m.is_contiguous()

    def contiguity(self, p: TensorProxy) -> tuple[bool, bool]:
        """Whether eager's tensor for ``p`` is contiguous, and whether that was decided on this
        call's symbolic sizes (it may differ at others: ``meta_of``'s ``sized_layout``)."""
        m = self.meta_of(p, pin=False)
        if m is None:
            return True, False
        return m.is_contiguous(), getattr(m, "sized_layout", False)


def _dense_permuted(t: torch.Tensor) -> bool:
    """``t`` fills its memory without gaps in another dimension order than contiguous
    (channels_last, a transposed matrix): eager's elementwise ops give results laid out so."""
    if not is_plain_tensor(t) or t.is_contiguous():
        return False
    dims = sorted((st, n) for n, st in zip(t.shape, t.stride()) if n != 1)
    expected = 1
    for st, n in dims:
        if st != expected:
            return False
        expected *= n
    return True


def replay(chain: list, m: torch.Tensor) -> torch.Tensor | None:
    """The chain of views (bottom first) taken eagerly of the meta tensor ``m`` (tensor
    arguments as meta tensors of their shape); None when a view cannot be replayed."""

    def meta(a):
        return torch.empty(a.meta_shape, device="meta") if isinstance(a, TensorProxy) else a

    try:
        for link in reversed(chain):
            leaves, spec = tree_flatten((link.args, link.kwargs))
            args, kwargs = tree_unflatten([meta(a) for a in leaves], spec)
            m = tree_flatten(link.func(m, *args, **kwargs))[0][link.index]
    except Exception:  # a view made without a torch callable (none recorded)
        return None
    return m
