"""The connection to ``torch.autograd``: one ``autograd.Function`` per compiled entry.

Its ``forward`` runs the forward trace (autograd records nothing there) and saves what the
backward trace needs with ``ctx.save_for_backward``, so a second ``backward()`` without
``retain_graph`` and an in-place change of a saved tensor raise torch's own errors. Its
``backward`` runs the backward trace. Outputs that do not require grad are marked
non-differentiable; outputs that are inputs are returned as themselves (not through the
Function, so ``out is x`` holds as in eager); values written back into inputs are copied
after the Function with autograd on, so an input's history (or the leaf error) is eager's
(the call around the Function: ``thunder/autograd/call.py``).

An input whose value reaches only outputs that the backward gets no gradient for (a second
head left out of the loss) gets ``None`` as its gradient, as in eager, not zeros: an
optimizer skips a parameter whose ``.grad`` is None (no weight decay, no momentum step).

What the forward, the backward and the call read is fixed by the traces when the entry is
made (``SharedEntry``, ``thunder/autograd/entry.py``). Two backwards are made on demand from the
forward's inputs (a backward that records its graph, a plain gradient of a tensor-subclass
output: ``thunder/autograd/backwards_from_inputs.py``), and a backward that averages gradients across
ranks has variants for parameters that already hold a ``.grad`` (``thunder/autograd/held_gradients.py``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from contextlib import nullcontext

import torch

from thunder.autograd.backwards_from_inputs import (
    CotangentBackwards,
    DoubleBackward,
    _check_versions,
    _double_backward,
    _plain_cotangents,
    _recorded_backward,
)
from thunder.autograd.call import apply_of, entry_call
from thunder.autograd.entry import SharedEntry
from thunder.autograd.held_gradients import HeldGradients
from thunder.core.proxies import TensorProxy, proxies_in
from thunder.core.trace import Trace
from thunder.executors.python.checks import PrologueCheckFailed
from thunder.ops.autocast import autocast_state
from thunder.transforms.saved_versions import SavedValueOverwrittenError

_grad_enabled = torch.is_grad_enabled
_any_autocast_enabled = torch._C._is_any_autocast_enabled


class autocast_off:
    """Autocast off while a compiled trace runs: its casts are in the trace (thunder/ops/autocast.py),
    and torch's own would cast again (a backward called inside an autocast block)."""

    def __enter__(self):
        self.state = autocast_state()
        for device_type, _ in self.state:
            torch.set_autocast_enabled(device_type, False)

    def __exit__(self, *exc):
        for device_type, _ in self.state:
            torch.set_autocast_enabled(device_type, True)


def without_autocast(fn: Callable) -> Callable:
    """``fn`` run with autocast off (the computation of an entry traced under autocast)."""

    def computation(*args):
        with autocast_off():
            return fn(*args)

    return computation


def no_grad_computation(trace: Trace) -> Callable:
    """The computation callable of an entry without a backward: traced with grad on, it runs
    under ``torch.no_grad()`` so that torch's autograd records nothing (thunder's backward
    traces are the one source of gradients). Where no tensor of the program requires grad (the
    prologue checks that no input does; no op makes one that does), torch's autograd records
    nothing anyway, and the program runs as it is: entering and leaving ``no_grad`` costs about
    as much as a small op."""
    fn = trace.python_callable()
    if not trace.grad_enabled or not _requires_grad_anywhere(trace):
        return fn

    def computation(*args):
        with torch.no_grad():
            return fn(*args)

    return computation


def _requires_grad_anywhere(trace: Trace) -> bool:
    """Whether an argument of ``trace``, or a value one of its BoundSymbols makes, requires grad."""
    values = list(trace.args)
    for b in trace.bound_symbols:
        values += proxies_in(b.output)
    return any(isinstance(p, TensorProxy) and p.meta_requires_grad for p in values)


class CotangentMismatchError(TypeError):
    pass


def grad_computation(
    fw: Trace,
    bw: Trace | None,
    *,
    error: Exception | None = None,
    name: str = "computation",
    double: DoubleBackward | None = None,
    others: CotangentBackwards | None = None,
    held: HeldGradients | None = None,
) -> Callable:
    """The computation callable of an entry with a backward: ``fw`` returns (outputs, saved)
    and ``bw`` takes (saved, cotangents). With ``error`` instead of ``bw``, ``fw`` is the plain
    computation (outputs only) and backward raises ``error`` (a prim without a VJP rule).
    ``double``: what a backward asked to record its graph runs (the forward's inputs are kept
    for it, with their versions). ``others``: backwards for plain cotangents of subclass outputs.
    ``held``: the backwards for parameters that hold a ``.grad`` (a backward that averages
    gradients across ranks)."""
    shared = SharedEntry.of(fw, bw, error, name, double, others, held)
    fn = type(
        f"ThunderAutogradFunction_{name}",
        (torch.autograd.Function,),
        {"forward": staticmethod(_forward(shared)), "backward": staticmethod(_backward(shared))},
    )
    # the autograd engine calls the node's ``apply``, whose Python layer (``BackwardCFunction.
    # apply``: which of backward and vjp is defined, boxed gradients or not) decides, for every
    # backward, what is known here: it is ``backward`` itself
    fn._backward_cls.apply = fn.backward
    computation = entry_call(shared, apply_of(fn, shared.tensor_args))
    computation.autograd_function = fn
    return computation


def _forward(shared: SharedEntry) -> Callable:
    """The Function's forward: runs ``fw`` (autograd records nothing inside a Function) and
    saves what the backward reads."""
    fw_fn, saves = shared.fw_fn, shared.bw_fn is not None
    leaf, all_tensors, tensor_saved, other_saved = (
        shared.leaf,
        shared.all_tensors,
        shared.tensor_saved,
        shared.other_saved,
    )
    plain_outputs, first, keep_none = shared.plain_outputs, shared.layout.first, shared.keep_none
    nondiff = shared.layout.non_differentiable
    written, double = shared.written, shared.double is not None or shared.others is not None
    held = shared.held.positions if shared.held is not None else None
    versions = _versions if shared.tensor_args else _some_versions

    def plain_forward(ctx, *args):
        """``forward`` for the common entry (every argument and saved value a tensor, the
        outputs as computed, nothing written back), in one frame."""
        ctx.inputs = args
        ctx.versions = list(map(_version, args))
        outs, values = fw_fn(*args)
        ctx.save_for_backward(*values)
        return outs

    if (
        saves
        and double
        and shared.tensor_args
        and leaf is None
        and held is None
        and not written
        and all_tensors
        and plain_outputs
        and not keep_none
        and not nondiff
    ):
        return plain_forward

    def forward(ctx, *args):
        if leaf is not None:
            args = args[:-1]
        if held is not None:  # (their .grad, when the backward runs)
            ctx.params = tuple(args[i] for i in held)
        if double:  # a double backward recomputes from the inputs: an input written since is an error
            ctx.inputs = args
            ctx.versions = versions(args)
            for i in written:  # (written by the call itself: their values from before are read saved)
                ctx.versions[i] = None
            ctx.written_with_grad = frozenset(i for i in written if args[i].requires_grad)
        if not saves:
            outs = fw_fn(*args)
        else:
            outs, values = fw_fn(*args)
            if written:
                values = _apart_from(values, [args[i] for i in written])
            if all_tensors:
                ctx.save_for_backward(*values)
            else:
                ctx.save_for_backward(*[values[i] for i in tensor_saved])
                ctx.other_saved = [values[i] for i in other_saved]
        result = outs if plain_outputs else tuple(outs[k] for k in first)
        if keep_none:  # the cotangents of outputs the backward does not reach stay None
            ctx.set_materialize_grads(False)
            # this call's sizes, for the zeros of a missing cotangent (the entry's may be symbolic)
            ctx.out_shapes = [r.shape if isinstance(r, torch.Tensor) else None for r in result]
        if nondiff:
            ctx.mark_non_differentiable(*[result[j] for j in nondiff])
        return result

    return forward


_version = operator.attrgetter("_version")


def _versions(args: tuple) -> list[int]:
    """The version counters of ``args``, every one a tensor (one pass in C, no frame per item)."""
    return list(map(_version, args))


def _some_versions(args: tuple) -> list[int | None]:
    return [a._version if isinstance(a, torch.Tensor) else None for a in args]


def _apart_from(values, inputs: list) -> list:
    """``values`` with each tensor that shares storage with one of ``inputs`` (which the call
    writes back into after the Function) replaced by a copy: the backward reads the value from
    before the write, and torch's version check of saved tensors sees no write of its own."""
    storages = {s for t in inputs if isinstance(t, torch.Tensor) for s in _storages(t)}
    return [
        v.clone() if isinstance(v, torch.Tensor) and not storages.isdisjoint(_storages(v)) else v
        for v in values
    ]


def _storages(t: torch.Tensor) -> list[int]:
    """The storages holding ``t``: a tensor subclass's are its inner tensors'."""
    if type(t) is torch.Tensor or type(t) is torch.nn.Parameter or not hasattr(t, "__tensor_flatten__"):
        return [t.untyped_storage().data_ptr()]
    return [s for n in t.__tensor_flatten__()[0] for s in _storages(getattr(t, n))]


def _backward(shared: SharedEntry) -> Callable:
    """The Function's backward: torch's and thunder's checks, then the backward trace on the
    saved values and the cotangents."""
    bw_fn, error, name, leaf = shared.bw_fn, shared.error, shared.name, shared.leaf
    overwritten, keep_none, several, reach = (
        shared.overwritten,
        shared.keep_none,
        shared.several,
        shared.reach,
    )
    n_args, like, caller_writable = shared.n_args, shared.like, shared.caller_writable
    all_tensors, n_saved, tensor_saved, other_saved = (
        shared.all_tensors,
        shared.n_saved,
        shared.tensor_saved,
        shared.other_saved,
    )
    all_diff, diff = shared.all_diff, shared.layout.differentiable

    double, others, kinds, held = shared.double, shared.others, shared.cotangent_kinds, shared.held
    plain = (
        error is None
        and not overwritten
        and not keep_none
        and held is None
        and all_diff
        and all_tensors
        and leaf is None
        and all(cls is None for _, cls in kinds)
    )

    def plain_backward(ctx, *cotangents):
        """``backward`` for the common entry (every cotangent taken, every saved value a
        tensor, no subclass output): what it does when grad mode and autocast are off, in
        one frame; a backward that records its graph, or runs under autocast, takes the
        general path."""
        if _grad_enabled() or _any_autocast_enabled():
            return backward(ctx, *cotangents)
        try:
            saved = ctx.saved_tensors
        except RuntimeError:  # (freed, or written by the caller: the error that says which)
            saved = _saved_tensors(ctx, caller_writable)
        return bw_fn(*saved, *cotangents)

    def backward(ctx, *cotangents):
        if error is not None:
            raise error
        if torch.is_grad_enabled() and double is None:
            raise _double_backward(name, "this entry has no differentiable backward")
        for message, reaching in overwritten:
            if any(cotangents[j] is not None for j in reaching):
                raise SavedValueOverwrittenError(message)
        unreached = None
        if keep_none and any(c is None for c in cotangents):
            if several:
                reached = frozenset().union(*(reach[j] for j, c in enumerate(cotangents) if c is not None))
                unreached = [i for i in range(n_args) if i not in reached]
            cotangents = tuple(
                (torch.zeros(shape, dtype=m[1], device=m[2]) if m[3] is None else m[3]())
                if c is None and m is not None
                else c
                for c, m, shape in zip(cotangents, like, ctx.out_shapes)
            )
        tensors = _saved_tensors(ctx, caller_writable)
        if all_tensors:
            values = tensors
        else:
            values = [None] * n_saved
            for i, t in zip(tensor_saved, tensors):
                values[i] = t
            for i, v in zip(other_saved, ctx.other_saved):
                values[i] = v
        if torch.is_grad_enabled():  # create_graph=True: the backward of the backward is traced too
            with autocast_off() if torch._C._is_any_autocast_enabled() else nullcontext():
                return _recorded_backward(
                    ctx, double, name, values, cotangents, unreached, n_args, diff, all_diff, leaf
                )
        try:
            with autocast_off() if torch._C._is_any_autocast_enabled() else nullcontext():
                holding = held.held(ctx.params) if held is not None else None
                if holding:
                    grads = held.gradients(
                        holding, ctx.params, values, cotangents if all_diff else [cotangents[j] for j in diff]
                    )
                elif all_diff:
                    grads = bw_fn(*values, *cotangents)
                else:
                    grads = bw_fn(*values, *[cotangents[j] for j in diff])
                if held is not None and not holding:
                    grads = held.settle(grads)
            if unreached:
                grads = list(grads)
                for i in unreached:
                    grads[i] = None
                grads = tuple(grads)
            return grads if leaf is None else (*grads, None)
        except PrologueCheckFailed as e:  # the backward's checks of subclass cotangents
            plain = _plain_cotangents(kinds, cotangents if all_diff else [cotangents[j] for j in diff])
            if others is not None and plain:
                _check_versions(ctx, name)
                with autocast_off() if torch._C._is_any_autocast_enabled() else nullcontext():
                    grads = others.gradients(
                        plain, ctx.inputs, cotangents if all_diff else [cotangents[j] for j in diff], n_args
                    )
                if unreached:
                    grads = tuple(None if i in unreached else g for i, g in enumerate(grads))
                return grads if leaf is None else (*grads, None)
            raise CotangentMismatchError(
                f"thunder: the backward of {name} was traced for the gradient of each tensor-subclass output "
                f"to be a tensor of the same subclass with inner tensors like the output's (what out.backward() "
                f"passes), but {e}; pass such a gradient, or compute this gradient outside thunder.jit"
            ) from e

    return plain_backward if plain else backward


def _saved_tensors(ctx, caller_writable: str) -> tuple:
    """``ctx.saved_tensors``, torch's error once freed (a second backward without
    retain_graph); where torch's version check finds a saved input or output written by the
    caller, the error that says which (``caller_writable``)."""
    try:
        return ctx.saved_tensors
    except RuntimeError as e:
        if "modified by an inplace operation" not in str(e):
            raise
        raise SavedValueOverwrittenError(f"{e}\n{caller_writable}") from e
