"""The public inspection API: ``thunder.last_traces(jfn)`` and friends, ``thunder.compile_stats(jfn)``.

Each reads the cache of the ``ThunderFunction`` behind what ``thunder.jit`` returned (a
``ThunderFunction``, a ``ThunderModule``, or a piece of a thunderfx program): the traces of
its last entry, per kind, first to last, and its counts. Apart from the pipeline
(``thunder/runtime/jit.py``), which only records what these read.
"""

from __future__ import annotations

from thunder.core.trace import Trace
from thunder.runtime.jit import CacheEntry, CompileStats, ThunderFunction
from thunder.runtime.module import ThunderModule


def _jfn(obj) -> ThunderFunction:
    if isinstance(obj, ThunderModule):
        return obj._jfn
    if isinstance(obj, ThunderFunction):
        return obj
    held = getattr(obj, "jfn", None)  # what runs a piece of a thunderfx program (thunder.dynamo.Piece)
    if isinstance(held, (ThunderFunction, ThunderModule)):
        return _jfn(held)
    raise TypeError(f"expected a function returned by thunder.jit, got {type(obj).__qualname__}")


def _last(obj) -> CacheEntry:
    jfn = _jfn(obj)
    if not jfn._entries:
        raise RuntimeError("thunder: the function has not been called yet, so there are no traces")
    return jfn._entries[-1]


def last_traces(obj) -> list[Trace]:
    return _last(obj).computation_traces


def last_prologue_traces(obj) -> list[Trace]:
    return _last(obj).prologue_traces


def last_epilogue_traces(obj) -> list[Trace]:
    return _last(obj).epilogue_traces


def last_backward_traces(obj) -> list[Trace]:
    return _last(obj).backward_traces


def last_double_backward_traces(obj) -> dict[str, list[Trace]]:
    """The traces of the last entry's backward made differentiable, after a backward asked to
    record its graph (``torch.autograd.grad(..., create_graph=True)``): ``"computation"``, the
    backward as a computation of (inputs, cotangents), first to last, and ``"backward"``, its
    own backward (the backward of the backward)."""
    traces = _last(obj).double_backward_traces
    if traces is None:
        raise RuntimeError(
            "thunder: no backward of the last entry has recorded its graph (create_graph=True) yet"
        )
    return traces


def compile_stats(obj) -> CompileStats:
    return _jfn(obj).stats
