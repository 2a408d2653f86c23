"""Two compilations side by side (``explorer.model.compilations.CompilationPair``): text, and HTML
with what changed first, then the two trees and the two graphs in columns, then the diffs.

For two cache entries of one function the page opens on why the newer one was compiled (the
older one's prologue check its inputs failed) and the sizes that became symbols; for two
functions, on the lines each executor runs and the fusion regions. Then, per trace kind, the
lines only one side has, and a unified diff of the two programs (folded for all but the
computation). The trees are the explorer's trees (folded to the top level); the graphs are the
explorer's canvases (zoom, pan, click), one per side.

This module also sets ``CompilationPair.text()``, ``.graphs()`` and its notebook display.
"""

from __future__ import annotations

from html import escape

from explorer.model.compilations import CompilationPair, KindDiff, Side
from explorer.views.canvas import canvas_script
from explorer.views.graph import DEFAULT_MAX_NODES, Graph, render_graph
from explorer.views.html import STATIC_BUDGET, text_diff_html, wrap
from explorer.views.tree import tree_html

SHOWN = 40  # lines listed as only on one side, per side and kind


def compilations_text(pair: CompilationPair, limit: int = 200) -> str:
    """What changed between the two compilations, then the diff of each kind's program (at
    most ``limit`` lines each)."""
    left, right = pair.left, pair.right
    out = [f"{left.label}  <->  {right.label}"]
    if pair.same_function:
        out.append(
            f"{right.label if right.entry > left.entry else left.label} was compiled because: {pair.why}"
        )
        out += [f"  {sym}: {why}" for sym, why in pair.symbols.items()]
    for kind, kd in pair.kinds.items():
        out.append(f"\n{kind}: {_counts(left, kind)}  |  {_counts(right, kind)}")
        if kd.same:
            out.append("  (the same lines)")
            continue
        out += [f"  - {line}" for line in kd.only_left[:SHOWN]]
        out += [f"  + {line}" for line in kd.only_right[:SHOWN]]
        lines = kd.diff.splitlines()
        out += lines[:limit] + ([f"... {len(lines) - limit} more diff lines"] if len(lines) > limit else [])
    return "\n".join(out)


def compilations_html(pair: CompilationPair, *, graphs: bool = True, budget: int = STATIC_BUDGET) -> str:
    """The page (inside ``wrap``): what changed, the trees and graphs in two columns, the diffs."""
    left, right = pair.left, pair.right
    parts = [f'<div class="hd">{escape(left.label)} &harr; {escape(right.label)}</div>']
    if pair.same_function:
        newer = right if right.entry > left.entry else left
        parts.append(
            f'<div class="why"><b>{escape(newer.label)} was compiled because</b> '
            f"<code>{escape(pair.why or '')}</code></div>"
        )
        if pair.symbols:
            rows = "".join(
                f"<tr><td><code>{escape(s)}</code></td><td>{escape(w)}</td></tr>"
                for s, w in pair.symbols.items()
            )
            parts.append(
                f'<table class="symbols"><tr><th>symbol</th><th>size, and why</th></tr>{rows}</table>'
            )
    parts.append(_summary_table(pair))
    for kind, kd in pair.kinds.items():
        parts.append(_kind_html(kd, left, right, open_=kind == "computation"))
    if "computation" in pair.kinds:
        cols = [_column(side, "computation", budget) for side in (left, right)]
        parts.append(
            "<details open><summary><b>computation trees side by side</b></summary>"
            f'<div class="ranks">{"".join(cols)}</div></details>'
        )
        if graphs:
            drawn = pair.graphs()
            cols = [
                f'<div class="rank"><div class="hd">{escape(side.label)}</div>{g.html()}</div>'
                for side, g in zip((left, right), drawn)
            ]
            parts.append(
                "<details open><summary><b>computation graphs side by side</b></summary>"
                f'<div class="ranks">{"".join(cols)}</div></details>{canvas_script()}'
            )
    return "".join(parts)


def _counts(side: Side, kind: str) -> str:
    p = side.final(kind)
    if p is None:
        return f"{side.label}: none"
    execs = side.executors(kind)
    by = ", ".join(f"{name} {n}" for name, n in sorted(execs.items(), key=lambda kv: -kv[1]))
    regions = side.regions(kind)
    n = sum(execs.values())
    return f"{side.label}: {n} line{'' if n == 1 else 's'} ({by})" + (
        f", {regions} fusion regions" if regions else ""
    )


def _summary_table(pair: CompilationPair) -> str:
    rows = []
    for kind in pair.kinds:
        cells = []
        for side in (pair.left, pair.right):
            p = side.final(kind)
            if p is None:
                cells.append('<td class="note">none</td>')
                continue
            execs = side.executors(kind)
            by = ", ".join(f"{escape(name)} {n}" for name, n in sorted(execs.items(), key=lambda kv: -kv[1]))
            regions = side.regions(kind)
            cells.append(
                f"<td>{sum(execs.values())} lines: {by}"
                + (f"; {regions} fusion regions" if regions else "")
                + "</td>"
            )
        rows.append(f"<tr><td>{escape(kind)}</td>{''.join(cells)}</tr>")
    head = f"<tr><th></th><th>{escape(pair.left.label)}</th><th>{escape(pair.right.label)}</th></tr>"
    return f'<table class="compare">{head}{"".join(rows)}</table>'


def _kind_html(kd: KindDiff, left: Side, right: Side, *, open_: bool) -> str:
    if kd.same:
        return f'<div class="note">{escape(kd.kind)}: the same lines on both sides.</div>'
    rows = [f'<div class="drem ln">- {escape(line)}</div>' for line in kd.only_left[:SHOWN]]
    rows += [f'<div class="dadd ln">+ {escape(line)}</div>' for line in kd.only_right[:SHOWN]]
    more = len(kd.only_left) + len(kd.only_right) - len(rows)
    if more > 0:
        rows.append(f'<div class="more">... {more} more lines only on one side</div>')
    summary = (
        f"<b>{escape(kd.kind)}</b>: {len(kd.only_left)} lines only in {escape(left.label)}, "
        f"{len(kd.only_right)} only in {escape(right.label)}"
    )
    return (
        f"<details{' open' if open_ else ''}><summary>{summary}</summary>{''.join(rows)}"
        f'<div class="hd">Text diff</div>{text_diff_html(kd.diff)}</details>'
    )


def _column(side: Side, kind: str, budget: int) -> str:
    p = side.final(kind)
    body = (
        tree_html(p.nodes, open_depth=0, budget=budget) if p is not None else '<div class="note">none</div>'
    )
    return f'<div class="rank"><div class="hd">{escape(side.label)}</div>{body}</div>'


def _graphs(self: CompilationPair, kind: str = "computation", **options) -> tuple[Graph, Graph]:
    """The graph of each side's final ``kind`` trace (``render_graph``'s options)."""
    out = []
    for side in (self.left, self.right):
        s = side.model.series[kind]
        options.setdefault("max_nodes", DEFAULT_MAX_NODES)
        out.append(render_graph(s.final, s.proxies, title=f"{side.label}: {kind}", **options))
    return tuple(out)


def _bundle(self: CompilationPair, include=None, exclude=None) -> dict:
    return {"text/plain": compilations_text(self), "text/html": wrap(compilations_html(self))}


CompilationPair.text = compilations_text
CompilationPair.graphs = _graphs
CompilationPair._repr_mimebundle_ = _bundle
