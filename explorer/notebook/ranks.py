"""The interactive explorer of a distributed run: a rank switch above one rank's explorer.

    explorer.explore(explorer.load_ranks("traces/"))    # or RankExplorer(ranks)

Switching rank keeps what the explorer shows: the trace kind, the pass, the view, the depth,
the grouping by module, the search and the selected line, so the same line can be read on
each rank in turn. Above it, each line's time on each rank (the slowest marked), for the
trace kind shown.
"""

from __future__ import annotations

import ipywidgets as w

from explorer.measure.ranks import RankSet
from explorer.notebook.widget import Explorer
from explorer.views.columns.ranks import rank_timings_html, rank_timings_text, summary_html
from explorer.views.html import wrap


class RankExplorer:
    """``ranks``: the loaded ranks; ``rank``: the one shown first; the other options are the
    ``Explorer``'s."""

    def __init__(self, ranks: RankSet, rank: int | None = None, **options):
        if not len(ranks):
            raise ValueError("explorer: no ranks to explore")
        self.ranks = ranks
        self.options = options
        self.explorers: dict[int, Explorer] = {}
        first = ranks.ranks[0] if rank is None else rank
        ranks[first]  # an unknown rank: the error lists the loaded ones
        self.rank = w.ToggleButtons(
            options=[(f"rank {r}", r) for r in ranks.ranks],
            value=first,
            description="rank",
            style={"button_width": "auto"},
        )
        self.order = w.ToggleButtons(
            options=[("trace order", "trace"), ("largest spread first", "spread")],
            value="trace",
            style={"button_width": "auto"},
        )
        size = f" of {ranks.world_size}" if ranks.world_size else ""
        self.title = w.HTML(wrap(f'<div class="hd">thunder: {len(ranks)} ranks{size}</div>'))
        self.compare = w.HTML()
        self.holder = w.VBox([])
        self.rank.observe(lambda _: self._show(), "value")
        self.order.observe(lambda _: self._render_compare(), "value")
        self.root = w.VBox(
            [
                self.title,
                w.Accordion(
                    children=[w.VBox([self.order, self.compare])], titles=("time per line on each rank",)
                ),
                self.rank,
                self.holder,
            ],
            layout=w.Layout(width="100%"),
        )
        self._show()

    @property
    def current(self) -> Explorer:
        """The explorer of the rank shown."""
        return self.explorers[self.rank.value]

    def _show(self) -> None:
        before = self.explorers.get(getattr(self, "_shown", None))
        r = self.rank.value
        ex = self.explorers.get(r)
        if ex is None:
            ex = self.explorers[r] = Explorer(self.ranks[r], **self.options)
            ex.kind.observe(lambda _: self._render_compare(), "value")
        if before is not None and before is not ex:
            _follow(ex, before)
        self._shown = r
        self.holder.children = [ex.root]
        self._render_compare()

    def _render_compare(self) -> None:
        ex = self.explorers.get(self.rank.value)
        kind = ex.kind.value if ex is not None else "computation"
        t = self.ranks.timings(kind)
        self.compare.value = wrap(
            summary_html(self.ranks, kind) + rank_timings_html(t, order=self.order.value)
        )

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.root._repr_mimebundle_(**kwargs) or {}
        # what a saved notebook shows where no widget manager runs
        kind = self.current.kind.value
        size = f" of {self.ranks.world_size}" if self.ranks.world_size else ""
        bundle["text/html"] = (
            wrap(
                f'<div class="hd">thunder: {len(self.ranks)} ranks{size} ('
                + ", ".join(f"rank {r}" for r in self.ranks.ranks)
                + f"), rank {self.rank.value} shown</div>"
                + summary_html(self.ranks, kind)
                + "<details open><summary><b>time per line on each rank</b></summary>"
                + rank_timings_html(self.ranks.timings(kind))
                + "</details>"
            )
            + self.current.static_html()
        )  # (budgeted, as a single explorer's copy)
        bundle["text/plain"] = rank_timings_text(self.ranks.timings(self.current.kind.value))
        return bundle

    def __repr__(self) -> str:
        return f"<RankExplorer of ranks {self.ranks.ranks}, showing rank {self.rank.value}>"


def _follow(ex: Explorer, shown: Explorer) -> None:
    """Show in ``ex`` what ``shown`` shows (what the other rank does not have is left as it is)."""
    if shown.kind.value in ex.kind.options:
        ex.kind.value = shown.kind.value
    ex.pass_slider.value = min(shown.pass_slider.value, ex.pass_slider.max)
    ex.view.value = shown.view.value
    ex.depth.value = shown.depth.value
    ex.by_module.value = shown.by_module.value
    ex.query.value = shown.query.value
    if shown.selected is not None:
        ex.select(shown.selected)
