"""The grad pass: the joint forward-and-backward trace of a computation.

Cotangents flow from the outputs back through the BoundSymbols in reverse. A BoundSymbol
whose symbol has a rule in ``thunder.ops.vjp.VJPS`` is differentiated by it; any other is
differentiated through its decomposition (its subsymbols, recursively down to prims); a
prim without a rule is an error naming it and the user's line. Only values whose proxy
requires grad receive a gradient, which is how ``torch.no_grad()`` blocks, ``detach()`` and
integer values stop gradients, exactly where eager's autograd would.

The forward runs each op whole (``F.layer_norm`` as one call), so a value from inside a
decomposition that the backward needs is recomputed in the backward from the op's inputs,
except when that would draw random numbers again (dropout's mask): then the op is opened in
the forward (replaced by its subsymbols) so the value is computed once and saved.
Write-backs into inputs leave the forward: the values written become outputs and the
caller writes them with torch's autograd on, so the input's history is eager's.

Before::

    def computation(x):
      t0 = ltorch.sin(x)
      return (t0,)

After::

    def joint(x, g_t0):
      t0 = ltorch.sin(x)
      t1 = prims.cos(x)        # backward: differentiates t0
      t2 = prims.mul(g_t0, t1)  # backward
      return ((t0,), (t2,))
"""

from __future__ import annotations

import dataclasses
import functools
import inspect

import torch

from thunder.core.context import tracectx
from thunder.core.errors import ThunderError, at
from thunder.core.passinfo import SubclassDispatch
from thunder.core.proxies import Proxy, TensorProxy, proxies_in
from thunder.core.pytree import tree_leaves, tree_map
from thunder.core.symbol import BoundSymbol, Symbol
from thunder.core.tags import GRAD_MODE_TAGS, Tag, inherit
from thunder.core.trace import Trace
from thunder.ops import prims
from thunder.ops.meta import device_of, dtype_of, shape_of
from thunder.ops.vjp import AUGMENTED, AUGMENTED_VIEWS, VJPS
from thunder.transforms.dce import dce
from thunder.transforms.double_backward import kept_for_double_backward
from thunder.transforms.subclass_grad import (
    SubclassGradError,
    cotangent,
    has_subclass_ops,
    resolve_backward,
    torch_level,
)


class NoVJPError(ThunderError):
    """A value that needs a gradient comes out of a prim with no VJP rule."""


class OnceDifferentiableError(NoVJPError):
    """A gradient reaches the backward of a custom ``autograd.Function`` marked
    ``@once_differentiable`` (a double backward through it): eager's error, raised when the
    backward of the backward runs."""


def _requires_grad(p) -> bool:
    return isinstance(p, TensorProxy) and p.meta_requires_grad


def _names(x) -> set[str]:
    return {p.name for p in proxies_in(x)}


def _writebacks(trace: Trace) -> list[BoundSymbol]:
    """Top-level write-backs into inputs (``prims.copy_(src, dst)`` made by the frontend)."""
    return [b for b in trace.bound_symbols if Tag.WRITEBACK in b.tags]


def differentiable_outputs(outputs, args) -> list[TensorProxy]:
    """The outputs that get a cotangent, in order: computed (not an input), requiring grad,
    each once. The backward takes one cotangent per entry, in this order."""
    inputs = _names(args)
    seen: set[str] = set()
    out = []
    for o in outputs:
        if _requires_grad(o) and o.name not in inputs and o.name not in seen:
            seen.add(o.name)
            out.append(o)
    return out


def needs_grad(trace: Trace) -> bool:
    """Whether calling the computation makes anything that requires grad."""
    outputs = list(trace.output) + [b.args[0] for b in _writebacks(trace)]
    return bool(differentiable_outputs(outputs, trace.args))


@functools.cache
def _signature(sym: Symbol) -> tuple[inspect.Signature | None, int | None]:
    """The decomposition's signature, and its number of parameters when all are positional
    (then a call giving each of them positionally is bound as it is)."""
    try:
        sig = inspect.signature(sym.decomposition)
    except (TypeError, ValueError):
        return None, None
    kinds = [p.kind for p in sig.parameters.values()]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return None, None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sig, len(kinds) if all(k in positional for k in kinds) else None


def _bound_args(bsym: BoundSymbol) -> tuple[tuple, dict]:
    """A torch-language op's arguments bound to its signature (every parameter before ``*``
    positional, defaults filled in), as its rule receives them."""
    sig, n = (
        _signature(bsym.sym) if bsym.sym.decomposition is not None and bsym.sym.meta is None else (None, None)
    )
    if sig is None:
        return bsym.args, bsym.kwargs
    if n == len(bsym.args) and not bsym.kwargs:  # (``sig.bind`` would give them back)
        return tuple(bsym.args), {}
    bound = sig.bind(*bsym.args, **bsym.kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


def _fit(g, like: TensorProxy):
    """``g`` summed over the dims the op broadcast ``like`` to, in ``like``'s dtype and device."""
    gs, ls = shape_of(g), shape_of(like)
    if gs != ls:
        lead = len(gs) - len(ls)
        dims = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(ls) if d == 1 and gs[lead + i] != 1)
        if dims:
            g = prims.sum(g, dims)
        if shape_of(g) != ls:
            g = prims.reshape(g, ls)
    if dtype_of(g).is_complex and not dtype_of(like).is_complex:
        g = prims.real(g)  # a real input's gradient is the real part (eager's handle_r_to_c)
    if dtype_of(g) is not dtype_of(like):
        g = prims.convert_element_type(g, dtype_of(like))
    if device_of(g) != device_of(like):
        g = prims.device_put(g, device_of(like))
    return g


class _Backprop:
    """Records the backward into ``joint`` while cotangents flow back through ``bsyms``."""

    def __init__(self, joint: Trace):
        self.joint = joint
        self.cot: dict[str, TensorProxy] = {}

    def accumulate(self, p, g) -> None:
        if g is None or not _requires_grad(p):
            return
        g = _fit(g, p)
        prev = self.cot.get(p.name)
        if prev is None:
            self.cot[p.name] = g
            return
        total = self.cot[p.name] = prims.add(prev, g)
        # the sum of gradients from several uses, not part of any one op's backward (what the
        # op's backward reaches, transforms/saved_versions.py, leaves it out)
        adder = self.joint.recording[-1]
        if any(o is total for o in proxies_in(adder.output)):
            adder.info.accumulates = p.name

    def run(self, bsyms: list[BoundSymbol], top: BoundSymbol | None) -> None:
        for b in reversed(bsyms):
            outs = [o for o in proxies_in(b.output) if isinstance(o, TensorProxy)]
            if not any(o.name in self.cot for o in outs):
                continue
            if b.info.once_differentiable is not None:  # (recorded so by transforms/double_backward.py)
                raise OnceDifferentiableError(
                    "thunder: trying to differentiate twice a function that was marked with @once_differentiable "
                    f"(the backward of {b.info.once_differentiable[0]})" + at(b.source)
                )
            if not any(_requires_grad(p) for p in b.flat_proxy_args if isinstance(p, TensorProxy)):
                continue  # the gradient stops here (an output made a leaf by requires_grad_())
            t = top or b
            start = len(self.joint.bound_symbols)
            if b.info.recorded_backward is not None:  # a custom autograd.Function: its own backward
                self._replay(b)
                self._annotate(start, b, t)
            elif self._apply_rule(b):
                self._annotate(start, b, t)
            elif b.subsymbols:
                self.run(b.subsymbols, t)
            else:
                where = f" (inside {t.sym.id})" if t is not b else ""
                raise NoVJPError(
                    f"thunder: cannot differentiate {b.sym.id}{where}: it has no VJP rule "
                    "(thunder/ops/vjp/); compute it under torch.no_grad() or detach its input" + at(t.source)
                )

    def _replay(self, b: BoundSymbol) -> None:
        """The backward recorded with ``b`` (``thunder/frontend/torch_calls/autograd_functions.py``), its
        cotangent proxies replaced by the real cotangents (zeros where an output has none)."""
        rec = b.info.recorded_backward
        swap: dict[str, TensorProxy] = {}
        for name, c in zip(rec["outputs"], rec["cotangents"]):
            g = self.cot.get(name)
            if g is None:
                g = prims.full(shape_of(c), 0, dtype=dtype_of(c), device=device_of(c))
            swap[c.name] = g

        def sub(x):
            return tree_map(lambda v: swap.get(v.name, v) if isinstance(v, Proxy) else v, x)

        def swapped(r: BoundSymbol) -> BoundSymbol:
            return r.from_bsym(
                args=sub(r.args), kwargs=sub(r.kwargs), subsymbols=[swapped(s) for s in r.subsymbols]
            )

        # a backward marked @once_differentiable: which Function, and the cotangents it takes (a
        # double backward records it without a graph, or raises where a gradient reaches it)
        once = (
            (b.sym.id, tuple(swap[c.name].name for c in rec["cotangents"]))
            if rec.get("once_differentiable")
            else None
        )
        for r in rec["bsyms"]:
            r = swapped(r)
            if once is not None:
                r = r.from_bsym(info=dataclasses.replace(r.info, once_differentiable=once))
            self.joint.add_bsym(r)
        for a, g in zip(b.args, rec["grads"]):
            self.accumulate(a, sub(g))

    def _apply_rule(self, b: BoundSymbol) -> bool:
        rule = VJPS.get(b.sym)
        if rule is None:
            return False
        # an op that returns one of its inputs shares that value's cotangent: only its
        # decomposition (where the identity records nothing) counts it once
        if _names(b.output) & _names((b.args, b.kwargs)):
            return False
        args, kwargs = _bound_args(b)
        if isinstance(b.output, TensorProxy):
            g = self.cot[b.output.name]
        else:
            g = tuple(
                self.cot.get(o.name) if isinstance(o, TensorProxy) else None for o in tree_leaves(b.output)
            )
        grads = rule(g, b.output, *args, **kwargs)
        if grads is NotImplemented:
            return False
        for a, ga in zip(args, grads):
            if isinstance(a, (list, tuple)) and isinstance(ga, (list, tuple)):
                for ai, gi in zip(a, ga):
                    self.accumulate(ai, gi)
            else:
                self.accumulate(a, ga)
        return True

    def _annotate(self, start: int, b: BoundSymbol, top: BoundSymbol) -> None:
        """Mark what ``b``'s rule recorded: part of the backward, from the user's line (and
        module call) of the forward op it differentiates (named by that op's outputs, stable across passes)."""
        key = output_names(top)
        for r in self.joint.bound_symbols[start:]:
            r.tags = r.tags | {Tag.BACKWARD}
            r.source = top.source
            r.scope = top.scope
            r.info.differentiates = key
            r.info.vjp = b.sym.id


def output_names(bsym: BoundSymbol) -> tuple[str, ...]:
    """How a forward BoundSymbol is named in ``info``: its outputs' names, which every pass keeps."""
    return tuple(p.name for p in proxies_in(bsym.output))


def _leaves(bsym: BoundSymbol) -> list[BoundSymbol]:
    """The prims a BoundSymbol decomposes into, in order."""
    if not bsym.subsymbols:
        return [bsym]
    return [leaf for sub in bsym.subsymbols for leaf in _leaves(sub)]


def _open(bsym: BoundSymbol) -> list[BoundSymbol]:
    return [
        s.from_bsym(source=s.source or bsym.source, tags=inherit(s.tags, bsym.tags, GRAD_MODE_TAGS))
        for s in bsym.subsymbols
    ]


def _slice(wanted: set[str], leaves: list[BoundSymbol], available: set[str]) -> list[BoundSymbol]:
    """The prims among ``leaves`` that compute ``wanted`` from ``available`` values."""
    chosen = []
    for b in reversed(leaves):
        outs = _names(b.output)
        if outs & wanted:
            chosen.append(b)
            wanted = (wanted - outs) | (_names((b.args, b.kwargs)) - available)
    return chosen[::-1]


def _forward_values_used(backward: list[BoundSymbol], grads, defined: set[str]) -> set[str]:
    used = _names(grads)
    for b in backward:
        used |= _names((b.args, b.kwargs))
    defined = set(defined)
    for b in backward:
        defined.update(p.name for p in proxies_in(b.output))
    return used - defined


def _resolve_intermediates(
    forward: list[BoundSymbol], backward: list[BoundSymbol], grads, inputs, cotangents, kept=None, fresh=None
):
    """Make every forward value the backward uses available to it: recompute values from
    inside a decomposition in the backward, or open the op when recomputing would redraw
    random numbers. Returns the (possibly opened) forward and the backward with the
    recomputations inserted before their first use. ``kept``: the names the forward that runs
    defines, where it is not ``forward`` (a subclass op's torch-level form, differentiated in
    its place, may compute values of its own at its top level)."""
    while True:
        available = set(inputs) | (kept or {n for b in forward for n in _names(b.output)})
        missing = _forward_values_used(backward, grads, set(cotangents)) - available
        if not missing:
            return forward, backward
        owner: dict[str, int] = {}
        for i, b in enumerate(forward):
            for leaf in _leaves(b):
                for n in _names(leaf.output) & missing:
                    owner[n] = i
        groups: dict[int, set[str]] = {}
        for n in missing:
            if n not in owner:
                raise AssertionError(f"thunder: the backward uses {n}, which the forward never computes")
            groups.setdefault(owner[n], set()).add(n)
        recompute, opened = {}, []
        for i, wanted in groups.items():
            chosen = _slice(wanted, _leaves(forward[i]), available)
            if any(Tag.RANDOM in c.sym.tags for c in chosen):
                opened.append(i)
            else:
                recompute[i] = chosen
        if opened:
            for i in sorted(opened, reverse=True):
                forward = forward[:i] + _open(forward[i]) + forward[i + 1 :]
            continue
        # (a value recomputed from one top-level op may need more of them: another round)
        backward = _insert_recomputed(backward, recompute, forward, available, fresh)


def _insert_recomputed(
    backward, recompute: dict[int, list[BoundSymbol]], forward, available: set[str], fresh
) -> list[BoundSymbol]:
    pending = []
    for i, chosen in sorted(recompute.items()):
        top = forward[i]
        key = output_names(top)
        copies = [
            c.from_bsym(
                tags=c.tags | {Tag.BACKWARD, Tag.RECOMPUTED},
                source=c.source or top.source,
                info=dataclasses.replace(c.info, recomputes=key),
                # an output the forward defines already (the op's own result, one of several a
                # factorization returns) gets a fresh name: each name is assigned once
                output=tree_map(
                    lambda v: fresh(v) if isinstance(v, TensorProxy) and v.name in available else v, c.output
                ),
            )
            for c in chosen
        ]
        pending.append((set().union(*(_names(c.output) for c in copies)), copies))
    out = []
    for b in backward:
        used = _names((b.args, b.kwargs))
        for group in [p for p in pending if p[0] & used]:
            out += group[1]
            pending.remove(group)
        out.append(b)
    for _, copies in pending:  # used by no op, only returned (a gradient that is the value)
        out += copies
    return out


def _augmented(forward: list[BoundSymbol], trace: Trace) -> list[BoundSymbol]:
    """``forward`` with each op that has a forward keeping what its backward needs
    (``thunder.ops.vjp.AUGMENTED``) replaced by it where a gradient flows through the op; the
    replacement's first output is the op's own."""
    out = []
    for b in forward:
        make = AUGMENTED.get(b.sym)
        if (
            make is None
            or Tag.NO_GRAD in b.tags
            or not isinstance(b.output, TensorProxy)
            or not _requires_grad(b.output)
        ):
            out.append(b)
            continue
        scratch = trace.scratch(grad_enabled=True)  # recorded apart, with names the trace does not use
        args, kwargs = _bound_args(b)
        with tracectx(scratch), torch.enable_grad():
            result = make(*args, **kwargs)
        if result is None:
            out.append(b)
            continue
        (recorded,) = scratch.bound_symbols
        made = _placed(recorded, b, {tree_leaves(result)[0].name: b.output})
        out.append(made.from_bsym(tags=inherit(made.tags, b.tags, GRAD_MODE_TAGS)))
        views = AUGMENTED_VIEWS.get(made.sym)
        if views and trace.info.versions is not None:  # (eager's version check sees them as views)
            for j, i in views.items():
                trace.info.versions.view(made.output[j].name, made.args[i].name)
    return out


def _placed(r: BoundSymbol, b: BoundSymbol, env: dict[str, Proxy]) -> BoundSymbol:
    """``r`` and its subsymbols from ``b``'s user line and module call, the proxies named in
    ``env`` replaced (only the BoundSymbols that name one are rebuilt: ``r`` is scratch)."""
    changes = {}
    if any(p.name in env for p in proxies_in((r.args, r.kwargs, r.output))):
        changes = {"args": _sub(r.args, env), "kwargs": _sub(r.kwargs, env), "output": _sub(r.output, env)}
    return r.from_bsym(
        source=b.source, scope=b.scope, subsymbols=[_placed(s, b, env) for s in r.subsymbols], **changes
    )


def _sub(x, env: dict[str, Proxy]):
    return tree_map(lambda v: env.get(v.name, v) if isinstance(v, Proxy) else v, x)


def differentiate(
    trace: Trace,
    subclass_dispatch: SubclassDispatch | None = None,
    plain_cotangents: frozenset[str] = frozenset(),
) -> Trace:
    """The joint trace: ``trace``'s forward, then its backward, taking the cotangents of the
    differentiable outputs as more inputs and returning (outputs, gradients of the inputs).
    ``subclass_dispatch`` (acquisition's, through the pass context) runs the backward's ops
    on tensor-subclass values. The cotangent of a subclass output is of its class, or a plain
    tensor for the outputs named in ``plain_cotangents``."""
    joint = trace.derive("Grad (joint forward and backward)")
    joint.name = "joint"
    writebacks = _writebacks(trace)
    forward = [b for b in trace.bound_symbols if Tag.WRITEBACK not in b.tags]
    outputs = tuple(trace.output) + tuple(b.args[0] for b in writebacks)
    arg_names = [getattr(p, "name", None) for p in trace.args]
    joint.info.writebacks = [
        (len(trace.output) + j, arg_names.index(b.args[1].name)) for j, b in enumerate(writebacks)
    ]

    # tensor-subclass ops are differentiated as their torch-level ops (subclass_grad.py)
    subclasses = has_subclass_ops(forward)
    differentiated = [f for b in forward for f in torch_level(b, joint)] if subclasses else forward
    differentiated = _augmented(differentiated, joint)

    backprop = _Backprop(joint)
    cotangents = []
    for o in differentiable_outputs(outputs, trace.args):
        ct = cotangent(o, joint, o.name in plain_cotangents)
        cotangents.append(ct)
        backprop.cot[o.name] = ct
    joint.grad_enabled = False  # the backward records no grad-mode blocks of its own
    with tracectx(joint), torch.no_grad():
        backprop.run(differentiated, None)
    grads = tuple(backprop.cot.get(p.name) if _requires_grad(p) else None for p in trace.args)

    # drop what no gradient needs (rules compute every argument's gradient)
    scratch = joint.derive("scratch")
    scratch.bound_symbols, scratch.output = joint.bound_symbols, grads
    backward = dce(scratch).bound_symbols
    kept = {n for b in forward for n in _names(b.output)} if subclasses else None
    opened, backward = _resolve_intermediates(
        differentiated,
        backward,
        grads,
        _names(trace.args),
        _names(cotangents),
        kept,
        lambda p: TensorProxy(joint.make_name("t"), shape_of(p), dtype_of(p), p.meta_device),
    )
    if subclasses:
        if opened is not differentiated:
            raise SubclassGradError(
                "thunder: a tensor-subclass program draws random numbers that its backward needs; "
                "thunder does not trace its gradient"
            )
        del joint.bound_symbols[:]  # (the list the trace records into)
        backward, grads = resolve_backward(backward, grads, joint, subclass_dispatch)
    else:
        forward = opened
    joint.grad_enabled = trace.grad_enabled

    joint.bound_symbols = forward + backward
    joint.args = list(trace.args) + cotangents
    joint.output = (outputs, grads)
    joint.info.cotangents = [c.name for c in cotangents]
    if trace.info.data_parallel is None:  # (whose backward is not differentiated: it averages across ranks)
        joint.info.kept_for_double_backward = kept_for_double_backward(joint)
    return joint
