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
(the layout follows the dataflow, not the trace's order: ``explorer.communication`` lists them). A tensor-subclass value is drawn with its inner tensors: an input as
``ScaleTensor f32[2, 2]`` over ``_x f32[2, 2]`` and ``_scale f32[]``, an edge with both.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import subprocess
import time
from html import escape

from explorer.communication import WAIT, Collective, communication_of
from explorer.memory_model import fmt_bytes
from explorer.model import collector_paused
from explorer.model_nodes import Node
from explorer.model_passes import PassModel
from explorer.model_values import ProxyInfo
from explorer.modules import ModuleGroup, layer_runs
from explorer.style import EXECUTORS, TAG_STYLE, executor_style

DOT = "dot"  # the program; tests point this elsewhere to see the "not installed" message
DEFAULT_MAX_NODES = 500
DEFAULT_TIMEOUT = 20.0
SPLINE_NODES = 1000
DEFAULT_MODULE_DEPTH = 3  # modules nested deeper than this are drawn as one node
MODULE_FILL, MODULE_BORDER = "#e3f2fd", "#1f5f99"
INSTALL_HINT = (
    "The graph view needs Graphviz's `dot` program, which was not found on PATH. Install it with "
    "`sudo apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS) or "
    "`conda install -c conda-forge graphviz`, then run the cell again."
)
_SVG_CACHE: dict[str, str] = {}


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

    def html(self) -> str:
        notes = "".join(f'<div class="note warn">{escape(m)}</div>' for m in self.messages)
        return f'<div class="graph">{notes}{self.svg or ""}</div>'

    def __repr__(self) -> str:
        laid = "laid out" if self.svg else "not laid out"
        notes = "".join(f"\n  {m}" for m in self.messages)
        return f"<Graph: {self.nodes} nodes at depth {self.depth}, {laid}>{notes}"

    def _repr_html_(self) -> str:
        from explorer.style import stylesheet

        return f'<div class="thx"><style>{stylesheet()}</style>{self.html()}</div>'


def _q(s: str) -> str:
    """A DOT quoted string whose text is ``s`` exactly (no ``\\N``-style escapes)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _short(s: str, n: int = 48) -> str:
    return s if len(s) <= n else s[: n - 1] + "\u2026"


def unwrap(n: Node) -> Node:
    """Through the chain of claims: ``torch.sin`` -> ``ltorch.sin`` -> ``prims.sin`` gives the
    last. A claimed op has the op it claimed as its only subsymbol, with the same outputs;
    opening it shows nothing new, so the depth dial passes through it."""
    while len(n.children) == 1 and "fusion" not in n.tags and n.children[0].outputs == n.outputs:
        n = n.children[0]
    return n


def count_nodes(nodes: list[Node], depth: int, limit: int | None = None) -> int:
    """How many graph nodes ``nodes`` make when opened down to ``depth``; with ``limit``,
    counting stops once past it (the answer is then some number above ``limit``), so asking
    whether a 40,000-line trace fits reads a few hundred of its nodes."""
    total = 0
    for n in nodes:
        if "del" in n.tags:
            continue
        if depth > 0 and n.children:
            inner = unwrap(n)
            if inner.children:
                room = None if limit is None else limit - total
                total += count_nodes(inner.children, depth - 1, room)
            else:
                total += 1
        else:
            total += 1
        if limit is not None and total > limit:
            break
    return total


def _one_op(g: ModuleGroup) -> bool:
    return g.op_count() == 1 and not any(isinstance(i, ModuleGroup) for i in g.items)


class ModulePlan:
    """Which modules a graph draws open (a cluster) and which as one node.

    ``collapsed`` paths are drawn as one node, ``expanded`` ones open; otherwise a module is
    open when fewer than ``module_depth`` modules enclose it, and of a run of repeated layers
    only the first ``repeats`` are open, the others folded (consecutive ones into one node).
    """

    def __init__(self, module_depth=DEFAULT_MODULE_DEPTH, collapsed=(), expanded=(), repeats: int = 1):
        self.module_depth = module_depth
        self.collapsed = set(collapsed)
        self.expanded = set(expanded)
        self.repeats = repeats

    def entries(self, items: list, level: int) -> list[tuple[str, object]]:
        """``items`` as what is drawn: ("node", Node), ("open", group) or ("fold", [groups])."""
        folded_in_run: set[int] = set()
        for run in layer_runs(items):
            for g in run[self.repeats :]:
                if g.path not in self.expanded:
                    folded_in_run.add(id(g))
        out: list[tuple[str, object]] = []
        for item in items:
            if not isinstance(item, ModuleGroup):
                out.append(("node", item))
                continue
            if item.path in self.collapsed:
                out.append(("fold", [item]))
            elif id(item) in folded_in_run:
                if out and out[-1][0] == "fold" and id(out[-1][1][-1]) in folded_in_run:
                    out[-1][1].append(item)  # the next layer of the same run
                else:
                    out.append(("fold", [item]))
            elif item.path in self.expanded or level < self.module_depth or _one_op(item):
                out.append(("open", item))  # a module of one line: that line says more than a box
            else:
                out.append(("fold", [item]))
        return out

    def count(self, items: list, depth: int, level: int = 0, limit: int | None = None) -> int:
        """How many graph nodes ``items`` make (see ``count_nodes``)."""
        total = 0
        for kind, x in self.entries(items, level):
            room = None if limit is None else limit - total
            if kind == "node":
                total += count_nodes([x], depth, room)
            elif kind == "open":
                total += self.count(x.items, depth, level + 1, room)
            else:
                total += 1
            if limit is not None and total > limit:
                break
        return total


@collector_paused()
def graph_dot(
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
) -> tuple[str, int, int, list[str]]:
    """DOT text for one pass: (dot, nodes laid out, depth used, messages). With ``modules``
    the nodes are drawn in module clusters, folded as ``plan`` says (default: ``ModulePlan()``)."""
    messages = []
    tree = p.modules() if modules else None
    if tree is not None and not tree.has_modules:
        tree = None
        messages.append("No module scopes were recorded in this trace: drawn without module clusters.")
    plan = plan or ModulePlan()

    def count(d: int, limit: int) -> int:
        return plan.count(tree.items, d, 0, limit) if tree is not None else count_nodes(p.nodes, d, limit)

    want = depth
    while depth > 0 and count(depth, max_nodes) > max_nodes:
        depth -= 1
    if depth < want:
        messages.append(f"Collapsed to depth {depth} to keep the graph under {max_nodes} nodes.")
    w = _DotWriter(proxies, max_nodes, highlight)
    w.pass_model = p
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
        messages.append(f"Showing the first {max_nodes} bound symbols; {w.cut} more are not drawn.")
        w.lines.append(f"  more [label={_q(f'... {w.cut} more')} shape=plaintext];")
    w.return_node(p.output)
    if w.is_flat():
        # a wide, shallow graph (an epilogue of many write-backs) reads better left to right
        w.lines[1] = w.lines[1].replace("rankdir=TB", "rankdir=LR")
    w.edges()
    w.legend()
    w.lines.append("}")
    return "\n".join(w.lines), w.count, depth, messages


class _DotWriter:
    def __init__(self, proxies, max_nodes, highlight, prefix: str = ""):
        self.proxies = proxies
        self.prefix = prefix  # of every node and cluster name: two writers can share one graph
        self.max_nodes = max_nodes
        self.highlight = highlight
        self.lines: list[str] = []
        self.producer: dict[str, str] = {}
        self.edge_list: list[tuple[str, str, str]] = []
        self.reads: list[tuple[str, tuple[str, ...]]] = []  # (graph node, names it reads): edges at the end
        self.count = 0
        self.cut = 0
        self.clusters = 0
        self.seen_styles: set[tuple[str, str | None]] = set()
        self._used: set[str] | None = None
        self.module_ids: dict[str, list[str]] = {}  # graph node -> the module ids it stands for
        self.comm_nodes: dict[str, Node] = {}  # graph node -> the collective's start or wait drawn
        self.pass_model: PassModel | None = None  # the pass drawn: pairs a start with its wait

    def is_flat(self) -> bool:
        """More than 4 nodes per rank: the longest path is short for the node count."""
        if self.count < 12:
            return False
        rank: dict[str, int] = {}
        for src, dst, _ in self.edge_list:  # in trace order: producers come first
            rank[dst] = max(rank.get(dst, 0), rank.get(src, 0) + 1)
        return self.count > 4 * (max(rank.values(), default=0) + 1)

    def used_names(self, nodes: list[Node]) -> set[str]:
        """What the nodes that will be drawn read (a graph cut at ``max_nodes`` draws the
        first top-level nodes; one that is opened fits whole)."""
        if self._used is None:
            self._used = set()
            drawn = 0
            for n in nodes:
                if "del" in n.tags:
                    continue
                if drawn == self.max_nodes:
                    break
                self._used.update(n.inputs)
                drawn += 1
        return self._used

    def header(self, title: str, n: int, splines: bool | None) -> None:
        # nslimit=0 / mclimit=0.1 cut the x-positioning and crossing work that long residual
        # edges make explode. nslimit1 (ranking) is left alone: with nslimit1=0 every input
        # (each weight) lands on the first rank, the graph is hundreds of inputs wide and
        # spline routing then took > 30 s for a 12-layer GPT's 234 nodes (0.06 s without).
        splines = "true" if (n <= SPLINE_NODES if splines is None else splines) else "false"
        self.lines += [
            "digraph trace {",
            f"  graph [label={_q(title)} labelloc=t fontname=Helvetica fontsize=12 rankdir=TB",
            f"         nslimit=0 mclimit=0.1 splines={splines} ranksep=0.35 nodesep=0.25];",
            '  node [fontname="Courier" fontsize=10 height=0.3 margin="0.08,0.03"];',
            '  edge [fontname="Helvetica" fontsize=8 color="#555555" arrowsize=0.6];',
        ]

    def input_node(self, name: str) -> None:
        info = self.proxies.get(name)
        label = name + (f"\n{info.label()}" if info else "")
        nid = f"{self.prefix}in_{len(self.producer)}"
        border = ""
        if info is not None and info.subclass:  # a tensor subclass: its inner tensors below it
            label += "".join(f"\n{x}" for x in info.inner_labels())
            border = f' color="{TAG_STYLE["tensor_subclass"][1]}" penwidth=2.2'
            self.seen_styles.add(("tag", "tensor_subclass"))
        self.lines.append(
            f'  {nid} [label={_q(label)} shape=ellipse style=filled fillcolor="#f1f8e9"{border}];'
        )
        self.producer[name] = nid

    def return_node(self, output: list[str], indent: int = 1) -> None:
        ret = f"{self.prefix}ret"
        self.lines.append(
            f'{"  " * indent}{ret} [label="return" shape=Msquare style=filled fillcolor="#f5f5f5"];'
        )
        self._resolve_reads()
        for name in output:
            src = self.producer.get(name)
            if src is not None:
                self.edge_list.append((src, ret, name))

    def nodes(self, nodes: list[Node], depth: int, indent: int, executor: str | None = None) -> None:
        """Draw ``nodes`` opened down to ``depth``; ``executor`` is the enclosing claim's."""
        for n in nodes:
            if "del" in n.tags:  # not dataflow
                continue
            ex = n.executor or executor
            if depth > 0 and n.children:
                inner = unwrap(n)
                if len(inner.children) > 1 or (inner.children and "fusion" in inner.tags):
                    self.cluster(n, inner, depth, indent, ex)
                elif inner.children:
                    self.nodes(inner.children, depth - 1, indent, ex)
                else:
                    self.leaf(inner, indent, ex)
                continue
            self.leaf(n, indent, ex)

    def leaf(self, n: Node, indent: int, executor: str | None) -> None:
        if self.count >= self.max_nodes:
            self.cut += 1
            return
        nid = f"{self.prefix}n{self.count}"
        self.count += 1
        self.lines.append(f"{'  ' * indent}{nid} [{self.node_attrs(n, executor)}];")
        if n.collective is not None:
            self.comm_nodes[nid] = n
        self.reads.append((nid, n.inputs))
        for name in n.outputs:
            self.producer[name] = nid

    def _resolve_reads(self) -> None:
        """The edges into each node drawn: once every producer is known (a module drawn as one
        node may hold lines that come after the ones that read them)."""
        for nid, names in self.reads:
            for name in names:
                src = self.producer.get(name)
                if src is not None and src != nid:
                    self.edge_list.append((src, nid, name))
        self.reads = []

    def module_inputs(self, args: list[str]) -> None:
        """The inputs the drawn lines read; those read only inside collapsed modules (their
        parameters) are left out, with their edges."""
        read = {name for nid, names in self.reads if nid not in self.module_ids for name in names}
        for a in args:
            if a in read:
                self.input_node(a)
        inner = set(args) - read
        self.reads = [
            (nid, tuple(x for x in names if x not in inner)) if nid in self.module_ids else (nid, names)
            for nid, names in self.reads
        ]

    def module_items(self, items: list, plan: ModulePlan, depth: int, level: int, indent: int) -> None:
        for kind, x in plan.entries(items, level):
            if kind == "node":
                self.nodes([x], depth, indent)
            elif kind == "open":
                self.module_cluster(x, plan, depth, level, indent)
            else:
                self.module_node(x, indent)

    def module_cluster(self, g: ModuleGroup, plan: ModulePlan, depth: int, level: int, indent: int) -> None:
        pad = "  " * indent
        self.clusters += 1
        label = f"{g.name} ({g.cls})"
        pen = 2.5 if g.id in self.highlight else 1.2
        self.lines.append(
            f'{pad}subgraph cluster_{self.prefix}{self.clusters} {{ label={_q(_short(label, 70))} style="rounded,dotted" '
            f'color="{MODULE_BORDER}" penwidth={pen} fontname="Helvetica" fontsize=10 '
            f"tooltip={_q(f'module {g.summary()}')};"
        )
        self.module_items(g.items, plan, depth, level + 1, indent + 1)
        self.lines.append(f"{pad}}}")
        self.seen_styles.add(("module", "open"))

    def module_node(self, groups: list[ModuleGroup], indent: int) -> None:
        """Modules drawn as one node: it reads what their lines read from outside them and
        makes what their lines make; highlighted when a module or a line in it is."""
        if self.count >= self.max_nodes:
            self.cut += 1
            return
        nid = f"{self.prefix}n{self.count}"
        self.count += 1
        ops = sum(g.op_count() for g in groups)
        first, last = groups[0], groups[-1]
        if len(groups) == 1:
            label = f"{_short(first.name)}\n({first.cls}) {ops} op{'' if ops == 1 else 's'}"
        else:
            label = f"{_short(first.name, 30)} \u2026 {_short(last.name, 30)}\n{len(groups)} \u00d7 {first.cls}, {ops} ops"
        tops = {h.split("/", 1)[0] for h in self.highlight}  # a hit below a line: that line's id first
        lit = any(g.id in self.highlight or any(n.id in tops for n in g.nodes()) for g in groups)
        pen, border = (3.5, "#1976d2") if lit else (1.4, MODULE_BORDER)
        if len(groups) > 1:
            tip = f"{len(groups)} modules, {first.name} to {last.name}"
        else:
            tip = f"module {first.name}"
        self.lines.append(
            f'{"  " * indent}{nid} [label={_q(label)} shape=folder style=filled fillcolor="{MODULE_FILL}" '
            f'color="{border}" penwidth={pen} fontname="Helvetica" tooltip={_q(tip + " (collapsed)")}];'
        )
        self.module_ids[nid] = [g.id for g in groups]
        inputs: dict[str, None] = {}
        for g in groups:
            for n in g.nodes():
                if "del" in n.tags:
                    continue
                inputs.update(dict.fromkeys(n.inputs))
                for name in n.outputs:
                    self.producer[name] = nid
        self.reads.append((nid, tuple(inputs)))
        self.seen_styles.add(("module", "folded"))

    def cluster(self, outer: Node, inner: Node, depth: int, indent: int, executor: str | None) -> None:
        pad = "  " * indent
        self.clusters += 1
        fusion = "fusion" in outer.tags or "fusion" in inner.tags
        border = executor_style(executor)[1]
        label = _short(outer.sym_id + (f" -> {', '.join(outer.outputs)}" if outer.outputs else ""), 60)
        if executor:
            label += f" [{executor}]"
        style = 'style="filled,bold" fillcolor="#f3faf0"' if fusion else 'style="rounded,dashed"'
        self.lines.append(
            f"{pad}subgraph cluster_{self.prefix}{self.clusters} {{ label={_q(label)} {style} color={_q(border)} "
            f'fontname="Courier" fontsize=10 tooltip={_q(outer.line)};'
        )
        self.nodes(inner.children, depth - 1, indent + 1, executor)
        self.lines.append(f"{pad}}}")
        if fusion:
            self.seen_styles.add(("fusion", None))

    def node_attrs(self, n: Node, executor: str | None) -> str:
        fill, border, shape, border_style = executor_style(executor)
        penwidth = 1.0
        styles = ["filled", border_style]
        for t in n.tags:
            ts = TAG_STYLE.get(t)
            if ts is None:
                continue
            if ts[2]:
                shape = ts[2]
            if ts[3] == "bold":
                penwidth = 2.2
                border = ts[1]
            self.seen_styles.add(("tag", t))
        self.seen_styles.add(("executor", executor))
        outs = ", ".join(n.outputs[:3]) + (", ..." if len(n.outputs) > 3 else "")
        if outs:
            label = f"{_short(outs, 40)} =\n{_short(n.sym_id)}"
        else:  # a check or a write-back: what it checks or writes is the point
            args = n.line[len(n.sym_id) + 1 : -1] if n.line.startswith(n.sym_id + "(") else n.line
            label = f"{_short(n.sym_id)}\n{_short(args, 44)}"
        if executor:
            label += f"\n[{executor}]"
        tip = n.line
        if n.collective is not None:
            label, tip = self.comm_label(n, label, tip)
        if n.id in self.highlight:
            penwidth, border = 3.5, "#1976d2"
        return (
            f"label={_q(label)} shape={shape} style={_q(','.join(styles))} "
            f"fillcolor={_q(fill)} color={_q(border)} penwidth={penwidth} tooltip={_q(tip)}"
        )

    def comm_label(self, n: Node, label: str, tip: str) -> tuple[str, str]:
        """A collective's label and tooltip: what a start moves, on which group, and (in the
        tooltip) its wait and what overlaps it."""
        c = Collective.of(n)
        if c is None:
            return label, f"{tip}\nends the collective that makes {', '.join(n.inputs)}"
        what = c.kind + (f" {c.op}" if c.op else "") + (f" from {c.src}" if c.src is not None else "")
        label += f"\n{what}, {fmt_bytes(c.bytes)}\n{c.group_label()}"
        comm = communication_of(self.pass_model) if self.pass_model is not None else None
        paired = (
            next((c for name in n.outputs if (c := comm.making(name)) is not None), None) if comm else None
        )
        return label, f"{tip}\n{c.label()}" + (f"\n{paired.in_flight()}" if paired is not None else "")

    def in_flight(self, src: str, dst: str, names: list[str]) -> dict[str, str]:
        """The edge from a start to its wait: dashed, labelled "in flight"."""
        start, end = self.comm_nodes.get(src), self.comm_nodes.get(dst)
        if (
            start is None
            or end is None
            or end.collective["kind"] != WAIT
            or not set(names) & set(start.outputs)
        ):
            return {}
        self.seen_styles.add(("flight", None))
        colour = TAG_STYLE["communication"][1]
        return {"style": '"dashed,bold"', "color": _q(colour), "fontcolor": _q(colour)}

    def edges(self, attrs=None) -> None:
        """The edges, one per (producer, consumer) pair; ``attrs(src, dst, names)`` gives DOT
        attributes ({name: quoted value}) that replace or add to an edge's (the pair graph
        draws the saved values crossing the cut its way)."""
        merged: dict[tuple[str, str], list[str]] = {}
        for src, dst, name in self.edge_list:
            merged.setdefault((src, dst), []).append(name)
        for (src, dst), names in merged.items():
            labels = []
            for name in names[:2]:
                info = self.proxies.get(name)
                if info is None:
                    labels.append(name)
                elif info.subclass:  # its inner tensors too
                    labels.append(f"{info.label()}\n({', '.join(info.inner_labels())})")
                else:
                    labels.append(info.label())
            if len(names) > 2:
                labels.append(f"+{len(names) - 2}")
            tip = ", ".join(names)
            a = {"label": _q(" ".join(labels)), "tooltip": _q(tip)}
            flight = self.in_flight(src, dst, names)
            if flight:
                a.update(flight, label=_q("in flight\n" + " ".join(labels)), tooltip=_q(f"{tip} in flight"))
            if attrs is not None:
                a.update(attrs(src, dst, names))
            self.lines.append(f"  {src} -> {dst} [{' '.join(f'{k}={v}' for k, v in a.items())}];")

    def legend(self) -> None:
        items = []
        for kind, key in sorted(self.seen_styles, key=lambda k: (k[0], str(k[1]))):
            if kind == "executor":
                fill, border, shape, bstyle = executor_style(key)
                text = key or "not claimed (dashed)"
                items.append((text, shape, f"filled,{bstyle}", fill, border, 1.0))
            elif kind == "tag":
                text, colour, shape, extra = TAG_STYLE[key]
                if shape or extra == "bold":
                    items.append((text, shape or "box", "filled", "#ffffff", colour, 2.2 if extra else 1.0))
            elif kind == "fusion":
                items.append(("fusion region", "box", "filled,bold", "#f3faf0", "#2e7d32", 2.2))
            elif kind == "module" and key == "folded":
                items.append(("module (collapsed)", "folder", "filled", MODULE_FILL, MODULE_BORDER, 1.4))
            elif kind == "flight":
                colour = TAG_STYLE["communication"][1]
                items.append(("- - > in flight: start to wait", "plaintext", "solid", "#ffffff", colour, 1.0))
        if not items:
            return
        self.lines.append(
            '  subgraph cluster_legend { label="legend" fontsize=10 style=rounded color="#bbbbbb";'
        )
        prev = None
        for i, (text, shape, style, fill, border, pw) in enumerate(items):
            self.lines.append(
                f"    lg{i} [label={_q(text)} shape={shape} style={_q(style)} fillcolor={_q(fill)} "
                f"color={_q(border)} penwidth={pw} fontname=Helvetica fontsize=9];"
            )
            if prev is not None:
                self.lines.append(f"    {prev} -> lg{i} [style=invis];")
            prev = f"lg{i}"
        self.lines.append("  }")


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
    if res.returncode != 0:
        raise RuntimeError(f"dot failed ({res.returncode}): {res.stderr.decode(errors='replace')[:2000]}")
    svg = res.stdout.decode("utf-8", errors="replace")
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else svg
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
) -> Graph:
    """Lay out one pass's graph; on a timeout fall back to the collapsed view, with a message.
    ``modules`` and ``plan``: module clusters, see ``graph_dot``."""
    t0 = time.perf_counter()
    dot, count, used, messages = graph_dot(
        p,
        proxies,
        depth=depth,
        max_nodes=max_nodes,
        highlight=highlight,
        title=title,
        modules=modules,
        plan=plan,
    )
    try:
        svg = layout(dot, timeout)
    except GraphvizMissing as e:
        return Graph(dot, None, used, count, [*messages, str(e)], time.perf_counter() - t0)
    except subprocess.TimeoutExpired:
        small = min(max_nodes, 150) if used == 0 else max_nodes
        messages.append(
            f"Laying out {count} nodes at depth {used} took longer than {timeout:g} s; "
            f"showing the collapsed view (depth 0, at most {small} nodes) instead."
        )
        dot, count, used, more = graph_dot(
            p, proxies, depth=0, max_nodes=small, highlight=highlight, title=title, modules=modules, plan=plan
        )
        try:
            svg = layout(dot, timeout)
        except (subprocess.TimeoutExpired, GraphvizMissing, RuntimeError) as e:
            svg = None
            more.append(f"The collapsed view could not be laid out either: {type(e).__name__}.")
        messages += more
    except RuntimeError as e:
        return Graph(dot, None, used, count, [*messages, str(e)], time.perf_counter() - t0)
    return Graph(dot, svg, used, count, messages, time.perf_counter() - t0)


__all__ = [
    "EXECUTORS",
    "Graph",
    "GraphvizMissing",
    "ModulePlan",
    "count_nodes",
    "graph_dot",
    "layout",
    "render_graph",
]
