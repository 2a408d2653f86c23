"""A self-contained HTML report: ``explorer.to_html(jfn, "report.html")``.

One page, no CDN, no script: trace kinds (and, with a backward, the forward and backward side
by side, linked by page anchors) and passes are CSS radio buttons (a label per
pass, "previous" / "next" labels in each pane), trees fold with ``<details>``, graphs are
inline SVG laid out by ``dot``. It reads the same offline, in any browser, from a file.
"""

from __future__ import annotations

import datetime
import re
from html import escape

from explorer.model.memory import memory_of
from explorer.model.passes import PassModel, TraceSeries
from explorer.model.seconds import fmt_seconds
from explorer.model.traces import TraceModel, collector_paused
from explorer.views.canvas import canvas_script
from explorer.views.columns.pair import pair_graph, pair_html
from explorer.views.graph import render_graph
from explorer.views.graph_plan import count_nodes
from explorer.views.html import cache_html, diff_html, lines_html, pass_header_html, source_html
from explorer.views.memory import memory_section_html
from explorer.views.overview import overview_html
from explorer.views.style import stylesheet
from explorer.views.timeline import timeline_section_html
from explorer.views.tree import DEFAULT_BUDGET, tree_html
from explorer.views.whatif import comparison_table_html

REPORT_CSS = """
body{margin:16px 22px;background:#fff}
.thx h1{font-size:20px;margin:0 0 4px}
.thx .rad{position:absolute;opacity:0;pointer-events:none}
.thx .tabs label,.thx .pbar label{display:inline-block;padding:2px 8px;margin:2px 3px 2px 0;border:1px solid #bbb;
  border-radius:4px;cursor:pointer;background:#fafafa}
.thx .pbar label.same{border-style:dashed;color:#888}
.thx .kind,.thx .pane{display:none}
.thx .pane{border-top:1px solid #ddd;padding-top:6px;margin-top:4px}
.thx .nav label{display:inline-block;padding:1px 8px;margin-right:6px;border:1px solid #1976d2;border-radius:4px;
  color:#1976d2;cursor:pointer}
.thx .tree{max-height:none}
.thx .pbar .ptm{color:#7b1fa2;font-size:11px;border-left:0 solid #ce93d8;padding-left:3px;margin-left:3px}
.thx .graph{overflow:auto;border:1px solid #eee;max-height:900px}
"""
TIMING_ROWS = 30  # the slowest lines listed in each final pass
OVERVIEW_TAB = "overview"  # the tab the page opens on
REPORT_CHANGES = 300  # changes listed per pass (the explorer lists more)
REPORT_TEXT_DIFF = 100  # lines of the final pass's text diff
# lines of a final pass's printed trace (the tree above it has every line with its subsymbols;
# ``thunder.last_traces(jfn)[-1]`` prints the whole trace)
REPORT_PRINTED = 400
GRAPHED_KINDS = ("computation", "backward")  # "auto" draws their final pass; other kinds' when small
SMALL_GRAPH = 60
PAIR_GRAPH_NODES = 300  # "auto" draws the forward-and-backward graph up to this many lines in all
PAIR_TAB = "pair"  # the tab of the forward and backward side by side (a name no trace kind has)
MEMORY_TAB = "memory"  # the tab of the memory plots (and the what-if table, when given)


def _id(*parts) -> str:
    return "r" + "_".join(str(p) for p in parts)


@collector_paused()
def report_html(
    obj,
    *,
    graphs: str = "auto",
    graph_depth: int = 1,
    open_depth: int = 1,
    budget: int = DEFAULT_BUDGET,
    title: str | None = None,
    kind: str | None = None,
    modules: bool | None = None,
    memory: bool = True,
    comparison=None,
) -> str:
    """The page for a jitted function, an Explorer, a Trace or a TraceModel.

    It opens on the overview (``explorer.views.overview``: modules with time and memory, the
    slowest lines, the cache, the pipeline of passes as a clickable timeline), unless ``kind``
    names a tab. ``graphs``: "all" (a graph per pass), "final" (final passes only), "auto"
    (see below), "none". ``kind``: the tab the page opens on (``"overview"``, a trace kind, ``"pair"``:
    the forward and backward side by side; default: the overview, or the kind and pass an
    Explorer shows). Each tree, list of changes, text diff and printed trace shows at most
    ``budget`` elements; "auto" draws the final computation and backward graphs, and every
    pass's of a small trace (a model's prologue, a line per parameter, gets none); a pass before the final one shows its top-level lines, what it changed
    and no printed trace (the final pass has them all), so the page of a 40,000-line program
    stays a few MB and a small model's well under 2 MB. ``modules``: trees grouped by module
    and graphs in module clusters (where scopes were recorded; None: when they were).
    ``memory``: a tab with the memory plot of the final computation and backward traces;
    ``comparison`` (an ``explorer.compare`` result): its table in that tab.

    Every tab and pass is a radio button of one group, placed before the sections it shows, so
    a label anywhere on the page (a tab, a pass of the timeline, "next pass") selects it, with
    CSS alone.
    """
    model = getattr(obj, "model", None)
    shown: dict[str, int] = {}  # kind -> the pass an Explorer shows
    if isinstance(model, TraceModel):
        current = getattr(obj, "current", None)
        explorer_kind = getattr(getattr(obj, "kind", None), "value", None)
        if explorer_kind in model.series and current is not None:
            shown[explorer_kind] = current.index
            view = getattr(getattr(obj, "view", None), "value", None)
            if view != OVERVIEW_TAB:
                kind = kind or explorer_kind
    else:
        from explorer.model.compilation import model_of

        model = model_of(obj)
    if comparison is None:  # the explorer's what-if control ran one
        comparison = getattr(getattr(obj, "whatif", None), "comparison", None)
    kinds = list(model.series)
    if modules is None:
        modules = "computation" in model.series and model.series["computation"].final.modules().has_modules
    pair = model.pair()
    if (
        kind is not None
        and kind not in model.series
        and kind != OVERVIEW_TAB
        and not (kind == PAIR_TAB and pair is not None)
    ):
        raise ValueError(f"explorer: no {kind} trace here; there are: {', '.join(kinds) or 'none'}")
    rules = []
    parts = [f"<h1>thunder: {escape(title or model.title)}</h1>"]
    meta = [f"written {datetime.datetime.now():%Y-%m-%d %H:%M}"]
    if model.stats:
        meta.append(", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in model.stats.items()))
    if model.timing_device:
        meta.append(f"times measured on {model.timing_device}")
    parts.append(f'<div class="note">{escape("; ".join(meta))}</div>')
    if not kinds:
        parts.append('<div class="note">No traces: call the jitted function first.</div>')

    memory_kinds = [k for k in ("computation", "backward") if memory and k in model.series]
    profiles = {}
    for k in memory_kinds:
        try:
            profiles[k] = memory_of(model, k)
        except Exception as e:  # a model without its traces (read from JSON); the page still reads
            profiles[k] = e
    # the radios come first so each section (a later sibling) can be shown by them
    at = {k: shown.get(k, len(model.series[k].passes) - 1) for k in kinds}
    opening = _id(kind, at[kind]) if kind in model.series else _id(kind or OVERVIEW_TAB)
    radios = [_id(OVERVIEW_TAB)] if kinds else []
    radios += [_id(k, p.index) for k in kinds for p in model.series[k].passes]
    radios += [_id(PAIR_TAB)] if pair is not None else []
    radios += [_id(MEMORY_TAB)] if memory_kinds or comparison is not None else []
    if opening not in radios and radios:
        opening = radios[0]
    for r in radios:
        checked = " checked" if r == opening else ""
        parts.append(f'<input type="radio" class="rad" name="kind" id="{r}"{checked}>')
    tabs = [(OVERVIEW_TAB, [_id(OVERVIEW_TAB)], "overview")] if kinds else []
    for k in kinds:
        s = model.series[k]
        tabs.append((k, [_id(k, p.index) for p in s.passes], f"{k} ({len(s.passes)} passes)"))
    if pair is not None:
        tabs.append((PAIR_TAB, [_id(PAIR_TAB)], "forward + backward"))
    if _id(MEMORY_TAB) in radios:
        tabs.append((MEMORY_TAB, [_id(MEMORY_TAB)], f"memory{' + what if' if comparison else ''}"))
    parts.append('<div class="tabs">')
    for k, ids, text in tabs:
        target = _id(k, at[k]) if k in at else ids[0]
        parts.append(f'<label for="{target}">{escape(text)}</label>')
        for r in ids:
            rules.append(f"#{r}:checked~.kind.{_id('k', k)}{{display:block}}")
            rules.append(f"#{r}:checked~.tabs label[for={target}]{{background:#e3f2fd;border-color:#1976d2}}")
    parts.append("</div>")
    if kinds:
        link = _pass_link
        memory_figures = {k: v for k, v in profiles.items() if not isinstance(v, Exception)}
        parts.append(
            f'<div class="kind {_id("k", OVERVIEW_TAB)}">'
            + overview_html(model, profiles=memory_figures, pass_link=link)
            + "</div>"
        )
    for k in kinds:
        s = model.series[k]
        parts.append(_series_html(model, s, rules, graphs, graph_depth, open_depth, budget, modules))
    if pair is not None:
        parts.append(_pair_section(pair, graphs, graph_depth, budget))
    if _id(MEMORY_TAB) in radios:
        parts.append(_memory_section(model, memory_kinds, comparison, profiles))
    parts.append(timeline_section_html(model))  # the timed run on a time axis, when timed
    if model.entries:
        parts.append(cache_html(model))
    css = stylesheet() + REPORT_CSS + "\n".join(rules)
    body = "".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>thunder: {escape(model.title)}</title><style>{css}</style></head>"
        f'<body><div class="thx">{body}</div>{canvas_script()}</body></html>\n'
    )


def _pass_link(kind: str, index: int) -> str:
    """A label's attribute that selects a pass (its radio button)."""
    return f'for="{_id(kind, index)}"'


def _memory_section(model: TraceModel, kinds: list[str], comparison, profiles: dict) -> str:
    """Memory plots of the final traces of ``kinds`` (``profiles``: kind -> its MemoryProfile,
    or the error computing it), and the what-if table when given."""
    out = [f'<div class="kind {_id("k", MEMORY_TAB)}">']
    for k in kinds:
        prof = profiles.get(k)
        if isinstance(prof, Exception):
            e = prof
            why = escape(f"{type(e).__name__}: {e}")
            out.append(f'<div class="note">memory of the {escape(k)} trace: {why}</div>')
            continue
        out.append(memory_section_html(prof, model.series[k].final, anchor_prefix="r", standalone=True))
    if comparison is not None:
        out.append(
            '<div class="hd">what if another executor ran it</div>' + comparison_table_html(comparison)
        )
    out.append("</div>")
    return "".join(out)


def _pair_section(pair, graphs: str, graph_depth: int, budget: int) -> str:
    """The final forward and backward side by side, and their graph (unless ``graphs`` is "none")."""
    out = [f'<div class="kind {_id("k", PAIR_TAB)}">', pair_html(pair, budget=budget)]
    lines = len(pair.forward.nodes) + len(pair.backward.nodes)
    if graphs == "auto" and lines > PAIR_GRAPH_NODES:
        out.append(
            f'<div class="note">Graph of both: {lines} lines are too many to read as one picture; '
            "each trace's tab has its graph, <code>explorer.pair_of(jfn).graph()</code> draws this one.</div>"
        )
    elif graphs != "none":
        depth = (
            graph_depth
            if max(count_nodes(p.nodes, graph_depth, 250) for p in (pair.forward, pair.backward)) <= 250
            else 0
        )
        g = pair_graph(pair, depth=depth)
        out.append(
            f"<details open><summary>Dataflow graph of both (depth {g.depth}, {g.nodes} nodes)</summary>"
        )
        out.append(compact_svg(g.html()) + "</details>")
    out.append("</div>")
    return "".join(out)


_SVG_COMMENT = re.compile(r"<!--.*?-->\n?", re.S)


def compact_svg(html: str) -> str:
    """A graph without the comments graphviz writes before each element (its own node ids,
    read by nobody: the canvas reads the ``<title>`` elements, which stay)."""
    return _SVG_COMMENT.sub("", html)


def _series_html(model, s: TraceSeries, rules, graphs, graph_depth, open_depth, budget, modules) -> str:
    k = s.kind
    last = len(s.passes) - 1
    out = [f'<div class="kind {_id("k", k)}">', '<div class="pbar">']
    longest = max((p.seconds or 0.0 for p in s.passes), default=0.0) or 1.0
    for p in s.passes:
        pid = _id(k, p.index)
        same = "" if p.changed else ' class="same"'
        what = "first trace" if p.diff is None else p.diff.summary()
        tip = f"{what}; {fmt_seconds(p.seconds)}"
        bar = max(int(40 * (p.seconds or 0.0) / longest), 0)
        took = f' <span class="ptm" style="border-left-width:{bar}px">{fmt_seconds(p.seconds)}</span>'
        took = took if p.seconds is not None else ""
        out.append(f'<label for="{pid}"{same} title="{escape(tip)}">{p.index} {escape(p.name)}{took}</label>')
        rules.append(f"#{pid}:checked~.kind .{_id('pane', k, p.index)}{{display:block}}")
        rules.append(
            f"#{pid}:checked~.kind .pbar label[for={pid}]{{background:#e3f2fd;border-color:#1976d2;font-weight:600}}"
        )
        rules.append(f"#{pid}:checked~.kind .tl label[for={pid}]{{background:#bbdefb;border-color:#1976d2}}")
    out.append("</div>")
    for p in s.passes:
        want_graph = graphs == "all" or (graphs in ("final", "auto") and p.index == last)
        if graphs == "auto":
            small = len(s.final.nodes) <= SMALL_GRAPH and s.final.size() <= 4 * SMALL_GRAPH
            # a small trace: a graph per pass; a model's prologue (a line per parameter) reads
            # better as the tree
            want_graph = small or (want_graph and k in GRAPHED_KINDS)
        out.append(_pane_html(model, s, p, want_graph, graph_depth, open_depth, budget, modules))
    out.append("</div>")
    return "".join(out)


def _pane_html(
    model, s: TraceSeries, p: PassModel, want_graph, graph_depth, open_depth, budget, modules
) -> str:
    k = s.kind
    last = len(s.passes) - 1
    final = p.index == last
    before = s.passes[p.index - 1] if p.index > 0 else None
    times = model.timings.get(k) if final else None
    nav = []
    if p.index > 0:
        nav.append(f'<label for="{_id(k, p.index - 1)}">&larr; previous pass</label>')
    if p.index < last:
        nav.append(f'<label for="{_id(k, p.index + 1)}">next pass &rarr;</label>')
    out = [f'<div class="pane {_id("pane", k, p.index)}">', f'<div class="nav">{"".join(nav)}</div>']
    out.append(pass_header_html(s, p))
    if before is not None:
        summary = escape(p.diff.summary())
        # a pass's page opens on what it changed (a del-only change folds itself)
        out.append(f"<details open><summary>Diff against pass {before.index} ({summary})</summary>")
        out.append(
            diff_html(p, before, text=final, budget=min(budget, REPORT_CHANGES), text_budget=REPORT_TEXT_DIFF)
            + "</details>"
        )
    tree = p.modules() if modules else None
    tree = tree if tree is not None and tree.has_modules else None
    if final:
        out.append(f"<details open><summary>Bound symbols{' by module' if tree else ''}</summary>")
        out.append(
            tree_html(p.nodes, open_depth=open_depth, budget=budget, times=times, modules=tree) + "</details>"
        )
    else:  # an earlier pass: its lines as printed, the final pass has the tree of their subsymbols
        opened = " open" if before is None else ""
        out.append(
            f'<details{opened}><summary>Its lines <span class="note">(top level; the final pass has them '
            f"as a tree, with their subsymbols)</span></summary>{lines_html(p, budget)}</details>"
        )
    if want_graph:
        depth = graph_depth if count_nodes(p.nodes, graph_depth, 500) <= 500 else 0
        g = render_graph(
            p, s.proxies, depth=depth, title=f"{k} {p.index}: {p.name}", modules=tree is not None
        )
        out.append(f"<details open><summary>Dataflow graph (depth {g.depth}, {g.nodes} nodes)</summary>")
        out.append(compact_svg(g.html()) + "</details>")
    else:
        out.append(
            '<div class="note">Graph: drawn for the final computation and backward passes (and small traces); '
            "<code>explorer.graph_of(jfn, kind, index)</code> draws any pass.</div>"
        )
    if times:
        slowest = sorted(times.items(), key=lambda r: -r[1])
        body = "".join(
            f'<tr><td>{fmt_seconds(t)}</td><td class="ln">{escape(n.shown_line if n else "?")}</td></tr>'
            for n, t in ((p.find(i), t) for i, t in slowest[:TIMING_ROWS])
        )
        more = len(slowest) - TIMING_ROWS
        out.append(
            "<details open><summary>Measured times (slowest first)</summary>"
            f'<table class="kv"><tr><th>time</th><th>bound symbol</th></tr>{body}</table>'
            + (f'<div class="more">... {more} more</div>' if more > 0 else "")
            + "</details>"
        )
    if final:
        out.append(
            f"<details><summary>Printed trace</summary>{source_html(p, min(budget, REPORT_PRINTED))}</details>"
        )
    out.append("</div>")
    return "".join(out)
