"""The graph canvas in the notebook widget: an anywidget whose front end is the canvas script
(``explorer/static/canvas.js``, bundled: it works offline and in a saved notebook's widget state).

It draws nothing itself. Rendered inside an explorer, it makes every graph the explorer shows
(in its HTML panes, drawn again after each change) a canvas, and reports back what the user
does there: ``clicks`` counts the nodes clicked and ``selected`` is the last one's BoundSymbol
or module id (the explorer selects it: its details, the tree); a module double-clicked is sent
as a message ``{"toggle": module id}`` (the explorer folds or opens it and lays the graph out
again)."""

from __future__ import annotations

import anywidget
import ipywidgets as w
import traitlets

from explorer.measure.timeline import timeline_of
from explorer.views.canvas import asset
from explorer.views.timeline import timeline_html

_GLUE = """
const SELECT_DELAY_MS = 300;  // longer than the gap between a double-click's two clicks
export default {
  render({ model, el }) {
    // the explorer around this (invisible) view; the HTML panes inside it get new graphs as the
    // user steps through passes, so canvases are made as they come
    const start = () => {
      if (!el.isConnected) { requestAnimationFrame(start); return; }
      const scope = el.closest(".thunder-explorer") || el.parentElement || document.body;
      const observer = window.thxCanvas.watch(scope);
      // A click is sent a moment later, and not at all when it was the first of a double-click
      // or picks what is selected already: the explorer draws the graph again on a selection,
      // and a graph replaced between the two clicks of a double-click never sees the double-click.
      let pending = 0;
      const onSelect = (e) => {
        e.preventDefault();
        clearTimeout(pending);
        const id = e.detail.id;
        if (e.target.dataset && e.target.dataset.thxReveal === id) return;
        pending = setTimeout(() => {
          model.set("selected", id);
          model.set("clicks", model.get("clicks") + 1);
          model.save_changes();
        }, SELECT_DELAY_MS);
      };
      const onToggle = (e) => {
        e.preventDefault();
        clearTimeout(pending);
        model.send({ toggle: e.detail.id });
      };
      scope.addEventListener("thx-select", onSelect);
      scope.addEventListener("thx-toggle", onToggle);
      el.dataset.thxCanvasDriver = "1";
      el.__thxStop = () => {
        observer.disconnect();
        scope.removeEventListener("thx-select", onSelect);
        scope.removeEventListener("thx-toggle", onToggle);
      };
    };
    start();
    return () => el.__thxStop && el.__thxStop();
  },
};
"""


class CanvasDriver(anywidget.AnyWidget):
    """Makes the graphs of the explorer it is rendered in canvases; see the module docstring."""

    _esm = traitlets.Unicode(asset("canvas.js") + _GLUE).tag(sync=True)
    _css = traitlets.Unicode(asset("canvas.css")).tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    clicks = traitlets.Int(0).tag(sync=True)


def attach_canvas(explorer) -> CanvasDriver:
    """Give ``explorer`` (an ``explorer.notebook.widget.Explorer``) the canvas: a click on a node
    selects its BoundSymbol or module, a double-click on a module folds or opens it; and a
    "timeline" view of its measured run (when it has one) below the view."""
    driver = CanvasDriver()

    def on_click(change) -> None:
        if driver.selected:
            explorer.select(driver.selected)

    def on_message(_widget, content, _buffers) -> None:
        module = content.get("toggle") if isinstance(content, dict) else None
        if isinstance(module, str) and module.startswith("module:"):
            explorer.toggle_module(module.split(":", 1)[1])

    driver.observe(on_click, "clicks")
    driver.on_msg(on_message)
    explorer.canvas = driver
    children = [driver]
    if explorer.model.timings:  # the run was timed: its timeline, drawn when first opened
        pane = w.HTML()
        box = w.Accordion(children=[pane], selected_index=None)
        box.set_title(0, "timeline of the measured run")

        def on_open(change) -> None:
            if change["new"] == 0 and not pane.value:
                pane.value = f'<div class="thx">{timeline_html(timeline_of(explorer.model))}</div>'

        box.observe(on_open, "selected_index")
        box.add_class("thx-timeline-box")
        explorer.timeline_box = box
        children.append(box)
    explorer.root.children = (*explorer.root.children, *children)
    return driver


__all__ = ["CanvasDriver", "attach_canvas"]
