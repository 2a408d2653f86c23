"""Gradients through tensor-subclass ops, for the grad pass (``thunder/transforms/grad.py``).

A subclass op is differentiated as eager's autograd sees it: as the torch-level op, above
the subclass's ``__torch_dispatch__``. ``torch_level`` gives its torch-language op on the same
values, whose rules make the backward; the aten ops the dispatch ran are never
differentiated (they may have no VJP rule). The backward's ops that meet subclass values (a
subclass cotangent, a saved subclass input) are then resolved through the subclass's own
dispatch (``resolve_backward``), as eager runs its backward formulas on subclass values.

Forward op and the form its gradient is taken from::

    t3 = ScaleTensor.torch.mul(x, 2)        t3 = ltorch.mul(x, 2)
                                              # t3 = prims.mul(x, 2)

Its backward, ``prims.mul(g_t3, 2)`` with the ScaleTensor cotangent ``g_t3``, resolved::

    t6 = ScaleTensor.prims.mul(g_t3, 2)
      # (g_t3__x, g_t3__scale) = prims.flatten_tensor_subclass(g_t3)
      # t4 = aten.mul.Tensor(g_t3__x, g_t3__scale)
      # t5 = aten.mul.Tensor(t4, 2)
      # ...

The flattening pass later opens these BoundSymbols on each side of the forward/backward
split. What this cannot handle raises ``SubclassGradError``: the program then keeps torch's
autograd over whole subclass ops (``thunder/runtime/jit.py``), never a gradient computed otherwise.
"""

from __future__ import annotations

import functools

import torch

from thunder.core.context import tracectx
from thunder.core.errors import ThunderError, at
from thunder.core.passinfo import SubclassDispatch
from thunder.core.proxies import Proxy, TensorProxy, proxies_in
from thunder.core.pytree import tree_leaves, tree_map
from thunder.core.subclass import WRITTEN_VALUES, SubclassProxy
from thunder.core.symbol import SYMBOLS, BoundSymbol
from thunder.core.tags import Tag
from thunder.core.trace import Trace
from thunder.ops import ltorch, prims
from thunder.ops.langs import PROPERTY_TO_THUNDER, TORCH_TO_THUNDER, property_name
from thunder.ops.ltorch.inplace import PIECE_WRITES, VIEW_WRITES


class SubclassGradError(ThunderError):
    """A subclass op whose gradient thunder cannot trace."""


def _sub(x, env: dict):
    return tree_map(lambda v: env.get(v.name, v) if isinstance(v, Proxy) else v, x)


def renamed(b: BoundSymbol, env: dict) -> BoundSymbol:
    if not env:
        return b
    return b.from_bsym(
        args=_sub(b.args, env),
        kwargs=_sub(b.kwargs, env),
        output=_sub(b.output, env),
        subsymbols=[renamed(s, env) for s in b.subsymbols],
    )


def _torch_op(fn):
    """The torch-language op (or adapter) thunder maps the torch callable ``fn`` to."""
    name = property_name(fn)
    if name is not None:
        return ltorch.detach if name == "data" else PROPERTY_TO_THUNDER.get(name)
    try:
        return TORCH_TO_THUNDER.get(fn)
    except TypeError:  # an unhashable callable
        return None


def _same_value_kind(got, want) -> bool:
    """The same shape, and a gradient flows through both or neither (a dispatch that returns a
    plain tensor made below autograd would cut the gradient eager's autograd gives)."""
    if isinstance(want, TensorProxy):
        return (
            isinstance(got, TensorProxy)
            and (got.meta_shape, got.meta_dtype) == (want.meta_shape, want.meta_dtype)
            and (got.meta_requires_grad or not want.meta_requires_grad)
            and (want.meta_requires_grad or not got.meta_requires_grad)
        )
    return not isinstance(got, torch.Tensor) and got == want


def torch_level(b: BoundSymbol, trace: Trace) -> list[BoundSymbol]:
    """The forward BoundSymbol ``b`` as the grad pass differentiates it: a subclass op as its
    torch-language op on the same values (its outputs are ``b``'s), anything else as it is."""
    if b.has_tag(Tag.UNFLATTEN_TENSOR_SUBCLASS) and any(
        isinstance(p, TensorProxy) and p.meta_requires_grad for p in proxies_in((b.args, b.output))
    ):
        raise SubclassGradError(
            f"thunder: a {b.args[0].__qualname__} is built from tensors that require grad (or itself requires "
            "grad); thunder does not trace gradients through building a tensor subclass" + at(b.source)
        )
    written = b.sym in WRITTEN_VALUES  # an in-place op: differentiated as the value it writes
    if written and Tag.NO_GRAD in b.tags and any(p.meta_requires_grad for p in tree_leaves(b.output)):
        return _written_without_grad(b, trace)
    if not b.has_tag(Tag.TENSOR_SUBCLASS) or Tag.NO_GRAD in b.tags:
        return [b]  # (under no_grad nothing flows through it)
    # (an op a backward resolved, ``TwoTensor.prims.mul``, is named by the thunder op it was made
    # from: differentiated when a backward of the backward takes it as its forward)
    target = WRITTEN_VALUES.get(b.sym) if written else (SYMBOLS.get(b.sym.name) or _torch_op(b.sym.impl))
    if target is None:
        raise SubclassGradError(
            f"thunder: cannot differentiate {b.sym.id}: thunder has no torch-language op for it"
            + at(b.source)
        )
    scratch = trace.scratch(grad_enabled=True)  # recorded apart, with names the trace does not use
    try:
        with tracectx(scratch), torch.enable_grad():
            out = target(*b.args, **b.kwargs)
            got, want = tree_leaves(out), tree_leaves(b.output)
            if written and len(got) < len(want):  # a write through a view: the values it reached
                got = _through_views(got, want)
            got = _new_values(got, {p.name for p in proxies_in((b.args, b.kwargs))})
    except Exception as e:  # (an op whose torch-language form refuses these arguments)
        raise SubclassGradError(f"thunder: cannot differentiate {b.sym.id}: {e}" + at(b.source)) from e
    if (
        not scratch.bound_symbols
        or len(got) != len(want)
        or not all(_same_value_kind(g, w) for g, w in zip(got, want))
    ):
        raise SubclassGradError(
            f"thunder: cannot differentiate {b.sym.id}: its torch-language op gives other values than the "
            "subclass's dispatch" + at(b.source)
        )
    env = {g.name: w for g, w in zip(got, want) if isinstance(g, Proxy)}
    return [renamed(s, env).from_bsym(source=b.source, scope=b.scope) for s in scratch.bound_symbols]


def _new_values(got: list, inputs: set[str]) -> list:
    """``got`` with an alias (``prims.reshape`` to its own shape) for each value that is an
    argument or an earlier value of ``got``: a view of the same shape (``y.view_as(y)``,
    ``y[:]``) whose torch-language op gives back its argument, a base written through such a
    view, are new values of the dispatch (each output its own name)."""
    out, seen = [], set(inputs)
    for g in got:
        if isinstance(g, TensorProxy) and g.name in seen:
            g = prims.reshape(g, g.meta_shape)
        if isinstance(g, Proxy):
            seen.add(g.name)
        out.append(g)
    return out


def _through_views(got: list, want: list) -> list:
    """The values an in-place op into a view gave beyond those it wrote (``got``, for the first
    of ``want``): each base the view was taken of holds the view's new value written into its
    old one (``ltorch.setitem(y, 0, v)`` for ``v = y[0]``), each other view of such a base is
    taken again of its new value (``WrittenThrough``, noted by acquisition). Recorded in the
    current trace; ``got`` as it is where a value cannot be given so."""
    values = {w.name: g for g, w in zip(got, want)}
    pending = list(want[len(got) :])
    while pending:
        w = next((w for w in pending if _source_of(w) in values), None)
        if w is None:
            return got
        how = w.written_through
        link, source = how.link, values[how.source.name]
        if how.into_base:
            if link.index is None:
                write = VIEW_WRITES.get(link.op)
            else:  # one output of a view op with several
                write = PIECE_WRITES.get(link.op)
                write = None if write is None else functools.partial(write, index=link.index)
            if write is None:
                return got
            values[w.name] = write(how.old, *link.args, value=source, **link.kwargs)
        else:
            view = link.op(source, *link.args, **link.kwargs)
            values[w.name] = view[link.index] if isinstance(view, (tuple, list)) else view
        pending = [p for p in pending if p is not w]
    return [values[w.name] for w in want]


def _source_of(w) -> str | None:
    how = getattr(w, "written_through", None)
    return None if how is None else how.source.name


def _written_without_grad(b: BoundSymbol, trace: Trace) -> list[BoundSymbol]:
    """An in-place op under ``torch.no_grad()`` into values that require grad: eager leaves
    their history alone, so the gradient of what each holds afterwards passes to what it held
    before unchanged (as a plain tensor's write through ``.detach()``). Of several values (a
    foreach op's tensors, a view and its base), each subclass value knows the one it replaced."""
    outs = tree_leaves(b.output)
    target = b.args[0] if b.args else None
    before = [target] if isinstance(b.output, TensorProxy) else [getattr(o, "replaced", None) for o in outs]
    if not all(isinstance(p, TensorProxy) for p in before) or not any(p.meta_requires_grad for p in before):
        raise SubclassGradError(
            f"thunder: {b.sym.id} writes under torch.no_grad() into several values (views of one another, or a "
            "foreach op's tensors) that require grad, not all of them tensor subclass values; thunder does not "
            "trace gradients through such a write" + at(b.source)
        )
    held, through = {}, []
    for o, old in zip(outs, before, strict=True):
        if old.meta_requires_grad:
            held[o.name] = _like(o, trace.add_name(f"{o.name}_written"), trace)
            through.append(
                BoundSymbol(
                    ltorch.write_through_detach, (old, held[o.name]), {}, o, source=b.source, scope=b.scope
                )
            )
    output = tree_map(lambda v: held.get(v.name, v) if isinstance(v, Proxy) else v, b.output)
    return [b.from_bsym(output=output), *through]


def has_subclass_ops(bsyms: list[BoundSymbol]) -> bool:
    return any(b.has_tag(Tag.TENSOR_SUBCLASS) or b.has_tag(Tag.UNFLATTEN_TENSOR_SUBCLASS) for b in bsyms)


def cotangent(o: TensorProxy, trace: Trace, plain: bool = False) -> TensorProxy:
    """The cotangent proxy of the output ``o``: for a subclass output, a value of the same
    subclass with inner tensors like ``o``'s (what ``out.backward()`` passes in eager), or
    with ``plain`` a plain tensor (what a loss computed from the output's values passes)."""
    return _like(o, trace.add_name(f"g_{o.name}"), trace, plain)


def _like(o: TensorProxy, name: str, trace: Trace, plain: bool = False) -> TensorProxy:
    if plain or not isinstance(o, SubclassProxy):
        return TensorProxy(name, o.meta_shape, o.meta_dtype, o.meta_device)
    inner = {attr: _like(t, trace.add_name(f"{name}_{attr}"), trace) for attr, t in o.inner.items()}
    return SubclassProxy(
        name, o.subclass, inner, o.ctx, o.meta_shape, o.meta_dtype, o.meta_device, False, o.outer_stride
    )


def resolve_backward(
    bsyms: list[BoundSymbol], grads, trace: Trace, subclass_dispatch: SubclassDispatch | None
) -> tuple[list[BoundSymbol], tuple]:
    """The backward ``bsyms`` with every op that meets a subclass value resolved through the
    subclass's dispatch (``subclass_dispatch``, acquisition's; recorded with ``trace``'s
    names), and ``grads`` renamed to match."""
    if subclass_dispatch is None:
        raise SubclassGradError(
            "thunder: the backward of tensor-subclass ops runs them through acquisition's subclass dispatch, "
            "and none was given to the grad pass (PassContext.subclass_dispatch)"
        )
    env: dict = {}
    out: list[BoundSymbol] = []
    with tracectx(trace), torch.no_grad():
        for b in bsyms:
            out += _resolve(b, env, trace, b, subclass_dispatch)
    return out, _sub(grads, env)


def _resolve(
    b: BoundSymbol, env: dict, trace: Trace, top: BoundSymbol, subclass_dispatch: SubclassDispatch
) -> list[BoundSymbol]:
    args, kwargs = _sub((b.args, b.kwargs), env)
    if not any(isinstance(p, SubclassProxy) for p in proxies_in((args, kwargs))):
        return [_mark(renamed(b, env), top)]
    if not subclass_dispatch.dispatchable(b.sym, args, kwargs):
        if not b.subsymbols:
            raise SubclassGradError(
                f"thunder: the backward applies {b.sym.id} to a tensor subclass value, and it has no torch "
                "implementation to run through the subclass's __torch_dispatch__" + at(top.source)
            )
        return [r for s in b.subsymbols for r in _resolve(s, env, trace, top, subclass_dispatch)]
    start = len(trace.bound_symbols)
    try:
        new_out = subclass_dispatch.dispatch(b.sym, args, kwargs)
    except Exception as e:
        del trace.bound_symbols[start:]
        if b.subsymbols:  # its decomposition may use aten ops the subclass handles
            return [r for s in b.subsymbols for r in _resolve(s, env, trace, top, subclass_dispatch)]
        raise SubclassGradError(
            f"thunder: the backward applies {b.sym.id} to a tensor subclass value, and its __torch_dispatch__ "
            f"could not be traced: {e}" + at(top.source)
        ) from e
    new = trace.bound_symbols[start:]
    del trace.bound_symbols[start:]
    old_leaves, new_leaves = tree_leaves(b.output), tree_leaves(new_out)
    if len(old_leaves) != len(new_leaves):
        raise SubclassGradError(
            f"thunder: {b.sym.id} on a tensor subclass value gives other outputs" + at(top.source)
        )
    for o, n in zip(old_leaves, new_leaves):
        if isinstance(o, TensorProxy):
            if not isinstance(n, TensorProxy) or (n.meta_shape, n.meta_dtype) != (o.meta_shape, o.meta_dtype):
                raise SubclassGradError(
                    f"thunder: {b.sym.id} on a tensor subclass value gives a value of another shape or dtype "
                    "than on plain tensors" + at(top.source)
                )
            env[o.name] = n
    return [_mark(n, top) for n in new]


def _mark(b: BoundSymbol, top: BoundSymbol) -> BoundSymbol:
    """``b`` stands for (part of) the backward BoundSymbol ``top``: its tags, line and notes."""
    if b is top:
        return b
    return b.from_bsym(
        tags=b.tags | top.tags, source=top.source, scope=top.scope, info=b.info.merged(top.info)
    )
