"""Plain-text views: the BoundSymbol tree, the list of passes, a pass's diff, a summary.

These are what ``text/plain`` shows (a terminal, a viewer without HTML) and what the tests
read most easily.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import os
import sys

from explorer.model.communication import Collective, communication_of
from explorer.model.modules import ModuleGroup
from explorer.model.nodes import Node, cell_number, is_cell_file
from explorer.model.passes import PassModel, TraceSeries
from explorer.model.seconds import fmt_seconds
from explorer.model.traces import TraceModel, collector_paused

# How many elements (tree nodes, diff rows, printed lines) a view shows at once; each list
# that is cut ends with "... N more".
DEFAULT_BUDGET = 2000


def short_file(path: str) -> str:
    """``/tmp/ipykernel_12/2030243169.py`` -> ``In[3]`` (``cell`` when its number is not
    known); ``/a/b/model.py`` -> ``model.py``."""
    if is_cell_file(path):
        n = cell_number(path)
        return f"In[{n}]" if n is not None else "cell"
    return os.path.basename(path)


def location(src) -> str:
    """Where a line comes from, as a notebook user names it (``SourceInfo.location``):
    ``In[3] line 2`` for a cell, ``model.py:12`` for a file."""
    return src.location()


def _comm(n: Node) -> list[str]:
    """What a collective's start moves, as the tree's badge says it (``<all_reduce sum, ...>``)."""
    c = Collective.of(n) if n.collective is not None else None
    return [f"<{c.label()}>"] if c is not None else []


def tree_text(
    nodes: list[Node],
    *,
    depth: int | None = None,
    budget: int = DEFAULT_BUDGET,
    times: dict[str, float] | None = None,
) -> str:
    """One line per BoundSymbol, subsymbols indented, down to ``depth`` (None: all)."""
    lines: list[str] = []
    times = times or {}

    def visit(ns: list[Node], level: int) -> None:
        for i, n in enumerate(ns):
            if len(lines) >= budget:
                lines.append("  " * level + f"... {len(ns) - i} more")
                return
            extra = []
            if n.executor:
                extra.append(f"[{n.executor}]")
            if n.tags:
                extra.append("{" + ", ".join(n.tags) + "}")
            extra += _comm(n)
            if n.source is not None:
                extra.append(f"@ {location(n.source)}")
            if n.id in times:
                extra.append(f"({fmt_seconds(times[n.id])})")
            lines.append("  " * level + n.line + ("    " + " ".join(extra) if extra else ""))
            if n.children and (depth is None or level < depth):
                visit(n.children, level + 1)

    visit(nodes, 0)
    return "\n".join(lines)


def modules_text(
    tree,
    *,
    depth: int | None = 0,
    budget: int = DEFAULT_BUDGET,
    times: dict[str, float] | None = None,
    sources: bool = True,
) -> str:
    """A pass grouped by module (``tree``: its ``ModuleTree``): one line per module (path,
    class, op count, time), its lines and submodules indented below it; the BoundSymbols'
    subsymbols down to ``depth`` (None: all)."""
    lines: list[str] = []
    times = times or {}

    def visit(items: list, level: int, sub: int) -> None:
        for i, n in enumerate(items):
            if len(lines) >= budget:
                lines.append("  " * level + f"... {len(items) - i} more")
                return
            pad = "  " * level
            if isinstance(n, ModuleGroup):
                lines.append(f"{pad}[{n.summary(times)}]")
                visit(n.items, level + 1, 0)
                continue
            extra = []
            if n.executor:
                extra.append(f"[{n.executor}]")
            if n.tags:
                extra.append("{" + ", ".join(n.tags) + "}")
            extra += _comm(n)
            if sources and n.source is not None:
                extra.append(f"@ {location(n.source)}")
            if n.id in times:
                extra.append(f"({fmt_seconds(times[n.id])})")
            lines.append(pad + n.line + ("    " + " ".join(extra) if extra else ""))
            if n.children and (depth is None or sub < depth):
                visit(n.children, level + 1, sub + 1)

    visit(tree.items, 0, 0)
    return "\n".join(lines)


def passes_text(series: TraceSeries) -> str:
    out = []
    for p in series.passes:
        what = "first trace" if p.diff is None else p.diff.summary()
        out.append(f"{p.index:>2} {p.name:<28} {fmt_seconds(p.seconds):>10}  {what}")
    return "\n".join(out)


@collector_paused()
def lines_text(p: PassModel, limit: int | None = None) -> str:
    """The top-level lines of a pass as the trace prints them (as shown: ``Node.shown_line``),
    without their subsymbols and header comments, at most ``limit`` of them, then the return."""
    nodes = p.nodes if limit is None else p.nodes[:limit]
    out = [
        f"def {p.name.replace(' ', '_').lower() if p.trace is None else p.trace.name}({', '.join(p.args)}):"
    ]
    out += ["  " + n.shown_line for n in nodes]
    if len(nodes) < len(p.nodes):
        out.append(f"  # ... {len(p.nodes) - len(nodes)} more lines not shown")
    out.append("  " + p.return_line)
    return "\n".join(out)


@collector_paused()
def source_text(p: PassModel, limit: int | None = None) -> str:
    """The printed trace, cut after about ``limit`` lines (None: all of it).

    Only the BoundSymbols shown are printed, by thunder's printer (a 40,000-line trace takes
    about a second to print whole); the cut is marked with a comment saying how much is left,
    and the ``return`` line still ends the function. The imports at the top name the modules
    of the lines shown.
    """
    trace = p.trace
    if limit is None or trace is None:
        return p.source
    lines, shown = 0, 0
    for n in p.nodes:
        lines += n.line_count()
        if lines > limit:
            break
        shown += 1
    if shown == len(p.nodes):
        return p.source
    part = copy.copy(trace)
    part.bound_symbols = trace.bound_symbols[:shown]
    head, sep, ret = str(part).rstrip("\n").rpartition("\n")
    left = len(p.nodes) - shown
    more = sum(n.line_count() for n in p.nodes[shown:])
    note = f"  # ... {left} more bound symbols ({more} lines) not shown"
    return f"{head}\n{note}\n{ret}\n"


@collector_paused()
def source_diff(before: PassModel, after: PassModel, context: int = 2, limit: int | None = None) -> str:
    """A unified diff of the two traces' lines ("" when they print the same), about ``limit``
    lines long (None: all of it), ending with how many changed lines it leaves out.

    Each BoundSymbol is its line with its subsymbols below it as comments, as the printed
    trace has them; line numbers count these lines (and the ``return``) from 1. Lines are
    matched by node id (ids are kept from pass to pass) in one pass over each trace, and only
    the lines shown are printed: a diff of two 100,000-line traces takes a fraction of a second.
    """
    segments = _segments(before, after)
    if all(seg.same for seg in segments):
        return ""
    out = [f"--- {before.index} {before.name}", f"+++ {after.index} {after.name}"]
    hunk = _Hunk(out)
    limit = sys.maxsize if limit is None else limit

    def room() -> int:  # lines still to write: the hunks so far, the open one and its header
        return limit - (len(out) - 2) - (len(hunk.lines) + 1 if hunk.open else 0)

    left = 0  # changed lines not shown
    a_at = b_at = 1  # the first line of the current segment, in each trace
    for i, seg in enumerate(segments):
        old, new = seg.old, seg.new
        a_count = sum(n.line_count() for n in old)
        b_count = a_count if seg.same else sum(n.line_count() for n in new)
        if seg.same:
            if hunk.open:  # the context after a change; a short run between two stays whole
                whole = a_count <= 2 * context and i < len(segments) - 1 and a_count < room()
                hunk.context(_lines(old, None if whole else context))
                if not whole:
                    hunk.close()
        else:
            space = room() - (0 if hunk.open else 1 + context)  # a new hunk: its header, the context
            if space > 0 and not hunk.open:
                lead = _last_lines(segments[i - 1].old, context) if i else []
                space += context - len(lead)
            if space <= 0:
                hunk.close()
                left += a_count + b_count
            else:
                if not hunk.open:
                    hunk.start(a_at - len(lead), b_at - len(lead))
                    hunk.context(lead)
                if a_count + b_count <= space:
                    removed, added = _lines(old), _lines(new)
                else:  # cut: both sides get a share of what is left
                    removed = _lines(old, min(a_count, max(space // 2, space - b_count)))
                    added = _lines(new, space - len(removed))
                hunk.change(removed, added)
                left += a_count + b_count - len(removed) - len(added)
        a_at += a_count
        b_at += b_count
    hunk.close()
    if left:
        out.append(f"... {left} more changed lines not shown")
    return "\n".join(out)


class _Hunk:
    """The hunk being written: its lines, and where it starts in each trace."""

    def __init__(self, out: list[str]):
        self.out = out
        self.open = False

    def start(self, a_at: int, b_at: int) -> None:
        self.open, self.at, self.lens, self.lines = True, (a_at, b_at), [0, 0], []

    def context(self, lines: list[str]) -> None:
        self.lines += [" " + line for line in lines]
        self.lens[0] += len(lines)
        self.lens[1] += len(lines)

    def change(self, removed: list[str], added: list[str]) -> None:
        self.lines += ["-" + line for line in removed] + ["+" + line for line in added]
        self.lens[0] += len(removed)
        self.lens[1] += len(added)

    def close(self) -> None:
        if self.open:
            (a_at, b_at), (na, nb) = self.at, self.lens
            self.out.append(f"@@ -{a_at},{na} +{b_at},{nb} @@")
            self.out.extend(self.lines)
        self.open = False


@dataclasses.dataclass
class _Segment:
    """A run of lines: the same in both traces (``old`` is ``new``), or changed."""

    same: bool
    old: list
    new: list


def _segments(before: PassModel, after: PassModel) -> list[_Segment]:
    """The two traces as runs of nodes, the same in both or changed.

    Nodes are paired by id; of the pairs, the longest run that keeps the order of both traces
    is kept (a moved line shows as removed and added). The ``return`` line ends both.
    """
    a, b = before.nodes, after.nodes
    where = {n.id: i for i, n in enumerate(a)}
    pairs = [(where[n.id], j) for j, n in enumerate(b) if n.id in where]
    kept = _increasing(pairs)
    segments: list[_Segment] = []

    def change(old: list, new: list) -> None:
        if old or new:  # not merged with the change before: a rewritten line shows as - then +
            segments.append(_Segment(False, list(old), list(new)))

    def same(node) -> None:
        if segments and segments[-1].same:
            segments[-1].old.append(node)
        else:
            nodes = [node]
            segments.append(_Segment(True, nodes, nodes))

    i = j = 0
    for pi, pj in kept:
        change(a[i:pi], b[j:pj])
        old, new = a[pi], b[pj]
        if old is new or not old.prints_unlike(new):
            same(old)
        else:
            change([old], [new])
        i, j = pi + 1, pj + 1
    change(a[i:], b[j:])
    ret_a, ret_b = _ReturnLine(before), _ReturnLine(after)
    if ret_a.line == ret_b.line:
        same(ret_a)
    else:
        change([ret_a], [ret_b])
    return segments


class _ReturnLine:
    """The ``return`` statement, in a diff's runs of nodes."""

    def __init__(self, p: PassModel):
        self.line = p.return_line
        self.children: list = []
        self.header = ""

    def line_count(self) -> int:
        return 1


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (in order of their second item) whose first items
    increase: patience sorting, n log n."""
    tops: list[int] = []  # tops[k]: the smallest first item that ends a run of length k + 1
    ends: list[int] = []  # ... and the index in ``pairs`` of that pair
    back = [-1] * len(pairs)
    for k, (i, _) in enumerate(pairs):
        at = bisect.bisect_left(tops, i)
        if at:
            back[k] = ends[at - 1]
        if at == len(tops):
            tops.append(i)
            ends.append(k)
        else:
            tops[at] = i
            ends[at] = k
    run = []
    k = ends[-1] if ends else -1
    while k >= 0:
        run.append(pairs[k])
        k = back[k]
    return run[::-1]


def _lines(nodes: list, limit: int | None = None) -> list[str]:
    """How ``nodes`` print in a trace's body, at most ``limit`` lines."""
    out: list[str] = []
    for n in nodes:
        _block(n, 1, False, out)
        if limit is not None and len(out) >= limit:
            return out[:limit]
    return out


def _last_lines(nodes: list, count: int) -> list[str]:
    """The last ``count`` lines ``nodes`` print as (only the last few nodes are printed)."""
    picked, lines = [], 0
    for n in reversed(nodes):
        if lines >= count:
            break
        picked.append(n)
        lines += n.line_count()
    return _lines(picked[::-1])[-count:] if count else []


def _block(n, indent: int, comment: bool, out: list[str]) -> None:
    """One BoundSymbol as the printer writes it: header comments, its line, then its
    subsymbols one level deeper as comments."""
    pad = "  " * indent
    if n.header:
        out.extend(f"{pad}# {h}" for h in n.header.splitlines())
    out.append(f"{pad}# {n.line}" if comment else pad + n.line)
    for c in n.children:
        _block(c, indent + 1, True, out)


def diff_text(after: PassModel, budget: int | None = DEFAULT_BUDGET) -> str:
    """The structured diff: which BoundSymbols the pass added, removed or rewrote (at most
    ``budget`` of them, shared between the three; None: all). ``del`` lines are counted in one
    line at the end, not listed."""
    d = after.diff
    if d is None:
        return "the first trace (nothing to compare with)"
    if not d.changed:
        return "no change"
    if d.del_only:
        return f"{d.summary()} (values freed after their last use)"
    dels = len(d.dels)
    d = d.without_dels()
    shown = d.shown(budget)
    lines = [f"- {k}" for k in shown.removed]
    for k in shown.added:
        n = after.find(k)
        lines.append(f"+ {n.line if n else k}")
    for k in shown.rewritten:
        old, new = d.rewritten[k]
        lines.append(f"~ {k}: {old}\n    -> {new}")
    if shown.left:
        lines.append(f"... {shown.left} more changes")
    if dels:
        lines.append(f"and {dels} del line{'' if dels == 1 else 's'}")
    return "\n".join(lines)


def model_text(model: TraceModel) -> str:
    """A short summary: each trace kind with its passes."""
    out = [f"thunder compilation: {model.title}"]
    if model.stats:
        out.append(", ".join(f"{k}={v}" for k, v in model.stats.items()))
    for kind, s in model.series.items():
        f = s.final
        out.append(f"\n{kind}: {len(s.passes)} passes, final has {len(f.nodes)} bound symbols")
        comm = communication_of(f).summary()
        if comm.count:
            out.append(comm.text())
        out.append(passes_text(s))
    pair = model.pair()
    if pair is not None:
        out.append(f"\npair: {pair.summary()}\nsaved for backward: {', '.join(pair.saved) or 'nothing'}")
    return "\n".join(out)
