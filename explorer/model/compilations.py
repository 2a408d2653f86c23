"""Two compilations side by side, as plain data: two cache entries of one function (what changed
between them and which check of the older one the newer one's inputs failed) or the programs of
two functions (the same code under two executor lists: which executor runs how many lines, how
many fusion regions).

``compilation_pair(a, b)`` takes the ``TraceModel`` of each side (``model_of(jfn, entry=i)``)
and compares, per trace kind, the final pass of each: the top-level lines only one side has
(the prologue's checks: a shape that became a symbol, a literal; the computation's lines: a
fusion region instead of torch calls), a unified diff of the two programs' lines, and the lines
per executor. Views: ``explorer.views.columns.compilations``.
"""

from __future__ import annotations

import collections
import dataclasses
import difflib

from explorer.model.passes import PassModel
from explorer.model.traces import TraceModel

KINDS = ("prologue", "computation", "backward")


@dataclasses.dataclass(eq=False)
class Side:
    """One compilation: a label (``f entry 1``), its model, and its cache entry's index."""

    label: str
    model: TraceModel
    entry: int | None

    def final(self, kind: str) -> PassModel | None:
        s = self.model.series.get(kind)
        return s.final if s is not None else None

    def executors(self, kind: str) -> dict[str, int]:
        """Top-level lines of the final ``kind`` trace per executor (``-``: none, a ``del``)."""
        p = self.final(kind)
        counts: collections.Counter = collections.Counter()
        for n in p.nodes if p is not None else ():
            if "del" not in n.tags:
                counts[n.executor or "-"] += 1
        return dict(counts)

    def regions(self, kind: str) -> int:
        """The fusion regions among its top-level lines."""
        p = self.final(kind)
        return sum(1 for n in (p.nodes if p is not None else ()) if "fusion" in n.tags)


@dataclasses.dataclass(eq=False)
class KindDiff:
    """One trace kind's final passes compared: the lines (as shown) only on the left, only on the
    right, and a unified diff of both programs (``""``: they print the same)."""

    kind: str
    only_left: list[str]
    only_right: list[str]
    diff: str

    @property
    def same(self) -> bool:
        return not (self.only_left or self.only_right)


@dataclasses.dataclass(eq=False)
class CompilationPair:
    left: Side
    right: Side
    kinds: dict[str, KindDiff]
    # two entries of one function: why the right one was compiled (the check of the left one
    # its inputs failed), and its sizes that became symbols with why
    why: str | None = None
    symbols: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def same_function(self) -> bool:
        return self.why is not None


def compilation_pair(left: Side, right: Side, *, one_function: bool = False) -> CompilationPair:
    """Compare ``left`` and ``right`` kind by kind (see the module's docstring). ``one_function``:
    both are cache entries of one jitted function; the newer one's miss reasons say which check
    of the older one its inputs failed."""
    kinds = {}
    for kind in KINDS:
        a, b = left.final(kind), right.final(kind)
        if a is None and b is None:
            continue
        kinds[kind] = _compare(kind, a, b, left.label, right.label)
    why, symbols = None, {}
    if one_function:
        older, newer = sorted((left, right), key=lambda side: side.entry)
        infos = {e.index: e for e in newer.model.entries}
        mine = infos.get(newer.entry)
        prefix = f"entry {older.entry}: "
        found = [
            r[len(prefix) :] for r in (mine.miss_reasons if mine is not None else ()) if r.startswith(prefix)
        ]
        why = found[0] if found else "(not recorded: the older entry was compiled after it was tried)"
        symbols = dict(mine.symbols) if mine is not None else {}
    return CompilationPair(left, right, kinds, why, symbols)


def _compare(kind: str, a: PassModel | None, b: PassModel | None, left: str, right: str) -> KindDiff:
    lines_a = _lines(a)
    lines_b = _lines(b)
    only_a = _minus(lines_a, lines_b)
    only_b = _minus(lines_b, lines_a)
    diff = "\n".join(
        difflib.unified_diff(lines_a, lines_b, f"{left} {kind}", f"{right} {kind}", lineterm="", n=2)
    )
    return KindDiff(kind, only_a, only_b, diff)


def _lines(p: PassModel | None) -> list[str]:
    """The top-level lines of ``p`` as the views show them (torch's names), ``del`` lines left out:
    they follow from the others."""
    if p is None:
        return []
    return [n.shown_line for n in p.nodes if "del" not in n.tags] + [p.return_line]


def _minus(a: list[str], b: list[str]) -> list[str]:
    """The lines of ``a`` not in ``b`` (as many times as ``a`` has them more), in ``a``'s order."""
    left = collections.Counter(b)
    out = []
    for line in a:
        if left[line]:
            left[line] -= 1
        else:
            out.append(line)
    return out
