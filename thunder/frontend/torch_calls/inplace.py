"""In-place writes made functional: ``x.add_(1)``, ``x[0] = 1``, ``F.relu(x, inplace=True)``
are recorded as their out-of-place op, and the written proxy is *rebound* to the result, so
later uses see the new value (``current``). A write into a view reaches its base, and every
other view of that base is taken again from the new value, as they alias it in eager
(``thunder/frontend/torch_calls/views.py``).

Each write is one write of its storage's version counter (``thunder/core/versions.py``), and
eager's autograd rules on writes hold: no write into a leaf that requires grad, and a written
tensor that requires grad stays in the graph.

Writes into tensor-subclass values are made of these too: the subclass's dispatch writes its
inner tensors with in-place aten ops (through views of them: ``thunder/ops/aten/``'s
``VIEW_WRITES``), each rebound here, and the subclass value is then rebound to a value
holding the new inner tensors (``thunder/frontend/subclasses/writes.py``).
"""

from __future__ import annotations

import functools
import math
from contextlib import contextmanager

import torch

from thunder.core.context import current_trace
from thunder.core.errors import UnsupportedOpError, at
from thunder.core.proxies import TensorProxy, proxies_in
from thunder.core.pytree import tree_flatten, tree_leaves
from thunder.core.source import user_location
from thunder.core.versions import Versions
from thunder.frontend.torch_calls.views import View, Views, replay
from thunder.ops import aten, ltorch, prims
from thunder.ops.ltorch.inplace import BROADCASTING_VIEWS, MULTI_OUTPUT_VIEWS, PIECE_WRITES, VIEW_WRITES
from thunder.ops.meta import ShapeError

# how a write into a view reaches its base, for views made by torch-language ops and by aten
# ops (those a subclass's dispatch takes of its inner tensors)
_VIEW_WRITES = {**VIEW_WRITES, **aten.VIEW_WRITES}
_PIECE_WRITES = {**PIECE_WRITES, **aten.PIECE_WRITES}
_MULTI_OUTPUT_VIEWS = MULTI_OUTPUT_VIEWS | aten.MULTI_OUTPUT_VIEWS


class _Write:
    """A write being made (``InplaceWrites.writing``)."""

    changed = True


class InplaceWrites:
    """The rebinding of one trace's in-place writes."""

    def __init__(self, inputs, views: Views, versions: Versions, subclasses):
        self.inputs = inputs
        self.views = views
        self.versions = versions
        self.subclasses = subclasses
        self.latest: dict[int, TensorProxy] = {}  # id(proxy) -> its current value after in-place writes
        self.first_writes: dict[str, tuple] = {}  # proxy name -> (op, source) of its first in-place write
        self.grad_writes: set[str] = set()  # inputs that require grad written under grad mode
        self.op_start: tuple[list, int] | None = None  # where the op being handled began recording
        # a write reaching its base through detach() or .data: eager allows it into a leaf
        # that requires grad (it leaves the history alone)
        self._through_detach = 0
        self._keepalive: list = []  # the proxies rebound: ``latest`` is keyed by their ids
        # every rebinding, in order: (the proxy written, the value it held, its new value)
        self.log: list[tuple] = []

    def current(self, p):
        """What the proxy ``p`` holds now, after every in-place write (follows rebind chains)."""
        p = self.value_of(p)
        if self.subclasses.owner:  # an inner tensor of a subclass value, used by itself
            self.subclasses.expose(p)
        return p

    def value_of(self, p):
        """``current(p)``, without making an inner tensor of a subclass value a value of its own."""
        latest = self.latest
        new = latest.get(id(p))
        while new is not None and new is not p:
            p = new
            new = latest.get(id(p))
        return p

    @contextmanager
    def writing(self, targets: list, op: str):
        """One write of each target's storage made of several rebindings (a subclass value's
        in-place op: its dispatch writes the inner tensors, then the value itself is rebound;
        ``torch._foreach_add_`` writes each tensor of its list). Yields the write: one whose
        ``changed`` the caller sets False changed no value and is not counted."""
        self.versions.begin([self.value_of(t).name for t in targets], op, user_location())
        write = _Write()
        try:
            yield write
        finally:
            if write.changed:
                self.versions.end(self._made_since_op_start())
            else:
                self.versions.cancel()

    def rebind_value(self, target, value) -> None:
        """``target`` (a subclass value) holds ``value`` from now on, by writes already checked
        and counted (into its inner tensors)."""
        current = self.value_of(target)
        if value is current:
            return
        self.latest[id(current)] = value
        if current is not target:
            self.latest[id(target)] = value
        self._keepalive += [target, current]
        self.log.append((target, current, value))
        if self.versions.writing:
            self.versions.bind(value.name, True, current.name)

    def mark_op_start(self) -> None:
        """Called as each torch call begins: what it records is its own (an in-place op's write)."""
        t = current_trace()
        self.op_start = (t.recording, len(t.recording)) if t is not None else None

    def _made_since_op_start(self) -> set[str]:
        if self.op_start is None:
            return set()
        scope, n = self.op_start
        return {p.name for b in scope[n:] for p in proxies_in(b.output)}

    def rebind(self, target, value, op: str):
        """After an in-place op: ``target`` now holds ``value`` (and so does its view base).
        One call is one write of the storage's version counter (``thunder/core/versions.py``)."""
        if self.versions.writing or not isinstance(target, TensorProxy):  # (the write reaching a view's base)
            return self._rebind(target, value, op)
        self.refuse_piece_write(self.current(target), op, self._view_ops(self.current(target)))
        self.versions.begin(self.current(target).name, op, user_location())
        try:
            return self._rebind(target, value, op)
        finally:
            self.versions.end(self._made_since_op_start())

    def _rebind(self, target, value, op: str):
        if not isinstance(target, TensorProxy):
            raise UnsupportedOpError(f"thunder: {op} on a non-tensor is not supported" + at(user_location()))
        original = target
        current = self.current(original)
        if isinstance(value, TensorProxy):
            value = self._as_written(value, current, op)
        if value is current:
            return original
        self._bind(original, current, value, op)
        self._write_through_view(original, current, value, op)
        # views taken of the old value see the write, as they alias it in eager
        self._refresh_views(current, self.current(original))
        return original

    def _as_written(self, value: TensorProxy, current: TensorProxy, op: str) -> TensorProxy:
        """``value`` as the tensor ``current`` holds it after the write: of its dtype and shape,
        and in eager's graph as the write leaves it."""
        value = self._cast_for_inplace(value, current, op)
        if current.meta_requires_grad and not value.meta_requires_grad and torch.is_grad_enabled():
            # eager's in-place op keeps a tensor that requires grad in its graph, with a zero
            # gradient where the new value does not depend on it (``x.eq_(y)``, ``x.fill_(2)``)
            value = ltorch.in_graph_of(value, current)
        elif current.meta_requires_grad and not value.meta_requires_grad:
            # a write under no_grad (``with torch.no_grad(): self.w.clamp_(max=1)``) is not
            # in eager's graph: the tensor stays itself there, and later ops pass their
            # gradient to it unchanged (to the parameter, for a parameter)
            with torch.enable_grad():
                value = ltorch.write_through_detach(current, value)
        return value

    def _bind(self, original: TensorProxy, current: TensorProxy, value, op: str) -> None:
        """``original`` (and ``current``, what it held) now hold ``value``."""
        if not self._through_detach:
            self.refuse_leaf_write(original, op)
        self.latest[id(current)] = value
        self.log.append((original, current, value))
        if isinstance(value, TensorProxy):
            self.versions.bind(
                value.name, value.name in self._made_since_op_start(), self._written_value(current)
            )
        guessed = self.views.guessed_layouts
        if original.name in guessed or current.name in guessed:
            raise UnsupportedOpError(
                f"thunder: {op} writes into {original.name}, the result of a reshape or contiguous() of a "
                "computed tensor while an input is not contiguous (channels_last): whether eager's result is a "
                "view or a copy depends on a layout thunder does not track; .clone() it first, or write into "
                "the tensor itself" + at(user_location())
            )
        self.first_writes.setdefault(original.name, (op, user_location()))
        if current is not original:
            self.latest[id(original)] = value
        self._keepalive += [original, current]

    def _write_through_view(self, original: TensorProxy, current: TensorProxy, value, op: str) -> None:
        """A write into a view reaches its base (and so every other view of that base)."""
        views = self.views.by_name
        view = views.get(current.name) or views.get(original.name)
        if view is None:
            return
        through = self._through_repeats(view, op)
        if through is not None:
            # a write below an expand with repeats: put the value where each element reads
            root, chain = through
            self.rebind(root, self._scatter_through(self.current(root), chain, value), op)
            return
        write = _VIEW_WRITES.get(view.op)
        if view.op in _PIECE_WRITES:
            write = functools.partial(_PIECE_WRITES[view.op], index=view.index)
        if write is None:
            raise UnsupportedOpError(
                f"thunder: {op} writes into a view made by {view.op.name}; in-place writes are supported "
                "on tensors and on views made by indexing, permutations, view/reshape/flatten, unsqueeze, "
                "squeeze, select, narrow, split, chunk, unbind, tensor_split, diagonal and expand"
                + at(user_location())
            )
        self._through_detach += view.op is ltorch.detach
        try:
            self._rebind(
                view.base, write(self.current(view.base), *view.args, value=value, **view.kwargs), op
            )
        except ShapeError as e:  # (a write the view cannot take back to its base: overlapping windows)
            if str(e).startswith("thunder:"):
                raise
            raise ShapeError(
                f"thunder: {op} writes into a view made by {view.op.id}: {e}" + at(user_location())
            ) from None
        finally:
            self._through_detach -= view.op is ltorch.detach

    def _written_value(self, p: TensorProxy) -> str:
        """The name of the value a write into ``p`` writes: ``p``'s, or for an inner tensor of
        a subclass value, the value holding it (at the outermost level)."""
        owner = self.subclasses.owner
        while p.name in owner:
            p = self.value_of(owner[p.name][0])
        return p.name

    def read_for_write(self, p):
        """What an in-place op on ``p`` reads: ``p``, or a copy of it where ``p`` is (a view of)
        an input that requires grad. Eager saves the value before the write for the backward
        (``x.mul_(w)``: ``w``'s gradient needs the old ``x``), but the input itself is written
        after the forward, so the backward must not read it."""
        if not (isinstance(p, TensorProxy) and torch.is_grad_enabled() and p.meta_requires_grad):
            return p
        if not self.views.is_input_view(p):
            return p
        return ltorch.clone(p)

    def _through_repeats(self, view: View, op: str):
        """For a write into ``view.value`` whose chain of views passes an expand with repeats
        (``x[0].expand(2, 3)[1]``): the base of the highest such expand and the views from it
        down to the written one (bottom first); None when the chain has no such expand. A
        written view whose own elements repeat (one memory location twice) is refused, as
        eager refuses add_, copy_ and the like on it."""
        chain, found, link = [], None, view
        while link is not None:
            chain.append(link)
            if link.op in BROADCASTING_VIEWS and math.prod(link.value.meta_shape) > math.prod(
                link.base.meta_shape
            ):
                found = len(chain)
            p = link.base
            link = self.views.by_name.get(p.name)
            link = link if link is not None and link.value is p else None
        if found is None:
            return None
        chain = chain[:found]
        root = chain[-1].base
        written = replay(chain, torch.empty(root.meta_shape, device="meta"))
        if written is None or any(n > 1 and s == 0 for n, s in zip(written.shape, written.stride())):
            made = f"made by expand (shape {root.meta_shape} expanded to {chain[-1].value.meta_shape})"
            raise UnsupportedOpError(
                f"thunder: {op} writes into a view {made if len(chain) == 1 else 'of a view ' + made} in which "
                "more than one element refers to a "
                "single memory location; in-place writes into it are not supported (eager PyTorch refuses "
                "add_, copy_ and the like on it): clone() it first" + at(user_location())
            )
        return root, chain

    def _scatter_through(self, root: TensorProxy, chain: list, value: TensorProxy) -> TensorProxy:
        """``root`` with ``value`` put where the bottom view of ``chain`` reads it: the same views
        taken of the positions ``0 .. n-1`` of ``root`` say where (each at most once)."""
        n = math.prod(root.meta_shape)
        where = ltorch.reshape(
            prims.iota(n, start=0, step=1, dtype=torch.int64, device=root.meta_device), root.meta_shape
        )
        for link in reversed(chain):
            where = tree_flatten(link.op(where, *link.args, **link.kwargs))[0][link.index]
        flat = prims.index_copy(
            ltorch.reshape(root, (n,)), ltorch.reshape(where, (-1,)), 0, ltorch.reshape(value, (-1,))
        )
        return ltorch.reshape(flat, root.meta_shape)

    def refuse_leaf_write(self, p: TensorProxy, op: str) -> None:
        """Eager's autograd rule: no in-place write into a leaf that requires grad (a parameter,
        ``torch.ones(3, requires_grad=True)``) while grad mode is on."""
        src = self.inputs.sources.get(p.name)
        real = src[2] if src is not None else None
        if not (isinstance(real, torch.Tensor) and real.requires_grad and torch.is_grad_enabled()):
            return
        self.grad_writes.add(p.name)  # the prologue checks it is still not a leaf
        if real.is_leaf:
            raise RuntimeError(
                f"thunder: {op} writes into {p.name}: a leaf Variable that requires grad is being used in an "
                "in-place operation (as eager PyTorch says)" + at(user_location())
            )

    def refuse_piece_write(self, p: TensorProxy, op: str, view_ops) -> None:
        """Eager's autograd rule: no in-place write, while grad mode is on, into a view that
        requires grad and is (a view of) one output of a view op returning several views
        (``y.unbind(0)[1].add_(1)``); ``view_ops``: the ``(op, output index)`` of each view
        from ``p`` down to its base."""
        if not (torch.is_grad_enabled() and p.meta_requires_grad):
            return
        for view_op, index in view_ops:
            if view_op in _MULTI_OUTPUT_VIEWS:
                raise RuntimeError(
                    f"thunder: {op} writes into {p.name}, a view made from output {index} of {view_op.id}, a "
                    "function that returns multiple views: such views are not allowed to be modified inplace "
                    "while they require grad (as eager PyTorch says); use an out-of-place op, or clone() the "
                    "view first" + at(user_location())
                )

    def _view_ops(self, p: TensorProxy):
        """The ``(op, output index)`` of each view from ``p`` down to its base."""
        return ((view.op, view.index) for view in self.views.chain(p))

    def _refresh_views(self, old: TensorProxy, new: TensorProxy) -> None:
        """Recompute the views of ``old`` from ``new`` (recursively, for views of views)."""
        for view in self.views.of_base.pop(id(old), ()):
            result = view.op(new, *view.args, **view.kwargs)
            fresh = tree_leaves(result)[view.index]
            stale = self.current(view.value)
            if fresh is stale:
                continue
            self.latest[id(stale)] = fresh
            self._keepalive.append(stale)
            self.views.add(View(new, view.op, view.args, view.kwargs, view.index, fresh, view.func))
            self._refresh_views(stale, fresh)

    def _cast_for_inplace(self, value: TensorProxy, current: TensorProxy, op: str) -> TensorProxy:
        if value.meta_dtype is not current.meta_dtype:
            if not torch.can_cast(value.meta_dtype, current.meta_dtype):
                raise UnsupportedOpError(
                    f"thunder: {op}: the result type {value.meta_dtype} cannot be cast to the tensor's "
                    f"{current.meta_dtype}" + at(user_location())
                )
            value = prims.convert_element_type(value, current.meta_dtype)
        if value.meta_shape != current.meta_shape:
            try:
                value = ltorch.expand(value, current.meta_shape)
            except ShapeError:
                raise ShapeError(
                    f"thunder: {op}: the result's shape {tuple(value.meta_shape)} does not match the shape "
                    f"{tuple(current.meta_shape)} of the tensor written in place (as in eager, an in-place op "
                    "cannot grow its tensor by broadcasting)" + at(user_location())
                ) from None
        return value
