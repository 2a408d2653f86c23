"""The graph canvas: a graphviz SVG made navigable by a small script of our own
(``explorer/static/canvas.js``, with ``canvas.css``; no CDN, no dependency, so a saved page reads
offline).

``canvas_html(svg)`` wraps one laid-out graph; ``canvas_script()`` is the script and stylesheet a
page needs once (the report puts it at the end of its body; a graph's own notebook display
carries it, and the script runs once per page however many displays carry it). In the
notebook widget the same script is an anywidget module (``explorer.notebook.canvas_widget``).

What the canvas does: zoom (wheel, buttons, ``+`` ``-`` keys), pan (drag), fit at a readable size
(the whole graph or its width, never node labels below ``MIN_TEXT_PX``: a larger graph is
panned, with a minimap of where the view is), click a node or a cluster to select it (a
``thx-select`` event carrying the BoundSymbol's or module's id; on a page without a kernel the
tree row of that id in the same pane is opened and marked), double-click a module to fold it
in place (``thx-toggle``: the widget re-lays the graph out instead). Without the script (an
untrusted notebook) the SVG scrolls at the size graphviz drew it.
"""

from __future__ import annotations

import functools
import re
from html import escape
from importlib import resources

MIN_TEXT_PX = 9  # also in canvas.js: fit never draws node labels smaller
_SVG_OPEN = re.compile(r"<svg\b")


@functools.cache
def asset(name: str) -> str:
    """The text of a file bundled in ``explorer/static``."""
    return resources.files("explorer").joinpath("static", name).read_text(encoding="utf-8")


def canvas_html(svg: str, selected: str | None = None) -> str:
    """One graph in a canvas. The SVG is kept as graphviz wrote it: each node and cluster
    carries what it selects in its class (``dot_writer.selects``). ``selected``: the id of
    what the page has selected (a line picked in the tree): the canvas marks it and brings it
    into view when it opens elsewhere."""
    svg = _SVG_OPEN.sub('<svg style="max-width:none"', svg, count=1)  # no script: its own size
    reveal = f' data-thx-reveal="{escape(selected)}"' if selected else ""
    return f'<div class="thx-canvas" tabindex="0"{reveal}><div class="thx-cv-view">{svg}</div></div>'


def canvas_script() -> str:
    """The canvas's stylesheet and script, for a page that shows canvases (once is enough)."""
    return f"<style>{asset('canvas.css')}</style><script>{asset('canvas.js')}</script>"


__all__ = ["MIN_TEXT_PX", "asset", "canvas_html", "canvas_script"]
