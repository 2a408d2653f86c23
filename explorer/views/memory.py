"""The memory view: live bytes over the lines of a trace as an SVG plot, and tables.

Everything here is static HTML (no script, no matplotlib): the widget, the report and a saved
notebook show the same thing. The plot draws the computed live bytes after each line as steps
(and the measured ones, dashed, where measured); at most ``PLOT_POINTS`` steps per curve, each
the largest value of the lines it stands for, so the peak is never smoothed away. The peak is
marked and links (``#anchor``) to its row below, which shows the line with its subsymbols.
A long trace's table lists the lines around the peak and the largest allocations, and folds
the whole list below them (``<details>``: no script, so JupyterLab renders it as it is).
"""

from __future__ import annotations

from html import escape

from explorer.model.memory import MemoryProfile, fmt_bytes
from explorer.model.passes import PassModel
from explorer.views.html import wrap
from explorer.views.tree import tree_html

PLOT_POINTS = 800  # points per curve at most
AROUND_PEAK = 8  # lines listed before and after the peak
LARGEST = 12  # the largest allocations listed
FULL_TABLE = 40  # a trace of at most this many lines is listed whole, a longer one folded
ALL_LINES = 1_000  # the fold lists at most this many lines (the rest: ``prof.rows``)
SHORT_LIST = 8  # saved / rematerialized values listed open; the rest folded
WIDTH, HEIGHT, PAD_L, PAD_B, PAD_T = 760, 200, 64, 22, 12

MEMORY_CSS = """
.thx .mem svg{background:#fff;border:1px solid #eee}
.thx .mem .cap{color:#555;font-size:12px}
.thx .mem table.kv td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.thx .mem tr.peak td{background:#fff3e0;font-weight:600}
.thx .mem .modbar{display:inline-block;height:9px;background:#1976d2;vertical-align:middle}
"""


def _anchor(prefix: str, prof: MemoryProfile, row: int) -> str:
    return f"{prefix}mem-{prof.kind}-{prof.pass_index}-{row}"


def _series(values: list[int], points: int) -> list[tuple[int, int]]:
    """(line index, value) pairs, at most ``points``: the largest value of each bucket of lines."""
    n = len(values)
    if n <= points:
        return list(enumerate(values))
    out = []
    step = n / points
    for k in range(points):
        lo = int(k * step)
        seg = values[lo : max(int((k + 1) * step), lo + 1)]
        top = max(seg)
        out.append((lo + seg.index(top), top))
    return out


def plot_svg(prof: MemoryProfile, *, link_prefix: str | None = None) -> str:
    """Live bytes after each line as an inline SVG (computed solid, measured dashed); with
    ``link_prefix``, the peak's marker links to its row (a standalone page: JupyterLab's link
    handling rejects an anchor inside an SVG and shows the output as an error, so a notebook's
    view links from ``peak_link_html`` beside the plot instead)."""
    computed = [r.live for r in prof.rows]
    measured = [r.measured or 0 for r in prof.rows] if prof.measured else None
    n = max(len(computed), 1)
    top = max([*computed, *(measured or []), 1])
    w, h = WIDTH - PAD_L - 8, HEIGHT - PAD_B - PAD_T

    def x(i: int) -> float:
        return PAD_L + (w * i / max(n - 1, 1))

    def y(v: int) -> float:
        return PAD_T + h - h * v / top

    def line(values: list[int], cls: str, style: str) -> str:
        steps, before = [], 0  # a step at each line: the bytes live before it, then after it
        for i, v in _series(values, PLOT_POINTS):
            steps.append(f"{x(i):.1f},{y(before):.1f} {x(i):.1f},{y(v):.1f}")
            before = v
        pts = " ".join(steps)
        return f'<polyline class="{cls}" fill="none" {style} points="{pts}"/>'

    parts = [
        f'<svg class="memplot" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="live bytes after each line">',
        f"<title>{escape(prof.kind)}: live bytes after each line, peak {fmt_bytes(prof.peak)}</title>",
    ]
    for frac in (0, 0.5, 1):
        yy = y(int(top * frac))
        parts.append(
            f'<line x1="{PAD_L}" x2="{WIDTH - 8}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#eee"/>'
            f'<text x="{PAD_L - 4}" y="{yy + 4:.1f}" font-size="10" text-anchor="end" fill="#666">'
            f"{fmt_bytes(top * frac)}</text>"
        )
    parts.append(
        f'<text x="{PAD_L}" y="{HEIGHT - 6}" font-size="10" fill="#666">line 0</text>'
        f'<text x="{WIDTH - 8}" y="{HEIGHT - 6}" font-size="10" fill="#666" text-anchor="end">'
        f"line {n - 1}</text>"
    )
    parts.append(line(computed, "computed", 'stroke="#1976d2" stroke-width="1.5"'))
    if measured is not None:
        parts.append(line(measured, "measured", 'stroke="#e65100" stroke-width="1.2" stroke-dasharray="4 3"'))
    if prof.rows:
        px, py = x(prof.peak_index), y(prof.peak)
        tip = escape(f"peak {fmt_bytes(prof.peak)} after line {prof.peak_index}: {prof.peak_line}")
        opening, closing = '<g class="peak">', "</g>"
        if link_prefix is not None:
            opening = f'<a class="peak" href="#{_anchor(link_prefix, prof, prof.peak_index)}">'
            closing = "</a>"
        parts.append(
            opening + f"<title>{tip}</title>"
            f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{PAD_T}" y2="{PAD_T + h}" stroke="#e53935" '
            f'stroke-dasharray="2 2"/><circle cx="{px:.1f}" cy="{py:.1f}" r="4" fill="#e53935"/>'
            + (f'<text x="{px - 6:.1f}" text-anchor="end"' if px > WIDTH / 2 else f'<text x="{px + 6:.1f}"')
            + f' y="{PAD_T + 10}" font-size="11" fill="#e53935">'
            f"peak {fmt_bytes(prof.peak)} (line {prof.peak_index})</text>" + closing
        )
    parts.append("</svg>")
    return "".join(parts)


def peak_link_html(prof: MemoryProfile, *, anchor_prefix: str = "") -> str:
    """A link from the plot to the peak's row of the lines (an HTML anchor, which notebooks take)."""
    if not prof.rows:
        return ""
    return (
        f'<div class="cap"><a class="peak" href="#{_anchor(anchor_prefix, prof, prof.peak_index)}">'
        f"peak {fmt_bytes(prof.peak)} after line {prof.peak_index}</a></div>"
    )


def _rows_shown(prof: MemoryProfile) -> list[int]:
    n = len(prof.rows)
    if n <= FULL_TABLE:
        return list(range(n))
    near = range(max(prof.peak_index - AROUND_PEAK, 0), min(prof.peak_index + AROUND_PEAK + 1, n))
    allocated = [-r.allocated for r in prof.rows]
    largest = sorted(range(n), key=allocated.__getitem__)[:LARGEST]
    return sorted(set(near) | set(largest))


def rows_html(prof: MemoryProfile, p: PassModel | None = None, *, anchor_prefix: str = "") -> str:
    """The lines: all of a short trace; of a long one, those around the peak and the largest
    allocations, then a fold (``<details>``, no script) that shows all of them (the first
    ``ALL_LINES`` of a very long one). The peak row shows the line with its subsymbols (from
    ``p``, the pass it was computed on)."""
    n = len(prof.rows)
    shown = _rows_shown(prof)
    out = [_table(prof, shown, p, anchor_prefix)]
    if len(shown) < n:
        listed = min(n, ALL_LINES)
        what = f"show all {n} lines" if listed == n else f"show the first {listed} of {n} lines"
        out.append(f'<details class="allrows"><summary>{what}</summary>')
        out.append(_table(prof, range(listed), None, None))
        if listed < n:
            out.append(
                f'<div class="note">... {n - listed} more lines: every line is in the profile\'s '
                "<code>rows</code> (<code>explorer.memory(...).rows</code>)</div>"
            )
        out.append("</details>")
    return "".join(out)


def _table(prof: MemoryProfile, shown, p: PassModel | None, anchor_prefix: str | None) -> str:
    """A table of the rows ``shown`` (ascending), a "... k lines" row over each gap; rows get
    their anchors only with an ``anchor_prefix`` (the fold's copies have none: ids stay unique)."""
    head = "<tr><th>#</th><th>allocates</th><th>frees</th><th>live after</th>"
    head += "<th>measured</th>" if prof.measured else ""
    head += "<th>module</th>" if prof.has_scopes else ""
    head += "<th>line</th></tr>"
    out = ['<table class="kv memrows">', head]
    last = -1
    for i in shown:
        if last >= 0 and i != last + 1:
            out.append(f'<tr><td colspan="7" class="more">... {i - last - 1} lines</td></tr>')
        last = i
        r = prof.rows[i]
        peak = i == prof.peak_index
        text = escape(r.text)
        if peak and p is not None and (node := p.find(r.node_id)) is not None and node.children:
            text = tree_html([node], open_depth=1, budget=60)
        cells = [
            f'<td class="num">{i}</td>',
            f'<td class="num">{fmt_bytes(r.allocated) if r.allocated else ""}</td>',
            f'<td class="num">{fmt_bytes(r.freed) if r.freed else ""}</td>',
            f'<td class="num">{fmt_bytes(r.live)}</td>',
        ]
        if prof.measured:
            cells.append(f'<td class="num">{fmt_bytes(r.measured)}</td>')
        if prof.has_scopes:
            cells.append(f"<td>{escape(r.scope or '')}</td>")
        cells.append(f'<td class="ln">{text}</td>')
        cls = ' class="peak"' if peak else ""
        anchor = f' id="{_anchor(anchor_prefix, prof, i)}"' if anchor_prefix is not None else ""
        out.append(f"<tr{anchor}{cls}>{''.join(cells)}</tr>")
    if anchor_prefix is not None and 0 <= last < len(prof.rows) - 1:
        out.append(f'<tr><td colspan="7" class="more">... {len(prof.rows) - 1 - last} lines</td></tr>')
    out.append("</table>")
    return "".join(out)


def modules_html(prof: MemoryProfile, limit: int = 15) -> str:
    """What each module's lines allocated and still hold at the peak."""
    if not prof.has_scopes or not prof.modules:
        return ""
    total = sum(b for _, b in prof.modules) or 1
    out = [
        "<details open><summary>At the peak, by the module that allocated it</summary>",
        '<table class="kv"><tr><th>module</th><th>bytes</th><th>share</th></tr>',
    ]
    for path, b in prof.modules[:limit]:
        bar = f'<span class="modbar" style="width:{max(int(120 * b / total), 1)}px"></span>'
        out.append(
            f'<tr><td>{escape(path or "(outside any module)")}</td><td class="num">{fmt_bytes(b)}</td>'
            f"<td>{bar} {100 * b / total:.0f}%</td></tr>"
        )
    out.append("</table></details>")
    return "".join(out)


def saved_html(prof: MemoryProfile) -> str:
    """The values saved for the backward (the ``SHORT_LIST`` costliest in sight, the rest folded),
    and those rematerialization recomputes instead (folded when more than ``SHORT_LIST``)."""
    if not prof.saved and not prof.rematerialized:
        return ""
    out = [
        f"<details open><summary>Saved for backward: {len(prof.saved)} values, "
        f"{fmt_bytes(prof.saved_bytes)} beyond the inputs</summary>",
        '<table class="kv"><tr><th>value</th><th>bytes</th><th>saved by</th></tr>',
    ]
    ordered = sorted(prof.saved, key=lambda v: (-v.extra_bytes, -v.bytes))  # the costly first
    free = [v for v in ordered if not v.extra_bytes]
    costly = ordered[: len(ordered) - len(free)]
    out += [_value_row(v) for v in costly[:SHORT_LIST]]
    out.append("</table>")
    if len(costly) > SHORT_LIST:  # a long list folds: the costliest stay in sight
        out.append(
            f'<details class="more-saved"><summary>and {len(costly) - SHORT_LIST} more saved values'
            '</summary><table class="kv">'
            + "".join(_value_row(v) for v in costly[SHORT_LIST:])
            + "</table></details>"
        )
    if free:  # inputs of the forward (weights): saving them costs nothing, folded
        names = ", ".join(v.name for v in free)
        out.append(
            f'<details class="free"><summary>and {len(free)} inputs of the forward, saved at no extra memory'
            f'</summary><div class="note ln">{escape(names)}</div></details>'
        )
    out.append("</details>")
    if prof.rematerialized:
        extra = ", ".join(prof.saved_to_recompute)
        shut = len(prof.rematerialized) > SHORT_LIST  # a long list starts folded
        out.append(
            f"<details{'' if shut else ' open'}><summary>Rematerialized: {len(prof.rematerialized)} values "
            f"recomputed in the backward instead of saved, {fmt_bytes(prof.rematerialized_bytes)} not kept</summary>"
        )
        if extra:
            out.append(
                f'<div class="note">inputs saved to recompute from: <code>{escape(extra)}</code></div>'
            )
        out.append('<table class="kv"><tr><th>value</th><th>bytes</th><th>recomputed by</th></tr>')
        out += [_value_row(v) for v in prof.rematerialized]
        out.append("</table></details>")
    elif prof.saved:
        out.append('<div class="note">Rematerialization recomputes nothing here.</div>')
    return "".join(out)


def _value_row(v) -> str:
    return (
        f'<tr><td><code>{escape(v.name)}</code></td><td class="num">{fmt_bytes(v.bytes)}</td>'
        f'<td class="ln">{escape(v.line or "?")}</td></tr>'
    )


def summary_html(prof: MemoryProfile) -> str:
    how = (
        f"measured on {escape(prof.measured_on)} (dashed) beside the computed figures"
        if prof.measured
        else "computed from shapes and dtypes (not measured)"
    )
    parts = [
        f"peak <b>{fmt_bytes(prof.peak)}</b> after line {prof.peak_index}",
    ]
    if prof.measured:
        parts.append(
            f"measured peak <b>{fmt_bytes(prof.measured_peak)}</b> after line {prof.measured_peak_index}"
        )
    parts.append(f"inputs {fmt_bytes(prof.input_bytes)} (not freed by the program, not counted as live)")
    parts.append(f"outputs {fmt_bytes(prof.output_bytes)}")
    note = f'<div class="note">{escape(prof.note)}</div>' if prof.note else ""
    return (
        f'<div class="hd">memory of the {escape(prof.kind)} trace, pass {prof.pass_index} '
        f"({escape(prof.pass_name)})</div>"
        f'<div class="cap">{"; ".join(parts)}. Figures {how}.</div>{note}'
    )


def memory_section_html(
    prof: MemoryProfile, p: PassModel | None = None, *, anchor_prefix: str = "", standalone: bool = False
) -> str:
    """The memory view of one trace (to be placed inside an element of class ``thx``);
    ``standalone``: a page of its own (the report), where the plot's peak links to its row."""
    return (
        f'<div class="mem"><style>{MEMORY_CSS}</style>'
        + summary_html(prof)
        + plot_svg(prof, link_prefix=anchor_prefix if standalone else None)
        + ("" if standalone else peak_link_html(prof, anchor_prefix=anchor_prefix))
        + modules_html(prof)
        + saved_html(prof)
        + "<details open><summary>Lines</summary>"
        + rows_html(prof, p, anchor_prefix=anchor_prefix)
        + "</details></div>"
    )


def memory_html(prof: MemoryProfile) -> str:
    """A MemoryProfile shown by itself in a notebook."""
    return wrap(memory_section_html(prof, prof.pass_model))
