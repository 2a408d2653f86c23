"""In-place writes into tensor-subclass values while tracing: ``x.add_(1)``, ``x.copy_(y)``,
``x[0] = v``, ``F.relu(x, inplace=True)`` on a subclass value, as eager runs them.

Eager's autograd checks the write (no write into a leaf that requires grad), then the
subclass's ``__torch_dispatch__`` runs the in-place aten op: it writes the inner tensors
(``aten.add_`` on each of a TwoTensor's two), replaces an inner tensor attribute, or writes
nothing lasting (a temporary it computed from them); the call returns the written tensor
itself. Here the dispatch runs the same way over inner proxies; its in-place aten ops are
recorded as the values they write and rebind the inner proxies (``InplaceWrites``,
``thunder/frontend/torch_calls/inplace.py``); afterwards every subclass value whose tensors changed (the
one written, and any whose inner tensors are views of those written) is rebuilt around its
new tensors. Those values are the op's output, and each instance holds them from then on::

    t5 = TwoTensor.torch.Tensor.add_(x, 1)  # t5: "TwoTensor[cpu f32[3]] (a: cpu f32[3], b: cpu f32[3])"
      # (x_a, x_b) = prims.flatten_tensor_subclass(x)
      # t1 = aten.add.Tensor(x_a, 1)
      # t2 = aten.add.Tensor(x_b, 1)
      # t5 = prims.unflatten_tensor_subclass(TwoTensor, {'a': t1, 'b': t2}, None, (3,), (1,))

The value written is a new value even where the dispatch wrote only a temporary
(ScaleTensor's computes the op on its dequantized data): its tensors are the same, but eager's
autograd counts the write on the tensor's version counter and differentiates it all the same.
A plain op writing into an inner tensor (``x._x.mul_(2)``) changes the value too: it is
rebuilt at its next use (``snapshot``). The gradient of an in-place op is the functional op's
(``WRITTEN_VALUES``, ``thunder/transforms/subclass_grad.py``).

A subclass input whose inner tensors were written is written back when the call ends: the
computation copies the new value into it (``prims.copy_(t5, x)``, flattened into copies of
the inner tensors written, or copied with autograd when the program has a backward); an
inner tensor attribute the dispatch replaced is set on the caller's object by the epilogue.
A real subclass instance from a closure or a global is an input of its own (as a plain
tensor from outside is), written and written back the same way on every call.

The other writes of the same kind:

- ``torch._foreach_add_([a, b], 1)`` (an optimizer's foreach step): the dispatch gets the
  whole list, and the aten foreach op it runs writes each inner tensor; its output is the new
  value of each tensor of the list, and it returns the list itself, as eager does.
- ``torch.add(a, b, out=x)``: the dispatch gets ``aten.add.out``, whose written inner tensor
  holds what the functional overload gives. Eager's autograd differentiates no op with
  ``out=``: with an argument requiring grad in grad mode it raises, as here.
- A write through a view (``v = y[0]; v.mul_(w)``) changes the view and its base: the views
  user code takes of subclass values are linked to their bases (``ViewLink``: by view ops,
  by properties such as ``y.T`` and ``y.data``, each piece of ``y.hsplit(2)``), so the
  gradient of the base's new value is that of the view's new value written into its old one
  (``WrittenThrough``, ``thunder/transforms/subclass_grad.py``).
"""

from __future__ import annotations

import torch

from thunder.core.errors import UnsupportedOpError, UnsupportedValueError, at, describe
from thunder.core.proxies import TensorProxy, proxies_in
from thunder.core.pytree import tree_leaves
from thunder.core.source import user_location
from thunder.core.subclass import (
    WRITTEN_VALUES,
    SubclassProxy,
    ViewLink,
    WrittenThrough,
    is_plain_tensor,
    proxy_of,
    same_context,
)
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import Tag
from thunder.frontend.stand_ins.writes import SetAttr
from thunder.frontend.torch_calls.mode import _inplace_base
from thunder.ops import ltorch, prims
from thunder.ops import python as pyops
from thunder.ops.langs import TORCH_TO_THUNDER, out_of_place
from thunder.ops.meta import requires_grad_of

T = torch.Tensor


class Writes:
    """The in-place writes into the subclass values of one acquisition (``subclasses.writes``)."""

    def __init__(self, subclasses):
        self.subclasses = subclasses
        # attributes the dispatch replaced on subclass inputs: the epilogue sets them on the
        # caller's objects
        self.attribute_writebacks: list[SetAttr] = []
        self.changed = False  # whether the in-place op being traced changed a value
        # subclass values built in the function that are leaves requiring grad
        # (``ScaleTensor(w, s)`` of a ``w`` that requires grad): eager refuses writes into them
        self.leaves: set[str] = set()

    @property
    def state(self):
        return self.subclasses.state

    # -- the op -----------------------------------------------------------------------------
    def write(self, func, args, kwargs, loc, target):
        """The in-place torch call ``func(*args, **kwargs)`` with a subclass value among its
        arguments, writing ``target`` (its first argument, or its ``out=``); returns what eager
        returns (the tensor written, the list of a foreach op, or None for ``x[k] = v``)."""
        state = self.state
        op = describe(func)
        if kwargs.get("out") is not None:
            self._refuse_out(func, args, kwargs, loc)
        if func is T.requires_grad_:
            raise UnsupportedOpError(
                f"thunder: {op} on a tensor subclass value inside the compiled function is not supported; set "
                "requires_grad before the call" + at(loc)
            )
        # ``torch._foreach_add_([a, b], 1)`` writes each tensor of its list: the dispatch gets the
        # whole list, as in eager, and each tensor is checked as one written by itself
        each = list(target) if isinstance(target, (list, tuple)) else [target]
        if not each or not all(isinstance(t, torch.Tensor) for t in each):
            raise UnsupportedOpError(
                f"thunder: {op} on tensor subclass values writes into a {type(target).__qualname__}, not a "
                "tensor or a list of tensors; this is not supported" + at(loc)
            )
        originals = [self._written_value(t, op, loc) for t in each]
        # what the dispatch writes: the instance user code holds, or the one built for a real
        # instance from a closure or a global (an input of its own, written back as arguments are)
        traced = [
            o if isinstance(t, TensorProxy) else self.subclasses.traced_instance(t)
            for t, o in zip(each, originals)
        ]
        self.changed = False
        with state.inplace.writing(originals, op) as write:
            self.subclasses.call(
                func, args, kwargs, loc, writes=traced if isinstance(target, (list, tuple)) else traced[0]
            )
            # (a plain tensor written by a subclass's dispatch that left it as it was: no write)
            write.changed = self.changed
        return None if func is T.__setitem__ else target

    def _refuse_out(self, func, args, kwargs, loc) -> None:
        """What eager refuses of ``func(..., out=x)`` before its dispatch runs: a tuple of
        tensors for ``out`` (not traced), and any argument requiring grad in grad mode (eager's
        autograd differentiates no op with ``out=``)."""
        out = kwargs["out"]
        if not isinstance(out, torch.Tensor):
            raise UnsupportedOpError(
                f"thunder: {describe(func)} with out= a {type(out).__qualname__} on tensor subclass values: "
                "writing several results into given tensors is not supported; assign the results instead"
                + at(loc)
            )
        if torch.is_grad_enabled() and any(_requires_grad(a) for a in tree_leaves((args, kwargs))):
            raise RuntimeError(
                f"thunder: {getattr(func, '__name__', describe(func))}(): functions with out=... arguments don't "
                "support automatic differentiation, but one of the arguments requires grad (as eager PyTorch says)"
                + at(loc)
            )

    def _written_value(self, target, op: str, loc):
        """The value the in-place op ``op`` writes into ``target`` (the proxy of a subclass
        instance, or a plain proxy), checked as eager's autograd checks a write."""
        state = self.state
        if isinstance(target, TensorProxy):
            original = target
        else:
            state.capture(target)  # (its value made current; a real instance from outside, an input)
            original = proxy_of(self.subclasses.traced_instance(target))
        # eager's autograd checks the write above the dispatch
        state.inplace.refuse_leaf_write(original, op)
        value = state.inplace.value_of(original)
        state.inplace.refuse_piece_write(value, op, _view_ops(original))
        if torch.is_grad_enabled() and value.name in self.leaves:
            raise RuntimeError(
                f"thunder: {op} writes into {value.name}: a leaf Variable that requires grad is being used in an "
                "in-place operation (as eager PyTorch says)" + at(loc)
            )
        return original

    def declare(self, sym, func, kwargs) -> None:
        """Note the functional form of the in-place subclass op ``sym`` (for its gradient)."""
        if sym in WRITTEN_VALUES:
            return
        name = getattr(func, "__name__", "")
        if kwargs.get("out") is not None:  # (never differentiated: eager refuses out= then)
            WRITTEN_VALUES[sym] = None
            return
        if func is T.__setitem__:
            base = ltorch.setitem
        elif func is T.copy_:
            base = ltorch.copy_to
        elif kwargs.get("inplace") is True:
            base = _without_inplace(TORCH_TO_THUNDER.get(func))
        elif name.startswith("__i"):  # ``x += y``: what ``x + y`` computes
            base = TORCH_TO_THUNDER.get(getattr(T, "__" + name[3:], None))
        elif name.startswith("_foreach_"):  # ``torch._foreach_add_``: ``torch._foreach_add``'s values
            base = out_of_place(func)
            WRITTEN_VALUES[sym] = None if base is None else _as_written_each(base)
            return
        else:
            base = _inplace_base(name)
        WRITTEN_VALUES[sym] = None if base is None else _as_written(base)

    def begin(self) -> tuple:
        """Where the op being resolved begins: its rebindings and the values it records."""
        trace = self.state.computation
        return len(self.state.inplace.log), trace.recording, len(trace.recording)

    def _rebound(self, start: tuple) -> list[tuple]:
        """The rebindings since ``start`` of values that existed before the op began."""
        n, scope, m = start
        made = {
            p.name
            for b in scope[m:]
            if not b.has_tag(Tag.FLATTEN_TENSOR_SUBCLASS)
            for p in proxies_in(b.output)
        }
        return [w for w in self.state.inplace.log[n:] if w[1].name not in made]

    def refuse_writes(self, call, start: tuple) -> None:
        """An op that is not in-place whose dispatch wrote values of the trace in place."""
        rebound = self._rebound(start)
        if rebound:
            names = ", ".join(dict.fromkeys(w[1].name for w in rebound))
            raise UnsupportedOpError(
                f"thunder: {call.what}: its __torch_dispatch__ writes in place into {names}, which the op's "
                "arguments hold, though the op is not an in-place op; this is not supported" + at(call.loc)
            )

    def written(self, call, start: tuple, rg: bool):
        """The output of the in-place op ``call`` whose dispatch just ran: the new values of
        what it wrote (the value written first), or None when it changed nothing. Notes on
        ``call.changed`` the instances to rebind once the op is recorded."""
        state = self.state
        rebound = self._rebound(start)
        # (a dispatch may also replace an inner tensor attribute: no rebinding, a stale value)
        stale = [t for t in self.subclasses.instances if self.stale(t, state.inplace.value_of(proxy_of(t)))]
        targets = list(call.writes) if isinstance(call.writes, (list, tuple)) else [call.writes]
        for w in reversed(targets):
            if not isinstance(w, TensorProxy) and all(t is not w for t in stale):
                # eager's autograd counts the write, and differentiates it, even where the dispatch
                # wrote only a temporary: the value written is a new one, of the same tensors
                stale.insert(0, w)
        inside = {id(x) for t in stale for x in _inner_instances(t)}
        new_of, others, changed, olds = {}, [], [], {}
        for t in stale:
            if id(t) in inside:
                continue  # rebuilt with the value holding it
            old = state.inplace.value_of(proxy_of(t))
            new = self.snapshot(t, old, top_level=False, rg=old.meta_requires_grad or rg, changed=changed)
            if (new.meta_shape, new.meta_dtype, new.outer_stride) != (
                old.meta_shape,
                old.meta_dtype,
                old.outer_stride,
            ):
                raise UnsupportedOpError(
                    f"thunder: {call.what} changes the shape, strides or dtype of a {t.__class__.__qualname__} in "
                    "place; this is not supported" + at(call.loc)
                )
            new_of[id(t)] = new
            new.replaced = old
            olds[old.name] = (old, new)
            if all(t is not w for w in targets):
                others.append(new)
        _link_written(olds, [state.inplace.value_of(proxy_of(w)) for w in targets if proxy_of(w) is not None])
        # the values written into the op's targets first, in order (a plain tensor the dispatch
        # wrote among them), then those of other values the writes reached (views)
        outputs = []
        for w in targets:
            if isinstance(w, TensorProxy):
                if state.inplace.value_of(w) is not w:
                    new = state.inplace.value_of(w)
                    # (what it held before the op, as a subclass value's ``replaced`` says)
                    new.replaced = next((c for o, c, _ in rebound if o is w), w)
                    outputs.append(new)
            elif id(w) in new_of:
                outputs.append(new_of.pop(id(w)))
        outputs += others
        # plain values of the function the dispatch wrote, not held by a value rebuilt above
        held = {p.name for _, new in changed for p in new.leaves()}
        visible = None
        for original, current, _ in rebound:
            final = state.inplace.value_of(current)
            if final.name in held or any(final is o for o in outputs):
                continue
            if visible is None:
                visible = _top_level_names(state)
            if current.name in visible or original.name in visible:
                outputs.append(final)
        self._open_owners(start)
        call.changed = changed
        for t, new in changed:  # user code sees eager's flag: written with values that require grad
            if new.meta_requires_grad and not t.requires_grad:
                with torch._C.DisableTorchFunction():
                    T.requires_grad_(t)
        if not outputs:
            return None
        self.changed = True
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _open_owners(self, start: tuple) -> None:
        """A write through a view reaches its base, which may be an inner tensor of a value the
        op was not given (``v = x[0]; v.add_(1)`` writes ``x``'s inner tensors): flatten each
        such value at the start of the op, so what the op records reads defined values."""
        _, scope, m = start
        defined = {p.name for b in scope[:m] for p in proxies_in(b.output)}  # (the op's own flattens)
        missing: list = []
        for b in scope[m:]:
            for p in proxies_in((b.args, b.kwargs)):
                if p.name not in defined and isinstance(p, TensorProxy):
                    missing.append(p)
            defined.update(p.name for p in proxies_in(b.output))
        owner = self.subclasses.owner
        missing = [p for p in missing if p.name in owner]
        if not missing:
            return
        visible = _top_level_names(self.state)
        opened: list = []
        for p in missing:
            chain = []
            while p.name in owner and p.name not in visible:
                p = owner[p.name][0]
                chain.append(p)
            for q in reversed(chain):  # the outermost value first
                if all(q is not o for o in opened):
                    opened.append(q)
        scope[m:m] = [
            BoundSymbol(pyops.flatten_tensor_subclass, (q,), {}, tuple(q.inner.values())) for q in opened
        ]

    # -- values -----------------------------------------------------------------------------
    def stale(self, t, p: SubclassProxy) -> bool:
        """Whether the instance ``t`` holds other tensors than its value ``p`` has."""
        names, ctx = t.__tensor_flatten__()
        if tuple(names) != tuple(p.inner) or not same_context(ctx, p.ctx) or tuple(t.shape) != p.meta_shape:
            return True
        value_of = self.state.inplace.value_of
        for n in names:
            x, q = getattr(t, n), p.inner[n]
            if isinstance(x, TensorProxy):
                if value_of(x) is not q:
                    return True
            elif proxy_of(x) is not None:
                if value_of(proxy_of(x)) is not q or self.stale(x, q):
                    return True
            elif not is_plain_tensor(x) or self.state.capture(x) is not q:
                return True  # an attribute the dispatch replaced by a subclass instance it made
        return False

    def snapshot(self, t, old: SubclassProxy, *, top_level: bool, rg: bool | None = None, changed=None):
        """A new value of the instance ``t`` around the tensors it holds now (recorded as an
        unflatten; at the top level, the tensors it keeps read from their values). An inner
        subclass instance whose tensors changed is rebuilt first; ``changed`` collects each
        instance rebuilt with its new value (``t`` included)."""
        state, subclasses = self.state, self.subclasses
        changed = [] if changed is None else changed
        cls = type(t)
        names, ctx = t.__tensor_flatten__()
        inner = {}
        for n in names:
            x = getattr(t, n)
            if isinstance(x, TensorProxy):
                inner[n] = state.inplace.current(x) if top_level else state.inplace.value_of(x)
            elif proxy_of(x) is not None:
                q = state.inplace.value_of(proxy_of(x))
                if self.stale(x, q):
                    q = self.snapshot(x, q, top_level=top_level, changed=changed)
                elif top_level:
                    subclasses.expose(q)
                inner[n] = q
            elif isinstance(x, torch.Tensor) and not is_plain_tensor(x):
                inner[n] = subclasses._unflatten(x, top_level=top_level)  # made by the dispatch
            else:
                inner[n] = subclasses.captured_inner(cls, n, x)
        trc = state.computation
        p = SubclassProxy(
            trc.make_name("t"),
            cls,
            inner,
            ctx,
            tuple(t.shape),
            t.dtype,
            t.device,
            old.meta_requires_grad if rg is None else rg,
            tuple(t.stride()),
        )
        trc.add_bsym(
            BoundSymbol(
                pyops.unflatten_tensor_subclass,
                (cls, dict(inner), ctx, tuple(t.shape), tuple(t.stride())),
                {},
                p,
                source=user_location() if top_level else None,
                scope=trc.scope,
            )
        )
        subclasses.own(p)  # its new inner tensors are reached through it
        changed.append((t, p))
        return p

    # -- inputs, when the call ends ---------------------------------------------------------
    def write_back(self, p: SubclassProxy) -> None:
        """Write the new value of the subclass input ``p`` into the caller's object."""
        state = self.state
        t = p.instance
        final = self.subclasses.current_value(t)
        if final is p:
            return
        copies, sets = [], []
        self._compare(t, p, copies, sets)
        if sets and copies:
            raise UnsupportedValueError(
                f"thunder: the function writes into the inner tensors of the input {p.name} (a "
                f"{p.subclass.__qualname__}) and also replaces some ({', '.join(f'{h.name}.{a}' for h, a, _ in sets)}); "
                "writing back both is not supported yet"
            )
        if not copies and not sets and not final.meta_requires_grad:
            return  # (its tensors are as they were, and no autograd history is to be written)
        if sets:
            # (under no_grad the caller's tensor keeps its history: setting the attribute is the write)
            if p.name in state.inplace.grad_writes or (final.meta_requires_grad and not p.meta_requires_grad):
                raise UnsupportedValueError(
                    f"thunder: the {p.subclass.__qualname__}'s __torch_dispatch__ replaces the inner tensors "
                    f"{', '.join(f'{h.name}.{a}' for h, a, _ in sets)} of the input {p.name}, which is written "
                    "under grad mode with values that require grad: setting the attribute would not give the "
                    "caller's tensor eager's autograd history; this is not supported"
                )
            self.attribute_writebacks += [SetAttr(holder, attr, x) for holder, attr, x in sets]
            return
        state.computation.add_bsym(
            BoundSymbol(prims.copy_, (final, p), {}, None, tags=frozenset({Tag.INPLACE, Tag.WRITEBACK}))
        )

    def _compare(self, t, p: SubclassProxy, copies: list, sets: list) -> None:
        """What changed in the input ``t`` (traced as ``p``): inner tensors written in place
        (``copies``) and attributes replaced (``sets``: holder, attribute, new object)."""
        names, ctx = t.__tensor_flatten__()
        if tuple(names) != tuple(p.inner) or not same_context(ctx, p.ctx):
            raise UnsupportedValueError(
                f"thunder: the function changes what __tensor_flatten__ gives for the input {p.name} (a "
                f"{p.subclass.__qualname__}: {tuple(p.inner)}, {p.ctx!r} -> {tuple(names)}, {ctx!r}); writing this "
                "back is not supported"
            )
        for n in names:
            x, o = getattr(t, n), p.inner[n]
            if x is o:
                if self.state.inplace.value_of(x) is not o:
                    copies.append(n)
            elif isinstance(o, SubclassProxy) and proxy_of(x) is o:
                self._compare(x, o, copies, sets)
            else:
                sets.append((p, n, x))


def _link_written(olds: dict, targets: list) -> None:
    """How each value an in-place op rebuilt follows from the others, for its gradient
    (``WrittenThrough``), where the op wrote through a view user code took (``v = y[0];
    v.mul_(w)``): ``y``'s new value is ``v``'s written into its old one, and another view of
    ``y`` is taken again of that. ``olds``: old value name -> (old value, new value); the
    views' links move to the new values, so a later write through them is linked too."""
    below: dict[str, SubclassProxy] = {}  # a base the op wrote through -> the view below it
    for t in targets:
        c = t
        while c.view_of is not None and c.name in olds and c.view_of.base.name in olds:
            below.setdefault(c.view_of.base.name, c)
            c = c.view_of.base
    written = {t.name for t in targets}  # (their values are the op's own)
    for name, (old, new) in olds.items():
        if name in written:
            pass
        elif name in below:
            c = below[name]
            new.written_through = WrittenThrough(True, c.view_of, olds[c.name][1], old)
        elif old.view_of is not None and old.view_of.base.name in olds:
            new.written_through = WrittenThrough(False, old.view_of, olds[old.view_of.base.name][1], old)
        link = old.view_of
        if link is not None:
            base = olds.get(link.base.name, (None, link.base))[1]
            new.view_of = ViewLink(base, link.op, link.args, link.kwargs, link.index)


def _as_written(base):
    """``base`` (a torch-language op) giving the value its first argument holds after the
    in-place op: of that tensor's dtype and shape, and in its autograd graph."""

    def value(*args, **kwargs):
        return _held(args[0], base(*args, **kwargs))

    return value


def _as_written_each(base):
    """``base`` (a torch-language foreach op) giving the values the tensors of its first
    argument, a list, hold after the in-place foreach op (each as ``_as_written`` gives it).
    Of the arguments as given: eager's autograd links the op to its inputs as the call begins,
    so a tensor that reads what an earlier one wrote (eager's kernel writes them in order)
    gets its gradient as if it read the value from before."""

    def values(tensors, *args, **kwargs):
        return tuple(_held(t, v) for t, v in zip(tensors, base(tensors, *args, **kwargs), strict=True))

    return values


def _held(target, v):
    """The value ``v`` computed for ``target`` as ``target`` holds it once written."""
    if isinstance(v, TensorProxy):
        if v.meta_dtype is not target.meta_dtype:
            v = prims.convert_element_type(v, target.meta_dtype)
        if v.meta_shape != target.meta_shape:
            v = ltorch.expand(v, target.meta_shape)
        if requires_grad_of(target) and not requires_grad_of(v) and torch.is_grad_enabled():
            v = ltorch.in_graph_of(v, target)
    return v


def _view_ops(p):
    """The ``(op, output index)`` of each link from the subclass value ``p`` down to its base."""
    link = getattr(p, "view_of", None)
    while link is not None:
        yield link.op, link.index
        link = getattr(link.base, "view_of", None)


def _requires_grad(a) -> bool:
    if isinstance(a, TensorProxy):
        return a.meta_requires_grad
    return isinstance(a, torch.Tensor) and a.requires_grad


def _without_inplace(op):
    if op is None:
        return None

    def call(*args, inplace=False, **kwargs):
        return op(*args, **kwargs)

    return call


def _inner_instances(t) -> list:
    """The subclass instances inside the instance ``t`` (at every depth)."""
    out = []
    names, _ = t.__tensor_flatten__()
    for n in names:
        x = getattr(t, n)
        if isinstance(x, torch.Tensor) and not isinstance(x, TensorProxy) and not is_plain_tensor(x):
            out += [x, *_inner_instances(x)]
    return out


def _top_level_names(state) -> set[str]:
    """The values the computation defines at its top level so far (and its inputs)."""
    names = set(state.inputs.sources) if getattr(state, "inputs", None) is not None else set()
    for b in state.computation.bound_symbols:
        names.update(p.name for p in proxies_in(b.output))
    return names
