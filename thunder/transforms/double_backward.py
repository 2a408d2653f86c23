"""The backward as a computation of its own, for a backward of the backward (double backward).

``torch.autograd.grad(out, x, create_graph=True)`` asks for gradients that are themselves
differentiable: a gradient penalty, a Hessian-vector product. The compiled backward reads
values the forward saved without recording how they depend on the inputs, so it cannot be
differentiated as it is. This pass makes, from the joint trace (``grad.py``), the program
``(inputs, kept values, cotangents) -> gradients``: the forward recomputed, then the backward.
Its ops are recorded again under grad mode, so each value requires grad where it depends on an
input or a cotangent that does (the backward was recorded under no_grad). The runtime runs it
through the grad pipeline like any computation: its own backward is the backward of the backward.

What the forward cannot recompute it reads from the values the forward saved (as eager's
double backward reads its saved tensors), and the grad pass has the forward save them
(``kept_for_double_backward``, ``joint.info.kept_for_double_backward``):

- random draws (dropout's mask, ``torch.randn_like``): drawing again would give other numbers.
  A forward op that draws, and one computed only from draws (``mask = ne(noise, 0)``), is
  *fixed*: where the recomputation needs its value, that value is an input of the backward as a
  computation, read saved (no gradient flows into a draw). The cut is where the recomputation
  first needs a fixed value, so dropout's saved mask is what it reads.
- inputs the function writes into: the forward reads their values from before the write, which
  the caller's write-back replaces after the call; the forward saves a copy
  (``autograd_bridge._apart_from``) and the recomputation reads that.

A custom ``torch.autograd.Function`` (``frontend/torch_calls/autograd_functions.py``) is not traced again:
its call is kept as it is, with the backward recorded with it, so the grad pass of the backward
as a computation differentiates its forward by that backward again, and its backward (recorded
again, as the rest of the backward) by the backward's own ops, as eager does when the Function's
backward is made of differentiable ops. A backward marked ``@once_differentiable`` is recorded
without a graph, and where its cotangents require grad its values carry eager's error, raised by
the grad pass (``OnceDifferentiableError``) when a gradient reaches them, so by the backward of
the backward.

A tensor-subclass op (``TwoTensor.torch.Tensor.sin``, or ``TwoTensor.prims.mul`` of the backward)
is recorded again through the subclass's ``__torch_dispatch__`` (acquisition's, lent as the grad
pass has it); the grad pass differentiates it as its torch-level op (``subclass_grad.py``).

Before (the joint trace)::

    def joint(x, g_t0):
      t0 = ltorch.sin(x)
      t1 = prims.cos(x)          # backward
      t2 = prims.mul(g_t0, t1)   # backward
      return ((t0,), (t2,))

After::

    def backward_computation(x, g_t0):   # x and g_t0 require grad
      t0 = ltorch.sin(x)                 # (dce removes what the gradients do not use)
      t3 = prims.cos(x)                  # t3 requires grad
      t4 = prims.mul(g_t0, t3)
      return (t4,)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from thunder.core.context import tracectx
from thunder.core.errors import ThunderError
from thunder.core.passinfo import BoundSymbolInfo, SubclassDispatch
from thunder.core.proxies import Proxy, TensorProxy, proxies_in, proxy_names
from thunder.core.pytree import tree_leaves, tree_map
from thunder.core.subclass import WRITTEN_VALUES, SubclassProxy
from thunder.core.symbol import SYMBOLS, BoundSymbol
from thunder.core.tags import Tag
from thunder.core.trace import Trace
from thunder.ops import ltorch
from thunder.transforms.dce import dce


def output_names(bsym: BoundSymbol) -> tuple[str, ...]:
    """How the grad pass names a forward BoundSymbol in ``info`` (``grad.output_names``)."""
    return tuple(p.name for p in proxies_in(bsym.output))


class DoubleBackwardUnsupported(ThunderError):
    """A program whose backward thunder cannot differentiate; the message says why."""


def _requires_grad(p) -> bool:
    return isinstance(p, TensorProxy) and p.meta_requires_grad


def _why_not(joint: Trace, dispatch: SubclassDispatch | None) -> str | None:
    for b in joint.bound_symbols:
        if b.has_tag(Tag.TENSOR_SUBCLASS) and (dispatch is None or b.sym in WRITTEN_VALUES):
            return (
                f"it writes into a tensor subclass in place ({b.sym.id})"
                if dispatch
                else "it computes on tensor subclasses"
            )
    calls = _function_keys(joint)
    for b in joint.bound_symbols:
        vjp = SYMBOLS.get(b.info.vjp) if b.info.vjp is not None else None
        if vjp is not None and Tag.AUTOGRAD_FUNCTION in vjp.tags and b.info.differentiates not in calls:
            # (the grad pass opened the call: its forward draws random numbers its backward reads)
            return f"the forward of the custom torch.autograd.Function {vjp.id} draws random numbers"
    return None


def _function_keys(joint: Trace) -> set[tuple[str, ...]]:
    """The custom autograd.Function calls of the forward, by their outputs' names."""
    return {output_names(b) for b in joint.bound_symbols if b.info.recorded_backward is not None}


@dataclasses.dataclass
class _Plan:
    """What the backward as a computation reads saved instead of recomputing it."""

    taken: list[TensorProxy]  # fixed forward values (draws and what is made of them only)
    written: list[int]  # positions of inputs written into whose values the recomputation reads
    skip: set[int]  # positions of the joint's fixed BoundSymbols not recorded again


def _plan(joint: Trace, saved: set[str] | None) -> _Plan:
    """Which fixed values (see the module's docstring) and written inputs the recomputation
    reads. ``saved``: the names the forward saves (None: when the joint is made, before the
    forward is cut; the fixed values the recomputation needs first are taken then). A fixed
    value not saved (rematerialization recomputes it in the backward from others) is
    recomputed from the fixed values it is made of."""
    n_ct = len(joint.info.cotangents)
    fw_args = joint.args[: len(joint.args) - n_ct]
    bsyms = joint.bound_symbols
    fixed: set[int] = set()
    fixed_names: set[str] = set()
    drawing: dict[int, BoundSymbol] = {}
    for i, b in enumerate(bsyms):
        draws = b.draws()
        if Tag.BACKWARD in b.tags:
            if draws:
                drawing[i] = b
            continue
        if not draws and not fixed_names:
            continue
        ins = [p for p in proxies_in((b.args, b.kwargs)) if isinstance(p, TensorProxy)]
        if draws or (ins and all(p.name in fixed_names for p in ins)):
            if draws:
                drawing[i] = b
            if not any(_requires_grad(o) for o in proxies_in(b.output)):
                fixed.add(i)
                fixed_names |= proxy_names(b.output)
    if not drawing and not joint.info.writebacks:
        return _Plan([], [], set())
    needed = proxy_names(joint.output[1])
    taken: list[TensorProxy] = []  # (last made first)
    expanded: set[int] = set()
    for i in range(len(bsyms) - 1, -1, -1):
        b = bsyms[i]
        want = proxy_names(b.output) & needed
        if not want:
            continue
        if i in fixed and (saved is None or want <= saved):
            taken += [p for p in reversed(proxies_in(b.output)) if p.name in want]
            continue
        if i in drawing:
            why = (
                "in its backward"
                if Tag.BACKWARD in b.tags
                else "in an op whose output requires grad"
                if i not in fixed
                else "and the forward did not save them"
            )
            raise DoubleBackwardUnsupported(
                f"it draws random numbers ({b.sym.id}) {why}, which recomputing would draw again"
            )
        if i in fixed:
            expanded.add(i)
        needed |= proxy_names((b.args, b.kwargs))
    written = sorted({j for _, j in joint.info.writebacks if fw_args[j].name in needed})
    unsaved = [fw_args[j].name for j in written if saved is not None and fw_args[j].name not in saved]
    if unsaved:
        raise DoubleBackwardUnsupported(
            f"it writes into its input {unsaved[0]}, whose value from before the write the forward did not save"
        )
    return _Plan(taken=taken[::-1], written=written, skip=fixed - expanded)


def kept_for_double_backward(joint: Trace) -> list[str]:
    """The forward values a backward of the backward reads saved (random draws, and the values
    inputs the function writes into had before the write), for the split to save; empty where
    there are none, or where it cannot be made (``differentiable_backward`` then says why)."""
    try:
        plan = _plan(joint, None)
    except (
        DoubleBackwardUnsupported
    ):  # (a plain backward never fails for it: the double backward says why, if asked)
        return []
    n_ct = len(joint.info.cotangents)
    return [p.name for p in plan.taken] + [joint.args[: len(joint.args) - n_ct][j].name for j in plan.written]


def backward_from_inputs(joint: Trace) -> tuple[Trace, list[int]]:
    """``(inputs, cotangents) -> gradients`` of the inputs that get one, as ``joint`` records
    them (not differentiable: for a backward traced for other cotangents than the entry's,
    which recomputes its forward); and the positions of those inputs."""
    if joint.info.writebacks:
        raise DoubleBackwardUnsupported(
            "thunder: a backward from the inputs of a function that writes into them"
        )
    _, grads = joint.output
    trace = joint.derive("Backward from the inputs")
    trace.name = "backward_from_inputs"
    trace.info.cotangents = None
    trace.bound_symbols = list(joint.bound_symbols)
    positions = [i for i, g in enumerate(grads) if g is not None]
    trace.output = tuple(grads[i] for i in positions)
    return dce(trace), positions


@dataclasses.dataclass(frozen=True)
class SavedReads:
    """What the backward as a computation takes from the forward's saved values (by their
    positions there): ``inputs``, (input position, saved position) of the inputs written into,
    read as they were before the write; ``extra``, the fixed values, its arguments after the
    inputs."""

    inputs: tuple[tuple[int, int], ...] = ()
    extra: tuple[int, ...] = ()
    input_names: tuple[str, ...] = ()  # (of ``inputs``, in the trace)


def differentiable_backward(
    joint: Trace,
    saved: Sequence[str] = (),
    requiring_grad: Sequence[bool] | None = None,
    dispatch: SubclassDispatch | None = None,
) -> tuple[Trace, list[int], SavedReads]:
    """``(inputs, kept values, cotangents) -> gradients`` of the inputs that get one, recorded
    under grad mode, the floating cotangents requiring grad where ``requiring_grad`` says so
    (None: all); the positions of those inputs; and what it reads from the forward's saved
    values (``saved``: their names). ``dispatch`` (acquisition's, as the grad pass has it)
    records tensor-subclass ops again through the subclass's ``__torch_dispatch__``."""
    why = _why_not(joint, dispatch)
    try:
        plan = _plan(joint, set(saved)) if why is None else None
    except DoubleBackwardUnsupported as e:
        why = str(e)
    if why is not None:
        raise DoubleBackwardUnsupported(
            f"thunder: the backward of this function is not differentiable here: {why}"
        )
    n_ct = len(joint.info.cotangents)
    fw_args = joint.args[: len(joint.args) - n_ct]
    position = {n: i for i, n in enumerate(saved)}
    reads = SavedReads(
        inputs=tuple((j, position[fw_args[j].name]) for j in plan.written),
        extra=tuple(position[p.name] for p in plan.taken),
        input_names=tuple(fw_args[j].name for j in plan.written),
    )
    _, grads = joint.output
    trace = joint.derive("Backward as a computation (for a double backward)")
    trace.name = "backward_computation"
    trace.info.cotangents = None
    trace.info.writebacks = []
    trace.info.kept_for_double_backward = []
    trace.info.versions = None  # (it writes into nothing: the function's writes are in the joint's outputs)
    trace.info.overwritten_saves = []
    trace.grad_enabled = True
    swap: dict[str, Proxy] = {}
    args = list(fw_args) + list(plan.taken)
    for j, c in enumerate(joint.args[len(fw_args) :]):
        rg = c.meta_dtype.is_floating_point and (requiring_grad is None or requiring_grad[j])
        if isinstance(c, SubclassProxy):  # (the cotangent of a subclass output)
            new = SubclassProxy(
                c.name,
                c.subclass,
                c.inner,
                c.ctx,
                c.meta_shape,
                c.meta_dtype,
                c.meta_device,
                rg,
                c.outer_stride,
            )
        else:
            new = TensorProxy(c.name, c.meta_shape, c.meta_dtype, c.meta_device, rg)
        swap[c.name] = new
        args.append(new)

    def sub(x):
        return _renamed(x, swap)

    calls = _function_keys(joint)
    with tracectx(trace), torch.enable_grad():
        for i, b in enumerate(joint.bound_symbols):
            if i in plan.skip:
                continue
            if b.info.recorded_backward is not None and Tag.BACKWARD not in b.tags:
                trace.add_bsym(_function_call(b, dict(swap)))
                continue
            once = b.info.once_differentiable
            # a value from inside a custom Function's forward, which its backward reads: eager's
            # forward made it without a graph, so it is a constant to the backward of the backward
            inside = Tag.RECOMPUTED in b.tags and b.info.recomputes in calls
            n = len(trace.bound_symbols)
            with (
                torch.no_grad()
                if Tag.NO_GRAD in b.tags or once is not None or inside
                else torch.enable_grad()
            ):
                if b.has_tag(Tag.TENSOR_SUBCLASS):
                    out = dispatch.dispatch(_dispatched(b), sub(b.args), sub(b.kwargs))
                else:
                    out = b.sym(*sub(b.args), **sub(b.kwargs))
            if b.sym in _KEPT_STATISTICS and torch.is_grad_enabled():
                out = _KEPT_STATISTICS[b.sym](out, *sub(b.args))
            if (
                once is not None
                and len(trace.bound_symbols) > n
                and any(_requires_grad(swap.get(c)) for c in once[1])
            ):
                out = _carrying_the_error(trace, once, out)
            for old, new in zip(tree_leaves(b.output), tree_leaves(out)):
                if isinstance(old, Proxy) and new is not old:
                    swap[old.name] = new
    positions = [i for i, g in enumerate(grads) if g is not None]
    trace.args = args
    trace.output = tuple(sub(grads[i]) for i in positions)
    return dce(trace), positions, reads


def _layer_norm_statistics(out, input, normalized_shape, weight, bias, eps):
    """``native_layer_norm``'s mean and 1/std as functions of the input: the first backward
    reads them (``layer_norm_backward``, eager's fused kernel), and its own backward must see
    how they move with the input, as eager's double backward does (the kernel's outputs are
    not differentiable, so they are recomputed here, in the backward that is differentiated)."""
    dims = tuple(range(-len(tuple(normalized_shape)), 0))
    return out[0], *_statistics(input, dims, eps, out[1])


def _group_norm_statistics(out, input, weight, bias, N, C, HxW, group, eps):
    """``native_group_norm``'s mean and 1/std (per sample and group) as functions of the input,
    for the same reason as ``_layer_norm_statistics``."""
    return out[0], *_statistics(ltorch.reshape(input, (N, group, -1)), (2,), eps, out[1], keepdim=False)


def _statistics(x, dims, eps, like, keepdim: bool = True):
    x = ltorch.to(x, like.dtype)
    mean = ltorch.mean(x, dims, keepdim)
    rstd = ltorch.rsqrt(ltorch.add(ltorch.var(x, dims, keepdim=keepdim, correction=0), eps))
    return mean, rstd


# forwards whose kept statistics a fused backward kernel reads: recomputed differentiably
_KEPT_STATISTICS = {
    ltorch.native_layer_norm: _layer_norm_statistics,
    ltorch.native_group_norm: _group_norm_statistics,
}


def _renamed(x, env: dict[str, Proxy]):
    """``x`` with each proxy ``env`` names replaced by ``env``'s."""
    return tree_map(lambda v: env.get(v.name, v) if isinstance(v, Proxy) else v, x)


def _dispatched(b: BoundSymbol):
    """What the subclass op ``b`` was resolved from, to resolve again: the thunder op of a
    backward's (``TwoTensor.prims.mul`` from ``prims.mul``), or the torch callable the user's
    code called (``TwoTensor.torch.Tensor.sin``)."""
    made_from = SYMBOLS.get(b.sym.name)
    return made_from if made_from is not None else b.sym.impl


def _function_call(b: BoundSymbol, env: dict[str, Proxy]) -> BoundSymbol:
    """A custom autograd.Function's call kept as it is (its class is not called again: its
    forward ran while tracing), its inputs those of the recomputation (``env``: the forward
    values recorded again so far), and the backward recorded with it reading them too; its
    outputs and the values of that backward keep their names (nothing else in the backward as
    a computation makes them)."""

    def swapped(r: BoundSymbol) -> BoundSymbol:
        return r.from_bsym(
            args=_renamed(r.args, env),
            kwargs=_renamed(r.kwargs, env),
            subsymbols=[swapped(s) for s in r.subsymbols],
        )

    rec = b.info.recorded_backward
    rec = dict(rec, bsyms=[swapped(r) for r in rec["bsyms"]], grads=[_renamed(g, env) for g in rec["grads"]])
    return swapped(b).from_bsym(info=dataclasses.replace(b.info, recorded_backward=rec))


def _carrying_the_error(trace: Trace, once: tuple, out):
    """The outputs of the last BoundSymbol of ``trace`` (recorded without a graph from a
    ``@once_differentiable`` backward whose cotangents require grad) made to require grad,
    the BoundSymbol noted so that a gradient reaching them raises eager's error (what
    ``once_differentiable`` does with ``DelayedError``)."""
    r = trace.bound_symbols[-1]
    marked = {
        p.name: TensorProxy(p.name, p.meta_shape, p.meta_dtype, p.meta_device, True)
        for p in proxies_in(r.output)
        if type(p) is TensorProxy and (p.meta_dtype.is_floating_point or p.meta_dtype.is_complex)
    }

    trace.bound_symbols[-1] = r.from_bsym(
        output=_renamed(r.output, marked), info=BoundSymbolInfo(once_differentiable=once)
    )
    return _renamed(out, marked)
