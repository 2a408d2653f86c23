"""TraceModel: plain data about a compilation's traces, for the explorer's views.

The views (text, HTML tree, graph, widgets, report) read only this model, never a ``Trace``
directly, so they stay simple and the model can be saved as JSON::

    TraceModel                      one compilation
      .series[kind] -> TraceSeries  "prologue", "computation", "epilogue", "backward"
        .passes -> [PassModel]      one per pass, first to last, with the diff to the previous
          .nodes -> [Node]          top-level BoundSymbols; Node.children are the subsymbols
        .proxies[name] -> ProxyInfo shape / dtype / device of every proxy seen

A node's ``id`` is stable across passes: a top-level BoundSymbol is keyed by the names of
its outputs (names are kept for the same value from pass to pass), one without outputs by its
symbol and inputs; a subsymbol by its parent's id and its own key. Passes are diffed by these
ids. Nodes of BoundSymbols that a pass kept as they were are shared, not rebuilt, which
keeps building all passes of a large model cheap.
"""

from __future__ import annotations

import dataclasses
import json
import linecache

from thunder.core.printing import Printer, bsym_line
from thunder.core.proxies import AnyProxy, NumberProxy, Proxy, TensorProxy, dtype_short
from thunder.core.pytree import tree_leaves
from thunder.core.tags import Tag

TRACE_KINDS = ("prologue", "computation", "epilogue", "backward")

# Tags worth showing: from BoundSymbol.tags, or from Symbol.tags when the symbol carries them.
# A node's tags are their names (``Tag.value``), so the model stays plain data.
NOTABLE_TAGS = frozenset(
    {
        Tag.FLATTEN_TENSOR_SUBCLASS,
        Tag.UNFLATTEN_TENSOR_SUBCLASS,
        Tag.TENSOR_SUBCLASS,
        Tag.DATACLASS_NEW,
        Tag.WRITEBACK,
        Tag.FUSION,
        Tag.BACKWARD,
        Tag.SAVED_FOR_BACKWARD,
        Tag.RECOMPUTED,
        Tag.PROLOGUE_CHECK,
        Tag.UNPACK,
        Tag.INPLACE,
        Tag.DEL,
    }
)
_SUBCLASS_CHILD_TAGS = frozenset({Tag.FLATTEN_TENSOR_SUBCLASS.value, Tag.UNFLATTEN_TENSOR_SUBCLASS.value})


def _is_proxy(x) -> bool:
    return isinstance(x, Proxy)


@dataclasses.dataclass
class ProxyInfo:
    """What is known about one named value: ``kind`` is tensor, number or object."""

    name: str
    kind: str
    type: str
    shape: list[int] | None = None
    dtype: str | None = None
    device: str | None = None
    requires_grad: bool | None = None

    @staticmethod
    def of(p) -> ProxyInfo:
        if isinstance(p, TensorProxy):
            shape = list(p.meta_shape)
            return ProxyInfo(
                p.name,
                "tensor",
                p.type_string(),
                shape,
                dtype_short(p.meta_dtype),
                str(p.meta_device),
                bool(p.meta_requires_grad),
            )
        kind = "number" if isinstance(p, NumberProxy) else "object" if isinstance(p, AnyProxy) else "value"
        return ProxyInfo(p.name, kind, p.type_string())

    def label(self) -> str:
        """``f32[2, 3]`` for a tensor, the type's own name for anything else (edge labels)."""
        if self.kind == "tensor":
            return f"{self.dtype}[{', '.join(str(s) for s in self.shape)}]"
        return self.type.rsplit(".", 1)[-1]


@dataclasses.dataclass
class SourceInfo:
    """The user's source line a BoundSymbol came from."""

    file: str
    line: int
    function: str
    code: str

    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclasses.dataclass(eq=False)
class Node:
    """One BoundSymbol. ``line`` is how it prints; ``children`` are its subsymbols."""

    id: str
    line: str
    sym: str
    module: str
    executor: str | None
    tags: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    source: SourceInfo | None
    header: str
    info: dict
    children: list[Node]

    @property
    def sym_id(self) -> str:
        return f"{self.module}.{self.sym}" if self.module else self.sym

    def walk(self):
        """This node and all nodes below it, parents first."""
        yield self
        for c in self.children:
            yield from c.walk()

    def size(self) -> int:
        return 1 + sum(c.size() for c in self.children)


@dataclasses.dataclass
class PassDiff:
    """What a pass changed, by node id: ``rewritten`` maps id -> (old line, new line)."""

    added: list[str]
    removed: list[str]
    rewritten: dict[str, tuple[str, str]]

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.rewritten)

    def summary(self) -> str:
        if not self.changed:
            return "no change"
        parts = []
        for n, what in (
            (len(self.added), "added"),
            (len(self.removed), "removed"),
            (len(self.rewritten), "rewritten"),
        ):
            if n:
                parts.append(f"{n} {what}")
        return ", ".join(parts)


@dataclasses.dataclass(eq=False)
class PassModel:
    """One trace of a series: the result of one pass."""

    index: int
    name: str
    seconds: float | None
    nodes: list[Node]
    args: list[str]
    output: list[str]
    diff: PassDiff | None = None  # None for the first pass
    trace: object = dataclasses.field(default=None, repr=False)  # the Trace; not serialised
    _source: str | None = dataclasses.field(default=None, repr=False)

    @property
    def source(self) -> str:
        """The printed trace (computed on first use: printing a large trace costs)."""
        if self._source is None:
            self._source = str(self.trace) if self.trace is not None else ""
        return self._source

    @property
    def changed(self) -> bool:
        return self.diff is None or self.diff.changed

    def walk(self):
        for n in self.nodes:
            yield from n.walk()

    def find(self, node_id: str) -> Node | None:
        index = self._index()
        return index.get(node_id)

    def _index(self) -> dict[str, Node]:
        idx = self.__dict__.get("_idx")
        if idx is None:
            idx = {n.id: n for n in self.walk()}
            self.__dict__["_idx"] = idx
        return idx

    def size(self) -> int:
        return sum(n.size() for n in self.nodes)

    def edges(self) -> list[tuple[str, str, str]]:
        """Top-level dataflow: (producer id or ``input:name``, consumer id, proxy name)."""
        producer = {a: f"input:{a}" for a in self.args}
        out = []
        for n in self.nodes:
            for name in n.inputs:
                src = producer.get(name)
                if src is not None:
                    out.append((src, n.id, name))
            for name in n.outputs:
                producer.setdefault(name, n.id)
        for name in self.output:
            if name in producer:
                out.append((producer[name], "return", name))
        return out


@dataclasses.dataclass(eq=False)
class TraceSeries:
    """All passes of one trace kind (prologue, computation, epilogue or backward)."""

    kind: str
    passes: list[PassModel]
    proxies: dict[str, ProxyInfo]

    @property
    def final(self) -> PassModel:
        return self.passes[-1]


@dataclasses.dataclass(eq=False)
class CacheEntryInfo:
    """One compiled entry of a jitted function: why it was compiled, what it takes."""

    index: int
    miss_reasons: list[str]
    inputs: list[str]
    computation_lines: int


@dataclasses.dataclass(eq=False)
class TraceModel:
    """Everything the explorer shows about one compilation."""

    title: str
    series: dict[str, TraceSeries]
    entries: list[CacheEntryInfo] = dataclasses.field(default_factory=list)
    stats: dict = dataclasses.field(default_factory=dict)
    # measured run times: kind -> node id -> seconds, and where they were measured
    timings: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    timing_device: str | None = None
    entry_index: int | None = None

    # -- building -------------------------------------------------------------------------
    @staticmethod
    def from_trace(trace, title: str | None = None) -> TraceModel:
        return TraceModel.from_traces({trace.name: [trace]}, title=title or trace.name)

    @staticmethod
    def from_traces(traces: dict[str, list], title: str = "compilation") -> TraceModel:
        """``traces``: kind -> traces, one per pass, first to last (empty lists are skipped)."""
        series = {}
        for kind in (*TRACE_KINDS, *sorted(set(traces) - set(TRACE_KINDS))):
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
            checks = [n.id for n in nodes if name in n.inputs and not n.outputs and n.id not in seen]
            links[name] = list(reversed(chain)) + checks
        return links

    def _repr_mimebundle_(self, include=None, exclude=None):
        from explorer.html import model_html  # views are imported only to display
        from explorer.text import model_text

        return {"text/plain": model_text(self), "text/html": model_html(self)}

    # -- serialising ----------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "title": self.title,
            "series": {k: _series_dict(s) for k, s in self.series.items()},
            "entries": [dataclasses.asdict(e) for e in self.entries],
            "stats": _jsonable(self.stats),
            "timings": self.timings,
            "timing_device": self.timing_device,
            "entry_index": self.entry_index,
            "input_links": self.input_links(),
        }

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)


# -- building ---------------------------------------------------------------------------------
class _Builder:
    """Builds the nodes of one series, reusing nodes of BoundSymbols seen in earlier passes."""

    def __init__(self):
        self.proxies: dict[str, ProxyInfo] = {}
        # id(bsym) -> (bsym, node id, node): the bsym is kept so its id() is not reused
        self.memo: dict[int, tuple[object, str, Node]] = {}
        self.sources: dict[tuple[str, int], SourceInfo] = {}
        self.printer = Printer()

    def proxy_names(self, values) -> tuple[str, ...]:
        names = []
        for p in tree_leaves(values):
            if isinstance(p, Proxy):
                name = p.name
                names.append(name)
                if name not in self.proxies:
                    self.proxies[name] = ProxyInfo.of(p)
        return tuple(names)

    def source(self, loc) -> SourceInfo | None:
        if loc is None:
            return None
        key = (loc.filename, loc.lineno)
        info = self.sources.get(key)
        if info is None:
            code = linecache.getline(loc.filename, loc.lineno).strip()
            info = self.sources[key] = SourceInfo(loc.filename, loc.lineno, loc.function, code)
        return info

    def nodes(self, bsyms, prefix: str) -> list[Node]:
        out = []
        seen: dict[str, int] = {}
        for b in bsyms:
            outputs = self.proxy_names(b.output)
            key = ",".join(outputs) if outputs else None
            if key is None or key in seen:
                # by name, not module: prims.check_len and pythonex.check_len are the same line
                key = key or f"{b.sym.name}({','.join(p.name for p in b.flat_proxy_args)})"
                n = seen.get(key, 0)
                seen[key] = n + 1
                if n:
                    key = f"{key}#{n}"
            else:
                seen[key] = 1
            node_id = prefix + key
            hit = self.memo.get(id(b))
            if hit is not None and hit[1] == node_id:
                out.append(hit[2])
                continue
            node = self.node(b, node_id, outputs)
            self.memo[id(b)] = (b, node_id, node)
            out.append(node)
        return out

    def node(self, b, node_id: str, outputs: tuple[str, ...]) -> Node:
        sym = b.sym
        children = self.nodes(b.subsymbols, node_id + "/") if b.subsymbols else []
        tags = {t.value for t in b.tags | (sym.tags & NOTABLE_TAGS)}
        if any(_SUBCLASS_CHILD_TAGS.intersection(c.tags) for c in children):
            tags.add(Tag.TENSOR_SUBCLASS.value)
        executor = getattr(sym, "executor", None) or b.info.get("claimed_by")
        return Node(
            id=node_id,
            line=bsym_line(b, self.printer),
            sym=sym.name,
            module=sym.module,
            executor=executor,
            tags=tuple(sorted(tags)),
            inputs=self.proxy_names((b.args, b.kwargs)),
            outputs=outputs,
            source=self.source(b.source),
            header=b.header,
            info=_jsonable(b.info) if b.info else {},
            children=children,
        )


def build_series(kind: str, traces: list) -> TraceSeries:
    """The model of one trace kind from its traces, one per pass, first to last."""
    builder = _Builder()
    passes: list[PassModel] = []
    for i, t in enumerate(traces):
        prov = getattr(t, "provenance", None)
        name = prov.pass_name if prov is not None else ("acquisition" if i == 0 else f"pass {i}")
        seconds = prov.seconds if prov is not None else None
        pm = PassModel(
            index=i,
            name=name,
            seconds=seconds,
            nodes=builder.nodes(t.bound_symbols, ""),
            args=list(builder.proxy_names(t.args)),
            output=list(builder.proxy_names(t.output)),
            trace=t,
        )
        if passes:
            pm.diff = diff_passes(passes[-1], pm)
        passes.append(pm)
    return TraceSeries(kind, passes, builder.proxies)


def diff_passes(before: PassModel, after: PassModel) -> PassDiff:
    """Added, removed and rewritten top-level BoundSymbols, keyed by node id."""
    old = {n.id: n for n in before.nodes}
    new = {n.id: n for n in after.nodes}
    added = [k for k in new if k not in old]
    removed = [k for k in old if k not in new]
    rewritten = {}
    for k, n in new.items():
        o = old.get(k)
        if o is None or o is n:
            continue
        if o.line != n.line or _shape(o) != _shape(n):
            rewritten[k] = (o.line, n.line)
    if not (added or removed or rewritten) and (before.output != after.output or before.args != after.args):
        rewritten["return"] = (", ".join(before.output), ", ".join(after.output))
    return PassDiff(added, removed, rewritten)


def _shape(n: Node) -> tuple:
    """What a node looks like below its line: its subsymbols' lines, recursively."""
    return tuple((c.line, _shape(c)) for c in n.children)


# -- serialising ------------------------------------------------------------------------------
def _jsonable(x):
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in x]
    if _is_proxy(x):
        return x.name
    return repr(x)


def _node_dict(n: Node) -> dict:
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
        "info": n.info,
        "children": [_node_dict(c) for c in n.children],
    }
    return d


def _series_dict(s: TraceSeries) -> dict:
    passes = []
    for p in s.passes:
        passes.append(
            {
                "index": p.index,
                "name": p.name,
                "seconds": p.seconds,
                "args": p.args,
                "output": p.output,
                "nodes": [_node_dict(n) for n in p.nodes],
                "diff": None
                if p.diff is None
                else {
                    "added": p.diff.added,
                    "removed": p.diff.removed,
                    "rewritten": {k: list(v) for k, v in p.diff.rewritten.items()},
                },
                "source": p.source,
            }
        )
    return {
        "kind": s.kind,
        "passes": passes,
        "proxies": {k: dataclasses.asdict(v) for k, v in s.proxies.items()},
    }
