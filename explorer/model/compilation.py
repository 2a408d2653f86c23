"""Reading a compilation out of the compiler: a jitted function -> TraceModel.

This is the only module that knows thunder's public API for compiled functions
(``thunder.compile_stats(jfn).entries`` and ``thunder.last_*_traces``); the rest of the
explorer sees a ``TraceModel``. After a backward with ``create_graph=True`` the entry also has
its double backward: the kinds ``double_backward`` (the backward as a differentiable
computation) and ``backward_of_backward`` (its own backward). Traces, lists of traces and ``{kind: [traces]}`` work too.
"""

from __future__ import annotations

from explorer.model.traces import TRACE_KINDS, CacheEntryInfo, TraceModel
from thunder.core.symbolic import SizeRelations


class NotCompiledError(TypeError):
    pass


def model_of(obj, *, entry: int | None = None) -> TraceModel:
    """A TraceModel for a jitted function (entry: index into its cache, default newest),
    a Trace, a list of traces (one per pass), ``{kind: [traces]}`` or a TraceModel."""
    from thunder.core.trace import Trace

    if isinstance(obj, TraceModel):
        return obj
    if isinstance(obj, Trace):
        return TraceModel.from_trace(obj)
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(t, Trace) for t in obj):
        return TraceModel.from_traces({obj[0].name: list(obj)}, title=obj[0].name)
    if isinstance(obj, dict):
        return TraceModel.from_traces(obj)
    return model_of_jit(obj, entry=entry)


def _stats(jfn):
    import thunder

    try:
        return thunder.compile_stats(jfn)
    except TypeError as e:
        raise NotCompiledError(
            f"explorer: expected a function or module returned by thunder.jit, got {type(jfn).__qualname__}"
        ) from e


def title_of(jfn) -> str:
    fn = getattr(jfn, "_model", None) or getattr(jfn, "__wrapped__", None) or jfn
    if isinstance(fn, type) or not hasattr(fn, "__qualname__"):
        return type(fn).__qualname__
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__qualname__


def model_of_jit(jfn, *, entry: int | None = None) -> TraceModel:
    stats = _stats(jfn)
    entries = list(getattr(stats, "entries", None) or [])
    model = TraceModel(title_of(jfn), {})
    model.stats = {k: getattr(stats, k) for k in ("calls", "cache_hits", "cache_misses") if hasattr(stats, k)}
    if not entries:
        return model
    index = len(entries) - 1 if entry is None else range(len(entries))[entry]
    chosen = entries[index]
    traces = {kind: list(getattr(chosen, f"{kind}_traces", None) or []) for kind in TRACE_KINDS}
    double = getattr(chosen, "double_backward_traces", None)  # after a backward with create_graph=True
    if double:
        traces["double_backward"] = list(double.get("computation") or [])  # the backward, differentiable
        traces["backward_of_backward"] = list(double.get("backward") or [])
    built = TraceModel.from_traces(traces, title=model.title)
    model.series = built.series
    model.entry_index = index
    for i, e in enumerate(entries):
        comp = list(getattr(e, "computation_traces", None) or [])
        final = comp[-1] if comp else None
        inputs = [getattr(a, "name", str(a)) for a in (final.args if final is not None else [])]
        model.entries.append(
            CacheEntryInfo(
                index=i,
                miss_reasons=list(getattr(e, "miss_reasons", None) or []),
                inputs=inputs,
                computation_lines=len(final.bound_symbols) if final is not None else 0,
                symbols=dict(getattr(e, "symbols", None) or {}),
                relations=_relations(getattr(e, "sizes", None)),
            )
        )
    return model


def _relations(sizes) -> list[str]:
    """What an entry's prologue checks of its symbolic sizes (``s0 >= 2``, ``s0 % 2 == 0``)."""
    return list(SizeRelations(sizes).sources()) if sizes is not None and sizes.symbols else []
