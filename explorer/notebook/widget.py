"""The interactive explorer: one ipywidgets tree per explorer, not one widget per BoundSymbol.

Controls: the trace kind; the pass (slider, previous / next buttons, and the pipeline: a
button per pass, with what it changed and how long it took); the view (the overview it opens
on, tree, graph, source, diff, timing); a depth dial (tree: open levels; graph: opened levels);
a search box (symbol, proxy name, ``file:line`` or a notebook location ``In[3] line 2``, as the
tree shows them) that filters as you type: its hits are highlighted, their parents opened, and
"next match" selects them in turn. The tree is the selector: a click on a line selects it (its
details: metadata, executor and who declined, its source line with the code around it, show
below) and its triangle folds it (``explorer.notebook.tree_pane``); folds survive selecting,
searching and stepping through passes. A cache panel lists the compiled entries and why each
was compiled. Everything is rendered from the ``TraceModel`` into a few HTML widgets.

"pair" shows the forward and the backward side by side, the values saved for backward
highlighted in both, each backward line linked to the forward op it differentiates (a line
selected on one side lights up the lines it links to on the other); "pair-graph" draws both,
the saved values as edges across the cut.

"by module" groups the tree by nn.Module and draws the graph in module clusters. Search finds
module paths too (``layers.0.self_attn``); a selected module shows its parameters and where
the prologue unpacks and checks them, and "collapse module" / "expand module" folds it (one
node in the graph, a closed group in the tree) or opens it.

This module holds the controls, their state and events; what the views show is rendered by
``explorer.notebook.panes``, a base of ``Explorer``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from html import escape

import ipywidgets as w

from explorer.model.modules import ModuleGroup, is_module_id
from explorer.model.nodes import CELL_LOCATION, Node, cell_number
from explorer.model.passes import PassModel, TraceSeries
from explorer.model.search_index import index_of
from explorer.model.seconds import fmt_seconds
from explorer.model.traces import TraceModel, collector_paused
from explorer.notebook.canvas_widget import attach_canvas
from explorer.notebook.panes import ExplorerViews
from explorer.notebook.tree_pane import TreePane
from explorer.notebook.whatif import WhatIfPanel
from explorer.views.graph import DEFAULT_MAX_NODES
from explorer.views.graph_plan import ModulePlan, Open
from explorer.views.html import cache_html, pass_header_html, wrap
from explorer.views.tree import DEFAULT_BUDGET, MODULE_DEPTH

VIEWS = ("overview", "tree", "graph", "source", "diff", "timing", "pair", "pair-graph", "memory")
MAX_LISTED = 1000  # search hits kept (highlighted in the tree, stepped through by "next match")


@collector_paused()
def search(p: PassModel, query: str, proxies: Mapping | None = None, limit: int | None = None) -> list[Node]:
    """BoundSymbols of ``p`` (any depth) matching ``query``: a proxy name (exactly, so ``t1``
    is not ``t12``), a source location (``file.py:12``), or else a piece of the symbol or of
    the printed line (``softmax``, ``torch.add``, a constant). The first ``limit`` of them
    in trace order (None: all): the search stops there, so a common word in a 40,000-line
    trace is found as fast as the list can show it. A notebook location (``In[3] line 2``,
    ``In[3]``) finds the lines that came from that cell (and line)."""
    q = query.strip()
    if not q:
        return []
    file_part, _, line_part = q.rpartition(":")
    cell = CELL_LOCATION.match(q)
    if cell is not None:
        number, line = int(cell[1]), int(cell[2]) if cell[2] else None
        found = (
            n
            for n in p.walk()
            if n.source is not None
            and (line is None or n.source.line == line)
            and cell_number(n.source.file) == number
        )
    elif file_part and line_part.isdigit():
        found = (
            n
            for n in p.walk()
            if n.source is not None and str(n.source.line) == line_part and n.source.file.endswith(file_part)
        )
    elif proxies is not None and q in proxies or q in p.args:
        return index_of(p).with_name(q, limit)  # (explorer.model.search_index: milliseconds at 40,000 lines)
    elif "\t" not in q and "\n" not in q:
        return index_of(p).containing(q.lower(), limit)
    else:
        ql = q.lower()
        found = (
            n
            for n in p.walk()
            if ql in n.sym_id.lower()
            or ql in n.line.lower()
            or (n.source is not None and ql in os.path.basename(n.source.file).lower())
        )
    return list(itertools.islice(found, limit))


class Explorer(ExplorerViews):
    """The widget explorer for a TraceModel (see ``explorer.explore``)."""

    def __init__(
        self,
        model: TraceModel,
        *,
        kind: str | None = None,
        view: str | None = None,
        depth: int = 1,
        budget: int = DEFAULT_BUDGET,
        notes: list[str] | None = None,
        source=None,
        modules: bool | None = None,
    ):
        """``source``: the jitted function the model came from; with it, a dropdown switches
        between its cache entries. ``modules``: open grouped by module (None: when the
        program has module scopes, i.e. a jitted nn.Module). ``view``: the view it opens on
        (None: the overview, or the tree when a ``kind`` is asked for)."""
        if modules is None:
            modules = has_module_scopes(model)
        if view is None:
            view = "tree" if kind is not None else "overview"
        if view not in VIEWS:
            raise ValueError(f"explorer: unknown view {view!r}; choose one of {', '.join(VIEWS)}")
        self.model = model
        self.budget = budget
        self.hits: list[Node] = []
        self.module_hits: list[ModuleGroup] = []
        self.collapsed: set[str] = set()  # module paths folded by hand
        self.expanded: set[str] = set()  # module paths opened by hand
        self.more_hits = False  # whether the search stopped at MAX_LISTED hits
        self.hit_at = -1  # the hit "next match" selected last
        self.selected: str | None = None
        self.inputs: tuple[tuple, dict] | None = None  # (args, kwargs) it ran on, for the what-if
        self._memory: dict = {}  # (kind, pass index) -> MemoryProfile
        kinds = model.kinds or ["computation"]
        if kind is not None and model.kinds and kind not in kinds:
            raise ValueError(f"explorer: no {kind} trace here; there are: {', '.join(kinds)}")
        kind = kind if kind in kinds else ("computation" if "computation" in kinds else kinds[0])
        layout = w.Layout(width="auto")

        self.title = w.HTML(wrap(self._title_html(notes or [])))
        self.kind = w.ToggleButtons(
            options=kinds, value=kind, description="trace", style={"button_width": "auto"}
        )
        self.prev_button = w.Button(description="previous pass", icon="arrow-left", layout=layout)
        self.next_button = w.Button(description="next pass", icon="arrow-right", layout=layout)
        self.pass_slider = w.IntSlider(min=0, max=0, value=0, description="pass", continuous_update=False)
        # the pipeline: a button per pass (what it changed, how long it took, in its tooltip)
        self.pass_buttons = w.ToggleButtons(options=[], style={"button_width": "auto"})
        self.pass_buttons.add_class("thx-passes")
        self.passes = w.HTML()
        self.view = w.ToggleButtons(
            options=VIEWS, value=view, description="view", style={"button_width": "auto"}
        )
        self.depth = w.IntSlider(min=0, max=6, value=depth, description="depth", continuous_update=False)
        self.by_module = w.ToggleButton(
            value=modules,
            description="by module",
            icon="sitemap",
            tooltip="group by nn.Module",
            layout=layout,
        )
        self.fold_button = w.Button(
            description="collapse module", layout=w.Layout(width="auto", display="none")
        )
        # a graph cut at max_nodes ("... N more"): this button draws more of it
        self.max_nodes = DEFAULT_MAX_NODES
        self.more_wanted = 0  # the node limit the button draws with (0: nothing left out)
        self.more_button = w.Button(icon="plus", layout=w.Layout(width="auto", display="none"))
        self.more_button.on_click(lambda _: self.draw_more())
        self.query = w.Text(
            placeholder="symbol, proxy name, text, file.py:line or In[3] line 2",
            description="search",
            continuous_update=True,  # filters as you type
            layout=w.Layout(width="60%"),
        )
        self.next_hit = w.Button(
            description="next match", icon="arrow-down", layout=w.Layout(width="auto", display="none")
        )
        self.status = w.HTML()
        self.main = TreePane()
        self.details = w.HTML()
        self.details.add_class("thx-details")
        self.cache = w.HTML(wrap(cache_html(model)) if model.entries else "")
        self.source = source
        self.result = None  # what the traced call returned, when %thunder_trace ran it
        self.entry = w.Dropdown(
            options=[(_entry_label(e), e.index) for e in model.entries],
            value=model.entry_index if model.entries else None,
            description="cache entry",
            layout=w.Layout(
                width="98%", display="flex" if source is not None and len(model.entries) > 1 else "none"
            ),
            style={"description_width": "auto"},
        )

        self._updating = False
        self.kind.observe(self._on_kind, "value")
        self.pass_slider.observe(lambda _: self._refresh(), "value")
        self.pass_buttons.observe(self._on_pass_button, "value")
        self.prev_button.on_click(lambda _: self.step(-1))
        self.next_button.on_click(lambda _: self.step(+1))
        self.view.observe(lambda _: self._render_main(), "value")
        self.depth.observe(lambda _: self._render_main(), "value")
        self.by_module.observe(lambda _: self._render_main(), "value")
        self.fold_button.on_click(lambda _: self.toggle_module())
        self.peak_button = w.Button(
            description="peak line in the tree",
            icon="crosshairs",
            layout=w.Layout(width="auto", display="none"),
        )
        self.peak_button.on_click(lambda _: self.show_peak())
        self.whatif = WhatIfPanel(self)
        self.query.observe(lambda _: self._on_search(), "value")
        self.next_hit.on_click(lambda _: self.step_hit(+1))
        self.main.observe(self._on_click, "selected")
        self.main.observe(self._on_fold, "opened")
        self.main.observe(self._on_fold, "closed")
        self.entry.observe(self._on_entry, "value")

        self.root = w.VBox(
            [
                self.title,
                self.entry,
                self.kind,
                w.HBox([self.prev_button, self.pass_slider, self.next_button]),
                self.pass_buttons,
                self.passes,
                w.HBox([self.view, self.depth, self.by_module, self.peak_button]),
                w.HBox([self.query, self.next_hit]),
                self.status,
                self.main,
                self.more_button,
                self.fold_button,
                self.details,
                self.whatif.root,
                self.cache,
            ],
            layout=w.Layout(width="100%"),
        )
        self.root.add_class("thunder-explorer")
        attach_canvas(self)  # graphs zoom, pan and select on click; the timeline (canvas_widget)
        self._on_kind(None)

    # -- state ------------------------------------------------------------------------------
    @property
    def series(self) -> TraceSeries | None:
        return self.model.series.get(self.kind.value)

    @property
    def current(self) -> PassModel | None:
        s = self.series
        return s.passes[self.pass_slider.value] if s is not None else None

    @property
    def previous(self) -> PassModel | None:
        s, i = self.series, self.pass_slider.value
        return s.passes[i - 1] if s is not None and i > 0 else None

    def step(self, delta: int) -> None:
        s = self.series
        if s is None:
            return
        self.pass_slider.value = max(0, min(len(s.passes) - 1, self.pass_slider.value + delta))

    def select(self, node_id: str | None) -> None:
        """Show the details of a BoundSymbol (by node id) and highlight it (what a click on its
        line in the tree does). A line of another trace kind's final pass (a backward span
        clicked in the timeline) switches to that kind first."""
        if node_id is not None and not is_module_id(node_id):
            self._show_kind_of(node_id)
        self.selected = node_id
        self._updating = True
        try:
            self.main.selected = node_id
        finally:
            self._updating = False
        self._render_details()
        self._render_main()

    def _show_kind_of(self, node_id: str) -> None:
        """Switch to the trace kind whose final pass has ``node_id`` when the pass shown has not."""
        p = self.current
        if p is not None and p.find(node_id) is not None:
            return
        for kind, s in self.model.series.items():
            if kind != self.kind.value and s.final.find(node_id) is not None:
                self.kind.value = kind  # (its final pass, where the timeline's lines were timed)
                return

    def step_hit(self, delta: int) -> None:
        """Select the next (or previous) search hit, modules first, in trace order."""
        hits = [g.id for g in self.module_hits] + [n.id for n in self.hits]
        if not hits:
            return
        self.hit_at = (self.hit_at + delta) % len(hits)
        self.select(hits[self.hit_at])

    @property
    def opened(self) -> list[str]:
        """Ids of the lines and modules unfolded by hand (in the tree pane)."""
        return list(self.main.opened)

    @property
    def closed(self) -> list[str]:
        """Ids of the lines and modules folded by hand."""
        return list(self.main.closed)

    def module_tree(self):
        """The current pass grouped by module, or None when it is not grouped (or has no scopes)."""
        p = self.current
        if p is None or not self.by_module.value:
            return None
        tree = p.modules()
        return tree if tree.has_modules else None

    def current_pair(self):
        """The forward and backward shown by the pair views (``explorer.model.pair.Pair``): those of
        the pass shown when it is a backward pass or a forward pass after the split, else the
        final ones; None without a backward."""
        bs, p = self.model.series.get("backward"), self.current
        if bs is None:
            return None
        if p is not None and self.kind.value == "backward":
            return self.model.pair(p.index)
        if p is not None and self.kind.value == "computation":
            k = p.index - (len(self.series.passes) - len(bs.passes))
            if 0 <= k < len(bs.passes):
                return self.model.pair(k)
        return self.model.pair()

    def _find(self, p: PassModel, node_id: str | None):
        if node_id is None:
            return None
        if is_module_id(node_id):
            return p.modules().group(node_id)
        return p.find(node_id)

    def module_is_open(self, path: str) -> bool:
        """Whether the module of ``path`` is shown open in the current view."""
        if path in self.collapsed:
            return False
        if path in self.expanded:
            return True
        g = self.current.modules().groups.get(path) if self.current is not None else None
        if g is None:
            return False
        if self.view.value == "graph":
            siblings = g.parent.items if g.parent is not None else self.current.modules().items
            return any(isinstance(e, Open) and e.group is g for e in ModulePlan().entries(siblings, g.depth))
        return g.depth < MODULE_DEPTH

    def toggle_module(self, path: str | None = None) -> None:
        """Collapse the module of ``path`` (default: the selected one) if it is open, else open it."""
        if path is None:
            if not is_module_id(self.selected):
                return
            path = self.selected.split(":", 1)[1]
        if self.module_is_open(path):
            self.expanded.discard(path)
            self.collapsed.add(path)
        else:
            self.collapsed.discard(path)
            self.expanded.add(path)
        self._render_fold_button()
        self._render_main()

    def draw_more(self) -> None:
        """Draw the graph again with room for the ops it left out (up to MAX_DRAWN nodes)."""
        if self.more_wanted:
            self.max_nodes = self.more_wanted
            self._render_main()

    def _render_fold_button(self) -> None:
        if not is_module_id(self.selected):
            self.fold_button.layout.display = "none"
            return
        path = self.selected.split(":", 1)[1]
        self.fold_button.description = (
            "collapse module " if self.module_is_open(path) else "expand module "
        ) + (path or "<root>")
        self.fold_button.layout.display = "flex"

    def show_entry(self, index: int) -> None:
        """Show another cache entry of the jitted function (rebuilds the model)."""
        from explorer.model.compilation import model_of

        if self.source is None:
            raise ValueError("explorer: this explorer was not made from a jitted function")
        model = model_of(self.source, entry=index)
        model.timings = self.model.timings if index == self.model.entry_index else {}
        model.timing_device = self.model.timing_device if model.timings else None
        self.model = model
        kinds = model.kinds or ["computation"]
        self._updating = True
        try:
            keep = self.kind.value
            self.kind.options = kinds
            self.kind.value = keep if keep in kinds else kinds[0]
            self.entry.value = index
        finally:
            self._updating = False
        self.cache.value = wrap(cache_html(model))
        self._on_kind(None)

    # -- events -----------------------------------------------------------------------------
    def _on_entry(self, change) -> None:
        if not self._updating and change["new"] is not None and change["new"] != self.model.entry_index:
            self.show_entry(change["new"])

    def _on_kind(self, _change) -> None:
        if self._updating:
            return
        s = self.series
        self._updating = True
        try:
            n = len(s.passes) if s is not None else 1
            self.pass_slider.max = max(n - 1, 0)
            self.pass_slider.value = n - 1
        finally:
            self._updating = False
        self._refresh()

    @collector_paused()  # (a search makes many small objects: no collections over the traces)
    def _on_search(self) -> None:
        self._search()
        self.hit_at = -1
        self._show_status()
        self._render_main()

    def _on_click(self, change) -> None:
        """A line of the tree was clicked: select it."""
        if not self._updating:
            self.select(change["new"])

    def _on_fold(self, change) -> None:
        """A line was folded or unfolded by hand: the page shows it already; the tree is
        rendered again so that what it holds says so (and an unfolded line whose subsymbols
        the budget left out lists them)."""
        if not self._updating and self.view.value == "tree":
            self._render_main()

    def _on_pass_button(self, change) -> None:
        """A pass clicked in the pipeline: show it; from the overview, what it changed (the
        first pass: its tree)."""
        if self._updating or change["new"] is None:
            return
        self.pass_slider.value = change["new"]
        if self.view.value == "overview":
            self.view.value = "diff" if change["new"] > 0 else "tree"

    def _refresh(self) -> None:
        if self._updating:
            return
        s, p = self.series, self.current
        if s is None or p is None:
            self.passes.value = ""
            self.main.value = wrap('<div class="note">No traces of this kind.</div>')
            return
        self.prev_button.disabled = p.index == 0
        self.next_button.disabled = p.index == len(s.passes) - 1
        self._fill_pass_buttons(s, p.index)
        self.passes.value = wrap(pass_header_html(s, p))
        self._search()
        if self.selected is not None and self._find(p, self.selected) is None:
            self.selected = None
        self._show_status()
        self._render_main()
        self._render_details()

    def _search(self) -> None:
        """Hits of the query in the current pass: the first MAX_LISTED, and whether there are more."""
        p, q = self.current, self.query.value
        found = search(p, q, self.series.proxies, limit=MAX_LISTED + 1) if p is not None and q.strip() else []
        self.more_hits = len(found) > MAX_LISTED
        self.hits = found[:MAX_LISTED]
        self.module_hits = p.modules().search(q, MAX_LISTED) if p is not None and q.strip() else []

    def _fill_pass_buttons(self, s: TraceSeries, current: int) -> None:
        """A button per pass of the series, the current one pressed."""
        options = [(_pass_label(p), p.index) for p in s.passes]
        tips = [
            f"{p.name}: {'first trace' if p.diff is None else p.diff.summary()}"
            + (f", {fmt_seconds(p.seconds)}" if p.seconds is not None else "")
            for p in s.passes
        ]
        self._updating = True
        try:
            if list(self.pass_buttons.options) != options:
                self.pass_buttons.options = options
                self.pass_buttons.tooltips = tips
            self.pass_buttons.value = current
        finally:
            self._updating = False

    def _show_status(self) -> None:
        q = self.query.value.strip()
        self.next_hit.layout.display = "flex" if q and (self.hits or self.module_hits) else "none"
        if q:
            count = f"more than {MAX_LISTED}" if self.more_hits else str(len(self.hits))
            more = f" (highlighting the first {MAX_LISTED})" if self.more_hits else ""
            mods = len(self.module_hits)
            mods = f"{mods} module{'' if mods == 1 else 's'} and " if mods else ""
            self.status.value = wrap(
                f'<span class="note">{mods}{count} bound symbols match <code>{escape(q)}</code>{more}; '
                "click a line to select it</span>"
            )
        else:
            self.status.value = ""


def has_module_scopes(model: TraceModel) -> bool:
    """Whether the program was recorded in nn.Module calls (a jitted module): its views then
    open grouped by module."""
    s = model.series.get("computation")
    return s is not None and s.final.modules().has_modules


def _entry_label(e) -> str:
    why = "; ".join(e.miss_reasons) if e.miss_reasons else "first compilation"
    sizes = ", ".join(f"{s} = {what.split(':')[0]}" for s, what in e.symbols.items())
    sizes = f" [{sizes}]" if sizes else ""
    return f"{e.index}: ({', '.join(e.inputs)}){sizes} - {why}"


def _pass_label(p: PassModel) -> str:
    """A pass's button: ``3 fuse \u00b7 1.20 ms``, ``(no change)`` when it changed nothing."""
    took = f" \u00b7 {fmt_seconds(p.seconds)}" if p.seconds is not None else ""
    same = " (no change)" if not p.changed else ""
    return f"{p.index} {p.name}{took}{same}"
