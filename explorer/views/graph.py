"""The dataflow graph of a trace: DOT text and its SVG layout by graphviz's ``dot``.

BoundSymbols are nodes, proxies are edges labelled with dtype and shape. A depth dial opens
BoundSymbols into clusters of their subsymbols (fusion regions are drawn as clusters of their
own style). The graph is collapsed to keep at most ``max_nodes`` nodes: the depth is lowered
until it fits, then the trace is cut with a "... N more" node. ``dot`` is tuned for
trace-shaped graphs (long residual edges make default ``dot`` take minutes, see RECIPES.md)
and runs with a timeout; on timeout the collapsed view is laid out instead, with a message.

With ``modules=True`` the BoundSymbols are drawn inside one cluster per module (path and
class as its label, nested as the modules are); a module can be collapsed to one node, and by
default modules deeper than ``module_depth`` are, and so are repeated layers after the first
(``layers.1`` ... ``layers.11`` become one node ``11 x DecoderLayer``).

Executors are told apart by colour *and* by shape / border (dashed: not claimed by any
executor); tensor-subclass flatten/unflatten and dataclass construction get shapes of their
own and a bold border. A collective is a parallelogram saying what it moves per rank and on
which group; the edge from a start to the wait that ends it is dashed and labelled "in
flight", and the start's tooltip names its wait and how many lines of the trace run in between
(the layout follows the dataflow, not the trace's order: ``explorer.model.communication`` lists them). A tensor-subclass value is drawn with its inner tensors: an input as
``ScaleTensor f32[2, 2]`` over ``_x f32[2, 2]`` and ``_scale f32[]``, an edge with both.

The DOT text is written by ``explorer.views.dot_writer``; which nodes and modules are drawn open is
``explorer.views.graph_plan``'s to say. This module joins them and lays the text out.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import shutil
import subprocess
import time
from html import escape

from explorer.model.passes import PassModel
from explorer.model.proxies import ProxyInfo
from explorer.model.traces import collector_paused
from explorer.views.canvas import canvas_html, canvas_script
from explorer.views.dot_writer import SPLINE_NODES, _DotWriter, _q
from explorer.views.graph_plan import ModulePlan, count_nodes

DOT = "dot"  # the program; tests point this elsewhere to see the "not installed" message
DEFAULT_MAX_NODES = 1200  # a 1,000-op backward is drawn whole; more: "... N more", with a message
DEFAULT_TIMEOUT = 20.0
INSTALL_HINT = (
    "The graph view needs Graphviz's `dot` program, which was not found on PATH. Install it with "
    "`sudo apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS) or "
    "`conda install -c conda-forge graphviz`, then run the cell again."
)
_SVG_CACHE: dict[str, str] = {}
_COMMENT = re.compile(r"<!--.*?-->\n?", re.S)


class GraphvizMissing(RuntimeError):
    pass


@dataclasses.dataclass
class Graph:
    """A laid-out graph: DOT text, SVG (None when it could not be laid out) and notes."""

    dot: str
    svg: str | None
    depth: int
    nodes: int
    messages: list[str]
    seconds: float = 0.0
    cut: int = 0  # bound symbols not drawn: the graph stopped at its max_nodes

    def html(self, selected: str | None = None) -> str:
        """The graph in a canvas (zoom, pan, minimap, click to select: ``explorer.views.canvas``);
        the page needs ``canvas_script()`` once. Without it the SVG scrolls at its own size.
        ``selected``: the id the page has selected, which the canvas brings into view."""
        notes = "".join(f'<div class="note warn">{escape(m)}</div>' for m in self.messages)
        return f'<div class="graph">{notes}{canvas_html(self.svg, selected) if self.svg else ""}</div>'

    def __repr__(self) -> str:
        laid = "laid out" if self.svg else "not laid out"
        notes = "".join(f"\n  {m}" for m in self.messages)
        return f"<Graph: {self.nodes} nodes at depth {self.depth}, {laid}>{notes}"

    def _repr_html_(self) -> str:
        from explorer.views.style import stylesheet

        return f'<div class="thx"><style>{stylesheet()}</style>{self.html()}{canvas_script()}</div>'


@dataclasses.dataclass
class GraphText:
    """One pass written as DOT: the text, the nodes in it, the depth drawn, notes for the reader,
    and how many bound symbols were left out at ``max_nodes``."""

    dot: str
    nodes: int
    depth: int
    messages: list[str]
    cut: int = 0


def more_hint(shown: int, cut: int) -> str:
    """What a graph cut at ``shown`` nodes, ``cut`` more left out, says about drawing the rest."""
    return (
        f"Showing the first {shown} bound symbols; {cut} more are not drawn: "
        f"explorer.graph_of(jfn, ..., max_nodes={shown + cut}) draws them all (in the explorer: "
        'the "draw more ops" button below the graph).'
    )


def graph_dot(p: PassModel, proxies: dict[str, ProxyInfo], **options) -> tuple[str, int, int, list[str]]:
    """DOT text for one pass: (dot, nodes laid out, depth used, messages); see ``graph_text``."""
    t = graph_text(p, proxies, **options)
    return t.dot, t.nodes, t.depth, t.messages


@collector_paused()
def graph_text(
    p: PassModel,
    proxies: dict[str, ProxyInfo],
    *,
    depth: int = 0,
    max_nodes: int = DEFAULT_MAX_NODES,
    highlight: set[str] | frozenset = frozenset(),
    title: str | None = None,
    splines: bool | None = None,
    modules: bool = False,
    plan: ModulePlan | None = None,
    decompose: bool = False,
) -> GraphText:
    """DOT text for one pass (a ``GraphText``). With ``modules``
    the nodes are drawn in module clusters, folded as ``plan`` says (default: ``ModulePlan()``).
    Torch-language ops are drawn whole at every depth; ``decompose`` opens them into prims.
    Each node and cluster carries what a click on it selects (``dot_writer.selects``)."""
    messages = []
    tree = p.modules() if modules else None
    if tree is not None and not tree.has_modules:
        tree = None
        messages.append("No module scopes were recorded in this trace: drawn without module clusters.")
    plan = plan or ModulePlan()

    def count(d: int, limit: int) -> int:
        if tree is not None:
            return plan.count(tree.items, d, 0, limit, decompose)
        return count_nodes(p.nodes, d, limit, decompose)

    want = depth
    while depth > 0 and count(depth, max_nodes) > max_nodes:
        depth -= 1
    if depth < want:
        messages.append(f"Collapsed to depth {depth} to keep the graph under {max_nodes} nodes.")
    w = _DotWriter(proxies, max_nodes, highlight)
    w.pass_model = p
    w.decompose = decompose
    w.header(title or f"{p.index}: {p.name}", count(depth, SPLINE_NODES), splines)
    if tree is not None:
        w.module_items(tree.items, plan, depth, 0, 1)
        w.module_inputs(p.args)
    else:
        used = w.used_names(p.nodes)
        for a in p.args:
            if a in used:
                w.input_node(a)
        w.nodes(p.nodes, depth, 1)
    if w.cut:
        messages.append(more_hint(max_nodes, w.cut))
        w.lines.append(f"  more [label={_q(f'... {w.cut} more')} shape=plaintext];")
    w.return_node(p.output)
    if w.is_flat():
        # a wide, shallow graph (an epilogue of many write-backs) reads better left to right
        w.lines[1] = w.lines[1].replace("rankdir=TB", "rankdir=LR")
    w.edges()
    w.legend()
    w.lines.append("}")
    return GraphText("\n".join(w.lines), w.count, depth, messages, w.cut)


def layout(dot: str, timeout: float = DEFAULT_TIMEOUT) -> str:
    """SVG for DOT text (cached). Raises GraphvizMissing or subprocess.TimeoutExpired."""
    key = hashlib.sha1(dot.encode()).hexdigest()
    svg = _SVG_CACHE.get(key)
    if svg is not None:
        return svg
    exe = shutil.which(DOT)
    if exe is None:
        raise GraphvizMissing(INSTALL_HINT)
    res = subprocess.run([exe, "-Tsvg"], input=dot.encode(), capture_output=True, timeout=timeout)
    if res.returncode != 0 and b"trouble in init_rank" in res.stderr:
        # dot's cluster ranking gives up on some nested module clusters (a Llama's backward with
        # its attention opened); its newer ranking over the whole graph lays them out
        res = subprocess.run(
            [exe, "-Tsvg", "-Gnewrank=true"], input=dot.encode(), capture_output=True, timeout=timeout
        )
    if res.returncode != 0:
        raise RuntimeError(f"dot failed ({res.returncode}): {res.stderr.decode(errors='replace')[:2000]}")
    svg = res.stdout.decode("utf-8", errors="replace")
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else svg
    svg = _COMMENT.sub("", svg)  # a comment per node and edge repeating its name: a tenth of the text
    if len(_SVG_CACHE) > 64:
        _SVG_CACHE.pop(next(iter(_SVG_CACHE)))
    _SVG_CACHE[key] = svg
    return svg


def render_graph(
    p: PassModel,
    proxies: dict[str, ProxyInfo],
    *,
    depth: int = 0,
    max_nodes: int = DEFAULT_MAX_NODES,
    timeout: float = DEFAULT_TIMEOUT,
    highlight: set[str] | frozenset = frozenset(),
    title: str | None = None,
    modules: bool = False,
    plan: ModulePlan | None = None,
    decompose: bool = False,
) -> Graph:
    """Lay out one pass's graph; on a timeout fall back to the collapsed view, with a message.
    ``modules`` and ``plan``: module clusters; ``decompose``: torch-language ops opened into
    prims (see ``graph_dot``)."""
    t0 = time.perf_counter()
    text = graph_text(
        p,
        proxies,
        depth=depth,
        max_nodes=max_nodes,
        highlight=highlight,
        title=title,
        modules=modules,
        plan=plan,
        decompose=decompose,
    )
    dot, count, used, messages, cut = text.dot, text.nodes, text.depth, text.messages, text.cut
    try:
        svg = layout(dot, timeout)
    except GraphvizMissing as e:
        return Graph(dot, None, used, count, [*messages, str(e)], time.perf_counter() - t0, cut)
    except subprocess.TimeoutExpired:
        small = min(max_nodes, 150) if used == 0 else max_nodes
        messages.append(
            f"Laying out {count} nodes at depth {used} took longer than {timeout:g} s; "
            f"showing the collapsed view (depth 0, at most {small} nodes) instead."
        )
        fallback = graph_text(
            p,
            proxies,
            depth=0,
            max_nodes=small,
            highlight=highlight,
            title=title,
            modules=modules,
            plan=plan,
            decompose=decompose,
        )
        dot, count, used, more, cut = (
            fallback.dot,
            fallback.nodes,
            fallback.depth,
            fallback.messages,
            fallback.cut,
        )
        try:
            svg = layout(dot, timeout)
        except (subprocess.TimeoutExpired, GraphvizMissing, RuntimeError) as e:
            svg = None
            more.append(f"The collapsed view could not be laid out either: {type(e).__name__}.")
        messages += more
    except RuntimeError as e:
        return Graph(dot, None, used, count, [*messages, str(e)], time.perf_counter() - t0, cut)
    return Graph(dot, svg, used, count, messages, time.perf_counter() - t0, cut)


__all__ = [
    "Graph",
    "GraphText",
    "GraphvizMissing",
    "ModulePlan",
    "count_nodes",
    "graph_dot",
    "graph_text",
    "layout",
    "more_hint",
    "render_graph",
]
