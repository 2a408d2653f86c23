"""A run on a time axis: each line of the final traces (the forward, then the backward) as a span,
fusion regions and collectives (from start to wait) as spans of their own, the memory curve
under them; exportable as a Chrome / Perfetto trace file::

    tl = explorer.timeline(jfn, x)            # runs and times every line (explorer.measure.runner)
    tl.save("trace.json")                     # opens in ui.perfetto.dev or chrome://tracing
    tl                                        # in a notebook: the spans and the memory curve

The times are the ones the explorer measures everywhere (``runner.measure``: the fastest of a
few runs, per top-level line), laid end to end in trace order; the moments between lines (the
timing calls themselves) are not part of it, so the axis is the sum of the lines' times, which
the view says. A distributed run's ranks (``explorer.load_ranks``) give one process per rank,
so a straggler and a collective waiting for it line up across ranks.

Plain data (its notebook display is set by ``explorer.views.timeline``): ``Timeline.spans`` (``Span``: track, name, start and duration in seconds, the node
id it stands for) and ``Timeline.memory`` (``MemoryPoint``); ``to_chrome_trace()`` the JSON
object of the trace-event format (``ph: "X"`` spans, ``ph: "C"`` counters, microseconds).
"""

from __future__ import annotations

import dataclasses
import json

from explorer.model.communication import communication_of
from explorer.model.memory import memory_of
from explorer.model.traces import TraceModel

KINDS = (("computation", "forward"), ("backward", "backward"))  # trace kind -> what the axis calls it
TRACKS = ("lines", "fusion regions", "collectives")  # the threads of each side, in this order


@dataclasses.dataclass
class Span:
    """One span: ``track`` is the side and the row (``forward lines``, ``backward fusion regions``...)."""

    side: str
    track: str
    name: str
    start: float  # seconds from the start of the run
    seconds: float
    node_id: str
    line: str
    rank: int = 0
    detail: dict = dataclasses.field(default_factory=dict)

    @property
    def end(self) -> float:
        return self.start + self.seconds


@dataclasses.dataclass
class MemoryPoint:
    """The bytes live after a line (computed; ``measured`` where it was measured)."""

    time: float
    side: str
    live: int
    measured: int | None = None
    rank: int = 0


@dataclasses.dataclass
class Timeline:
    spans: list[Span]
    memory: list[MemoryPoint]
    ranks: list[int]
    device: str | None
    title: str
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def seconds(self) -> float:
        return max((s.end for s in self.spans), default=0.0)

    def sides(self) -> list[str]:
        return list(dict.fromkeys(s.side for s in self.spans))

    def to_chrome_trace(self) -> dict:
        """The Chrome trace-event JSON object: a process per rank, a thread per side and track,
        complete events (``ph: "X"``, ``ts`` and ``dur`` in microseconds) for the spans, counter
        events (``ph: "C"``) for the memory."""
        events: list[dict] = []
        tids: dict[tuple[int, str, str], int] = {}
        for rank in self.ranks:
            events.append(
                {"name": "process_name", "ph": "M", "pid": rank, "tid": 0, "args": {"name": f"rank {rank}"}}
            )
        for s in self.spans:
            key = (s.rank, s.side, s.track)
            if key not in tids:
                tids[key] = tid = 1 + sum(1 for k in tids if k[0] == s.rank)
                events.append(
                    {
                        "name": "thread_name",
                        "ph": "M",
                        "pid": s.rank,
                        "tid": tid,
                        "args": {"name": f"{s.side} {s.track}"},
                    }
                )
                events.append(
                    {
                        "name": "thread_sort_index",
                        "ph": "M",
                        "pid": s.rank,
                        "tid": tid,
                        "args": {"sort_index": tid},
                    }
                )
            events.append(
                {
                    "name": s.name,
                    "cat": f"{s.side},{s.track}",
                    "ph": "X",
                    "ts": round(s.start * 1e6, 3),
                    "dur": round(s.seconds * 1e6, 3),
                    "pid": s.rank,
                    "tid": tids[key],
                    "args": {"line": s.line, "id": s.node_id, **s.detail},
                }
            )
        for m in self.memory:
            args = {"computed": m.live}
            if m.measured is not None:
                args["measured"] = m.measured
            events.append(
                {
                    "name": "memory (bytes)",
                    "ph": "C",
                    "ts": round(m.time * 1e6, 3),
                    "pid": m.rank,
                    "args": args,
                }
            )
        meta = {"title": self.title, "device": self.device, "notes": self.notes}
        return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": meta}

    def save(self, path: str) -> str:
        """Write the Chrome / Perfetto trace file; returns ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_chrome_trace(), f)
        return path

    def __repr__(self) -> str:
        n = sum(1 for s in self.spans if s.track == "lines")
        return (
            f"<Timeline {self.title}: {n} lines over {self.seconds * 1e3:.3f} ms, "
            f"sides {', '.join(self.sides()) or 'none'}, ranks {self.ranks}>"
        )


def _short_name(n) -> str:
    """``torch.ops.aten._softmax_backward_data.default`` as ``aten._softmax_backward_data``."""
    name = n.sym_id
    if name.startswith("torch.ops."):
        name = name[len("torch.ops.") :].removesuffix(".default")
    return name


def timeline_of(model: TraceModel, rank: int = 0, start: float = 0.0) -> Timeline:
    """The timeline of a model whose final traces were timed (``Measurement.attach``)."""
    spans: list[Span] = []
    memory: list[MemoryPoint] = []
    notes: list[str] = []
    t = start
    for kind, side in KINDS:
        s = model.series.get(kind)
        times = model.timings.get(kind)
        if s is None:
            continue
        if not times:
            notes.append(f"the {side} was not timed")
            continue
        p = s.final
        begin: dict[str, float] = {}
        end: dict[str, float] = {}
        try:
            rows = {r.node_id: r for r in memory_of(model, kind).rows}
        except Exception as e:  # a model read back from JSON has no traces to compute on
            rows = {}
            notes.append(f"no memory curve for the {side}: {type(e).__name__}: {e}")
        for n in p.nodes:
            sec = times.get(n.id)
            if sec is None:
                continue
            begin[n.id], end[n.id] = t, t + sec
            detail = {"executor": n.executor} if n.executor else {}
            if n.scope is not None and getattr(n.scope, "path", None):
                detail["module"] = n.scope.path
            spans.append(Span(side, "lines", _short_name(n), t, sec, n.id, n.line, rank, detail))
            if "fusion" in n.tags:
                ops = [c.sym_id for c in n.children if "del" not in c.tags]
                spans.append(Span(side, "fusion regions", n.sym_id, t, sec, n.id, n.line, rank, {"ops": ops}))
            t += sec
            row = rows.get(n.id)
            if row is not None:
                memory.append(MemoryPoint(t, side, row.live, row.measured, rank))
        for c in communication_of(p).collectives:
            if c.id in begin and c.wait in end:
                spans.append(
                    Span(
                        side,
                        "collectives",
                        c.kind + (f" {c.op}" if c.op else ""),
                        begin[c.id],
                        end[c.wait] - begin[c.id],
                        c.id,
                        c.label(),
                        rank,
                        {"wait": c.wait, "bytes": c.bytes, "overlaps": len(c.overlap)},
                    )
                )
    return Timeline(spans, memory, [rank], model.timing_device, model.title, notes)


def timeline(
    obj, args: tuple | None = None, kwargs: dict | None = None, *, entry: int | None = None
) -> Timeline:
    """The timeline of a jitted function run on ``args`` (every line timed first), of a
    TraceModel already timed, or of a distributed run's ranks (``RankSet``: one process each)."""
    from explorer.measure.ranks import RankSet

    if isinstance(obj, RankSet):
        parts = [timeline_of(obj[r], rank=r) for r in obj.ranks]
        out = Timeline(
            [s for p in parts for s in p.spans],
            [m for p in parts for m in p.memory],
            obj.ranks,
            parts[0].device if parts else None,
            parts[0].title if parts else "ranks",
            [f"rank {r}: {n}" for r, p in zip(obj.ranks, parts) for n in p.notes],
        )
        return out
    if isinstance(obj, TraceModel):
        model = obj
    else:
        from explorer.measure.runner import measure
        from explorer.model.compilation import model_of

        if args is not None or kwargs is not None:
            from explorer.measure.fitting import entry_for

            entry = entry_for(obj, tuple(args or ()), kwargs, entry)  # (the user's state put back)
            model = model_of(obj, entry=entry)
            measure(obj, tuple(args or ()), kwargs, entry=entry).attach(model)
        else:
            model = model_of(obj, entry=entry)
    tl = timeline_of(model)
    if not tl.spans:
        tl.notes.append("nothing was timed: pass the inputs, explorer.timeline(jfn, x)")
    return tl


__all__ = ["MemoryPoint", "Span", "Timeline", "timeline", "timeline_of"]
