"""The forward and backward side by side: text, HTML with links both ways, and one graph.

What crosses the cut is highlighted on both sides: in the forward, the lines that compute a
saved value and the saved names in its signature and ``return``; in the backward, the saved
names in its signature and in every line that reads them. Recomputed lines are marked. Each
backward line links to the forward op it differentiates (its code is the link, and a ``->``
chip names that op), and each forward line lists the backward lines that differentiate it.
The links are page anchors: a static page (a saved notebook, ``explorer.to_html``) follows
them without a script, and the line followed is highlighted by CSS (``:target``).

Each side shows at most half the element budget (top-level lines first, then a fusion
region's parts), ending with "... N more"; a link to a line that is not shown names it
without an anchor.

This module also sets ``Pair.text()`` and ``Pair.graph()`` (``pair_text`` and ``pair_graph``).
"""

from __future__ import annotations

import itertools
import re
import subprocess
import time
from html import escape

from explorer.model.nodes import Node
from explorer.model.pair import Pair, shown
from explorer.model.passes import PassModel
from explorer.model.traces import collector_paused
from explorer.views.dot_writer import _DotWriter, _q
from explorer.views.graph import DEFAULT_TIMEOUT, Graph, GraphvizMissing, layout
from explorer.views.graph_plan import count_nodes
from explorer.views.text import DEFAULT_BUDGET
from explorer.views.tree import badges_html, split_comment

# Curved edges up to this many nodes: the saved values' long edges across the cut make dot's
# spline routing slow (a 200-node pair took 37 s with splines, 0.3 s with straight edges).
SPLINE_NODES = 80
SAVED_EDGE = "#a66b00"
LISTED_NAMES = 200  # names in a signature or a list of saved values; the rest are counted
# a name as a whole word: not an attribute (``torch.x``) nor an entity (``&quot;``)
_NAME = re.compile(r"(?<![\w.&])[A-Za-z_]\w*(?!\w)")
MAX_NODES = 2400  # both sides together (a 1,000-op backward whole); long edges are drawn as notes (dot_writer)  # the colour of the saved-for-backward badge, for the edges crossing the cut
_prefixes = itertools.count()  # anchors are unique per rendering: a notebook may show several pairs


# -- text ---------------------------------------------------------------------------------------
@collector_paused()
def pair_text(pair: Pair, *, budget: int = DEFAULT_BUDGET) -> str:
    """The forward above the backward. A forward line ends with ``<- ids`` of the backward
    lines that differentiate it; a backward line with ``-> id`` of the forward op it
    differentiates (or recomputes) and ``reads saved: names``. Tags are in braces."""
    f, b = pair.forward, pair.backward
    half = max(budget // 2, 1)
    out = [
        pair.summary(),
        f"saved for backward: {_listed(pair.saved) or 'nothing'}",
        f"def forward({_listed(f.args)}):",
    ]
    _side_text(pair, f, "forward", half, out)
    out.append(f"  {_cut(f.return_line)}")
    out.append(f"def backward({_listed(b.args)}):")
    if pair.cotangents:
        out.append(f"  # cotangents: {_listed(pair.cotangents)}")
    _side_text(pair, b, "backward", half, out)
    out.append(f"  {_cut(b.return_line)}")
    return "\n".join(out)


def _listed(names: list[str], wrap=str) -> str:
    """The first LISTED_NAMES of ``names`` (each through ``wrap``), and how many more there are."""
    shown_names = ", ".join(wrap(n) for n in names[:LISTED_NAMES])
    return shown_names + (f", ... {len(names) - LISTED_NAMES} more" if len(names) > LISTED_NAMES else "")


def _cut(line: str, limit: int = 40 * LISTED_NAMES) -> str:
    """A printed line (a ``return`` of thousands of saved values) cut after ``limit`` characters."""
    return line if len(line) <= limit else f"{line[:limit]} ... ({len(line) - limit} more characters)"


def _side_text(pair: Pair, p: PassModel, side: str, budget: int, out: list[str]) -> None:
    rows = 0
    for n, level, left in _rows(shown(p.nodes), budget):
        pad = "  " * (level + 1)
        if n is None:
            out.append(f"{pad}... {left} more")
            continue
        rows += 1
        extra = []
        tags = [t for t in n.tags if t != "backward"]
        if tags:
            extra.append("{" + ", ".join(tags) + "}")
        if side == "forward":
            back = pair.sources(n.id)
            if back:
                extra.append("<- " + ", ".join(back))
        else:
            saved = [s for s in pair.saved_in(n) if s in n.inputs]
            if saved:
                extra.append("reads saved: " + ", ".join(saved))
            targets = pair.targets(n)
            if targets and pair.target(n) is None:  # a fusion region: its parts link, below
                extra.append(f"-> {_ops(len(targets))}, below")
            elif targets:
                extra.append("-> " + ", ".join(targets))
        out.append(pad + n.line + ("    " + " ".join(extra) if extra else ""))


def _ops(n: int) -> str:
    return f"{n} forward op{'' if n == 1 else 's'}"


def _rows(nodes: list[Node], budget: int):
    """(node, level, 0) for the rows shown, breadth first within ``budget``: the top-level
    lines, then the parts of the fusion regions shown; (None, level, N) where N were left out."""
    top = nodes[:budget]
    room = budget - len(top)
    parts: dict[int, list[Node]] = {}
    for n in top:
        if "fusion" in n.tags and room > 0:
            kids = shown(n.children)
            parts[id(n)] = kids[:room]
            room -= len(parts[id(n)])
    for n in top:
        yield n, 0, 0
        if "fusion" in n.tags:
            kids = parts.get(id(n), [])
            yield from ((c, 1, 0) for c in kids)
            left = len(shown(n.children)) - len(kids)
            if left:
                yield None, 1, left
    if len(nodes) > len(top):
        yield None, 0, len(nodes) - len(top)


# -- HTML ---------------------------------------------------------------------------------------
PAIR_CSS = """
.thx .pcols{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:8px}
.thx .pcol{max-height:640px;overflow:auto;border:1px solid #ddd;border-radius:4px;padding:4px 6px}
.thx .pl{white-space:pre;padding:0 2px;scroll-margin:40px}
.thx .pl a.go{color:inherit;text-decoration:none;cursor:pointer}
.thx .pl a.go:hover .ln{text-decoration:underline dotted}
.thx .pl.saved{background:#fff4e0}
.thx .pl.recomp{background:#f3e5f5}
.thx .pl:target,.thx .pl.linked{background:#bbdefb;outline:2px solid #1976d2}
.thx .pl.sel{background:#90caf9;outline:2px solid #0d47a1}
.thx .sv{color:#7a4f00;background:#ffe0a3;border-radius:2px;font-weight:600}
.thx .lk{display:inline-block;margin-left:5px;padding:0 3px;border:1px solid #1976d2;border-radius:3px;
  font-size:11px;line-height:14px;color:#1976d2;text-decoration:none}
.thx span.lk{border-style:dashed;color:#777;border-color:#999}
.thx .pkids{margin-left:1.3em;border-left:1px dotted #bbb;padding-left:.4em}
"""


@collector_paused()
def pair_html(
    pair: Pair,
    *,
    budget: int = DEFAULT_BUDGET,
    selected: tuple[str, str] | None = None,
    prefix: str | None = None,
) -> str:
    """The forward and backward side by side (to be placed in an element of class ``thx``).

    ``selected``: (``"forward"`` or ``"backward"``, node id) of a line to highlight, with the
    lines it links to. ``prefix`` starts every anchor (default: one of its own per call)."""
    if prefix is None:
        prefix = f"thxp{next(_prefixes)}"
    half = max(budget // 2, 1)
    f_rows = list(_rows(shown(pair.forward.nodes), half))
    b_rows = list(_rows(shown(pair.backward.nodes), half))
    anchors = {
        "forward": {n.id: f"{prefix}-f{i}" for i, (n, _, _) in enumerate(f_rows) if n is not None},
        "backward": {n.id: f"{prefix}-b{i}" for i, (n, _, _) in enumerate(b_rows) if n is not None},
    }
    linked: set[tuple[str, str]] = set()
    if selected is not None:
        side, node_id = selected
        if side == "backward":
            n = pair.backward.find(node_id)
            linked = {("forward", t) for t in (pair.targets(n) if n is not None else [])}
        else:
            linked = {("backward", s) for s in pair.sources(node_id)}
    r = _PairRenderer(pair, anchors, selected, linked)
    saved = _listed(pair.saved, lambda s: f'<code class="sv">{escape(s)}</code>') or "nothing"
    cots = _listed(pair.cotangents, lambda c: f"<code>{escape(c)}</code>") or "none"
    f, b = pair.forward, pair.backward
    fw = [
        f'<div class="hd">forward <span class="note">pass {f.index}: {escape(f.name)}</span></div>',
        f'<div class="ln">def forward({r.names(f.args)}):</div>',
        r.rows(f_rows, "forward"),
        f'<div class="ln">  {r.mark(escape(_cut(f.return_line)))}</div>',
    ]
    bw = [
        f'<div class="hd">backward <span class="note">pass {b.index}: {escape(b.name)}</span></div>',
        f'<div class="ln">def backward({r.names(b.args)}):</div>',
        r.rows(b_rows, "backward"),
        f'<div class="ln">  {escape(_cut(b.return_line))}</div>',
    ]
    return (
        f'<style>{PAIR_CSS}</style><div class="pair" data-prefix="{prefix}">'
        f'<div class="note">{escape(pair.summary())}</div>'
        f'<div class="note">saved for backward: {saved}; cotangents: {cots}. A backward line links to '
        "the forward op it differentiates (click it); a forward line lists the backward lines that "
        "differentiate it.</div>"
        f'<div class="pcols"><div class="pcol" data-side="forward">{"".join(fw)}</div>'
        f'<div class="pcol" data-side="backward">{"".join(bw)}</div></div></div>'
    )


class _PairRenderer:
    def __init__(self, pair: Pair, anchors, selected, linked):
        self.pair = pair
        self.anchors = anchors
        self.selected = selected
        self.linked = linked
        self._saved = set(pair.saved)

    def _one(self, m: re.Match) -> str:
        name = m.group(0)
        return f'<span class="sv">{name}</span>' if name in self._saved else name

    def mark(self, escaped: str) -> str:
        """``escaped`` text with the saved names in it marked."""
        return _NAME.sub(self._one, escaped) if self._saved else escaped

    def names(self, names: list[str]) -> str:
        return _listed(
            names, lambda n: f'<span class="sv">{escape(n)}</span>' if n in self._saved else escape(n)
        )

    def rows(self, rows, side: str) -> str:
        out = []
        for n, level, left in rows:
            if n is None:
                out.append(f'<div class="more" style="margin-left:{level * 1.3 + 1}em">... {left} more</div>')
            else:
                out.append(self.row(n, side, level))
        return "".join(out)

    def _link(self, side: str, node_id: str, line: str | None = None) -> str:
        anchor = self.anchors[side].get(node_id)
        tip = escape(line or node_id)
        if anchor is None:
            return f'<span class="lk" title="{tip} (not shown here)">{escape(node_id)}</span>'
        return (
            f'<a class="lk" href="#{anchor}" data-to="{escape(node_id)}" title="{tip}">{escape(node_id)}</a>'
        )

    def row(self, n: Node, side: str, level: int) -> str:
        pair = self.pair
        other = "backward" if side == "forward" else "forward"
        cls = ["pl"]
        if side == "forward" and "saved_for_backward" in n.tags:
            cls.append("saved")
        if "recomputed" in n.tags:
            cls.append("recomp")
        if self.selected == (side, n.id):
            cls.append("sel")
        if (side, n.id) in self.linked:
            cls.append("linked")
        code, comment = split_comment(n, shown=True)  # a torchex helper as the torch call it makes
        code = self.mark(escape(code))
        if side == "forward":
            targets = pair.sources(n.id)
            lines = {}
        else:
            targets = pair.targets(n)
            lines = {t: m.line for t in targets if (m := pair.forward.find(t)) is not None}
        region = side == "backward" and bool(targets) and pair.target(n) is None
        first = self.anchors[other].get(targets[0]) if targets and side == "backward" and not region else None
        head = f'<span class="ln">{code}</span>'
        if first is not None:  # the line itself leads to the forward op it differentiates
            head = f'<a class="go" href="#{first}">{head}</a>'
        parts = ["  " * level, head]
        if comment:
            parts.append(f'<span class="ty ln">  # {escape(comment)}</span>')
        parts.append(badges_html(n, skip=("backward",) if side == "backward" else ()))
        if region:  # a fusion region: its parts link, below
            parts.append(f'<span class="note"> \u2192 {_ops(len(targets))}, below</span>')
        elif targets:
            arrow = "\u2190" if side == "forward" else "\u2192"
            parts.append(f'<span class="note"> {arrow}</span>')
            parts += [self._link(other, t, lines.get(t)) for t in targets]
        anchor = self.anchors[side][n.id]
        return (
            f'<div class="{" ".join(cls)}" id="{anchor}" data-side="{side}" data-id="{escape(n.id)}">'
            f"{''.join(parts)}</div>"
        )


# -- graph --------------------------------------------------------------------------------------
@collector_paused()
def pair_dot(
    pair: Pair,
    *,
    depth: int = 0,
    max_nodes: int = MAX_NODES,
    highlight: set[str] | frozenset = frozenset(),
) -> tuple[str, int, int, list[str]]:
    """DOT text of the forward and the backward in two clusters, the saved values drawn as
    edges from the forward line that makes each to the backward lines that read it. Each side
    gets half of ``max_nodes``: where a side is longer, the graph shows where the two meet,
    the end of the forward and the start of the backward. (dot, nodes, depth used, messages)."""
    f, b = pair.forward, pair.backward
    half = max(max_nodes // 2, 1)
    messages = []
    want = depth
    fnodes, bnodes = shown(f.nodes), shown(b.nodes)
    while depth > 0 and max(count_nodes(fnodes, depth, half), count_nodes(bnodes, depth, half)) > half:
        depth -= 1
    if depth < want:
        messages.append(f"Collapsed to depth {depth} to keep each side under {half} nodes.")
    fnodes, before = _tail(fnodes, depth, half)
    if before:
        messages.append(
            f"The forward: showing its last {len(fnodes)} bound symbols, where the backward starts; "
            f"{before} before them are not drawn."
        )
    fw = _DotWriter(pair.forward_series.proxies, half, highlight, prefix="f")
    bw = _DotWriter(pair.backward_series.proxies, half, highlight, prefix="b")
    bw.lines = fw.lines  # one graph
    drawn = count_nodes(fnodes, depth) + min(count_nodes(bnodes, depth, half), half)
    title = f"forward {f.index}: {f.name} / backward {b.index}: {b.name}"
    fw.header(title, drawn, drawn <= SPLINE_NODES)
    fw.lines.append(
        '  subgraph cluster_forward { label="forward" style=rounded color="#888888" fontname=Helvetica;'
    )
    read_back = bw.used_names(bnodes)
    used = fw.used_names(fnodes) | (set(pair.saved) & read_back)
    if before:
        fw.lines.append(f"    fbefore [label={_q(f'... {before} before')} shape=plaintext];")
    for a in f.args:
        if a in used:
            fw.input_node(a)
    fw.nodes(fnodes, depth, 2)
    fw.return_node(f.output, 2)
    fw.lines.append("  }")
    fw.lines.append(
        '  subgraph cluster_backward { label="backward" style=rounded color="#1565c0" fontname=Helvetica;'
    )
    for name in pair.saved:  # the backward reads each saved value where the forward made it
        if name in fw.producer:
            bw.producer[name] = fw.producer[name]
    for a in b.args:
        if a not in bw.producer and a in read_back | set(b.output):
            bw.input_node(a)
    bw.nodes(bnodes, depth, 2)
    bw.return_node(b.output, 2)
    if bw.cut:
        bw.lines.append(f"    bmore [label={_q(f'... {bw.cut} more')} shape=plaintext];")
        messages.append(f"The backward: showing its first {half} bound symbols; {bw.cut} more are not drawn.")
    fw.lines.append("  }")
    fw.edges()

    def crossing(src: str, dst: str, names: list[str]) -> dict[str, str]:
        if not src.startswith("f"):
            return {}
        label = "saved " + ", ".join(names[:2]) + (f" +{len(names) - 2}" if len(names) > 2 else "")
        colour = _q(SAVED_EDGE)
        return {"label": _q(label), "color": colour, "fontcolor": colour, "penwidth": "2", "style": "bold"}

    bw.edges(crossing)
    fw.legend_items |= bw.legend_items
    fw.legend()
    fw.lines.append("}")
    return "\n".join(fw.lines), fw.count + bw.count, depth, messages


def _tail(nodes: list[Node], depth: int, budget: int) -> tuple[list[Node], int]:
    """The last of ``nodes`` that make at most ``budget`` graph nodes at ``depth``, and how
    many nodes come before them."""
    total, start = 0, len(nodes)
    while start > 0:
        total += count_nodes([nodes[start - 1]], depth)
        if total > budget:
            break
        start -= 1
    return nodes[start:], start


def pair_graph(
    pair: Pair,
    *,
    depth: int = 0,
    max_nodes: int = MAX_NODES,
    highlight: set[str] | frozenset = frozenset(),
    timeout: float = DEFAULT_TIMEOUT,
) -> Graph:
    """The pair's graph laid out (see ``pair_dot``); on a timeout, a smaller one (depth 0, at
    most 150 nodes); without graphviz, the DOT text with a message."""
    t0 = time.perf_counter()
    note = "Edges in the colour of the saved badge carry the saved values across the cut."
    dot, count, used, messages = pair_dot(pair, depth=depth, max_nodes=max_nodes, highlight=highlight)
    try:
        svg = layout(dot, timeout)
    except GraphvizMissing as e:
        return Graph(dot, None, used, count, [*messages, str(e)], time.perf_counter() - t0)
    except (subprocess.TimeoutExpired, RuntimeError) as e:
        small = min(max_nodes, 150)
        messages.append(
            f"Laying out {count} nodes at depth {used} failed ({type(e).__name__}); showing depth 0, "
            f"at most {small} nodes, instead."
        )
        dot, count, used, more = pair_dot(pair, depth=0, max_nodes=small, highlight=highlight)
        messages += more
        try:
            svg = layout(dot, timeout)
        except (subprocess.TimeoutExpired, RuntimeError, GraphvizMissing) as e:
            svg = None
            messages.append(f"The smaller graph could not be laid out either: {type(e).__name__}.")
    return Graph(dot, svg, used, count, [*messages, note], time.perf_counter() - t0)


def _text(self: Pair, budget: int | None = None) -> str:
    """The forward above the backward, as text (``pair_text``)."""
    return pair_text(self) if budget is None else pair_text(self, budget=budget)


def _graph(self: Pair, depth: int = 0, max_nodes: int | None = None) -> Graph:
    """Both traces in one graph, the saved values as edges across the cut (``pair_graph``)."""
    return (
        pair_graph(self, depth=depth)
        if max_nodes is None
        else pair_graph(self, depth=depth, max_nodes=max_nodes)
    )


# ``pair.text()`` and ``pair.graph()``: set here, as the model (``explorer.model.pair``) imports no view
Pair.text = _text
Pair.graph = _graph


__all__ = ["pair_dot", "pair_graph", "pair_html", "pair_text"]
