"""Views of a ``RankSet`` (``explorer.measure.ranks``): every rank of a distributed run at once.

    rank_timings_html(ranks.timings())     # a row per line, a column per rank; each line's
                                           # slowest rank marked, the totals last
    side_by_side_html(ranks)               # each rank's final tree in a column, with its times
    ranks_html(ranks)                      # both, and each rank's traces: what a RankSet shows

A RankSet's notebook display (``_repr_mimebundle_``) is set on it here, as ``explorer.measure.ranks``
imports no view; the interactive explorer with a rank switch is ``explorer.notebook.ranks``.
"""

from __future__ import annotations

from html import escape

from explorer.measure.ranks import LineTimes, RankSet, RankTimings
from explorer.model.communication import communication_of
from explorer.model.seconds import fmt_seconds
from explorer.views.html import STATIC_BUDGET, model_html, wrap
from explorer.views.tree import tree_html

TIMING_ROWS = 500  # lines in a rank comparison table; the rest are counted
NOT_MEASURED = (
    "No times were measured for the {kind} trace on any rank: explorer.save_rank(jfn, folder, "
    "args=(...)) in each worker runs the program and times every line before saving."
)


def _line_cell(row: LineTimes) -> str:
    badge = ""
    if row.collective:
        badge = f' <span class="b g-communication">{escape(row.collective)}</span>'
    return f'<td class="ln">{escape(row.line)}{badge}</td>'


def _time_cells(seconds: dict[int, float | None], slowest: int | None) -> str:
    """The cells of one row; the slowest rank's marked, unless all ranks took the same."""
    have = {t for t in seconds.values() if t is not None}
    cells = []
    for r, t in seconds.items():
        if r == slowest and len(have) > 1:
            cells.append(f'<td class="slow" title="slowest rank: {r}">{fmt_seconds(t)}</td>')
        else:
            cells.append(f"<td>{fmt_seconds(t)}</td>")
    return "".join(cells)


def rank_timings_html(t: RankTimings, *, order: str = "trace", limit: int = TIMING_ROWS) -> str:
    """Each line's time on each rank (``order``: ``"trace"``, or ``"spread"``: the lines whose
    time differs most between ranks first); the slowest rank of each line and in total marked."""
    if not t.measured:
        return f'<div class="note">{escape(NOT_MEASURED.format(kind=t.kind))}</div>'
    rows = t.by_spread() if order == "spread" else t.lines
    head = "".join(f'<th title="{escape(t.devices.get(r) or "")}">rank {r}</th>' for r in t.ranks)
    out = [
        f'<div class="note">{escape(t.kind)}, final trace: each line\'s measured time on each rank; '
        "the slowest rank of each line is marked. A collective that takes long on all ranks but one "
        "is the others waiting for that one.</div>",
        f'<table class="kv rank-times"><tr><th>line</th>{head}<th>spread</th></tr>',
    ]
    for row in rows[:limit]:
        out.append(
            f'<tr data-id="{escape(row.id)}">{_line_cell(row)}'
            f"{_time_cells(row.seconds, row.slowest)}<td>{fmt_seconds(row.spread)}</td></tr>"
        )
    totals = _time_cells(t.totals, t.slowest_rank)
    out.append(f"<tr><th>total</th>{totals}<td></td></tr></table>")
    if len(rows) > limit:
        out.append(f'<div class="more">... {len(rows) - limit} more lines</div>')
    return "".join(out)


def rank_timings_text(t: RankTimings, *, limit: int = TIMING_ROWS) -> str:
    """The comparison as text: a column per rank, ``*`` after each line's slowest time."""
    if not t.measured:
        return NOT_MEASURED.format(kind=t.kind)
    lines = [f"{t.kind}: " + " ".join(f"{'rank ' + str(r):>12}" for r in t.ranks) + "  line"]
    for row in [*t.lines[:limit], LineTimes("total", "total", t.totals)]:
        slow = t.slowest_rank if row.id == "total" else row.slowest
        cells = " ".join(
            f"{fmt_seconds(s) + ('*' if r == slow else ' '):>12}" for r, s in row.seconds.items()
        )
        lines.append(f"{' ' * (len(t.kind) + 2)}{cells}  {row.line}")
    if len(t.lines) > limit:
        lines.append(f"... {len(t.lines) - limit} more lines")
    return "\n".join(lines)


def summary_html(ranks: RankSet, kind: str = "computation") -> str:
    """A row per rank: where it ran, its final trace's length and collectives, its measured total."""
    rows = []
    for r in ranks:
        m = ranks[r]
        s = m.series.get(kind)
        times = m.timings.get(kind) or {}
        comm = communication_of(s.final).summary().text() if s is not None else "-"
        rows.append(
            f"<tr><td>{r}</td><td>{escape(ranks.hosts.get(r, '?'))}</td>"
            f"<td>{len(s.final.nodes) if s is not None else '-'}</td><td>{escape(comm)}</td>"
            f"<td>{fmt_seconds(sum(times.values())) if times else '-'}</td>"
            f"<td>{escape(m.timing_device or '-')}</td></tr>"
        )
    missing = ranks.missing
    note = f'<div class="note warn">No file for ranks {missing}.</div>' if missing else ""
    return (
        f'<table class="kv"><tr><th>rank</th><th>host</th><th>{escape(kind)} lines</th>'
        f"<th>collectives</th><th>measured</th><th>on</th></tr>{''.join(rows)}</table>{note}"
    )


def side_by_side_html(
    ranks: RankSet, kind: str = "computation", *, only: list[int] | None = None, budget: int = STATIC_BUDGET
) -> str:
    """The final tree of ``kind`` on each rank (or the ranks in ``only``), one column each."""
    cols = []
    for r in only if only is not None else ranks.ranks:
        m = ranks[r]
        s = m.series.get(kind)
        body = (
            tree_html(s.final.nodes, open_depth=0, budget=budget, times=m.timings.get(kind))
            if s is not None
            else f'<div class="note">No {escape(kind)} trace on this rank.</div>'
        )
        cols.append(f'<div class="rank" data-rank="{r}"><div class="hd">rank {r}</div>{body}</div>')
    return f'<div class="ranks">{"".join(cols)}</div>'


def ranks_html(ranks: RankSet, kind: str = "computation", *, budget: int = STATIC_BUDGET) -> str:
    """Everything about the ranks on one page: a summary, each line's time on each rank, the
    final trees side by side, and each rank's traces (closed)."""
    size = f" of {ranks.world_size}" if ranks.world_size else ""
    parts = [
        f'<div class="hd">thunder: {len(ranks)} ranks{size}</div>',
        summary_html(ranks, kind),
        f"<details open><summary><b>time per line on each rank</b></summary>"
        f"{rank_timings_html(ranks.timings(kind))}</details>",
        f"<details><summary><b>side by side</b></summary>{side_by_side_html(ranks, kind, budget=budget)}</details>",
    ]
    for r in ranks:
        parts.append(
            f'<details class="rank-model" data-rank="{r}"><summary><b>rank {r}</b> '
            f'<span class="note">its traces</span></summary>'
            f"{model_html(ranks[r], budget=budget, kind=kind)}</details>"
        )
    return wrap("".join(parts))


def _ranks_bundle(self: RankSet, include=None, exclude=None) -> dict:
    return {"text/plain": rank_timings_text(self.timings()), "text/html": ranks_html(self)}


# How a RankSet shows in a notebook: set here, as explorer.measure.ranks imports no view
RankSet._repr_mimebundle_ = _ranks_bundle
