"""A TraceModel as plain JSON data and back::

    d = model.to_dict()                   # also model.to_json(); json.dumps(d) works
    again = TraceModel.from_dict(d)       # also TraceModel.from_json(text)

A loaded model has no traces: its nodes read the saved data (``SavedFacts``) where a built
model's read BoundSymbols (``model_nodes._Facts``), so every view that reads the model draws it as
it drew the original: the tree, the graph, the text views, the diffs, search, measured times,
module groups, the forward/backward pair and the collectives. What only the live traces have
is not there: a fusion region's standalone repro, the memory view and the what-if comparison
(they run the program), and the user's source code around a line, unless its file is on
this machine. A pass's printed trace is kept whole, so its source view is not cut to a budget.

The format: ``{"format": FORMAT, "title", "series": {kind: {"kind", "passes", "proxies"}},
"entries", "stats", "timings", "timing_device", "entry_index", "input_links", "pair"}``; a
pass is ``{"index", "name", "seconds", "args", "output", "nodes", "diff", "source",
"return_line", "saved_for_backward"}``; a node is ``{"id", "line", "sym", "module",
"executor", "tags", "inputs", "outputs", "source", "header", "scope", "scopes", "info",
"collective", "children"}``, or ``{"id", "as_in_pass": j}`` for a top-level BoundSymbol that
pass ``j`` (an earlier one) already has, as it was: a pass keeps most of them.
``input_links`` and ``pair`` are for readers of the JSON; loading makes them again.

This module sets ``to_dict``, ``to_json``, ``from_dict`` and ``from_json`` on ``TraceModel``
(the model imports no module above it); ``import explorer`` imports it.
"""

from __future__ import annotations

import dataclasses
import json

from explorer.model.nodes import Node, SourceInfo
from explorer.model.passes import PassDiff, PassModel, Rewrites, TraceSeries
from explorer.model.proxies import ProxyInfo, jsonable
from explorer.model.traces import CacheEntryInfo, TraceModel
from thunder.core.passinfo import BoundSymbolInfo
from thunder.core.symbol import ModuleScope, common_scope

FORMAT = 1  # bumped when a saved model would no longer load as it was saved


class SavedModelError(ValueError):
    pass


# -- saving -------------------------------------------------------------------------------------
def to_dict(self: TraceModel) -> dict:
    """The model as plain data (see the module docstring for the format)."""
    pair = self.pair()
    return {
        "format": FORMAT,
        "title": self.title,
        "series": {k: _series_dict(s) for k, s in self.series.items()},
        "entries": [dataclasses.asdict(e) for e in self.entries],
        "stats": jsonable(self.stats),
        "timings": self.timings,
        "timing_device": self.timing_device,
        "entry_index": self.entry_index,
        "input_links": self.input_links(),
        "pair": pair.to_dict() if pair is not None else None,
    }


def to_json(self: TraceModel, **kwargs) -> str:
    return json.dumps(self.to_dict(), **kwargs)


def _node_dict(n: Node) -> dict:
    scope = n.scope
    d = {
        "id": n.id,
        "line": n.line,
        "sym": n.sym,
        "module": n.module,
        "executor": n.executor,
        "tags": list(n.tags),
        "inputs": list(n.inputs),
        "outputs": list(n.outputs),
        "source": dataclasses.asdict(n.source) if n.source else None,
        "header": n.header,
        "scope": scope.path if scope is not None else None,
        "scopes": [[s.path, s.cls] for s in scope.chain()] if scope is not None else None,
        "info": n.info,
        "children": [_node_dict(c) for c in n.children],
    }
    if n.collective is not None:
        d["collective"] = n.collective
    if n.via is not None:
        d["shown"], d["via"] = n.shown_line, n.via
    if n.torch_name is not None:
        d["torch"] = n.torch_name
    return d


def _series_dict(s: TraceSeries) -> dict:
    passes = []
    first_in: dict[int, int] = {}  # id(top-level Node) -> the first pass that has it
    for p in s.passes:
        nodes = []
        for n in p.nodes:
            j = first_in.setdefault(id(n), p.index)
            nodes.append(_node_dict(n) if j == p.index else {"id": n.id, "as_in_pass": j})
        passes.append(
            {
                "index": p.index,
                "name": p.name,
                "seconds": p.seconds,
                "args": p.args,
                "output": p.output,
                "nodes": nodes,
                "diff": None
                if p.diff is None
                else {
                    "added": p.diff.added,
                    "removed": p.diff.removed,
                    "rewritten": {k: list(v) for k, v in p.diff.rewritten.items()},
                },
                "source": p.source,
                "return_line": p.return_line,
                "saved_for_backward": p.saved_for_backward,
            }
        )
    return {
        "kind": s.kind,
        "passes": passes,
        "proxies": {k: dataclasses.asdict(v) for k, v in s.proxies.items()},
    }


# -- loading ------------------------------------------------------------------------------------
def from_dict(d: dict) -> TraceModel:
    """The model ``to_dict`` wrote; its views work as the original's did (see the module
    docstring for what is not there)."""
    if not isinstance(d, dict) or "series" not in d:
        raise SavedModelError(
            f"explorer: expected a saved TraceModel (a dict with 'series', from model.to_dict()), "
            f"got {type(d).__name__}{' with keys ' + ', '.join(map(str, d)) if isinstance(d, dict) else ''}"
        )
    version = d.get("format", FORMAT)
    if version != FORMAT:
        raise SavedModelError(
            f"explorer: this model was saved in format {version}; this explorer reads format {FORMAT}. "
            "Save it again with this version of the explorer."
        )
    model = TraceModel(d.get("title", "compilation"), {k: _series(s) for k, s in d["series"].items()})
    model.entries = [CacheEntryInfo(**e) for e in d.get("entries") or ()]
    model.stats = dict(d.get("stats") or {})
    model.timings = {k: dict(v) for k, v in (d.get("timings") or {}).items()}
    model.timing_device = d.get("timing_device")
    model.entry_index = d.get("entry_index")
    return model


def from_json(text: str) -> TraceModel:
    return from_dict(json.loads(text))


def _proxy(d: dict) -> ProxyInfo:
    inner = d.get("inner")
    return ProxyInfo(**{**d, "inner": {k: _proxy(v) for k, v in inner.items()} if inner else None})


def _series(d: dict) -> TraceSeries:
    loader = _Loader()
    passes: list[PassModel] = []
    for pd in d["passes"]:
        nodes = []
        for nd in pd["nodes"]:
            j = nd.get("as_in_pass")
            if j is None:
                nodes.append(Node(nd["id"], SavedFacts(nd, loader)))
            else:
                nodes.append(passes[j]._top()[nd["id"]])
        diff = pd.get("diff")
        passes.append(
            PassModel(
                index=pd["index"],
                name=pd["name"],
                seconds=pd.get("seconds"),
                nodes=nodes,
                args=list(pd["args"]),
                output=list(pd["output"]),
                diff=None
                if diff is None
                else PassDiff(
                    list(diff["added"]),
                    list(diff["removed"]),
                    Rewrites({k: tuple(v) for k, v in diff["rewritten"].items()}),
                ),
                _source=pd.get("source") or "",
                _return_line=pd.get("return_line"),
                _saved=pd.get("saved_for_backward"),
            )
        )
    for before, after in zip(passes, passes[1:]):
        if after.diff is not None:
            after.diff.mark_dels(before, after)
    proxies = {k: _proxy(v) for k, v in d.get("proxies", {}).items()}
    return TraceSeries(d["kind"], passes, proxies)


class _Loader:
    """What the facts of one series share: module scopes (one object per chain, as a trace
    has one per module call) and the facts of child nodes."""

    def __init__(self):
        self.scopes: dict[tuple, ModuleScope] = {}

    def scope(self, chain) -> ModuleScope | None:
        if not chain:
            return None
        key = tuple(map(tuple, chain))
        s = self.scopes.get(key)
        if s is None:
            parent = self.scope(chain[:-1])
            s = self.scopes[key] = ModuleScope(chain[-1][0], chain[-1][1], parent)
        return s


_INFO_FIELDS = {f.name for f in dataclasses.fields(BoundSymbolInfo)}
_TUPLES = ("differentiates", "recomputes")
_UNREAD = object()


class SavedFacts:
    """What a node of a loaded model reads: the saved data of one BoundSymbol (the same
    attributes as ``model_nodes._Facts``, which reads them off the BoundSymbol)."""

    __slots__ = ("d", "loader", "_kids", "_size", "_lines", "_source", "_scope")

    def __init__(self, d: dict, loader: _Loader):
        self.d = d
        self.loader = loader
        self._kids: list[SavedFacts] | None = None
        self._size = self._lines = None
        self._source = self._scope = _UNREAD

    line = property(lambda self: self.d["line"])
    inputs = property(lambda self: tuple(self.d["inputs"]))
    outputs = property(lambda self: tuple(self.d["outputs"]))
    tags = property(lambda self: tuple(self.d.get("tags") or ()))
    info = property(lambda self: self.d.get("info") or {})
    sym_name = property(lambda self: self.d["sym"])
    sym_module = property(lambda self: self.d["module"])
    header = property(lambda self: self.d.get("header") or "")
    executor = property(lambda self: self.d.get("executor"))
    collective = property(lambda self: self.d.get("collective"))
    has_children = property(lambda self: bool(self.d.get("children")))
    is_del = property(lambda self: "del" in self.tags)
    shown = property(lambda self: (self.d.get("shown") or self.d["line"], self.d.get("via")))
    torch_impl = property(lambda self: self.d.get("torch"))

    @property
    def source(self) -> SourceInfo | None:
        if self._source is _UNREAD:
            s = self.d.get("source")
            self._source = SourceInfo(**s) if s else None
        return self._source

    @property
    def scope(self) -> ModuleScope | None:
        if self._scope is _UNREAD:
            chain = self.d.get("scopes")
            if chain is None and self.d.get("scope") is not None:  # the path alone: class unknown
                chain = [[self.d["scope"], "?"]]
            self._scope = self.loader.scope(chain)
        return self._scope

    @property
    def bsym_info(self) -> BoundSymbolInfo:
        info = {k: v for k, v in self.info.items() if k in _INFO_FIELDS}
        for k in _TUPLES:
            if info.get(k) is not None:
                info[k] = tuple(info[k])
        return BoundSymbolInfo(**info)

    def repro(self) -> None:
        return None  # nvFuser's repro needs the live region

    def kids(self) -> list[SavedFacts]:
        if self._kids is None:
            self._kids = [SavedFacts(c, self.loader) for c in self.d.get("children") or ()]
        return self._kids

    def child_nodes(self, prefix: str) -> list[Node]:
        return [Node(f.d["id"], f) for f in self.kids()]

    def subsymbol_scope(self) -> ModuleScope | None:
        kids = self.kids()
        return common_scope(kids, by_path=True) if kids else None

    @property
    def size(self) -> int:
        if self._size is None:
            self._size = 1 + sum(f.size for f in self.kids())
        return self._size

    @property
    def line_count(self) -> int:
        if self._lines is None:
            header = self.header
            self._lines = (
                1 + (len(header.splitlines()) if header else 0) + sum(f.line_count for f in self.kids())
            )
        return self._lines

    def prints_unlike(self, other) -> bool:
        return self.line != other.line or not self.same_below(other)

    def same_below(self, other) -> bool:
        mine, theirs = self.kids(), _kids_of(other)
        if len(mine) != len(theirs):
            return False
        return all(a.line == b.line and a.same_below(b) for a, b in zip(mine, theirs))


def _kids_of(facts) -> list:
    if isinstance(facts, SavedFacts):
        return facts.kids()
    return [facts.builder.facts(b) for b in facts.bsym.subsymbols]


# ``model.to_dict()`` and the others: set here, as the model imports no module above it
TraceModel.to_dict = to_dict
TraceModel.to_json = to_json
TraceModel.from_dict = staticmethod(from_dict)
TraceModel.from_json = staticmethod(from_json)
