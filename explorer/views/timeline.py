"""The timeline drawn: for each rank and side (forward, backward) a row of the lines' spans, a row
of fusion regions and one of collectives from start to wait, the memory curve under them; an
inline SVG in the graph canvas (zoom, pan, minimap; a click on a span selects its line). No
links in the SVG (JupyterLab rejects ``<a href>`` inside one): hovering a span names it.

This module also sets ``Timeline._repr_html_`` (the measure layer does not import views).
"""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from explorer.measure.timeline import Span, Timeline, timeline_of
from explorer.model.memory import fmt_bytes
from explorer.model.seconds import fmt_seconds
from explorer.model.traces import TraceModel
from explorer.views.canvas import canvas_html, canvas_script
from explorer.views.style import executor_style, stylesheet

LEFT, ROW, GAP, MEMORY_H, AXIS_H = 150, 22, 8, 90, 26
TRACK_FILL = {"fusion regions": ("#e8f5e9", "#2e7d32"), "collectives": ("#fff3e0", "#e65100")}


def _width(tl: Timeline) -> int:
    lines = sum(1 for s in tl.spans if s.track == "lines")
    return max(900, min(lines * 8, 8000))


def _ticks(total: float, width: int) -> list[float]:
    if total <= 0:
        return [0.0]
    raw = total / max(width // 120, 1)
    step = 10 ** len(str(int(raw * 1e9))) / 1e9 / 10  # a power of ten near raw, in seconds
    for m in (1, 2, 5, 10):
        if step * m >= raw:
            step *= m
            break
    return [i * step for i in range(int(total / step) + 1)]


def _span_svg(s: Span, x, y: float, width: int) -> str:
    x0, x1 = x(s.start), x(s.end)
    w = max(x1 - x0, 0.6)
    if s.track == "lines":
        fill, border, *_ = executor_style(s.detail.get("executor"))
    else:
        fill, border = TRACK_FILL.get(s.track, ("#eeeeee", "#777777"))
    tip = f"{s.name}: {fmt_seconds(s.seconds)}\n{s.line}"
    if "module" in s.detail:
        tip += f"\nin {s.detail['module']}"
    if s.track == "fusion regions":
        tip += "\n" + ", ".join(s.detail.get("ops", [])[:30])
    label = ""
    if w > 7 * min(len(s.name), 4) + 6:
        chars = int((w - 6) / 6.2)
        text = s.name if len(s.name) <= chars else s.name[: max(chars - 1, 1)] + "\u2026"
        label = (
            f'<text x="{x0 + 3:.1f}" y="{y + ROW / 2 + 4:.1f}" font-size="10" '
            f'font-family="Helvetica,sans-serif">{escape(text)}</text>'
        )
    return (
        f'<g class="node thx-s-{quote(s.node_id, safe="")}"><title>{escape(tip)}</title>'
        f'<rect x="{x0:.2f}" y="{y + 2:.1f}" width="{w:.2f}" height="{ROW - 4}" fill="{fill}" '
        f'stroke="{border}" stroke-width="0.6"/>{label}</g>'
    )


def timeline_svg(tl: Timeline) -> str:
    """The timeline as one SVG (empty string when nothing was timed)."""
    if not tl.spans:
        return ""
    width = _width(tl)
    total = tl.seconds or 1e-9

    def x(t: float) -> float:
        return LEFT + t / total * width

    rows: list[tuple[int, str, str]] = []  # (rank, side, track) in drawing order
    for rank in tl.ranks:
        for side in tl.sides():
            for track in ("lines", "fusion regions", "collectives"):
                if any(s.rank == rank and s.side == side and s.track == track for s in tl.spans):
                    rows.append((rank, side, track))
    top = {key: AXIS_H + i * ROW for i, key in enumerate(rows)}
    mem_top = AXIS_H + len(rows) * ROW + GAP
    height = mem_top + (MEMORY_H + 20 if tl.memory else 0)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + width + 20}pt" height="{height}pt" '
        f'viewBox="0 0 {LEFT + width + 20} {height}" class="thx-timeline">',
        f'<g class="graph"><text x="4" y="14" font-size="12" font-family="Helvetica,sans-serif" '
        f'font-weight="bold">{escape(tl.title)}: {fmt_seconds(tl.seconds)}</text>',
    ]
    for t in _ticks(total, width):
        out.append(
            f'<line x1="{x(t):.1f}" y1="{AXIS_H - 6}" x2="{x(t):.1f}" y2="{height}" stroke="#eeeeee"/>'
            f'<text x="{x(t) + 2:.1f}" y="{AXIS_H - 8}" font-size="9" fill="#666" '
            f'font-family="Helvetica,sans-serif">{escape(fmt_seconds(t))}</text>'
        )
    for key, y in top.items():
        rank, side, track = key
        name = (f"rank {rank} " if len(tl.ranks) > 1 else "") + f"{side} {track}"
        out.append(
            f'<text x="4" y="{y + ROW / 2 + 4}" font-size="10" font-family="Helvetica,sans-serif">'
            f"{escape(name)}</text>"
        )
    for s in tl.spans:
        out.append(_span_svg(s, x, top[(s.rank, s.side, s.track)], width))
    if tl.memory:
        peak = max(max(m.live, m.measured or 0) for m in tl.memory) or 1
        base = mem_top + MEMORY_H

        def curve(values: list[tuple[float, int]], colour: str, dash: str = "") -> str:
            pts, last = [], float(base)
            for t, v in values:  # a step: the bytes live after a line hold until the next one ends
                pts.append(f"{x(t):.1f},{last:.1f}")
                last = base - v / peak * MEMORY_H
                pts.append(f"{x(t):.1f},{last:.1f}")
            dashes = f' stroke-dasharray="{dash}"' if dash else ""
            return (
                f'<polyline points="{" ".join(pts)}" fill="none" stroke="{colour}" '
                f'stroke-width="1.2"{dashes}/>'
            )

        out.append(
            f'<text x="4" y="{mem_top + 12}" font-size="10" font-family="Helvetica,sans-serif">memory live</text>'
            f'<text x="4" y="{mem_top + 26}" font-size="9" fill="#666" font-family="Helvetica,sans-serif">'
            f"peak {escape(fmt_bytes(peak))}</text>"
            f'<line x1="{LEFT}" y1="{base}" x2="{LEFT + width}" y2="{base}" stroke="#999"/>'
        )
        for rank in tl.ranks:
            pts = [m for m in tl.memory if m.rank == rank]
            out.append(curve([(m.time, m.live) for m in pts], "#1565c0"))
            if any(m.measured is not None for m in pts):
                out.append(curve([(m.time, m.measured or 0) for m in pts], "#c62828", "4 2"))
    out.append("</g></svg>")
    return "".join(out)


def timeline_html(tl: Timeline) -> str:
    """The timeline in a canvas, with what the axis is and how to export it (no script: the
    page carries ``canvas_script()``)."""
    notes = [
        "Each line's fastest measured time, laid end to end in trace order"
        + (f" (on {tl.device})" if tl.device else "")
        + "; fusion regions and collectives (start to wait) on rows of their own; the memory live "
        "after each line below (blue: computed"
        + (", red dashed: measured" if any(m.measured is not None for m in tl.memory) else "")
        + "). A click on a span selects its line. "
        '<code>explorer.timeline(jfn, *args).save("trace.json")</code> writes it for ui.perfetto.dev.'
    ]
    notes += [escape(n) for n in tl.notes]
    body = "".join(f'<div class="note">{n}</div>' for n in notes)
    svg = timeline_svg(tl)
    return f'<div class="thx-timeline-view">{body}{canvas_html(svg) if svg else ""}</div>'


def timeline_page_html(tl: Timeline) -> str:
    """A timeline's own notebook display: the view, its stylesheet and the canvas script."""
    return f'<div class="thx"><style>{stylesheet()}</style>{timeline_html(tl)}{canvas_script()}</div>'


def timeline_section_html(model: TraceModel) -> str:
    """The report's timeline: a folded section when the model's final traces were timed, else
    nothing."""
    if not model.timings:
        return ""
    tl = timeline_of(model)
    if not tl.spans:
        return ""
    return f"<details open><summary>Timeline of a run (forward and backward)</summary>{timeline_html(tl)}</details>"


Timeline._repr_html_ = timeline_page_html

__all__ = ["timeline_html", "timeline_page_html", "timeline_section_html", "timeline_svg"]
