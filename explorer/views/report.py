"""A self-contained HTML report: ``explorer.to_html(jfn, "report.html")``.

One page, no CDN, no script: trace kinds (and, with a backward, the forward and backward side
by side, linked by page anchors) and passes are CSS radio buttons (a label per
pass, "previous" / "next" labels in each pane), trees fold with ``<details>``, graphs are
inline SVG laid out by ``dot``. It reads the same offline, in any browser, from a file.
"""

from __future__ import annotations

import datetime
from html import escape

from explorer.model.memory import memory_of
from explorer.model.passes import PassModel, TraceSeries
from explorer.model.seconds import fmt_seconds
from explorer.model.traces import TraceModel, collector_paused
from explorer.views.graph import render_graph
from explorer.views.graph_plan import count_nodes
from explorer.views.html import cache_html, diff_html, pass_header_html, source_html
from explorer.views.memory import memory_section_html
from explorer.views.pair import pair_graph, pair_html
from explorer.views.style import stylesheet
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
.thx .graph{overflow:auto;border:1px solid #eee;max-height:900px}
"""
TIMING_ROWS = 30  # the slowest lines listed in each final pass
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

    ``graphs``: "all" (a graph per pass), "final" (final passes only), "none", or "auto"
    (all passes of a series when its final trace has at most 300 bound symbols, else final).
    ``kind``: the trace kind the page opens on (default: the one an Explorer shows, else the
    computation; ``"pair"``: the forward and backward side by side). Each tree, list of changes, text diff and printed trace shows at most
    ``budget`` elements, so the page of a 40,000-line program stays a few MB. ``modules``:
    trees grouped by module and graphs in module clusters (where scopes were recorded; None:
    when they were). ``memory``: a tab with the memory plot of the final computation and
    backward traces; ``comparison`` (an ``explorer.compare`` result): its table in that tab.
    """
    model = getattr(obj, "model", None)
    shown: dict[str, int] = {}  # kind -> the pass an Explorer shows
    if isinstance(model, TraceModel):
        current = getattr(obj, "current", None)
        explorer_kind = getattr(getattr(obj, "kind", None), "value", None)
        if explorer_kind in model.series and current is not None:
            shown[explorer_kind] = current.index
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
    if kind is not None and kind not in model.series and not (kind == PAIR_TAB and pair is not None):
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

    # trace-kind radios come first so each section (a later sibling) can be shown by them
    default_kind = kind or ("computation" if "computation" in kinds else (kinds[0] if kinds else None))
    tabs = kinds + ([PAIR_TAB] if pair is not None else [])
    memory_kinds = [k for k in ("computation", "backward") if memory and k in model.series]
    tabs += [MEMORY_TAB] if memory_kinds or comparison is not None else []
    for k in tabs:
        checked = " checked" if k == default_kind else ""
        parts.append(f'<input type="radio" class="rad" name="kind" id="{_id(k)}"{checked}>')
    parts.append('<div class="tabs">')
    for k in kinds:
        s = model.series[k]
        parts.append(f'<label for="{_id(k)}">{escape(k)} ({len(s.passes)} passes)</label>')
    if pair is not None:
        parts.append(f'<label for="{_id(PAIR_TAB)}">forward + backward</label>')
    if MEMORY_TAB in tabs:
        parts.append(f'<label for="{_id(MEMORY_TAB)}">memory{" + what if" if comparison else ""}</label>')
    for k in tabs:
        rules.append(f"#{_id(k)}:checked~.kind.{_id('k', k)}{{display:block}}")
        rules.append(
            f"#{_id(k)}:checked~.tabs label[for={_id(k)}]{{background:#e3f2fd;border-color:#1976d2}}"
        )
    parts.append("</div>")
    for k in kinds:
        s = model.series[k]
        at = shown.get(k, len(s.passes) - 1)
        parts.append(_series_html(model, s, at, rules, graphs, graph_depth, open_depth, budget, modules))
    if pair is not None:
        parts.append(_pair_section(pair, graphs, graph_depth, budget))
    if MEMORY_TAB in tabs:
        parts.append(_memory_section(model, memory_kinds, comparison))
    if model.entries:
        parts.append(cache_html(model))
    css = stylesheet() + REPORT_CSS + "\n".join(rules)
    body = "".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>thunder: {escape(model.title)}</title><style>{css}</style></head>"
        f'<body><div class="thx">{body}</div></body></html>\n'
    )


def _memory_section(model: TraceModel, kinds: list[str], comparison) -> str:
    """Memory plots of the final traces of ``kinds``, and the what-if table when given."""
    out = [f'<div class="kind {_id("k", MEMORY_TAB)}">']
    for k in kinds:
        try:
            prof = memory_of(model, k)
        except Exception as e:  # a model without its traces (read from JSON); the page still reads
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
    if graphs != "none":
        depth = (
            graph_depth
            if max(count_nodes(p.nodes, graph_depth, 250) for p in (pair.forward, pair.backward)) <= 250
            else 0
        )
        g = pair_graph(pair, depth=depth)
        out.append(
            f"<details open><summary>Dataflow graph of both (depth {g.depth}, {g.nodes} nodes)</summary>"
        )
        out.append(g.html() + "</details>")
    out.append("</div>")
    return "".join(out)


def _series_html(
    model, s: TraceSeries, at: int, rules, graphs, graph_depth, open_depth, budget, modules
) -> str:
    k = s.kind
    last = len(s.passes) - 1
    big = len(s.final.nodes) > 300 or s.final.size() > 300 * 4
    out = [f'<div class="kind {_id("k", k)}">']
    for p in s.passes:
        checked = " checked" if p.index == at else ""
        out.append(f'<input type="radio" class="rad" name="{_id("p", k)}" id="{_id(k, p.index)}"{checked}>')
    out.append('<div class="pbar">')
    for p in s.passes:
        pid = _id(k, p.index)
        same = "" if p.changed else ' class="same"'
        tip = "first trace" if p.diff is None else p.diff.summary()
        out.append(f'<label for="{pid}"{same} title="{escape(tip)}">{p.index} {escape(p.name)}</label>')
        rules.append(f"#{pid}:checked~.{_id('pane', k, p.index)}{{display:block}}")
        rules.append(
            f"#{pid}:checked~.pbar label[for={pid}]{{background:#e3f2fd;border-color:#1976d2;font-weight:600}}"
        )
    out.append("</div>")
    for p in s.passes:
        want_graph = graphs == "all" or (graphs in ("final", "auto") and p.index == last)
        if graphs == "auto" and not big:
            want_graph = True
        out.append(_pane_html(model, s, p, want_graph, graph_depth, open_depth, budget, modules))
    out.append("</div>")
    return "".join(out)


def _pane_html(
    model, s: TraceSeries, p: PassModel, want_graph, graph_depth, open_depth, budget, modules
) -> str:
    k = s.kind
    last = len(s.passes) - 1
    before = s.passes[p.index - 1] if p.index > 0 else None
    times = model.timings.get(k) if p.index == last else None
    nav = []
    if p.index > 0:
        nav.append(f'<label for="{_id(k, p.index - 1)}">&larr; previous pass</label>')
    if p.index < last:
        nav.append(f'<label for="{_id(k, p.index + 1)}">next pass &rarr;</label>')
    out = [f'<div class="pane {_id("pane", k, p.index)}">', f'<div class="nav">{"".join(nav)}</div>']
    out.append(pass_header_html(s, p))
    if before is not None:
        summary = escape(p.diff.summary())
        out.append(f"<details open><summary>Diff against pass {before.index} ({summary})</summary>")
        out.append(diff_html(p, before, budget=budget) + "</details>")
    tree = p.modules() if modules else None
    tree = tree if tree is not None and tree.has_modules else None
    out.append(f"<details open><summary>Bound symbols{' by module' if tree else ''}</summary>")
    out.append(
        tree_html(p.nodes, open_depth=open_depth, budget=budget, times=times, modules=tree) + "</details>"
    )
    if want_graph:
        depth = graph_depth if count_nodes(p.nodes, graph_depth, 500) <= 500 else 0
        g = render_graph(
            p, s.proxies, depth=depth, title=f"{k} {p.index}: {p.name}", modules=tree is not None
        )
        out.append(f"<details open><summary>Dataflow graph (depth {g.depth}, {g.nodes} nodes)</summary>")
        out.append(g.html() + "</details>")
    else:
        out.append('<div class="note">Graph: only drawn for the final pass of a large trace.</div>')
    if times:
        slowest = sorted(times.items(), key=lambda r: -r[1])
        body = "".join(
            f'<tr><td>{fmt_seconds(t)}</td><td class="ln">{escape(n.line if n else "?")}</td></tr>'
            for n, t in ((p.find(i), t) for i, t in slowest[:TIMING_ROWS])
        )
        more = len(slowest) - TIMING_ROWS
        out.append(
            "<details open><summary>Measured times (slowest first)</summary>"
            f'<table class="kv"><tr><th>time</th><th>bound symbol</th></tr>{body}</table>'
            + (f'<div class="more">... {more} more</div>' if more > 0 else "")
            + "</details>"
        )
    out.append(f"<details><summary>Printed trace</summary>{source_html(p, budget)}</details>")
    out.append("</div>")
    return "".join(out)
