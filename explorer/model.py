"""TraceModel: plain data about a compilation's traces, for the explorer's views.

The views (text, HTML tree, graph, widgets, report) read only this model, never a ``Trace``
directly, so they stay simple and the model can be saved as JSON and loaded back
(``explorer.saved``: ``model.to_json()``, ``TraceModel.from_json``)::

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

This module imports no other module of the explorer but ``explorer.collective_call`` (which
reads a collective off a BoundSymbol and imports only thunder): they all read it. The few methods of its
classes that need one of them are set on the class by that module, and ``import explorer``
imports those modules, so the methods are there before any model is made:
``PassModel.modules()`` by ``explorer.modules``, ``TraceModel.pair()`` by ``explorer.pair``,
a model's notebook display (``_repr_mimebundle_``) by ``explorer.html``, and ``to_dict()`` /
``to_json()`` / ``TraceModel.from_dict()`` / ``from_json()`` by ``explorer.saved``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import linecache
from collections.abc import Mapping

from explorer.collective_call import COMMUNICATION, collective_call
from thunder.core.printing import Printer, bsym_line
from thunder.core.proxies import AnyProxy, NumberProxy, Proxy, TensorProxy, dtype_short
from thunder.core.pytree import tree_leaves
from thunder.core.subclass import SubclassProxy
from thunder.core.symbol import common_scope
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
        Tag.RECOMPUTE_IN_BACKWARD,
        Tag.PROLOGUE_CHECK,
        Tag.UNPACK,
        Tag.INPLACE,
        Tag.DEL,
        Tag.COMMUNICATION,
    }
)
_SUBCLASS_STEP_TAGS = frozenset({Tag.FLATTEN_TENSOR_SUBCLASS, Tag.UNFLATTEN_TENSOR_SUBCLASS})


def _is_proxy(x) -> bool:
    return isinstance(x, Proxy)


@dataclasses.dataclass
class ProxyInfo:
    """What is known about one named value: ``kind`` is tensor, number or object. A tensor
    subclass value also has its class's name in ``subclass`` and its inner tensors (attribute
    -> ProxyInfo, in ``__tensor_flatten__``'s order) in ``inner``."""

    name: str
    kind: str
    type: str
    shape: list[int] | None = None
    dtype: str | None = None
    device: str | None = None
    requires_grad: bool | None = None
    subclass: str | None = None
    inner: dict[str, ProxyInfo] | None = None

    @staticmethod
    def of(p) -> ProxyInfo:
        if isinstance(p, TensorProxy):
            shape = list(p.meta_shape)
            info = ProxyInfo(
                p.name,
                "tensor",
                p.type_string(),
                shape,
                dtype_short(p.meta_dtype),
                str(p.meta_device),
                bool(p.meta_requires_grad),
            )
            if isinstance(p, SubclassProxy):
                info.subclass = p.subclass.__name__
                info.inner = {k: ProxyInfo.of(v) for k, v in p.inner.items()}
            return info
        kind = "number" if isinstance(p, NumberProxy) else "object" if isinstance(p, AnyProxy) else "value"
        return ProxyInfo(p.name, kind, p.type_string())

    def label(self) -> str:
        """``f32[2, 3]`` for a tensor, ``ScaleTensor f32[2, 3]`` for a tensor subclass, the
        type's own name for anything else (edge labels)."""
        if self.kind == "tensor":
            plain = f"{self.dtype}[{', '.join(str(s) for s in self.shape)}]"
            return f"{self.subclass} {plain}" if self.subclass else plain
        return self.type.rsplit(".", 1)[-1]

    def inner_labels(self) -> list[str]:
        """A tensor subclass's inner tensors, ``["_x f32[2, 2]", "_scale f32[]"]`` ([] for others)."""
        return [f"{k} {v.label()}" for k, v in (self.inner or {}).items()]


@dataclasses.dataclass
class SourceInfo:
    """The user's source line a BoundSymbol came from."""

    file: str
    line: int
    function: str
    code: str

    def where(self) -> str:
        return f"{self.file}:{self.line}"


class Node:
    """One BoundSymbol. ``line`` is how it prints; ``children`` are its subsymbols.

    Only ``id`` is set when a node is made. The rest is read from its facts on first use: the
    BoundSymbol's (``_Facts``, shared by every node of that BoundSymbol: passes keep most
    BoundSymbols as they were) or, for a model loaded from JSON, the saved data's
    (``explorer.saved``); ``children`` are made when first asked for: a view of a 40,000-line
    trace touches the few hundred nodes it shows, not all of them and their subsymbols.
    """

    __slots__ = ("id", "_facts", "_children")

    def __init__(self, node_id: str, facts: _Facts):
        self.id = node_id
        self._facts = facts
        self._children: list[Node] | None = None

    line = property(lambda self: self._facts.line, doc="How the BoundSymbol prints (no indentation).")
    inputs = property(lambda self: self._facts.inputs, doc="Names of the proxies it reads.")
    outputs = property(lambda self: self._facts.outputs, doc="Names of the proxies it makes.")
    tags = property(lambda self: self._facts.tags, doc="Tags worth showing (see NOTABLE_TAGS).")
    source = property(lambda self: self._facts.source, doc="The user's source line, if recorded.")
    info = property(lambda self: self._facts.info, doc="BoundSymbol.info, as plain data.")
    bsym_info = property(
        lambda self: self._facts.bsym_info, doc="BoundSymbol.info as it is (a ``BoundSymbolInfo``)."
    )
    sym = property(lambda self: self._facts.sym_name)
    module = property(lambda self: self._facts.sym_module)
    header = property(lambda self: self._facts.header)
    scope = property(
        lambda self: self._facts.scope,
        doc="The ``ModuleScope`` (path, cls, parent) of the nn.Module call it was recorded in, or None.",
    )
    executor = property(lambda self: self._facts.executor)
    collective = property(
        lambda self: self._facts.collective,
        doc="A collective's call (``explorer.communication``): kind and arguments, or None.",
    )

    @property
    def repro(self) -> str | None:
        """A fusion region's standalone script (nvFuser's ``repro()``), or None."""
        return self._facts.repro()

    @property
    def children(self) -> list[Node]:
        if self._children is None:
            self._children = self._facts.child_nodes(self.id + "/") if self._facts.has_children else []
        return self._children

    @property
    def sym_id(self) -> str:
        return f"{self.module}.{self.sym}" if self.module else self.sym

    def walk(self):
        """This node and all nodes below it, parents first."""
        stack = [self]
        while stack:
            n = stack.pop()
            yield n
            if n._facts.has_children:
                stack.extend(reversed(n.children))

    def size(self) -> int:
        """This node and all below it (counted on the BoundSymbols: no nodes are made)."""
        return self._facts.size

    def line_count(self) -> int:
        """How many lines it prints as: header comments, its line, its subsymbols."""
        return self._facts.line_count

    def prints_unlike(self, other: Node) -> bool:
        """Whether the two print differently, their subsymbols included."""
        return self._facts.prints_unlike(other._facts)

    def __repr__(self) -> str:
        return f"<Node {self.id}: {self.line}>"


class Rewrites(Mapping):
    """node id -> (old line, new line) of the BoundSymbols a pass rewrote. The lines are
    printed when read: a pass that claims 40,000 BoundSymbols is found to have rewritten them
    without printing any, and a view prints the few it shows."""

    def __init__(self, pairs: dict[str, tuple] | None = None):
        self._pairs: dict[str, tuple] = pairs or {}  # id -> (old, new), Nodes or lines

    def __getitem__(self, node_id: str) -> tuple[str, str]:
        old, new = self._pairs[node_id]
        return (old if isinstance(old, str) else old.line, new if isinstance(new, str) else new.line)

    def __iter__(self):
        return iter(self._pairs)

    def __len__(self) -> int:
        return len(self._pairs)

    def __repr__(self) -> str:
        return f"<Rewrites of {len(self)} bound symbols>"


def path_to(top: dict[str, Node], node_id: str) -> list[Node]:
    """The nodes from the top level down to ``node_id`` ([] when it is not there); ``top``
    maps the top-level ids to their nodes. A subsymbol's id extends its parent's with ``/``,
    so only the branch that leads to it is read."""
    n = top.get(node_id)
    if n is not None:
        return [n]
    for i, ch in enumerate(node_id):
        if ch != "/" or node_id[:i] not in top:
            continue  # (an id may hold a "/" of its own: try each top-level prefix)
        path = [top[node_id[:i]]]
        while path[-1].id != node_id:
            below = path[-1].children
            n = next((c for c in below if c.id == node_id or node_id.startswith(c.id + "/")), None)
            if n is None:
                break
            path.append(n)
        if path[-1].id == node_id:
            return path
    return []


@dataclasses.dataclass
class ShownChanges:
    """The ids of the changes a view shows, and how many it leaves out."""

    removed: list[str]
    added: list[str]
    rewritten: list[str]
    left: int


@dataclasses.dataclass
class PassDiff:
    """What a pass changed, by node id: ``rewritten`` maps id -> (old line, new line)."""

    added: list[str]
    removed: list[str]
    rewritten: Mapping[str, tuple[str, str]]

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.rewritten)

    def shown(self, budget: int | None) -> ShownChanges:
        """The changes a view shows within ``budget`` rows (None: all): each kind gets an
        equal share, and what one kind does not need goes to the others."""
        kinds = (self.removed, self.added, list(self.rewritten))
        take = [len(k) for k in kinds] if budget is None else [0, 0, 0]
        room = 0 if budget is None else budget
        while room > 0 and any(t < len(k) for t, k in zip(take, kinds)):
            wanting = [i for i, k in enumerate(kinds) if take[i] < len(k)]
            share = max(room // len(wanting), 1)
            for i in wanting:
                extra = min(share, len(kinds[i]) - take[i], room)
                take[i] += extra
                room -= extra
        left = sum(len(k) for k in kinds) - sum(take)
        return ShownChanges(*(k[:t] for k, t in zip(kinds, take)), left)

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
    """One trace of a series: the result of one pass. ``modules()`` (set by
    ``explorer.modules``) groups its top-level BoundSymbols by nn.Module."""

    index: int
    name: str
    seconds: float | None
    nodes: list[Node]
    args: list[str]
    output: list[str]
    diff: PassDiff | None = None  # None for the first pass
    trace: object = dataclasses.field(default=None, repr=False)  # the Trace; not serialised
    _source: str | None = dataclasses.field(default=None, repr=False)
    # a loaded pass's (explorer.saved) return line and saved values; a live one reads its trace
    _return_line: str | None = dataclasses.field(default=None, repr=False)
    _saved: list[str] | None = dataclasses.field(default=None, repr=False)
    _top_index: dict[str, Node] | None = dataclasses.field(default=None, repr=False)
    _modules: object = dataclasses.field(default=None, repr=False)  # its ModuleTree, once made

    @property
    def source(self) -> str:
        """The whole printed trace (computed on first use: a 40,000-line trace takes about a
        second to print; views print a budgeted part of it, see ``explorer.text.source_text``)."""
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
        """The node of that id, at any depth (only the branch that leads to it is read)."""
        path = path_to(self._top(), node_id)
        return path[-1] if path else None

    def _top(self) -> dict[str, Node]:
        if self._top_index is None:
            self._top_index = {n.id: n for n in self.nodes}
        return self._top_index

    def size(self) -> int:
        return sum(n.size() for n in self.nodes)

    @property
    def return_line(self) -> str:
        """The trace's ``return`` statement, as printed (without indentation)."""
        if self.trace is None:
            return self._return_line or "return " + ", ".join(self.output)
        printer = Printer()
        printer.ctx.update(getattr(self.trace, "ctx_objects", None) or {})
        return "return " + printer.value(self.trace.output)

    @property
    def saved_for_backward(self) -> list[str] | None:
        """What a forward hands its backward (or a backward takes), by name; None before the
        grad pass splits them (the trace's ``info.saved_for_backward``)."""
        if self.trace is None:
            return self._saved
        return getattr(getattr(self.trace, "info", None), "saved_for_backward", None)

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
    proxies: Mapping[str, ProxyInfo]  # a ProxyTable when built from traces

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
    """Everything the explorer shows about one compilation. ``pair()`` (set by ``explorer.pair``)
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


# -- building ---------------------------------------------------------------------------------
_PROXY_TYPES = Proxy
_PLAIN = frozenset({int, float, bool, str, complex, type(None)})


def _proxies_in(x, out: list) -> list:
    """The proxies in ``x``, in ``tree_leaves`` order. The common shapes (a proxy, tuples,
    lists, dicts, plain numbers) are read here; anything else goes through ``tree_leaves``,
    which costs ten times more and is a third of building a model when used for everything."""
    t = type(x)
    if t is TensorProxy or isinstance(x, _PROXY_TYPES):
        out.append(x)
    elif t is tuple or t is list:
        for v in x:
            _proxies_in(v, out)
    elif t is dict:
        for v in x.values():
            _proxies_in(v, out)
    elif t not in _PLAIN:
        out.extend(v for v in tree_leaves(x) if isinstance(v, _PROXY_TYPES))
    return out


class ProxyTable(Mapping):
    """name -> ProxyInfo for every proxy of a series, made on first lookup.

    The names a built node reads or makes are known at once; the rest (deep in subsymbols no
    view has opened yet) are read from the traces the first time a name is not found.
    """

    def __init__(self):
        self._objects: dict[str, object] = {}  # name -> the first proxy seen by that name
        self._infos: dict[str, ProxyInfo] = {}
        self._pending: list[list] = []  # lists of BoundSymbols not read yet

    def note(self, proxies) -> tuple[str, ...]:
        """Remember ``proxies``; their names."""
        names = tuple(p.name for p in proxies)
        known = self._objects
        for name, p in zip(names, proxies):
            if name not in known:
                known[name] = p
        return names

    def __getitem__(self, name: str) -> ProxyInfo:
        info = self._infos.get(name)
        if info is None:
            p = self._objects.get(name)
            if p is None and self._pending:
                self._read_pending()
                p = self._objects.get(name)
            if p is None:
                raise KeyError(name)
            info = self._infos[name] = ProxyInfo.of(p)
        return info

    def __iter__(self):
        self._read_pending()
        return iter(self._objects)

    def __len__(self) -> int:
        self._read_pending()
        return len(self._objects)

    def _read_pending(self) -> None:
        seen: set[int] = set()
        stack, self._pending = self._pending, []
        while stack:
            for b in stack.pop():
                if id(b) in seen:  # passes share BoundSymbols
                    continue
                seen.add(id(b))
                self.note(_proxies_in(b.output, _proxies_in((b.args, b.kwargs), [])))
                if b.subsymbols:
                    stack.append(b.subsymbols)


_UNSET = object()


def _is_subclass_step(b) -> bool:
    """A tensor subclass's flatten or unflatten, by the tags a node of it would show."""
    return bool(_SUBCLASS_STEP_TAGS & b.tags or _SUBCLASS_STEP_TAGS & b.sym.tags)


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


class _Facts:
    """What the views read off one BoundSymbol, each computed on first use."""

    __slots__ = (
        "bsym",
        "builder",
        "node",
        "_outputs",
        "_line",
        "_inputs",
        "_tags",
        "_size",
        "_lines",
        "_source",
        "_info",
        "_collective",
    )

    def __init__(self, bsym, builder: _Builder):
        self.bsym = bsym  # kept: ids of BoundSymbols key the builder's tables
        self.builder = builder
        self._outputs = self._line = self._inputs = self._tags = self._size = self._lines = None
        self._source = self._info = self._collective = _UNSET
        self.node = None  # the first node made for it

    # what a Node reads through its facts; a loaded model's facts (explorer.saved) have the same
    bsym_info = property(lambda self: self.bsym.info)
    sym_name = property(lambda self: self.bsym.sym.name)
    sym_module = property(lambda self: self.bsym.sym.module)
    header = property(lambda self: self.bsym.header)
    scope = property(lambda self: self.bsym.scope)
    has_children = property(lambda self: bool(self.bsym.subsymbols))

    @property
    def executor(self) -> str | None:
        return getattr(self.bsym.sym, "executor", None) or self.bsym.info.claimed_by

    @property
    def is_del(self) -> bool:
        """Tagged ``del`` (read off the BoundSymbol: ``tags`` also look at the subsymbols)."""
        return self.bsym.has_tag(Tag.DEL)

    def repro(self) -> str | None:
        make = getattr(self.bsym.sym.impl, "repro", None)
        return make() if callable(make) else None

    def child_nodes(self, prefix: str) -> list[Node]:
        return self.builder.nodes(self.bsym.subsymbols, prefix)

    def subsymbol_scope(self):
        """The innermost module path enclosing all its subsymbols (a fusion region's), or None."""
        return common_scope(self.bsym.subsymbols, by_path=True) if self.bsym.subsymbols else None

    @property
    def collective(self) -> dict | None:
        if self._collective is _UNSET:
            self._collective = collective_call(self.bsym)
        return self._collective

    @property
    def outputs(self) -> tuple[str, ...]:
        if self._outputs is None:
            out = self.bsym.output
            if type(out) is TensorProxy:  # the usual case, read without a list
                self._outputs = self.builder.proxies.note((out,))
            else:
                self._outputs = self.builder.proxies.note(_proxies_in(out, []))
        return self._outputs

    @property
    def line(self) -> str:
        if self._line is None:
            self._line = bsym_line(self.bsym, self.builder.printer)
        return self._line

    @property
    def inputs(self) -> tuple[str, ...]:
        if self._inputs is None:
            b = self.bsym
            self._inputs = self.builder.proxies.note(_proxies_in((b.args, b.kwargs), []))
        return self._inputs

    @property
    def tags(self) -> tuple[str, ...]:
        if self._tags is None:
            b, sym = self.bsym, self.bsym.sym
            tags = {t.value for t in b.tags | (sym.tags & NOTABLE_TAGS)}
            if any(_is_subclass_step(c) for c in b.subsymbols):
                tags.add(Tag.TENSOR_SUBCLASS.value)
            if self.collective is not None:  # the executor's line of a collective too
                tags.add(COMMUNICATION)
            self._tags = tuple(sorted(tags))
        return self._tags

    @property
    def source(self) -> SourceInfo | None:
        if self._source is _UNSET:
            self._source = self.builder.source(self.bsym.source)
        return self._source

    @property
    def info(self) -> dict:
        if self._info is _UNSET:
            self._info = jsonable(self.bsym.info.noted())
        return self._info

    @property
    def size(self) -> int:
        if self._size is None:
            n = 1
            for c in self.bsym.subsymbols:
                n += self.builder.facts(c).size
            self._size = n
        return self._size

    @property
    def line_count(self) -> int:
        if self._lines is None:
            header = self.bsym.header
            n = 1 + (len(header.splitlines()) if header else 0)
            for c in self.bsym.subsymbols:
                n += self.builder.facts(c).line_count
            self._lines = n
        return self._lines

    def prints_unlike(self, other: _Facts) -> bool:
        """Whether the two BoundSymbols print differently, their subsymbols included."""
        a, b = self.bsym.sym, other.bsym.sym
        if a.id != b.id and getattr(a, "printer", None) is None and getattr(b, "printer", None) is None:
            return True  # a call prints as `out = module.name(...)`: another symbol, another line
        return self.line != other.line or not self.same_below(other)

    def same_below(self, other: _Facts) -> bool:
        """Whether the subsymbols of both print the same, all the way down."""
        mine, theirs = self.bsym.subsymbols, other.bsym.subsymbols
        if len(mine) != len(theirs):
            return False
        facts = self.builder.facts
        for a, b in zip(mine, theirs):
            if a is not b:
                fa, fb = facts(a), other.builder.facts(b)
                if fa.line != fb.line or not fa.same_below(fb):
                    return False
        return True


class _Builder:
    """Makes the nodes of one series. Facts are kept per BoundSymbol and nodes per
    (BoundSymbol, id), so what a pass kept as it was is neither read nor made again."""

    def __init__(self):
        self.proxies = ProxyTable()
        self._facts: dict[int, _Facts] = {}
        self._nodes: dict[tuple[int, str], Node] = {}
        self.sources: dict[tuple[str, int], SourceInfo] = {}
        self.printer = Printer()

    def facts(self, b) -> _Facts:
        f = self._facts.get(id(b))
        if f is None:
            f = self._facts[id(b)] = _Facts(b, self)
        return f

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
        made = self._nodes
        for b in bsyms:
            f = self.facts(b)
            key = ",".join(f.outputs) if f.outputs else None
            if key is None or key in seen:
                # by name, not module: prims.check_len and pythonex.check_len are the same line
                key = key or f"{b.sym.name}({','.join(f.inputs)})"
                n = seen.get(key, 0)
                seen[key] = n + 1
                if n:
                    key = f"{key}#{n}"
            else:
                seen[key] = 1
            node_id = prefix + key
            node = f.node
            if node is None:
                node = f.node = Node(node_id, f)
            elif node.id != node_id:  # a BoundSymbol seen elsewhere: a top-level line now below a claim
                node = made.get((id(b), node_id))
                if node is None:
                    node = made[(id(b), node_id)] = Node(node_id, f)
            out.append(node)
        return out


def build_series(kind: str, traces: list) -> TraceSeries:
    """The model of one trace kind from its traces, one per pass, first to last."""
    builder = _Builder()
    passes: list[PassModel] = []
    for i, t in enumerate(traces):
        prov = getattr(t, "provenance", None)
        name = prov.pass_name if prov is not None else ("acquisition" if i == 0 else f"pass {i}")
        seconds = prov.seconds if prov is not None else None
        builder.proxies._pending.append(t.bound_symbols)
        pm = PassModel(
            index=i,
            name=name,
            seconds=seconds,
            nodes=builder.nodes(t.bound_symbols, ""),
            args=list(builder.proxies.note(_proxies_in(t.args, []))),
            output=list(builder.proxies.note(_proxies_in(t.output, []))),
            trace=t,
        )
        if passes:
            pm.diff = diff_passes(passes[-1], pm)
        passes.append(pm)
    return TraceSeries(kind, passes, builder.proxies)


def diff_passes(before: PassModel, after: PassModel) -> PassDiff:
    """Added, removed and rewritten top-level BoundSymbols, keyed by node id (one pass over
    each trace: ids are looked up in a dict, and nodes a pass kept are the same object)."""
    old, new = before._top(), after._top()
    added = [k for k in new if k not in old]
    removed = [k for k in old if k not in new]
    rewritten: dict[str, tuple] = {}
    for k, n in new.items():
        o = old.get(k)
        if o is None or o is n or o._facts is n._facts:
            continue
        if o._facts.prints_unlike(n._facts):
            rewritten[k] = (o, n)
    if not (added or removed or rewritten) and (before.output != after.output or before.args != after.args):
        rewritten["return"] = (", ".join(before.output), ", ".join(after.output))
    return PassDiff(added, removed, Rewrites(rewritten))


# -- plain data -------------------------------------------------------------------------------
def jsonable(x):
    """``x`` as JSON-able data: proxies by name, anything not plain by its ``repr``."""
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in x]
    if _is_proxy(x):
        return x.name
    return repr(x)
