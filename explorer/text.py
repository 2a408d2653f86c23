"""Plain-text views: the BoundSymbol tree, the list of passes, a pass's diff, a summary.

These are what ``text/plain`` shows (a terminal, a viewer without HTML) and what the tests
read most easily.
"""

from __future__ import annotations

import difflib
import os
import re

from explorer.model import Node, PassModel, TraceModel, TraceSeries

_CELL_FILE = re.compile(
    r"(^<ipython-input-\d+-[0-9a-f]+>$)|(/ipykernel_\d+/\d+\.py$)|(^<thunder_trace cell \d+>$)"
)


def short_file(path: str) -> str:
    """``/tmp/ipykernel_12/2030243169.py`` -> ``cell``; ``/a/b/model.py`` -> ``model.py``."""
    if _CELL_FILE.search(path):
        return "cell"
    return os.path.basename(path)


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def tree_text(
    nodes: list[Node], *, depth: int | None = None, budget: int = 2000, times: dict[str, float] | None = None
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
            if n.source is not None:
                extra.append(f"@ {short_file(n.source.file)}:{n.source.line}")
            if n.id in times:
                extra.append(f"({fmt_seconds(times[n.id])})")
            lines.append("  " * level + n.line + ("    " + " ".join(extra) if extra else ""))
            if n.children and (depth is None or level < depth):
                visit(n.children, level + 1)

    visit(nodes, 0)
    return "\n".join(lines)


def passes_text(series: TraceSeries) -> str:
    out = []
    for p in series.passes:
        what = "first trace" if p.diff is None else p.diff.summary()
        out.append(f"{p.index:>2} {p.name:<28} {fmt_seconds(p.seconds):>10}  {what}")
    return "\n".join(out)


def source_diff(before: PassModel, after: PassModel, context: int = 2) -> str:
    """A unified diff of the two printed traces ("" when they print the same)."""
    a, b = before.source.splitlines(), after.source.splitlines()
    # the first line names the pass that made the trace; it always differs
    a = [line for line in a if not line.startswith("# Constructed by")]
    b = [line for line in b if not line.startswith("# Constructed by")]
    diff = difflib.unified_diff(
        a, b, f"{before.index} {before.name}", f"{after.index} {after.name}", n=context
    )
    return "\n".join(line.rstrip("\n") for line in diff)


def diff_text(after: PassModel) -> str:
    """The structured diff: which BoundSymbols the pass added, removed or rewrote."""
    d = after.diff
    if d is None:
        return "the first trace (nothing to compare with)"
    if not d.changed:
        return "no change"
    lines = []
    for k in d.removed:
        lines.append(f"- {k}")
    for k in d.added:
        n = after.find(k)
        lines.append(f"+ {n.line if n else k}")
    for k, (old, new) in d.rewritten.items():
        lines.append(f"~ {k}: {old}\n    -> {new}")
    return "\n".join(lines)


def model_text(model: TraceModel) -> str:
    """A short summary: each trace kind with its passes."""
    out = [f"thunder compilation: {model.title}"]
    if model.stats:
        out.append(", ".join(f"{k}={v}" for k, v in model.stats.items()))
    for kind, s in model.series.items():
        f = s.final
        out.append(f"\n{kind}: {len(s.passes)} passes, final has {len(f.nodes)} bound symbols")
        out.append(passes_text(s))
    return "\n".join(out)
