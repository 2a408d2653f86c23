"""TraceModel: plain data about a compilation's traces, for the explorer's views.

The views (text, HTML tree, graph, widgets, report) read only this model, never a ``Trace``
directly, so they stay simple and the model can be saved as JSON and loaded back
(``explorer.model.saved``: ``model.to_json()``, ``TraceModel.from_json``)::

    TraceModel                      one compilation
      .series[kind] -> TraceSeries  "prologue", "computation", "epilogue", "backward"
        .passes -> [PassModel]      one per pass, first to last, with the diff to the previous
          .nodes -> [Node]          top-level BoundSymbols; Node.children are the subsymbols
        .proxies[name] -> ProxyInfo shape / dtype / device of every proxy seen

A node's ``id`` is stable across passes: a top-level BoundSymbol is keyed by the names of
its outputs (names are kept for the same value from pass to pass), one without outputs by its
symbol and inputs; a subsymbol by its parent's id and its own key. Passes are diffed by these
ids. Nodes of BoundSymbols that a pass kept as they were are shared, not rebuilt, and a
node reads its BoundSymbol (line, inputs, subsymbols) only when a view asks: the model of a
40,000-BoundSymbol program with all its passes is built in well under a second, and views
that show a budgeted part of it read only that part.

This module holds the top of the model (``TraceModel``, its cache entries, the trace kinds)
and ``collector_paused``. The parts below it are modules of their own, each importing only
those under it: ``explorer.model.passes`` (a pass, its diff to the one before, a series and
how it is built), ``explorer.model.nodes`` (a node and the facts it reads off its
BoundSymbol) and ``explorer.model.proxies`` (what is known about each named value). The model
imports no other module of the explorer but ``explorer.model.collective_call`` (which reads a
collective off a BoundSymbol and imports only thunder): the views read it, it reads none of them. The few methods of
its classes that need one of them are set on the class by that module, and ``import explorer``
imports those modules, so the methods are there before any model is made:
``PassModel.modules()`` by ``explorer.model.modules``, ``TraceModel.pair()`` by ``explorer.model.pair``,
a model's notebook display (``_repr_mimebundle_``) by ``explorer.views.html``, and ``to_dict()`` /
``to_json()`` / ``TraceModel.from_dict()`` / ``from_json()`` by ``explorer.model.saved``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc

from explorer.model.nodes import Node
from explorer.model.passes import TraceSeries, build_series

TRACE_KINDS = ("prologue", "computation", "epilogue", "backward")


@dataclasses.dataclass(eq=False)
class CacheEntryInfo:
    """One compiled entry of a jitted function: why it was compiled, what it takes."""

    index: int
    miss_reasons: list[str]
    inputs: list[str]
    computation_lines: int
    # its symbolic sizes: symbol -> the size it stands for and why (``x.shape[0]: 4 in an earlier
    # call, 5 in this one``), and the relations between them its prologue checks
    symbols: dict[str, str] = dataclasses.field(default_factory=dict)
    relations: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(eq=False)
class TraceModel:
    """Everything the explorer shows about one compilation. ``pair()`` (set by ``explorer.model.pair``)
    gives its forward and backward as a pair."""

    title: str
    series: dict[str, TraceSeries]
    entries: list[CacheEntryInfo] = dataclasses.field(default_factory=list)
    stats: dict = dataclasses.field(default_factory=dict)
    # measured run times: kind -> node id -> seconds, and where they were measured
    timings: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    timing_device: str | None = None
    entry_index: int | None = None
    _pairs: dict = dataclasses.field(default_factory=dict, repr=False)  # backward pass -> Pair

    # -- building -------------------------------------------------------------------------
    @staticmethod
    def from_trace(trace, title: str | None = None) -> TraceModel:
        return TraceModel.from_traces({trace.name: [trace]}, title=title or trace.name)

    @staticmethod
    def from_traces(traces: dict[str, list], title: str = "compilation") -> TraceModel:
        """``traces``: kind -> traces, one per pass, first to last (empty lists are skipped)."""
        series = {}
        with collector_paused():
            for kind in (*TRACE_KINDS, *(k for k in traces if k not in TRACE_KINDS)):  # (others as given)
                trs = [t for t in traces.get(kind) or () if t is not None]
                if trs:
                    series[kind] = build_series(kind, trs)
        return TraceModel(title, series)

    # -- reading --------------------------------------------------------------------------
    @property
    def kinds(self) -> list[str]:
        return list(self.series)

    def input_links(self) -> dict[str, list[str]]:
        """Computation input -> ids of the final prologue's lines that unpack or check it."""
        pro, comp = self.series.get("prologue"), self.series.get("computation")
        if pro is None or comp is None:
            return {}
        nodes = pro.final.nodes
        producer = {o: n for n in nodes for o in n.outputs}
        checks: dict[str, list[Node]] = {}  # input name -> the lines that only read it, in order
        for n in nodes:
            if not n.outputs:
                for name in dict.fromkeys(n.inputs):
                    checks.setdefault(name, []).append(n)
        links: dict[str, list[str]] = {}
        for name in comp.final.args:
            chain: list[str] = []
            seen: set[str] = set()
            todo = [name]
            while todo:  # the unpacks that lead to the value, back to the function's args
                p = producer.get(todo.pop())
                if p is not None and p.id not in seen:
                    seen.add(p.id)
                    chain.append(p.id)
                    todo.extend(p.inputs)
            links[name] = list(reversed(chain)) + [n.id for n in checks.get(name, ()) if n.id not in seen]
        return links


@contextlib.contextmanager
def collector_paused():
    """Python's cycle collector off while a model is built or a view reads many nodes (also a
    decorator: the model, the tree, the graph, diffs, printed traces, search, the report).
    Reading a node makes a few small objects, and making many sets off collections that each
    scan the compiled traces (millions of objects): for 40,000 BoundSymbols, 0.6 s of model
    building took 1.2-1.9 s with the collector on, and a first graph 1.9 s instead of 0.04 s.
    It is back on (if it was) right after; what these make holds no cycles worth collecting."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
