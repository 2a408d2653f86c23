"""A compilation's traces as one bundle, and the pipeline: a declared list of passes over it.

Acquisition makes a ``TraceBundle`` (prologue, computation, epilogue; the grad pass adds a
backward). A ``Pass`` maps a bundle to a bundle, so one pass may rewrite several traces
together (flattening tensor subclasses touches all three; the grad split makes the
backward). ``run_pipeline`` runs the passes in order and keeps, per trace kind, every trace a
pass produced, with its time: that history is what ``thunder.last_traces`` and friends show.

    PIPELINE = (
        Pass("dce", on("computation", dce)),
        Pass("claim", on(KINDS, lambda t, ctx: claim(t, ctx.executors), context=True)),
    )
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from thunder.core.passinfo import SubclassDispatch
from thunder.core.trace import Provenance, Trace

KINDS = ("prologue", "computation", "epilogue", "backward")


@dataclasses.dataclass(frozen=True)
class TraceBundle:
    """The traces of one compilation; ``backward`` exists when gradients are computed."""

    prologue: Trace
    computation: Trace
    epilogue: Trace
    backward: Trace | None = None

    def replace(self, **traces: Trace | None) -> TraceBundle:
        return dataclasses.replace(self, **traces)

    def traces(self) -> dict[str, Trace]:
        """The traces present, by kind."""
        return {k: t for k in KINDS if (t := getattr(self, k)) is not None}


@dataclasses.dataclass
class PassContext:
    """What passes may read besides the traces: the chosen executors, what acquisition lends
    them, and what a pass learnt about the call being compiled that the runtime needs."""

    executors: Sequence[Any] = ()
    # acquisition's dispatch of ops on tensor-subclass values, for the grad pass
    subclass_dispatch: SubclassDispatch | None = None
    # the grad pass met a prim without a VJP rule: ``backward()`` raises this
    grad_error: Exception | None = None
    # the gradient of a subclass program cannot be traced: torch's autograd records its ops
    autograd_records: bool = False
    # ... and why (the grad pass's error), for the error of an op that cannot run that way
    grad_fallback_cause: Exception | None = None
    # the joint forward-and-backward trace (grad pass): a double backward differentiates it
    joint: Trace | None = None
    # the backward before its gradients were averaged across ranks (DistributedDataParallel):
    # the variants for parameters that already hold a .grad start from it
    local_backward: Trace | None = None


@dataclasses.dataclass(frozen=True)
class Pass:
    """One step of the pipeline: ``run(bundle, ctx) -> bundle``."""

    name: str
    run: Callable[[TraceBundle, PassContext], TraceBundle]


def on(kinds: str | Sequence[str], fn: Callable[..., Trace], *, context: bool = False):
    """Lift a ``Trace -> Trace`` pass to a bundle pass applied to each trace of ``kinds``
    that exists (``context=True``: ``fn(trace, ctx)``). Each call is timed on its trace."""
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)

    def run(bundle: TraceBundle, ctx: PassContext) -> TraceBundle:
        changes = {}
        for kind in kinds:
            trace = getattr(bundle, kind)
            if trace is None:
                continue
            t0 = time.perf_counter()
            out = fn(trace, ctx) if context else fn(trace)
            if out is trace:
                continue  # nothing to do here: the trace (and the time of the pass that made it) stays
            _stamp(out, getattr(fn, "__name__", "pass"), time.perf_counter() - t0)
            changes[kind] = out
        return bundle.replace(**changes)

    return run


def _stamp(trace: Trace, name: str, seconds: float) -> None:
    if trace.provenance is None:
        trace.provenance = Provenance(name)
    trace.provenance.seconds = seconds


@dataclasses.dataclass
class History:
    """Every trace of a compilation, per kind, first to last, and each pass's time."""

    traces: dict[str, list[Trace]]
    pass_times: list[tuple[str, str, float]]  # (kind, pass name, seconds)

    @staticmethod
    def start(bundle: TraceBundle, seconds: float) -> History:
        h = History({k: [] for k in KINDS}, [])
        for kind, trace in bundle.traces().items():
            h.traces[kind].append(trace)
        h.pass_times.append(("computation", "Acquisition", seconds))
        return h

    def record(self, before: TraceBundle, after: TraceBundle, pass_name: str, seconds: float) -> None:
        for kind, trace in after.traces().items():
            if trace is getattr(before, kind):
                continue  # the pass left this trace as it was
            _stamp(trace, pass_name, seconds if trace.provenance is None else trace.provenance.seconds)
            self.traces[kind].append(trace)
            self.pass_times.append((kind, trace.provenance.pass_name, trace.provenance.seconds))


def run_pipeline(
    bundle: TraceBundle, passes: Sequence[Pass], ctx: PassContext, history: History
) -> TraceBundle:
    """Run ``passes`` in order; every trace they make is added to ``history``."""
    for p in passes:
        t0 = time.perf_counter()
        out = p.run(bundle, ctx)
        history.record(bundle, out, p.name, time.perf_counter() - t0)
        bundle = out
    return bundle
