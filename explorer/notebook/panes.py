"""What the explorer widget shows, rendered from its state: the main pane's views (tree,
graph, source, diff, pair, memory, timing), the selected line's details, the title, and the
static copy a saved notebook keeps. ``ExplorerViews`` is a base of ``explorer.notebook.widget.Explorer``,
whose controls and events hold the state these methods read (``model``, ``current``,
``series``, ``selected``, the search hits)."""

from __future__ import annotations

from html import escape

from explorer.measure.memory import attach_measurement, measure_memory
from explorer.model.memory import memory_of
from explorer.model.modules import ModuleGroup
from explorer.model.seconds import fmt_seconds
from explorer.views.columns.pair import pair_graph, pair_html
from explorer.views.graph import render_graph
from explorer.views.graph_plan import ModulePlan
from explorer.views.html import (
    STATIC_BUDGET,
    details_html,
    diff_html,
    model_html,
    module_details_html,
    source_html,
    wrap,
)
from explorer.views.memory import memory_section_html
from explorer.views.overview import overview_html
from explorer.views.text import model_text
from explorer.views.tree import tree_html

TIMING_ROWS = 200  # the slowest lines in the timing view
# The most a saved notebook keeps of one explorer's static copy: its budget shrinks to fit
# (a module-grouped 2-layer Llama's copy was 0.7 MB at STATIC_BUDGET, its notebook 2 MB).
STATIC_BYTES = 200_000
MIN_STATIC_BUDGET = 40
MAX_DRAWN = 5000  # the most nodes "draw more ops" asks graphviz for (about 7 s, RECIPES.md)
MEASURED_LINES = 5000  # the memory view measures traces up to this long (the profiler: ~1 ms a line)


class ExplorerViews:
    """The rendering half of ``explorer.notebook.widget.Explorer``."""

    def _pair_selected(self) -> tuple[str, str] | None:
        side = {"computation": "forward", "backward": "backward"}.get(self.kind.value)
        return (side, self.selected) if side is not None and self.selected is not None else None

    def _pair_html(self, view: str) -> str:
        pair = self.current_pair()
        if pair is None:
            return (
                '<div class="note">No backward trace: no input of this compilation requires grad '
                "(or it ran under <code>torch.no_grad()</code>).</div>"
            )
        selected = self._pair_selected()
        if view == "pair":
            return pair_html(pair, budget=self.budget, selected=selected)
        highlight: set[str] = set()
        if selected is not None:
            side, node_id = selected
            highlight.add(node_id)
            if side == "forward":
                highlight.update(pair.sources(node_id))
            elif (n := pair.backward.find(node_id)) is not None:
                highlight.update(pair.targets(n))
        return pair_graph(pair, depth=self.depth.value, highlight=highlight).html()

    # -- rendering --------------------------------------------------------------------------
    def _times(self) -> dict[str, float] | None:
        p, s = self.current, self.series
        if p is None or s is None or p.index != len(s.passes) - 1:
            return None  # times are measured on the final trace
        return self.model.timings.get(self.kind.value)

    def _render_main(self) -> None:
        if self._updating:
            return
        p, s = self.current, self.series
        if p is None or s is None:
            return
        view = self.view.value
        hits = dict.fromkeys(n.id for n in self.hits)  # in trace order: the first ones are shown
        tree = self.module_tree()
        if tree is not None:
            hits = dict.fromkeys(g.id for g in self.module_hits) | hits
        if view == "overview":
            body = overview_html(self.model, profiles=self._overview_memory(), timeline=False)
        elif view == "tree":
            marks = {}
            if p.diff is not None:
                d = p.diff.without_dels()  # a del line is greyed already: not marked as a change
                marks = {k: "added" for k in d.added} | {k: "rewritten" for k in d.rewritten}
            body = tree_html(
                p.nodes,
                open_depth=self.depth.value,
                budget=self.budget,
                hits=hits,
                selected=self.selected,
                marks=marks,
                times=self._times(),
                modules=tree,
                collapsed=self.collapsed,
                expanded=self.expanded,
                opened=self.main.opened,
                closed=self.main.closed,
            )
        elif view == "graph":
            highlight = set(hits) | ({self.selected} if self.selected else set())
            plan = ModulePlan(collapsed=self.collapsed, expanded=self.expanded)
            g = render_graph(
                p,
                s.proxies,
                depth=self.depth.value,
                highlight=highlight,
                modules=tree is not None,
                plan=plan,
                max_nodes=self.max_nodes,
            )
            body = g.html(selected=self.selected)
            self._offer_more(g)
        elif view == "source":
            body = source_html(p, self.budget)
        elif view == "diff":
            body = diff_html(p, self.previous, budget=self.budget)
        elif view in ("pair", "pair-graph"):
            body = self._pair_html(view)
        elif view == "memory":
            body = self._memory_html()
        else:
            body = self._timing_html()
        self.peak_button.layout.display = "flex" if view == "memory" else "none"
        if view != "graph":
            self.more_button.layout.display = "none"
        self.main.value = wrap(body)

    def _offer_more(self, g) -> None:
        """The "draw more ops" button under a graph cut at its node limit: it draws the rest, or
        MAX_DRAWN nodes when the rest is more (graphviz takes seconds past a few thousand)."""
        self.more_wanted = min(g.nodes + g.cut, max(MAX_DRAWN, self.max_nodes)) if g.cut else 0
        if not self.more_wanted or self.more_wanted <= self.max_nodes:
            self.more_button.layout.display = "none"
            return
        extra = self.more_wanted - g.nodes
        self.more_button.description = (
            f"draw the other {extra} ops"
            if extra >= g.cut
            else f"draw {extra} more ops (of {g.cut} not drawn)"
        )
        self.more_button.layout.display = "flex"

    def _overview_memory(self) -> dict:
        """Kind -> the computed memory of its final trace, for the overview (computed once, not
        measured; left out for a trace longer than MEASURED_LINES or one it cannot read)."""
        key = (self.model.entry_index, "overview")
        if key not in self._memory:
            found = {}
            for kind in ("computation", "backward"):
                s = self.model.series.get(kind)
                if s is None or len(s.final.nodes) > MEASURED_LINES:
                    continue
                try:
                    found[kind] = memory_of(self.model, kind)
                except Exception:  # a model read from JSON has no traces to compute it on
                    continue
            self._memory[key] = found
        return self._memory[key]

    def memory(self):
        """The MemoryProfile of the pass shown (computed once; the final pass measured too when
        the explorer has the inputs it ran on)."""
        s, p = self.series, self.current
        key = (self.model.entry_index, self.kind.value, p.index)
        if key not in self._memory:
            prof = memory_of(self.model, self.kind.value, p.index)
            if len(prof.rows) > MEASURED_LINES:
                prof.note = "; ".join(
                    x
                    for x in (
                        prof.note,
                        f"not measured here ({len(prof.rows)} lines): "
                        "explorer.memory(jfn, args=...) measures it",
                    )
                    if x
                )
            elif self.inputs is not None and self.source is not None and p.index == len(s.passes) - 1:
                try:
                    entry = -1 if self.model.entry_index is None else self.model.entry_index
                    live, where = measure_memory(self.source, *self.inputs, self.kind.value, entry=entry)
                    attach_measurement(prof, live, where)
                except Exception as e:
                    prof.note = "; ".join(
                        x for x in (prof.note, f"not measured: {type(e).__name__}: {e}") if x
                    )
            self._memory[key] = prof
        return self._memory[key]

    def show_peak(self) -> None:
        """Select the line where the memory of the shown pass peaks, in the tree."""
        prof = self.memory()
        if prof.rows:
            self.view.value = "tree"
            self.select(prof.rows[prof.peak_index].node_id)

    def _memory_html(self) -> str:
        try:
            prof = self.memory()
        except Exception as e:  # shown where the view would be
            return f'<div class="note">memory: {escape(f"{type(e).__name__}: {e}")}</div>'
        return memory_section_html(prof, self.current, anchor_prefix="w")

    def _timing_html(self) -> str:
        times = self.model.timings.get(self.kind.value)
        if not times:
            return (
                '<div class="note">No measured times for this trace. <code>%thunder_trace</code> measures '
                "them; after the fact use <code>explorer.explore(jfn, args=(...))</code>.</div>"
            )
        s = self.series
        rows = sorted(((t, s.final.find(i)) for i, t in times.items()), key=lambda r: -r[0])
        total = sum(t for t, _ in rows) or 1.0
        out = [
            f'<div class="note">Measured on {escape(self.model.timing_device or "?")}, final trace, '
            f"total {fmt_seconds(total)}.</div>",
            '<table class="kv"><tr><th>time</th><th>share</th><th>bound symbol</th></tr>',
        ]
        for t, n in rows[:TIMING_ROWS]:
            line = escape(n.shown_line) if n is not None else "?"
            out.append(
                f'<tr><td>{fmt_seconds(t)}</td><td>{100 * t / total:.1f}%</td><td class="ln">{line}</td></tr>'
            )
        out.append("</table>")
        if len(rows) > TIMING_ROWS:
            out.append(f'<div class="more">... {len(rows) - TIMING_ROWS} more</div>')
        return "".join(out)

    def _render_details(self) -> None:
        p, s = self.current, self.series
        n = self._find(p, self.selected) if p is not None else None
        self._render_fold_button()
        if isinstance(n, ModuleGroup):
            self.details.value = wrap(module_details_html(n, p, self.model, s.kind, self._times()))
            return
        if n is None:
            self.details.value = wrap(
                '<div class="note">Select a bound symbol above to see its details.</div>'
            )
            return
        times = self._times() or {}
        self.details.value = wrap(details_html(n, s, times.get(n.id), p))

    def _title_html(self, notes: list[str]) -> str:
        m = self.model
        parts = [f'<div class="hd">thunder explorer: {escape(m.title)}</div>']
        if m.stats:
            parts.append(
                '<div class="note">'
                + escape(", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in m.stats.items()))
            )
            if m.timing_device:
                parts.append(escape(f"; times measured on {m.timing_device}"))
            parts.append("</div>")
        parts += [f'<div class="note warn">{escape(x)}</div>' for x in notes]
        return "".join(parts)

    # -- display ----------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        bundle = self.root._repr_mimebundle_(**kwargs) or {}
        # what a saved notebook shows where no widget manager runs: the trace kind shown here
        bundle["text/html"] = self.static_html()
        bundle["text/plain"] = model_text(self.model)
        return bundle

    def static_html(self) -> str:
        """The static copy of what it shows (every trace kind, the one shown open), each view
        budgeted so that the copy stays under about STATIC_BYTES."""
        budget = STATIC_BUDGET
        while True:
            html = model_html(
                self.model,
                budget=budget,
                kind=self.kind.value,
                modules=self.by_module.value,
                pair_open=self.view.value in ("pair", "pair-graph"),
                overview=self.view.value == "overview",
            )
            if len(html) <= STATIC_BYTES or budget <= MIN_STATIC_BUDGET:
                return html
            budget = max(MIN_STATIC_BUDGET, min(budget // 2, int(budget * 0.9 * STATIC_BYTES / len(html))))
