"""Torch calls on tensor-subclass values while tracing: ``__torch_dispatch__`` resolved at
trace time.

When a torch call meets a subclass value, the call itself runs (the acquisition mode is
inactive inside its own handler): torch sends it through the subclass's
``__torch_function__`` to its ``__torch_dispatch__``, whose aten calls on the inner proxies
reach ``TensorProxy.__torch_dispatch__`` and are recorded as aten symbols
(thunder/ops/aten/). The call is one BoundSymbol (its symbol:
thunder/frontend/subclasses/symbols.py)::

    t0 = ScaleTensor.torch.add(x, 1)  # t0: "ScaleTensor[cpu f32[2, 2]] (_x: cpu f32[2, 2], _scale: cpu f32[])"
      # (x__x, x__scale) = prims.flatten_tensor_subclass(x)
      # t1 = aten.mul.Tensor(x__x, x__scale)
      # t2 = aten.add.Tensor(t1, 1)
      # t3 = aten.div.Tensor(t2, x__scale)
      # t0 = prims.unflatten_tensor_subclass(ScaleTensor, {'_x': t3, '_scale': x__scale}, None, (2, 2), (2, 1))

Its outputs are subclass proxies again or plain tensor proxies, with their shapes, so
metadata can drive Python control flow. The flattening pass
(thunder/transforms/flatten_subclasses.py) later keeps only the aten ops. Of a subclass
value holding another, the subclass's dispatch reaches the inner one's.

An in-place aten op the dispatch runs is recorded as the value it writes, which the inner
proxy written holds from then on: a foreach op's (``aten._foreach_add_``) tensor by tensor
where eager's kernel writes them in order, an ``out=`` overload (``aten.add.out``) as its
functional twin's value. In-place ops on subclass values themselves are
thunder/frontend/subclasses/writes.py's.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys

import torch

from thunder.core.context import current_trace, tracectx
from thunder.core.errors import DataDependentError, ThunderError, UnsupportedOpError, at, describe
from thunder.core.proxies import TensorProxy, dispatch_hook
from thunder.core.pytree import tree_flatten, tree_leaves, tree_unflatten
from thunder.core.source import THUNDER_DIR, SourceLocation, user_location
from thunder.core.subclass import SubclassProxy, ViewLink, is_plain_tensor, proxy_of
from thunder.core.tags import Tag
from thunder.frontend.stand_ins.counters import DynamicNumber
from thunder.frontend.subclasses.symbols import (
    _ACTIVE,
    _INPLACE_OPERATORS,
    _OPERATORS,
    _Call,
    subclass_symbol,
)
from thunder.frontend.torch_calls.handlers import (
    _DATA_DEPENDENT,
    _METADATA_METHODS,
    _METADATA_PROPERTIES,
    _PASSTHROUGH,
)
from thunder.frontend.torch_calls.layout_queries import check_memory_read
from thunder.frontend.torch_calls.mode import autocast_on
from thunder.frontend.torch_calls.views import View, replay
from thunder.ops import ltorch, prims
from thunder.ops import python as pyops
from thunder.ops.aten import ADD_AN_OP, ATEN, READS_MEMORY, out_value, written_value
from thunder.ops.langs import TORCH_TO_THUNDER, inplace_base_name, property_name
from thunder.ops.ltorch.inplace import PIECE_WRITES
from thunder.ops.ltorch.shape import PROPERTY_VIEWS, view_dtype
from thunder.ops.meta import ShapeError, differentiable

T = torch.Tensor
A = torch.ops.aten

# aten ops that need a tensor's value (``if t.sum() > 0:`` and ``.item()`` inside a dispatch)
_DATA_DEPENDENT_ATEN = {
    A._local_scalar_dense, A.is_nonzero, A.item, A.equal, A.nonzero, A.masked_select,
    A._unique2, A.unique_consecutive, A.unique_dim,
}  # fmt: skip


class _Unchanged(Exception):
    """The call gave back one of its subclass arguments without running any aten op."""


class SubclassOps:
    """The torch calls on the subclass values of one acquisition, each recorded as one
    BoundSymbol resolved by the dispatch: the methods of ``Subclasses``
    (thunder/frontend/subclasses/instances.py) that trace ops."""

    def handle(self, mode, func, args, kwargs):
        """A torch call with a subclass value among its arguments."""
        name = getattr(func, "__name__", "")
        prop = property_name(func)
        if (prop in _METADATA_PROPERTIES) or (
            prop is None and (func in _METADATA_METHODS or func in _DATA_DEPENDENT or func in _PASSTHROUGH)
        ):
            # metadata comes from the instance; the trace relied on it, so the prologue checks it
            for a in args[:1]:
                p = self.state.capture(a) if isinstance(a, torch.Tensor) and not is_plain_tensor(a) else None
                if p is not None:
                    self.state.touched[id(p)] = p
            with torch._C.DisableTorchFunction():
                return mode._handle(func, args, kwargs)
        loc = user_location()
        if autocast_on():
            raise UnsupportedOpError(
                f"thunder: {describe(func)} runs under torch.autocast, which thunder does not support yet"
                + at(loc)
            )
        self.state.inplace.mark_op_start()
        if kwargs.get("out") is not None:  # ``torch.add(a, b, out=x)``: a write into x
            return self.writes.write(func, args, kwargs, loc, kwargs["out"])
        inplace = inplace_base_name(name) is not None or name in _INPLACE_OPERATORS
        if inplace or kwargs.get("inplace") is True:
            return self.writes.write(func, args, kwargs, loc, args[0] if args else None)
        return self.call(func, args, kwargs, loc)

    def call(self, func, args, kwargs, loc: SourceLocation | None, writes=None):
        """Record ``func(*args, **kwargs)`` as one BoundSymbol resolved by the dispatch
        (``writes``: the object an in-place op writes, see ``Writes.write``)."""
        state = self.state
        leaves, spec = tree_flatten((args, kwargs))
        pleaves, rleaves, cls = [], [], None
        for v in leaves:
            if isinstance(v, TensorProxy):
                v = state.inplace.current(v)
                pleaves.append(v)
                rleaves.append(v)
            elif isinstance(v, torch.Tensor):
                p = state.capture(v)  # a subclass value's proxy, or a real tensor made an input
                pleaves.append(p)
                if isinstance(p, SubclassProxy):
                    cls = cls or p.subclass
                    # the instance user code holds: its tensors hold ``p``'s inner values
                    traced = self.traced_instance(v)
                    rleaves.append(p.instance if traced is None else traced)
                else:
                    rleaves.append(p)
            elif isinstance(v, DynamicNumber):
                pleaves.append(v.concrete())
                rleaves.append(pleaves[-1])
            else:
                pleaves.append(v)
                rleaves.append(v)
        pargs, pkwargs = tree_unflatten(pleaves, spec)
        rargs, rkwargs = tree_unflatten(rleaves, spec)
        sym = subclass_symbol(cls, func, writes=writes is not None)
        if writes is not None:
            self.writes.declare(sym, func, kwargs)
        call = _Call(self, sym.impl, cls, loc, rargs, rkwargs, pleaves, writes)
        prev = getattr(_ACTIVE, "call", None)
        _ACTIVE.call = call
        try:
            state.computation.record(sym, pargs, pkwargs)
        except _Unchanged:
            pass
        except ThunderError:
            raise
        except Exception as e:  # the subclass's own code failed: say where it was called from
            e.add_note(f"thunder: while tracing {call.what}" + at(loc))
            raise
        finally:
            _ACTIVE.call = prev
        for t, new in call.changed:  # (an in-place op's) the values written hold them from here on
            state.inplace.rebind_value(proxy_of(t), new)
        if writes is None:
            _link_view(func, pargs, pkwargs, call.result)
        return call.result

    def _run(self, call: _Call, pargs, pkwargs):
        """The decomposition of a subclass op: flatten its subclass arguments, run the call
        (recording the aten ops its dispatch reaches), unflatten its subclass results."""
        flattened: set[str] = set()
        for p in tree_leaves((pargs, pkwargs)):
            for q in p.nested() if isinstance(p, SubclassProxy) else ():
                if q.name not in flattened:
                    flattened.add(q.name)
                    pyops.flatten_tensor_subclass(q)
        grad = torch.is_grad_enabled()
        start = self.writes.begin()
        # the dispatch runs below autograd, as in eager: inner results never require grad
        with (
            self.state.computation.below_autograd(),
            dispatch_hook(functools.partial(self._record_aten, call)),
        ):
            out = call.fn(*call.rargs, **call.rkwargs)
        inputs = [x for x in call.inputs if isinstance(x, torch.Tensor)]
        if call.writes is not None:  # eager's autograd returns the written tensor: the values written
            written = self.writes.written(call, start, grad and any(_requires_grad(x) for x in inputs))
            if written is None:
                raise _Unchanged  # (the dispatch wrote only temporaries of its own)
            return written
        self.writes.refuse_writes(call, start)
        call.result = out
        if isinstance(out, torch.Tensor) and any(self._value(out) is p for p in inputs):
            if call.recorded == 0:
                raise _Unchanged  # ``x.contiguous()``: nothing was computed
            raise UnsupportedOpError(
                f"thunder: {call.what} returns its own argument after running aten ops, though it is not an "
                "in-place op; this is not supported" + at(call.loc)
            )
        if type(out) is not tuple and isinstance(out, tuple) and not hasattr(type(out), "_fields"):
            out = tuple(out)  # torch.return_types (max, min, ...): a plain tuple in the trace
        leaves, spec = tree_flatten(out)
        rg = grad and any(_requires_grad(x) for x in inputs) and not _outside_graph(call, pargs, pkwargs)
        results = []
        for v in leaves:
            if isinstance(v, TensorProxy):
                # what it holds now: a result the dispatch wrote in place (``y = torch.mm(x, w.a);
                # y += 1; return y``) is the value written, not the one the write replaced
                v = self.state.inplace.current(v)
                if any(v is x for x in inputs):
                    raise UnsupportedOpError(
                        f"thunder: {call.what} returns its argument {v.name} unchanged; ops on tensor "
                        "subclasses that return a plain argument as it is are not supported yet"
                        + at(call.loc)
                    )
                if rg and differentiable(v.meta_dtype) and not v.meta_requires_grad:
                    # a plain result of a differentiable op: autograd runs above the dispatch in
                    # eager, so it requires grad whatever class the dispatch returns
                    with torch._C.DisableTorchFunction():
                        T.requires_grad_(v)
                results.append(v)
            elif isinstance(v, torch.Tensor):
                p = self._value(v)
                if p is None:
                    if is_plain_tensor(v):
                        raise UnsupportedOpError(
                            f"thunder: {call.what} returns a tensor it did not compute from its arguments "
                            "(a tensor made inside __torch_dispatch__); this is not supported" + at(call.loc)
                        )
                    p = self._unflatten(v)
                    self.own(p, call.produced)
                    if rg and differentiable(p.meta_dtype) and not p.meta_requires_grad:
                        # the op is differentiable at the subclass level, as eager's autograd sees it
                        with torch._C.DisableTorchFunction():
                            T.requires_grad_(p)
                            T.requires_grad_(v)
                elif any(p is x for x in inputs):
                    raise UnsupportedOpError(
                        f"thunder: {call.what} returns one of its arguments among other results; this is not "
                        "supported yet" + at(call.loc)
                    )
                results.append(p)
            else:
                results.append(v)
        self._cut_views_of_temporaries(call, results)
        return tree_unflatten(results, spec)

    def _cut_views_of_temporaries(self, call: _Call, results: list) -> None:
        """A plain result that is a view of a value the dispatch made and dropped (ScaleTensor's
        ``x.view(torch.int32)``: a view of the product it computed) is a value of its own: in
        eager a write into it changes only that temporary, which nothing outside reads."""
        views = getattr(self.state, "views", None)  # (None: after tracing)
        if views is None:
            return
        visible = set()
        for r in results:
            visible.add(getattr(r, "name", None))
            for q in r.nested() if isinstance(r, SubclassProxy) else ():
                visible.update(t.name for t in q.inner.values())
        for r in results:
            if not isinstance(r, TensorProxy):
                continue
            for view in views.chain(r):
                if view.base.name in call.produced and view.base.name not in visible:
                    del views.by_name[r.name]
                    break

    def _value(self, t) -> SubclassProxy | None:
        """The value a subclass instance of the trace holds now (None for a new instance)."""
        p = proxy_of(t)
        return None if p is None else self.state.inplace.value_of(p)

    # -- the aten ops its dispatch runs, recorded as the op's subsymbols --------------------
    def _record_aten(self, call: _Call, func, args, kwargs):
        """An aten op the dispatch runs on proxies: record its symbol (the dispatch hook)."""
        where = _where(call)
        packet = getattr(func, "overloadpacket", None)
        if packet in _DATA_DEPENDENT_ATEN:
            raise DataDependentError(
                f"thunder: {call.cls.__qualname__}.__torch_dispatch__ calls {func}, which needs the value of a "
                "tensor; that is not known while tracing (data-dependent Python control flow such as "
                "`if t.sum() > 0:` or `.item()` inside the dispatch); express it with tensor ops such as "
                "torch.where" + where
            )
        writes = func._schema.is_mutable
        # ``aten.add.out(a, b, out=o)`` writes what ``aten.add.Tensor(a, b)`` gives into ``o``
        into = out_value(func) if writes else None
        if into is not None and isinstance(kwargs.get(into[1]), TensorProxy):
            return self._record_out(call, func, into, args, kwargs, where)
        if into is not None and _is_subclass_value(kwargs.get(into[1])):
            return NotImplemented  # (torch asked the proxy first: the subclass's turn, as below)
        sym = written_value(func) if writes else ATEN.get(func)
        if sym is None:
            raise UnsupportedOpError(
                f"thunder: {call.cls.__qualname__}.__torch_dispatch__ calls {func}, which thunder has no symbol "
                f"for; {ADD_AN_OP}" + where
            )
        if writes:
            written = [a.alias_info is not None and a.alias_info.is_write for a in func._schema.arguments]
            # (``aten._foreach_add_.Scalar`` writes each tensor of its first argument, a list)
            each = args[0] if args and isinstance(args[0], (list, tuple)) else args[:1]
            if (
                sum(written) != 1
                or not written[0]
                or not each
                or not all(isinstance(a, TensorProxy) for a in each)
            ):
                raise UnsupportedOpError(
                    f"thunder: {call.cls.__qualname__}.__torch_dispatch__ calls {func}, which writes into "
                    + ("an argument other than its first (or into several)" if args else "its output")
                    + "; in-place aten ops inside a dispatch are supported when they write their first argument, "
                    "an inner tensor" + where
                )
        state = self.state
        target = args[0] if writes else None
        if isinstance(target, (list, tuple)) and _in_order(list(target), args[1:], kwargs):
            # eager's foreach kernel writes the tensors one after the other: a later one reads
            # the new value of an earlier one (``_foreach_addcmul_([y, z], [w, w], [z, y])``)
            for i in range(len(target)):
                each, kw = _element_of(args, kwargs, i)
                self._record_aten(call, func, tuple(each), kw)
            return None
        leaves, spec = tree_flatten((args, kwargs))
        for i, v in enumerate(leaves):
            if isinstance(v, TensorProxy):
                leaves[i] = state.inplace.current(v)
            elif isinstance(v, torch.Tensor):
                if not is_plain_tensor(v):
                    # torch asked the proxy first (the leftmost argument with a dispatch of its
                    # own); in eager a plain tensor has none: the subclass's turn
                    return NotImplemented
                leaves[i] = state.capture(v)  # a tensor made or held by the subclass: an input
                self.captured_inside.add(leaves[i].name)
        args, kwargs = tree_unflatten(leaves, spec)
        try:
            out = sym(*args, **kwargs)
        except (ShapeError, ValueError, IndexError, TypeError) as e:
            if isinstance(e, ThunderError):
                raise
            raise type(e)(f"thunder: {func}: {e}" + where) from e
        if sym in READS_MEMORY:
            self._memory_read(func, args, kwargs, where)
        layouts = getattr(state, "layouts", None)  # (None: after tracing)
        if layouts is not None and not writes:
            # how the value was made, for eager's layout of it (``data.stride()`` of an inner
            # tensor the dispatch computed: float8 training's Float8TrainingTensor asks)
            layouts.record(func, args, kwargs, out)
        call.recorded += 1
        call.produced.update(p.name for p in tree_leaves(out) if isinstance(p, TensorProxy))
        if writes:  # recorded as the value written, which the written proxy holds from now on
            if isinstance(target, (list, tuple)):
                for t, v in zip(target, out, strict=True):
                    state.inplace.rebind(t, v, call.what)
                return None  # (as the foreach op returns nothing)
            state.inplace.rebind(target, out, call.what)
            return target  # (an in-place aten op returns its argument)
        if Tag.VIEW in sym.tags:
            if out is args[0] and not _in_dispatch(call.cls):
                # a view of a plain tensor taken above the dispatch (``index.reshape(-1)`` in a
                # prim's torch function run on subclass values, as a backward's ``prims.take``):
                # torch refuses a view op that returns its input there, so it is a new value
                out = prims.reshape(out, out.meta_shape)
            self._view_layout(func, args, kwargs, where)
            views = getattr(state, "views", None)  # (None: after tracing)
            if views is not None and isinstance(args[0], TensorProxy):
                # a write into the view (by a later aten op of a dispatch) reaches its base
                for i, leaf in enumerate(tree_leaves(out)):
                    if isinstance(leaf, TensorProxy) and leaf is not args[0]:
                        views.add(View(args[0], sym, tuple(args[1:]), dict(kwargs), i, leaf, func))
        return out

    def _record_out(self, call: _Call, func, into: tuple, args, kwargs, where: str):
        """``aten.add.out(a, b, out=o)`` run by a dispatch: the functional overload's value,
        which the written inner tensor ``o`` holds from now on (of the same shape: eager's
        resizing of ``o`` is not traced)."""
        twin, name = into
        kwargs = dict(kwargs)
        target = kwargs.pop(name)
        out = self._record_aten(call, twin, args, kwargs)
        if out is NotImplemented:
            return out
        if not isinstance(out, TensorProxy) or out.meta_shape != target.meta_shape:
            raise UnsupportedOpError(
                f"thunder: {call.cls.__qualname__}.__torch_dispatch__ calls {func} with {name}= of shape "
                f"{tuple(target.meta_shape)} for a result of shape "
                f"{tuple(getattr(out, 'meta_shape', ()))}: eager resizes {name}, which is not supported"
                + where
            )
        self.state.inplace.rebind(target, out, call.what)
        return target  # (an out= aten op returns the tensor written)

    def _view_layout(self, func, args, kwargs, where: str) -> None:
        """A view the dispatch takes of an inner tensor of an input: taken of a meta tensor
        laid out as the caller's, so a view that layout cannot give (``view`` of a transposed
        tensor) raises eager's error. (Of computed values thunder knows no layout: the dispatch
        ran on the outer layout torch chose from the trace's, so none is checked.)"""
        inputs = getattr(self.state, "inputs", None)  # (None: the grad pass's dispatch, after tracing)
        if inputs is None or not args or not isinstance(args[0], TensorProxy):
            return
        layout = inputs.inner_layouts.get(args[0].name)
        if layout is None or any(isinstance(a, torch.Tensor) for a in tree_leaves((args[1:], kwargs))):
            return
        try:
            func(layout, *args[1:], **kwargs)
        except RuntimeError as e:
            raise RuntimeError(f"thunder: {func}: {e}" + where) from e

    def _memory_read(self, func, args, kwargs, where: str) -> None:
        """``aten.as_strided`` of an inner tensor: checked against eager's layout of it
        (``check_memory_read``), replayed from an input's inner tensor as the caller laid it out
        (its strides are checked by the prologue, its offset where one is given) through the
        views taken of it; a value the dispatches computed is contiguous."""
        inputs = getattr(self.state, "inputs", None)  # (None: the grad pass's dispatch, after tracing)
        if inputs is None or not isinstance(args[0], TensorProxy):
            return
        chain = list(self.state.views.chain(args[0]))
        p = chain[-1].base if chain else args[0]
        m = inputs.inner_layouts.get(p.name)
        root = m is not None
        if m is None:
            m = torch.empty(p.meta_shape, dtype=p.meta_dtype, device="meta")
        m = replay(chain, m)  # (None: a view that cannot be replayed, its layout unknown)
        storage_offset = args[3] if len(args) > 3 else kwargs.get("storage_offset")
        check_memory_read(m, storage_offset, str(func), where)
        if root and storage_offset is not None:
            checks = inputs.checks
            if not any(b.sym is pyops.check_storage_offset and b.args[0] is p for b in checks.of_values):
                checks.add_check(pyops.check_storage_offset, p, 0, always=True)


def _element_of(args, kwargs, i: int) -> tuple[list, dict]:
    """The ``i``-th tensor's part of a foreach aten op's arguments: each list's entry (as a
    one-entry list), other values as they are."""

    def one(v):
        return [v[i]] if isinstance(v, (list, tuple)) else v

    return [one(v) for v in args], {n: one(v) for n, v in kwargs.items()}


def _in_order(tensors: list, args, kwargs) -> bool:
    """Whether an in-place foreach aten op over ``tensors`` runs tensor by tensor, as eager's
    kernel does, to give eager's values: it writes one tensor twice, or reads one as another's
    operand after writing it."""
    if len({id(t) for t in tensors}) != len(tensors):
        return True
    for i in range(1, len(tensors)):
        before = {id(t) for t in tensors[:i]}
        for v in (*args, *kwargs.values()):
            if id(v[i] if isinstance(v, (list, tuple)) else v) in before:
                return True
    return False


def _link_view(func, pargs, pkwargs, result) -> None:
    """A view user code took of a subclass value (``v = y[0]``): noted on the view's value,
    for the gradient of a later write through it (``thunder/frontend/subclasses/writes.py``). A
    view a property takes (``y.T``, ``y.data``) is linked as the view op it is
    (``PROPERTY_VIEWS``: ``y.permute((1, 0))``; ``y.detach()``)."""
    if not pargs or not isinstance(pargs[0], SubclassProxy):
        return
    name = property_name(func)
    if name is not None:
        view = PROPERTY_VIEWS.get(name)
        if name == "data":  # a view without history, as ``detach()``
            op, args = ltorch.detach, ()
        elif view is not None:
            op, args, _ = view(pargs[0])
        else:
            return
        kwargs = {}
    else:
        try:
            op = TORCH_TO_THUNDER.get(_OPERATORS.get(func, func))
        except TypeError:  # an unhashable callable
            return
        if Tag.VIEW not in getattr(op, "tags", ()):
            return
        args, kwargs = tuple(pargs[1:]), dict(pkwargs)
    if isinstance(result, (tuple, list)):  # the pieces of ``y.hsplit(2)``: each a view of y
        if op not in PIECE_WRITES:
            return
        pieces = list(enumerate(result))
    else:  # (``torch.atleast_3d(y)`` of one tensor: the one output of an op that may give several)
        pieces = [(0 if op in PIECE_WRITES else None, result)]
    for i, r in pieces:
        p = proxy_of(r) if isinstance(r, torch.Tensor) else None
        if p is not None and p is not pargs[0]:
            p.view_of = ViewLink(pargs[0], op, args, kwargs, i)


def _outside_graph(call: _Call, pargs, pkwargs) -> bool:
    """Whether eager's autograd leaves the results outside the graph though an input requires
    grad: ``x.detach()``, ``x.data``, ``x.view(dtype)``, and factories given a tensor for its
    metadata (``torch.zeros_like(x)``, ``x.new_zeros(2)``), as their torch-language op says
    (run apart, on the same values; ``torch.fill(x, 1)`` is in the graph)."""
    fn = call.fn
    if _detaches(fn) or (fn is T.view and view_dtype(call.rargs[1:], call.rkwargs) is not None):
        return True
    try:
        op = TORCH_TO_THUNDER.get(fn)
    except TypeError:  # an unhashable callable
        return False
    if op is None or Tag.FACTORY not in getattr(op, "tags", ()):
        return False
    scratch = current_trace().scratch(grad_enabled=torch.is_grad_enabled())
    try:
        with tracectx(scratch), torch.enable_grad():
            out = op(*pargs, **pkwargs)
    except Exception:  # (its torch-language form refuses these arguments: eager's rule as for any op)
        return False
    return not any(p.meta_requires_grad for p in tree_leaves(out) if isinstance(p, TensorProxy))


def _detaches(fn) -> bool:
    """Whether the torch callable ``fn`` is ``detach()`` or the ``.data`` property."""
    return property_name(fn) == "data" or fn is T.detach or fn is torch.detach


def _is_subclass_value(a) -> bool:
    return isinstance(a, torch.Tensor) and type(a) is not TensorProxy and not is_plain_tensor(a)


def _requires_grad(x) -> bool:
    if isinstance(x, TensorProxy):
        return x.meta_requires_grad
    return isinstance(x, torch.Tensor) and x.requires_grad


_TORCH = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def _subclass_location(cls: type) -> SourceLocation | None:
    """The line of the subclass's own code running now: the innermost frame, up to its
    ``__torch_dispatch__``, that is in the subclass's file or outside torch and thunder."""
    dispatch = getattr(getattr(cls.__torch_dispatch__, "__func__", None), "__code__", None)
    try:
        home = os.path.abspath(inspect.getsourcefile(cls) or "")
    except (TypeError, OSError):  # a class of __main__ (a notebook cell's) has no source file to find
        home = os.path.abspath(dispatch.co_filename) if dispatch is not None else ""
    found = None
    f = sys._getframe(2)
    while f is not None:
        name = os.path.abspath(f.f_code.co_filename)
        if found is None and (
            name == home or not (name.startswith((THUNDER_DIR, _TORCH)) or "<frozen" in name)
        ):
            found = SourceLocation(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
        if f.f_code is dispatch:
            return found
        f = f.f_back
    return None  # the aten op was not called by the dispatch (torch decomposed the op itself)


def _in_dispatch(cls: type) -> bool:
    """Whether the subclass's ``__torch_dispatch__`` is running (an aten op below it, not one
    its torch function runs above it)."""
    dispatch = getattr(getattr(cls.__torch_dispatch__, "__func__", None), "__code__", None)
    f = sys._getframe(1)
    while f is not None:
        if f.f_code is dispatch:
            return True
        f = f.f_back
    return False


def _where(call: _Call) -> str:
    """The user's line and the subclass's line, for errors inside a dispatch."""
    inside = _subclass_location(call.cls)
    text = at(call.loc)
    if inside is not None:
        code = inside.line()
        text += (
            f"\n  in {call.cls.__qualname__}.__torch_dispatch__ at {inside.filename}:{inside.lineno} in "
            f"{inside.function}" + (f": {code}" if code else "")
        )
    return text
