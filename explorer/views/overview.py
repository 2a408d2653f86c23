"""The overview of a compilation: what the explorer and the report open on.

The final program first, as a PyTorch user reads a model: its modules with their time, the
bytes their lines allocate and what they hold at the peak; the slowest lines; the cache's
entries and why each was compiled; and the pipeline of passes as a timeline (each pass as wide
as it took, a click away from its trace and diff where the page can link it). Everything is
read off the ``TraceModel`` (module groups: ``explorer.model.modules``, computed memory:
``explorer.model.memory``); nothing needs a script.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from explorer.model.memory import MemoryProfile, fmt_bytes
from explorer.model.modules import ModuleGroup
from explorer.model.seconds import fmt_seconds
from explorer.model.traces import TraceModel, collector_paused
from explorer.views.tree import split_comment

MODULE_ROWS = 60  # modules listed in the overview (parents first); the rest are counted
MODULE_LEVELS = 4  # ... down to this depth below the jitted module
SLOWEST = 12  # slowest lines listed
OVERVIEW_CSS = """
.thx .ov td.num,.thx .ov th.num{text-align:right;white-space:nowrap}
.thx .ov .bar{display:inline-block;height:8px;background:#7b1fa2;vertical-align:middle;margin-right:4px}
.thx .ov .mbar{background:#1976d2}
.thx .tl{display:flex;gap:2px;margin:2px 0 6px;align-items:stretch}
.thx .tl .tk{flex:0 0 8em;font-weight:600;padding-top:2px}
.thx .tl .tp{min-width:2.4em;overflow:hidden;white-space:nowrap;text-overflow:ellipsis;border:1px solid #90a4ae;
  border-radius:3px;padding:1px 4px;background:#eceff1;font-size:11px;cursor:pointer}
.thx .tl .tp.same{border-style:dashed;color:#888;background:#fff}
.thx .tl .tp small{color:#7b1fa2}
"""


def _label(g: ModuleGroup) -> str:
    return g.label


@collector_paused()
def overview_html(
    model: TraceModel,
    *,
    profiles: dict[str, MemoryProfile | None] | None = None,
    pass_link: Callable[[str, int], str] | None = None,
    timeline: bool = True,
) -> str:
    """The overview (to be placed inside an element of class ``thx``). ``profiles``: kind ->
    the computed memory of its final trace, where known (the report computes them for its
    memory tab). ``pass_link(kind, index)``: the attributes that make a pass of the timeline
    clickable (the report's ``for="..."`` of the pass's radio button); without it the passes
    are listed unlinked. ``timeline``: whether to draw the pipeline (the widget has buttons)."""
    profiles = profiles or {}
    out = [f"<style>{OVERVIEW_CSS}</style>", '<div class="ov">']
    out.append(_headline(model, profiles))
    if timeline and model.series:
        out.append(pipeline_html(model, pass_link))
    if "computation" in model.series:
        out.append(_modules_table(model, "computation", profiles.get("computation")))
    out.append(_slowest(model))
    if model.entries:
        out.append(_cache_table(model))
    if "backward" in model.series:
        table = _modules_table(model, "backward", profiles.get("backward"))
        if table:  # below the forward's, folded: the same modules again
            out.append(f"<details><summary>Modules of the backward</summary>{table}</details>")
    out.append("</div>")
    return "".join(out)


def _headline(model: TraceModel, profiles: dict) -> str:
    facts = []
    for kind, s in model.series.items():
        f = s.final
        t = model.timings.get(kind)
        took = f", {fmt_seconds(sum(t.values()))} measured" if t else ""
        prof = profiles.get(kind)
        peak = f", peak {fmt_bytes(prof.peak)}" if prof is not None else ""
        facts.append(f"<b>{escape(kind)}</b> {len(f.nodes)} lines{took}{peak}")
    if model.timing_device:
        facts.append(f"times measured on {escape(model.timing_device)}")
    elif model.series:
        facts.append(
            "times not measured: <code>explorer.explore(jfn, args=(...))</code> or <code>%thunder_trace</code> "
            "measure them"
        )
    return f'<div class="hd">The final program</div><div class="note">{"; ".join(facts)}</div>'


def _modules_table(model: TraceModel, kind: str, prof: MemoryProfile | None) -> str:
    """The module tree of the final trace of ``kind``: ops, time, bytes allocated, held at the peak."""
    p = model.series[kind].final
    tree = p.modules()
    if not tree.has_modules:
        return ""
    times = model.timings.get(kind) or {}
    allocated: dict[str, int] = {}  # module path -> bytes its own lines allocate
    if prof is not None:
        for r in prof.rows:
            g = tree.group_of.get(r.node_id)
            if g is not None and r.allocated:
                allocated[g.path] = allocated.get(g.path, 0) + r.allocated
    at_peak = dict(prof.modules) if prof is not None else {}

    def below(table: dict[str, int], g: ModuleGroup) -> int:
        if not g.path:
            return sum(v for k, v in table.items() if k is not None)
        pre = g.path + "."
        return sum(v for k, v in table.items() if k and (k == g.path or k.startswith(pre)))

    groups = [g for g in tree.groups.values() if g.depth <= MODULE_LEVELS]
    total_t = sum(times.values()) or None
    total_b = max((below(allocated, g) for g in groups if g.parent is None), default=0) or None
    rows = []
    for g in groups[:MODULE_ROWS]:
        t = g.seconds(times)
        pad = f"padding-left:{6 + 14 * g.depth}px"
        tcell = "-"
        if t is not None:
            w = max(int(60 * t / total_t), 1) if total_t else 1
            tcell = f'<span class="bar" style="width:{w}px"></span>{fmt_seconds(t)}'
        a = below(allocated, g) if prof is not None else None
        acell = "-"
        if a is not None:
            w = max(int(60 * a / total_b), 1) if total_b and a else 0
            acell = (f'<span class="bar mbar" style="width:{w}px"></span>' if w else "") + fmt_bytes(a)
        pk = fmt_bytes(below(at_peak, g)) if prof is not None else "-"
        rows.append(
            f'<tr data-id="{escape(g.id)}"><td style="{pad}"><span class="mp">{escape(_label(g))}</span></td>'
            f'<td>{escape(g.cls)}</td><td class="num">{g.op_count()}</td><td class="num">{tcell}</td>'
            f'<td class="num">{acell}</td><td class="num">{pk}</td></tr>'
        )
    more = len(tree.groups) - min(len(groups), MODULE_ROWS)
    peak = ""
    if prof is not None and prof.rows:
        row = prof.rows[prof.peak_index]
        g = tree.group_of.get(row.node_id)
        where = f" in {escape(_label(g))}" if g is not None else ""
        peak = (
            f'<div class="note">peak {fmt_bytes(prof.peak)} at line {prof.peak_index}{where}: '
            f"<code>{escape(row.text)}</code></div>"
        )
    title = "Modules" if kind == "computation" else "Modules, backward"
    return (
        f'<div class="hd">{title} <span class="note">{len(tree.groups)} modules, '
        f"{len(p.nodes)} lines of the final {escape(kind)} trace</span></div>"
        '<table class="kv ov"><tr><th>module</th><th>class</th><th class="num">ops</th>'
        '<th class="num">time</th><th class="num">allocates</th><th class="num">held at the peak</th></tr>'
        + "".join(rows)
        + "</table>"
        + (f'<div class="more">... {more} more modules (deeper or further down)</div>' if more > 0 else "")
        + peak
    )


def _slowest(model: TraceModel) -> str:
    found = []
    for kind, times in model.timings.items():
        s = model.series.get(kind)
        if s is None:
            continue
        for node_id, t in times.items():
            found.append((t, kind, node_id))
    if not found:
        return ""
    found.sort(key=lambda r: -r[0])
    total = sum(t for t, _, _ in found) or 1.0
    rows = []
    for t, kind, node_id in found[:SLOWEST]:
        p = model.series[kind].final
        n = p.find(node_id)
        g = p.modules().group_of.get(node_id) if n is not None else None
        code = split_comment(n, shown=True)[0] if n is not None else node_id
        rows.append(
            f'<tr data-id="{escape(node_id)}"><td class="num">{fmt_seconds(t)}</td>'
            f'<td class="num">{100 * t / total:.1f}%</td><td>{escape(kind)}</td>'
            f'<td>{escape(_label(g)) if g is not None else "-"}</td><td class="ln">{escape(code)}</td></tr>'
        )
    return (
        '<div class="hd">Slowest lines</div><table class="kv ov"><tr><th class="num">time</th>'
        '<th class="num">share</th><th>trace</th><th>module</th><th>line</th></tr>'
        + "".join(rows)
        + "</table>"
    )


def _cache_table(model: TraceModel) -> str:
    rows = []
    for e in model.entries:
        why = "<br>".join(escape(r) for r in e.miss_reasons) or '<span class="note">first compilation</span>'
        cur = " (shown)" if model.entry_index is not None and e.index == model.entry_index else ""
        rows.append(
            f"<tr><td>{e.index}{cur}</td><td>{e.computation_lines}</td>"
            f"<td><code>{escape(', '.join(e.inputs))}</code></td><td>{why}</td></tr>"
        )
    n = len(model.entries)
    return (
        f'<div class="hd">Cache <span class="note">{n} compiled entr{"y" if n == 1 else "ies"}</span></div>'
        '<table class="kv ov"><tr><th>entry</th><th>lines</th><th>computation inputs</th>'
        "<th>why it was compiled</th></tr>"
        + "".join(rows)
        + "</table>"
        + (
            '<div class="note"><code>explorer.diff(jfn, entries=(i, j))</code> shows two entries side by side: '
            "the check that failed, the sizes that became symbols, the lines and graphs that differ</div>"
            if n > 1
            else ""
        )
    )


def pipeline_html(model: TraceModel, pass_link: Callable[[str, int], str] | None = None) -> str:
    """Each trace kind's passes in order, as wide as each took (the acquisition and passes
    that changed nothing narrow, dashed); with ``pass_link``, each a label that selects it."""
    longest = max((p.seconds or 0.0 for s in model.series.values() for p in s.passes), default=0.0) or 1.0
    out = [
        '<div class="hd">Pipeline <span class="note">each pass as wide as it took; click one for its '
        "trace and what it changed</span></div>"
        if pass_link
        else '<div class="hd">Pipeline</div>'
    ]
    for kind, s in model.series.items():
        items = [f'<span class="tk">{escape(kind)}</span>']
        for p in s.passes:
            grow = 1 + int(20 * (p.seconds or 0.0) / longest)
            what = "first trace" if p.diff is None else p.diff.summary()
            tip = f"{p.index} {p.name}: {what}, {fmt_seconds(p.seconds)}"
            cls = "tp" if p.changed else "tp same"
            attrs = pass_link(kind, p.index) if pass_link else ""
            tag = "label" if pass_link else "span"
            items.append(
                f'<{tag} class="{cls}" {attrs} style="flex:{grow} 1 0" title="{escape(tip)}">'
                f"{p.index} {escape(p.name)} <small>{fmt_seconds(p.seconds)}</small></{tag}>"
            )
        out.append(f'<div class="tl" data-kind="{escape(kind)}">{"".join(items)}</div>')
    return "".join(out)
