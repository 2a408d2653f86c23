"""The what-if table: each executor list's times, memory, fusion regions and output check.

Static HTML (no script), for a notebook, the widget and the report; the fastest time and the
smallest peak are marked, timings whose calls differ by more than ``NOISY`` times are flagged as
noisy beside their median and slowest, a list whose outputs differ from the first list's is
flagged with the first value that differs (its path, largest absolute and relative error), and
outputs that are random (numbers drawn differently) say so.
"""

from __future__ import annotations

from html import escape

from explorer.measure.whatif import Comparison, WhatIfRow
from explorer.model.memory import fmt_bytes
from explorer.views.html import wrap
from explorer.views.text import fmt_seconds

WHATIF_CSS = """
.thx .whatif td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.thx .whatif td.best{font-weight:600;color:#2e7d32}
.thx .whatif td.bad{color:#c62828;font-weight:600}
.thx .whatif td.random{color:#8d6e00}
.thx .whatif td.noisy{color:#8d6e00;font-style:italic}
.thx .whatif td.check{min-width:12em;max-width:30em}
"""


def comparison_table_html(c: Comparison) -> str:
    """The table (to be placed inside an element of class ``thx``)."""
    ran = [r for r in c.rows if r.error is None]
    fastest = min((r.seconds for r in ran), default=None)
    smallest = min((r.peak_bytes for r in ran if r.peak_bytes is not None), default=None)
    measured = any(r.measured_peak_bytes is not None for r in ran)
    head = (
        "<tr><th>executors</th><th>outputs</th><th>time (best of {n})</th><th>median / slowest</th>"
        "<th>vs first</th><th>first call</th><th>peak (computed)</th>{m}<th>fusion regions</th>"
        "<th>lines</th></tr>"
    ).format(n=c.repeat, m="<th>peak (measured)</th>" if measured else "")
    out = [f'<div class="whatif"><style>{WHATIF_CSS}</style>', '<table class="kv">', head]
    base = c.rows[0].seconds if c.rows and c.rows[0].error is None else None
    for r in c.rows:
        if r.error is not None:
            cols = 9 + measured
            out.append(
                f"<tr><td><code>{escape(r.label)}</code></td>"
                f'<td class="bad" colspan="{cols - 1}">did not run: {escape(r.error)}</td></tr>'
            )
            continue
        best = " best" if r.seconds == fastest and len(ran) > 1 else ""
        small = " best" if r.peak_bytes == smallest and len(ran) > 1 else ""
        ratio = f"{base / r.seconds:.2f}x" if base and r.seconds else "-"
        if r.matched:
            check = f"match (max diff {r.max_abs_diff:.1e})" if r.max_abs_diff else "match"
            check_cls = ""
        elif r.random:  # not a mismatch: the numbers drawn differ (the note says why)
            check, check_cls = f"random: {r.note or 'the runs differ'}", " random"
        else:
            what = r.difference.describe() if r.difference is not None else r.note or "?"
            check, check_cls = f"DIFFER: {what}", " bad"
        cells = [  # whether the outputs agree comes first: a table wider than the cell cuts the end
            f"<td><code>{escape(r.label)}</code></td>",
            f'<td class="check{check_cls}">{escape(check)}</td>',
            f'<td class="num{best}">{fmt_seconds(r.seconds)}</td>',
            _spread(r),
            f'<td class="num">{ratio}</td>',
            f'<td class="num">{fmt_seconds(r.first_call_seconds)}{_compiling(r)}</td>',
            f'<td class="num{small}">{fmt_bytes(r.peak_bytes)}</td>',
        ]
        if measured:
            cells.append(f'<td class="num">{fmt_bytes(r.measured_peak_bytes)}</td>')
        cells += [
            f'<td class="num">{r.fusion_regions}</td>',
            f'<td class="num">{r.lines}</td>',
        ]
        out.append(f"<tr>{''.join(cells)}</tr>")
    out.append("</table>")
    out.append(
        f'<div class="note">{escape(c.title)} on {escape(c.device)}; each list compiled anew with '
        "<code>thunder.jit(..., executors=...)</code>; outputs checked against the first list's.</div></div>"
    )
    return "".join(out)


def _spread(r: WhatIfRow) -> str:
    """The median and slowest timed call; flagged when the calls differ by more than NOISY times."""
    if len(r.times) < 2:
        return '<td class="num">-</td>'
    text = f"{fmt_seconds(r.median_seconds)} / {fmt_seconds(r.max_seconds)}"
    if not r.noisy:
        return f'<td class="num">{text}</td>'
    tip = (
        f"the slowest call took {r.spread:.1f}x the fastest: a busy machine or calls doing different "
        "work; the best time is a rough figure (repeat more, or on a quiet machine)"
    )
    return f'<td class="num noisy" title="{escape(tip)}">{text} noisy ({r.spread:.1f}x)</td>'


def _compiling(r) -> str:
    """Time spent waiting for background compilation after the first call, when it counts."""
    s = r.background_compile_seconds
    return f" + {fmt_seconds(s)} compiling" if s is not None and s >= 0.01 else ""


def comparison_html(c: Comparison) -> str:
    """A Comparison shown by itself in a notebook."""
    return wrap('<div class="hd">what if another executor ran it</div>' + comparison_table_html(c))
