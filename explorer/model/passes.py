"""A pass's model (``PassModel``), what it changed (``PassDiff``), a trace kind's passes
(``TraceSeries``), and how a series is built from its traces (``build_series``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from explorer.model.nodes import Node, _Builder, path_to
from explorer.model.proxies import ProxyInfo, _proxies_in
from thunder.core.printing import Printer


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
    # the ids of the changes that are ``del`` lines (delete-last-used adds one per value): a
    # view folds them away, they say nothing about what the program computes
    dels: frozenset[str] = frozenset()

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.rewritten)

    @property
    def del_only(self) -> bool:
        """Whether every change is a ``del`` line (added, removed or rewritten)."""
        return self.changed and len(self.dels) == len(self.added) + len(self.removed) + len(self.rewritten)

    def without_dels(self) -> PassDiff:
        """The same changes but the ``del`` lines."""
        if not self.dels:
            return self
        keep = self.dels.__contains__
        rewritten = self.rewritten
        if isinstance(rewritten, Rewrites):
            rewritten = Rewrites({k: v for k, v in rewritten._pairs.items() if not keep(k)})
        else:
            rewritten = {k: v for k, v in rewritten.items() if not keep(k)}
        return PassDiff(
            [k for k in self.added if not keep(k)], [k for k in self.removed if not keep(k)], rewritten
        )

    def mark_dels(self, before: PassModel, after: PassModel) -> PassDiff:
        """Note which changes are ``del`` lines (read off the nodes' facts: nothing printed)."""
        old, new = before._top(), after._top()
        dels = {k for k in self.added if (n := new.get(k)) is not None and n._facts.is_del}
        dels.update(k for k in self.removed if (n := old.get(k)) is not None and n._facts.is_del)
        for k in self.rewritten:
            a, b = old.get(k), new.get(k)
            if a is not None and b is not None and a._facts.is_del and b._facts.is_del:
                dels.add(k)
        self.dels = frozenset(dels)
        return self

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
        if self.del_only:
            n = len(self.dels)
            return f"{n} del line{'' if n == 1 else 's'} only"
        parts = []
        for n, what in (
            (len(self.added), "added"),
            (len(self.removed), "removed"),
            (len(self.rewritten), "rewritten"),
        ):
            if n:
                parts.append(f"{n} {what}")
        if self.dels:
            parts.append(f"of which {len(self.dels)} del")
        return ", ".join(parts)


@dataclasses.dataclass(eq=False)
class PassModel:
    """One trace of a series: the result of one pass. ``modules()`` (set by
    ``explorer.model.modules``) groups its top-level BoundSymbols by nn.Module."""

    index: int
    name: str
    seconds: float | None
    nodes: list[Node]
    args: list[str]
    output: list[str]
    diff: PassDiff | None = None  # None for the first pass
    trace: object = dataclasses.field(default=None, repr=False)  # the Trace; not serialised
    _source: str | None = dataclasses.field(default=None, repr=False)
    # a loaded pass's (explorer.model.saved) return line and saved values; a live one reads its trace
    _return_line: str | None = dataclasses.field(default=None, repr=False)
    _saved: list[str] | None = dataclasses.field(default=None, repr=False)
    _top_index: dict[str, Node] | None = dataclasses.field(default=None, repr=False)
    _modules: object = dataclasses.field(default=None, repr=False)  # its ModuleTree, once made

    @property
    def source(self) -> str:
        """The whole printed trace (computed on first use: a 40,000-line trace takes about a
        second to print; views print a budgeted part of it, see ``explorer.views.text.source_text``)."""
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
    return PassDiff(added, removed, Rewrites(rewritten)).mark_dels(before, after)
