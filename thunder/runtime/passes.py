"""The passes every compilation runs, in order, over its bundle of traces (``PIPELINE``): dead
code, the grad passes that make the backward (joint forward and backward, the versions its saved
values are checked against, the split, rematerialisation), tensor subclasses flattened on each
side, a DistributedDataParallel's gradient averaging, the prologue's batched tensor checks, and
the lowering passes (claim, fuse, delete last used: ``LOWERING``, which a backward made later
runs too). Each pass is a ``Trace -> Trace`` function of ``thunder/transforms/`` or
``thunder/executors/``; here they are adapted to the bundle and timed for the history.
"""

from __future__ import annotations

import functools
import time

from thunder.core.passinfo import SubclassDispatch
from thunder.core.pipeline import KINDS, Pass, PassContext, TraceBundle, on
from thunder.core.trace import Trace
from thunder.executors.claim import claim
from thunder.executors.fusion import FusionExecutor
from thunder.frontend.subclasses.dispatch import dispatch_op, dispatchable
from thunder.transforms.batch_checks import batch_tensor_checks
from thunder.transforms.dce import dce
from thunder.transforms.ddp import average_gradients
from thunder.transforms.del_last_used import del_last_used
from thunder.transforms.flatten_subclasses import flatten_tensor_subclasses, has_subclasses
from thunder.transforms.fuse import fuse
from thunder.transforms.grad import NoVJPError, differentiate, needs_grad
from thunder.transforms.remat import rematerialize
from thunder.transforms.saved_versions import check_saved_versions
from thunder.transforms.split import split_forward_backward

# how the grad pass runs the backward's ops on tensor-subclass values: as acquisition does
SUBCLASS_DISPATCH = SubclassDispatch(dispatchable, dispatch_op)


def _claim(trace: Trace, ctx: PassContext) -> Trace:
    return claim(trace, ctx.executors)


def _fuse(trace: Trace, ctx: PassContext) -> Trace:
    return fuse(trace, ctx.executors)


def _grad(bundle: TraceBundle, ctx: PassContext) -> TraceBundle:
    """The joint forward-and-backward trace, when an input requires grad under grad mode.

    Tensor-subclass ops are differentiated as their torch-level ops
    (``transforms/subclass_grad.py``); a subclass program whose gradient cannot be traced
    keeps torch's autograd over the ops it runs (its subclass ops whole, as eager
    differentiates them: ``flatten_subclasses.py``) and gets no joint trace. A prim without a
    VJP rule leaves the computation as it is and notes the error, which ``backward()`` raises."""
    comp = bundle.computation
    if not needs_grad(comp):
        return bundle
    t0 = time.perf_counter()
    try:
        joint = differentiate(comp, ctx.subclass_dispatch)
    except Exception as e:
        if has_subclasses(comp):  # never worse than eager's autograd over the subclass ops
            ctx.autograd_records = True
            ctx.grad_fallback_cause = e
            return bundle
        if not isinstance(e, NoVJPError):
            raise
        ctx.grad_error = e
        return bundle
    joint.provenance.seconds = time.perf_counter() - t0
    ctx.joint = joint
    return bundle.replace(computation=joint)


def _split(bundle: TraceBundle, ctx: PassContext) -> TraceBundle:
    """The joint trace cut into the forward (the computation) and the backward."""
    if bundle.computation.info.cotangents is None:
        return bundle
    return _pair(split_forward_backward, bundle, bundle.computation)


def _remat(bundle: TraceBundle, ctx: PassContext) -> TraceBundle:
    if bundle.backward is None:
        return bundle
    # a fusion executor asked first fuses the backward's elementwise ops, recomputations included
    first = ctx.executors[0] if ctx.executors else None
    fusing = first if isinstance(first, FusionExecutor) else None
    return _pair(functools.partial(rematerialize, fusing=fusing), bundle, bundle.computation, bundle.backward)


def _average_gradients(bundle: TraceBundle, ctx: PassContext) -> TraceBundle:
    """The all-reduces of a DistributedDataParallel's gradients in the backward
    (``transforms/ddp.py``), for a call that syncs them."""
    plan = bundle.computation.info.data_parallel
    if plan is None or bundle.backward is None:
        return bundle
    t0 = time.perf_counter()
    backward = average_gradients(bundle.backward, plan)
    if backward is bundle.backward:  # (no parameter of DDP's gets a gradient here)
        return bundle
    backward.provenance.seconds = time.perf_counter() - t0
    ctx.local_backward = bundle.backward
    return bundle.replace(backward=backward)


def _pair(fn, bundle: TraceBundle, *traces: Trace) -> TraceBundle:
    t0 = time.perf_counter()
    fw, bw = fn(*traces)
    for t in (fw, bw):
        if t.provenance is not None:
            t.provenance.seconds = time.perf_counter() - t0
    return bundle.replace(computation=fw, backward=bw)


# The passes every compilation runs, in order, over its bundle of traces. The grad passes
# make the backward; tensor subclasses are flattened after the split, on each side.
# the lowering passes, which a backward made later runs too (``LOWERING``)
CLAIM = Pass("claim", on(KINDS, _claim, context=True))
FUSE = Pass("fuse", on(("computation", "backward"), _fuse, context=True))
DEL_LAST_USED = Pass("del_last_used", on(("computation", "backward"), del_last_used))

PIPELINE: tuple[Pass, ...] = (
    Pass("dce", on("computation", functools.partial(dce, keep_draws=True))),
    Pass("grad", _grad),
    Pass("saved_versions", on("computation", check_saved_versions)),
    Pass("split", _split),
    Pass("remat", _remat),
    Pass("flatten_tensor_subclasses", flatten_tensor_subclasses),
    Pass("average_gradients", _average_gradients),
    Pass("batch_tensor_checks", on("prologue", batch_tensor_checks)),
    CLAIM,
    FUSE,
    DEL_LAST_USED,
)


# the passes after a backward is made: what a variant of the backward made later runs
LOWERING = (CLAIM, FUSE, DEL_LAST_USED)
