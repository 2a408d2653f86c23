"""The explorer's main pane: HTML like ``ipywidgets.HTML`` (a ``value``), in which the tree is
the selector.

A click on a line of a tree (``[data-id]`` inside ``.tree``; a module or line of the overview)
selects it: the pane's ``selected``
becomes its id and the explorer shows its details. Folding is the line's own toggle, its
disclosure triangle (drawn inside the ``<summary>``: a click on it, not on the line's text): each fold a
reader makes is sent back in ``opened`` / ``closed``, so the explorer renders the tree with them
and they survive a selection, a search or another pass. The scroll position survives a render
too, and a selection made from Python (a search, "next match") is scrolled into view.

A small front end of our own (``anywidget``: an ES module, no build step, nothing fetched), so
it works in JupyterLab, Notebook 7 and VS Code alike; without a front end (a saved notebook) the
explorer's static copy shows instead.
"""

from __future__ import annotations

import anywidget
import traitlets

_ESM = r"""
function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "thx-pane";
  el.appendChild(root);
  let shownSelection = null;
  function draw() {
    const tree = root.querySelector(".tree");
    const top = tree ? tree.scrollTop : 0;
    root.innerHTML = model.get("value");
    const again = root.querySelector(".tree");
    if (again) again.scrollTop = top;
    const sel = model.get("selected");
    if (sel !== shownSelection) {
      shownSelection = sel;
      const line = again && again.querySelector(".sel");
      if (line) line.scrollIntoView({ block: "nearest" });
    }
  }
  function send(name, value) {
    model.set(name, value);
    model.save_changes();
  }
  root.addEventListener("click", (e) => {
    // a tree's lines, and the overview's rows of modules and lines
    const tree = e.target.closest(".tree, .ov");
    if (!tree || e.target.closest("a")) return;
    const item = e.target.closest("[data-id]");
    if (!item || !tree.contains(item)) return;
    const id = item.dataset.id;
    const summary = e.target.closest("summary");
    if (summary && e.target === summary) {
      // the disclosure triangle: fold or unfold, and remember it
      const details = summary.parentElement;
      const opening = !details.open;
      const opened = model.get("opened").filter((x) => x !== id);
      const closed = model.get("closed").filter((x) => x !== id);
      (opening ? opened : closed).push(id);
      model.set("opened", opened);
      send("closed", closed);
      return;
    }
    if (summary) e.preventDefault(); // the line's text selects it, it does not fold
    shownSelection = id; // clicked here: it is in view
    send("selected", id);
  });
  model.on("change:value", draw);
  draw();
}
export default { render };
"""

_CSS = """
.thx-pane .tree details>summary{list-style:none;margin-left:0;cursor:default}
.thx-pane .tree details>summary::-webkit-details-marker{display:none}
.thx-pane .tree details>summary::before{content:"\\25b8";display:inline-block;width:1em;cursor:pointer;color:#555}
.thx-pane .tree details[open]>summary::before{content:"\\25be"}
.thx-pane .tree [data-id] .ln{cursor:pointer}
.thx-pane .tree .leaf:hover>.ln,.thx-pane .tree summary:hover>.ln{text-decoration:underline dotted}
.thx-pane .ov tr[data-id]{cursor:pointer}
"""


class TreePane(anywidget.AnyWidget):
    """HTML (``value``) whose tree lines select on a click (``selected``: the line's id) and
    fold on their triangle (``opened`` / ``closed``: ids folded by hand, in order)."""

    _esm = _ESM
    _css = _CSS
    value = traitlets.Unicode("").tag(sync=True)
    selected = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    opened = traitlets.List(traitlets.Unicode()).tag(sync=True)
    closed = traitlets.List(traitlets.Unicode()).tag(sync=True)
