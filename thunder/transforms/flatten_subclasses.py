"""Flatten tensor subclasses: replace each subclass op by the aten ops its dispatch ran, so
executors see plain tensors only. The prologue hands the computation the inner tensors, and
the epilogue rebuilds subclass results with the class's ``__tensor_unflatten__``.

Before::

    def computation(x):
      # x: "ScaleTensor[cpu f32[2, 2]] (_x: cpu f32[2, 2], _scale: cpu f32[])"
      t3 = ScaleTensor.torch.add(x, 1)
        # (x__x, x__scale) = prims.flatten_tensor_subclass(x)
        # t0 = aten.mul.Tensor(x__x, x__scale)
        # t1 = aten.add.Tensor(t0, 1)
        # t2 = aten.div.Tensor(t1, x__scale)
        # t3 = prims.unflatten_tensor_subclass(ScaleTensor, {'_x': t2, '_scale': x__scale}, None, (2, 2), (2, 1))
      return (t3,)

After::

    def computation(x__x, x__scale):
      t0 = aten.mul.Tensor(x__x, x__scale)
      t1 = aten.add.Tensor(t0, 1)
      t2 = aten.div.Tensor(t1, x__scale)
      return (t2, x__scale)

    def epilogue(t2, x__scale):
      t3 = prims.unflatten_tensor_subclass(ScaleTensor, {'_x': t2, '_scale': x__scale}, None, (2, 2), (2, 1))
      return t3

A subclass value holding another (a ScaleTensor of a TwoTensor) is flattened level by level
down to plain tensors, and rebuilt innermost first. The write-back of a subclass input written
in place (``prims.copy_(t5, x)``, thunder/frontend/subclasses/writes.py) becomes one copy per
inner tensor written (``prims.copy_(t1, x_a)``).

Gradients: a subclass op is differentiated as the op itself (eager differentiates
``torch.add`` on the subclass, above its dispatch), never through the aten ops on inner
tensors (``subclass_grad.py``). With a backward trace, this pass runs after the split and
flattens each side on its own: autograd hands over real instances (the subclass inputs, the
outputs, the values saved for the backward, the cotangents), so each side flattens them where
it starts and rebuilds them where it ends, and is flat in between::

    def forward(x):
      (x__x, x__scale) = prims.flatten_tensor_subclass(x)
      t0 = aten.mul.Tensor(x__x, x__scale)
      ...
      t7 = prims.unflatten_tensor_subclass(ScaleTensor, {'_x': t6, '_scale': x__scale}, None, (), ())
      return ((t7,), ())

The backward first checks that each subclass cotangent is of the class and inner metadata
it was traced for. Without a backward trace (a gradient thunder could not trace: the compiled
program runs under torch's autograd), a program whose subclass ops need gradients keeps them
whole and the torch executor runs each one on the real subclass values, as eager does.
"""

from __future__ import annotations

from thunder.core.pipeline import PassContext, TraceBundle
from thunder.core.proxies import TensorProxy, proxies_in
from thunder.core.pytree import tree_leaves
from thunder.core.subclass import WRITTEN_VALUES, SubclassProxy
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import GRAD_MODE_TAGS, Tag, inherit
from thunder.core.trace import Trace
from thunder.ops import python as pyops


class SubclassFlatteningError(RuntimeError):
    pass


def flatten_bsyms(p: SubclassProxy) -> list[BoundSymbol]:
    """``(x__x, x__scale) = prims.flatten_tensor_subclass(x)``, then the same for each inner
    subclass value (a ScaleTensor of a TwoTensor: its TwoTensor next)."""
    return [BoundSymbol(pyops.flatten_tensor_subclass, (q,), {}, tuple(q.inner.values())) for q in p.nested()]


def unflatten_bsyms(p: SubclassProxy) -> list[BoundSymbol]:
    """``x = prims.unflatten_tensor_subclass(ScaleTensor, {...}, ctx, size, stride)``, each
    inner subclass value rebuilt before the value holding it."""
    return [
        BoundSymbol(
            pyops.unflatten_tensor_subclass,
            (q.subclass, dict(q.inner), q.ctx, q.meta_shape, q.outer_stride),
            {},
            q,
        )
        for q in reversed(p.nested())
    ]


def _flat(values, keep: frozenset[str] = frozenset()) -> list:
    """Subclass values (but those named in ``keep``) replaced by the plain tensors holding
    them (through nested subclass values); each name once."""
    out, seen = [], set()
    for v in values:
        opened = isinstance(v, SubclassProxy) and v.name not in keep
        for x in v.leaves() if opened else (v,):
            name = getattr(x, "name", None)
            if name is None or name not in seen:
                out.append(x)
                if name is not None:
                    seen.add(name)
    return out


def _parts(bsym: BoundSymbol) -> list[BoundSymbol]:
    """What a BoundSymbol becomes in the flat program."""
    if bsym.has_tag(Tag.TENSOR_SUBCLASS):  # a subclass op: the aten ops its dispatch ran
        return [
            sub.from_bsym(
                source=sub.source or bsym.source,
                scope=sub.scope or bsym.scope,
                tags=inherit(sub.tags, bsym.tags, GRAD_MODE_TAGS),
            )
            for sub in bsym.subsymbols
            if not (sub.has_tag(Tag.FLATTEN_TENSOR_SUBCLASS) or sub.has_tag(Tag.UNFLATTEN_TENSOR_SUBCLASS))
        ]
    if bsym.has_tag(Tag.UNFLATTEN_TENSOR_SUBCLASS) or bsym.has_tag(Tag.FLATTEN_TENSOR_SUBCLASS):
        return []  # a subclass built in the function: its inner tensors stand for it
    if Tag.WRITEBACK in bsym.tags and isinstance(bsym.args[1], SubclassProxy):
        # the new value of a subclass input written back: its inner tensors written, each into its own
        src, dst = bsym.args
        return [
            bsym.from_bsym(args=(s, d))
            for s, d in zip(src.leaves(), dst.leaves(), strict=True)
            if s.name != d.name
        ]
    for p in proxies_in((bsym.args, bsym.kwargs, bsym.output)):
        if isinstance(p, SubclassProxy):
            raise SubclassFlatteningError(
                f"thunder: {bsym.sym.id} uses the tensor subclass value {p.name} ({p.subclass.__qualname__}) "
                "outside a subclass op; it cannot be flattened"
                + (f" (from {bsym.source})" if bsym.source else "")
            )
    return [bsym]


def flatten_trace(
    trace: Trace, keep: frozenset[str] = frozenset(), checked: frozenset[str] = frozenset()
) -> Trace:
    """``trace`` over plain tensors: subclass ops become the aten ops their dispatch ran.

    Subclass arguments and outputs are replaced by their inner tensors, except those named in
    ``keep``: they stay subclass instances at the boundary (flattened at the start, rebuilt at
    the end), for traces whose caller hands over and expects real instances. The kept
    arguments named in ``checked`` are checked as they are flattened: the class and inner
    metadata they were traced for (a backward's cotangents).
    """
    out = trace.derive("Flatten tensor subclasses")
    kept_args = [p for p in trace.args if isinstance(p, SubclassProxy) and p.name in keep]
    out.args = _flat(trace.args, keep)  # in order: the caller passes them by position
    body, defined = [], {p.name for p in out.args}
    for p in kept_args:
        before = set(defined)
        for b in flatten_bsyms(p):
            if b.args[0] is not p and b.args[0].name in before:
                continue  # an inner subclass value two kept values share: opened with the first
            if p.name in checked:  # a cotangent: of the class it was traced for
                body.append(_check_class(b.args[0]))
            # an inner tensor two kept values share (``x`` and ``x * 2`` hold the same scale) is
            # defined by the first flatten; the others give that slot a name of its own
            parts = tuple(t if t.name not in defined else _renamed(t, out) for t in b.output)
            defined.update(t.name for t in parts)
            body.append(b if all(a is t for a, t in zip(parts, b.output)) else b.from_bsym(output=parts))
            if p.name in checked:
                body += [_check_inner(t) for t in b.output if not isinstance(t, SubclassProxy)]
    for bsym in trace.bound_symbols:
        body += _parts(bsym)
    outputs = list(tree_leaves(trace.output))
    built = {p.name for p in trace.args}
    for p in outputs:
        if isinstance(p, SubclassProxy) and p.name in keep and p.name not in built:
            built.add(p.name)  # (a value both returned and saved for the backward: once)
            body += unflatten_bsyms(p)
    out.bound_symbols = body
    if all(p.name in keep for p in outputs if isinstance(p, SubclassProxy)):
        return out  # nothing to flatten in the output: its structure stays
    out.output = tuple(
        _flat(p for p in outputs if getattr(p, "name", None) not in keep)
        + [p for p in outputs if getattr(p, "name", None) in keep]
    )
    return out


def _renamed(t: TensorProxy, trace: Trace) -> TensorProxy:
    return TensorProxy(trace.add_name(t.name), t.meta_shape, t.meta_dtype, t.meta_device)


def has_subclasses(trace: Trace) -> bool:
    return any(isinstance(p, SubclassProxy) for p in proxies_in(trace.args)) or any(
        b.has_tag(Tag.TENSOR_SUBCLASS) or b.has_tag(Tag.UNFLATTEN_TENSOR_SUBCLASS)
        for b in trace.bound_symbols
    )


def needs_autograd(trace: Trace) -> bool:
    """Whether torch's autograd must see the trace's subclass ops (grad mode on, and a value
    out of one requires grad, or one a subclass value is built of). An op whose results eager's
    autograd leaves outside the graph (``torch.empty_like(x)``, ``x.detach()``) needs none."""
    if not trace.grad_enabled:
        return False
    for b in trace.bound_symbols:
        if b.has_tag(Tag.TENSOR_SUBCLASS) or b.has_tag(Tag.UNFLATTEN_TENSOR_SUBCLASS):
            if Tag.NO_GRAD in b.tags:
                continue
            seen = (b.args, b.kwargs, b.output) if b.has_tag(Tag.UNFLATTEN_TENSOR_SUBCLASS) else b.output
            for p in proxies_in(seen):
                inner = p.leaves() if isinstance(p, SubclassProxy) else ()
                if isinstance(p, TensorProxy) and (
                    p.meta_requires_grad or any(i.meta_requires_grad for i in inner)
                ):
                    return True
    return False


def _check_runs_whole(trace: Trace, cause: Exception | None = None) -> None:
    """Each subclass op of ``trace`` can run whole under torch's autograd; else an error that
    also says why thunder could not trace the gradient (``cause``, from the grad pass)."""
    because = (
        f" (tracing the gradient failed with {type(cause).__name__}: {cause})" if cause is not None else ""
    )
    for b in trace.bound_symbols:
        if b.has_tag(Tag.TENSOR_SUBCLASS) and b.sym in WRITTEN_VALUES:
            why = (
                "it writes several values (views of one another) whose gradients thunder could not trace (a view "
                "thunder does not link to its base, or a backward that the subclass's __torch_dispatch__ cannot run)"
                if isinstance(b.output, tuple)
                else "thunder could not trace the program's gradient"
            )
            raise SubclassFlatteningError(
                f"thunder: {b.sym.id} writes a tensor subclass value in place in a program that needs gradients, "
                f"and {why}; torch's autograd would have to run the op whole on the real values, which is not "
                "done for in-place ops (it would write the caller's tensors)"
                + because
                + (f" (from {b.source})" if b.source else "")
            )
        if b.has_tag(Tag.TENSOR_SUBCLASS) and b.sym.torch_impl is None:
            raise SubclassFlatteningError(
                f"thunder: {b.sym.id} needs gradients through the tensor subclass, so it runs whole on the real "
                f"values, but its torch function has no importable name"
                + (f" (from {b.source})" if b.source else "")
            )


def flatten_tensor_subclasses(bundle: TraceBundle, ctx: PassContext) -> TraceBundle:
    """The flattening pass over a bundle: the computation (and the backward, where there is
    one) flattened; the prologue passes inner tensors; the epilogue rebuilds subclass results."""
    comp = bundle.computation
    if bundle.backward is not None:
        return _flatten_split(bundle)
    if not has_subclasses(comp):
        return bundle
    if needs_autograd(comp):
        _check_runs_whole(comp, ctx.grad_fallback_cause)
        return bundle  # torch's autograd differentiates each subclass op as in eager
    epi = bundle.epilogue
    epi_names = {p.name for p in epi.args}
    comp_args = {p.name for p in comp.args}
    outputs = list(tree_leaves(comp.output))
    # a subclass input returned as it is goes from the prologue to the epilogue, unchanged
    passed = [
        p for p in outputs if isinstance(p, SubclassProxy) and p.name in comp_args and p.name in epi_names
    ]
    passed_names = {p.name for p in passed}
    # outputs the epilogue does not receive cross to the backward: they stay instances
    keep = frozenset(p.name for p in outputs if isinstance(p, SubclassProxy) and p.name not in epi_names)
    comp_outs = {p.name for p in outputs}
    received = [p for p in epi.args if p.name in comp_outs and p.name not in passed_names]
    new_comp = flatten_trace(comp, keep)
    # what the epilogue receives, in its order, then what stays an instance for the backward
    new_comp.output = tuple(_flat(received)) + tuple(p for p in outputs if p.name in keep)
    changes = {"computation": new_comp}

    pro = bundle.prologue
    new_pro = pro.derive("Flatten tensor subclasses")
    new_pro.bound_symbols = list(pro.bound_symbols)
    pro_comp, pro_epi = pro.output
    new_pro.output = (tuple(_flat(pro_comp)), tuple(pro_epi) + tuple(passed))
    changes["prologue"] = new_pro

    new_epi = epi.derive("Flatten tensor subclasses")
    others = [p for p in epi.args if p.name not in comp_outs]
    new_epi.args = _flat(received) + others + passed
    new_epi.bound_symbols = [
        b for p in received if isinstance(p, SubclassProxy) for b in unflatten_bsyms(p)
    ] + list(epi.bound_symbols)
    changes["epilogue"] = new_epi

    return bundle.replace(**changes)


def _boundary(trace: Trace) -> frozenset[str]:
    return frozenset(p.name for p in proxies_in((trace.args, trace.output)) if isinstance(p, SubclassProxy))


def flatten_inside(trace: Trace) -> Trace:
    """``trace`` flat inside, its subclass arguments and results real instances (a trace run
    by the runtime directly, as the backward is)."""
    return flatten_trace(trace, _boundary(trace)) if has_subclasses(trace) else trace


def _flatten_split(bundle: TraceBundle) -> TraceBundle:
    """After the forward/backward split: autograd hands each side real instances (a subclass
    input must be the Function's input for its gradient to reach it, a subclass output its
    output), so both keep them at their boundary and are flat inside; the prologue and the
    epilogue stay as they are. The backward checks each subclass cotangent is what it was
    traced for (``out.backward()`` passes one of the output's class)."""
    fw, bw = bundle.computation, bundle.backward
    if not (has_subclasses(fw) or has_subclasses(bw)):
        return bundle
    new_bw = flatten_trace(bw, _boundary(bw), frozenset(bw.info.cotangents or ()))
    return bundle.replace(computation=flatten_trace(fw, _boundary(fw)), backward=new_bw)


def _check_class(p: SubclassProxy) -> BoundSymbol:
    meta = (p.meta_shape, p.meta_dtype, p.meta_device, None)  # (a gradient may require grad)
    return BoundSymbol(pyops.check_tensor_subclass, (p, p.subclass, *meta, tuple(p.inner), p.ctx), {}, None)


def _check_inner(t: TensorProxy) -> BoundSymbol:
    # (the device as the prologue's checks print it: check_tensor's fast test compares by its name)
    return BoundSymbol(
        pyops.check_tensor, (t, t.meta_shape, t.meta_dtype, str(t.meta_device), False), {}, None
    )
