"""One pass written as DOT text (``_DotWriter``): a node per BoundSymbol in its executor's
colour and shape, clusters of subsymbols and of modules (folded as a ``ModulePlan`` says),
collectives and their waits, edges labelled with what they carry, and the legend. Used by
``explorer.views.graph`` and by the pair view, which draws two passes in one graph."""

from __future__ import annotations

import dataclasses
from urllib.parse import quote

from explorer.model.communication import WAIT, Collective, communication_of
from explorer.model.memory import fmt_bytes
from explorer.model.modules import ModuleGroup
from explorer.model.nodes import Node
from explorer.model.passes import PassModel
from explorer.views.graph_plan import TORCH_LEVEL, Line, ModulePlan, Open, leaf_of, opened
from explorer.views.style import TAG_STYLE, executor_style

SPLINE_NODES = 1000
# Edges passing more than LONG_SPAN nodes are drawn as notes by their consumer when together they
# pass more than LONG_TOTAL nodes (``_DotWriter._stub``): what keeps a 1,000-op training graph
# laid out in a second or two (its 250 saved values' edges made dot run past a minute or crash).
LONG_SPAN, LONG_TOTAL = 60, 20_000
MODULE_FILL, MODULE_BORDER = "#e3f2fd", "#1f5f99"


def _q(s: str) -> str:
    """A DOT quoted string whose text is ``s`` exactly (no ``\\N``-style escapes)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def selects(*ids: str) -> str:
    """The DOT ``class`` of a node or cluster that selects ``ids`` when clicked: graphviz
    copies it into the SVG, where the canvas reads it (``thx-s-`` + the id, URL-quoted so that
    any id is one class token; a module id is ``module:path``)."""
    return _q(" ".join("thx-s-" + quote(i, safe="") for i in ids))


def op_name(n: Node) -> str:
    """What a graph names a node's op, as a PyTorch user knows it: the torch call an executor's
    helper makes (``torch.mul`` for ``torchex.scalar_first(torch.mul, 2, t)``: ``Node.shown_sym``);
    for a helper that stands for the one op it claims (``torchex.amax`` for ``prims.amax``), that
    op (a torch-language op by its torch function, else by its name, ``amax``); a torch-language
    op by the torch function it stands for (``torch.unsqueeze``, not ``ltorch.unsqueeze``); else
    the symbol."""
    if n.via is not None:
        return n.shown_sym
    if n.module == TORCH_LEVEL:  # ltorch.unsqueeze: the torch function it stands for
        return n.torch_name or f"torch.{n.sym}"
    torch_named = n.module == "torch" or n.module.startswith("torch.")
    if n.executor and not torch_named and "fusion" not in n.tags and len(n.children) == 1:
        claimed = n.children[0]
        if claimed.outputs == n.outputs:
            return op_name(claimed) if claimed.module == TORCH_LEVEL else claimed.sym
    return n.sym_id


def module_label(g: ModuleGroup) -> str:
    """A module cluster's or node's name: ``layers.0 (LlamaDecoderLayer)``; a module made while
    tracing (``self_attn.<Func>``, a kernel library's wrapper) by the function it ran
    (``ModuleGroup.label``: ``self_attn: apply_rotary_pos_emb()``), never by its ``<Cls>``."""
    if g.label != g.name:
        return g.label
    if "<" in g.path:  # made while tracing, its function unknown: its class, where it was made
        return f"{g.path.rsplit('.<', 1)[0] if '.<' in g.path else '<root>'}: {g.cls}"
    return f"{g.name} ({g.cls})"


def _short(s: str, n: int = 48) -> str:
    return s if len(s) <= n else s[: n - 1] + "\u2026"


@dataclasses.dataclass(frozen=True, order=True)
class LegendItem:
    """One entry of a graph's legend (``rank`` orders the kinds: executors, the in-flight edge,
    fusion regions, folded modules, tags)."""

    rank: int
    text: str
    shape: str
    style: str
    fill: str
    border: str
    penwidth: float


_IN_FLIGHT = LegendItem(
    1, "- - > in flight: start to wait", "plaintext", "solid", "#ffffff", TAG_STYLE["communication"][1], 1.0
)
_FUSION_REGION = LegendItem(2, "fusion region", "box", "filled,bold", "#f3faf0", "#2e7d32", 2.2)
_FOLDED_MODULE = LegendItem(3, "module (collapsed)", "folder", "filled", MODULE_FILL, MODULE_BORDER, 1.4)


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
        self.legend_items: set[LegendItem] = set()  # the styles drawn, for the legend
        self._used: set[str] | None = None
        self.module_ids: dict[str, list[str]] = {}  # graph node -> the module ids it stands for
        self.comm_nodes: dict[str, Node] = {}  # graph node -> the collective's start or wait drawn
        self.pass_model: PassModel | None = None  # the pass drawn: pairs a start with its wait
        self.decompose = False  # open torch-language ops into their prims

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
            self._seen_tag("tensor_subclass")
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
        """Draw ``nodes`` opened down to ``depth``; ``executor`` is the enclosing claim's.
        Torch-language ops stay whole unless ``self.decompose`` (see ``graph_plan.opened``)."""
        for n in nodes:
            if "del" in n.tags:  # not dataflow
                continue
            ex = n.executor or executor
            inner = opened(n, depth, self.decompose)
            if inner is None:
                self.leaf(leaf_of(n, self.decompose), indent, ex, n.id)
            elif len(inner.children) > 1 or "fusion" in inner.tags:
                self.cluster(n, inner, depth, indent, ex)
            else:
                self.nodes(inner.children, depth - 1, indent, ex)

    def leaf(self, n: Node, indent: int, executor: str | None, select: str | None = None) -> None:
        """One node for ``n``; ``select``: the BoundSymbol a click on it selects (default ``n``'s)."""
        if self.count >= self.max_nodes:
            self.cut += 1
            return
        nid = f"{self.prefix}n{self.count}"
        self.count += 1
        self.lines.append(
            f"{'  ' * indent}{nid} [{self.node_attrs(n, executor)} class={selects(select or n.id)}];"
        )
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
        for e in plan.entries(items, level):
            if isinstance(e, Line):
                self.nodes([e.node], depth, indent)
            elif isinstance(e, Open):
                self.module_cluster(e.group, plan, depth, level, indent)
            else:
                self.module_node(e.groups, indent)

    def module_cluster(self, g: ModuleGroup, plan: ModulePlan, depth: int, level: int, indent: int) -> None:
        pad = "  " * indent
        self.clusters += 1
        label = module_label(g)
        pen = 2.5 if g.id in self.highlight else 1.2
        self.lines.append(
            f'{pad}subgraph cluster_{self.prefix}{self.clusters} {{ label={_q(_short(label, 70))} style="rounded,dotted" '
            f'color="{MODULE_BORDER}" penwidth={pen} fontname="Helvetica" fontsize=10 '
            f"tooltip={_q(f'module {g.summary()}')} class={selects(g.id)};"
        )
        self.module_items(g.items, plan, depth, level + 1, indent + 1)
        self.lines.append(f"{pad}}}")

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
        if len(groups) == 1 and first.label != first.name:  # made while tracing: by its function
            label = f"{_short(first.label)}\n{ops} op{'' if ops == 1 else 's'}"
        elif len(groups) == 1:
            label = f"{_short(first.name)}\n({first.cls}) {ops} op{'' if ops == 1 else 's'}"
        else:
            label = f"{_short(first.name, 30)} \u2026 {_short(last.name, 30)}\n{len(groups)} \u00d7 {first.cls}, {ops} ops"
        tops = {h.split("/", 1)[0] for h in self.highlight}  # a hit below a line: that line's id first
        lit = any(g.id in self.highlight or any(n.id in tops for n in g.nodes()) for g in groups)
        pen, border = (3.5, "#1976d2") if lit else (1.4, MODULE_BORDER)
        if len(groups) > 1:
            tip = f"{len(groups)} modules, {first.name} to {last.name}"
        else:
            tip = f"module {first.label}"
        self.lines.append(
            f'{"  " * indent}{nid} [label={_q(label)} shape=folder style=filled fillcolor="{MODULE_FILL}" '
            f'color="{border}" penwidth={pen} fontname="Helvetica" tooltip={_q(tip + " (collapsed)")} '
            f"class={selects(*(g.id for g in groups))}];"
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
        self.legend_items.add(_FOLDED_MODULE)

    def cluster(self, outer: Node, inner: Node, depth: int, indent: int, executor: str | None) -> None:
        pad = "  " * indent
        self.clusters += 1
        fusion = "fusion" in outer.tags or "fusion" in inner.tags
        border = executor_style(executor)[1]
        label = _short(op_name(outer) + (f" -> {', '.join(outer.outputs)}" if outer.outputs else ""), 60)
        if executor:
            label += f" [{executor}]"
        style = 'style="filled,bold" fillcolor="#f3faf0"' if fusion else 'style="rounded,dashed"'
        self.lines.append(
            f"{pad}subgraph cluster_{self.prefix}{self.clusters} {{ label={_q(label)} {style} color={_q(border)} "
            f'fontname="Courier" fontsize=10 tooltip={_q(outer.shown_line)} class={selects(outer.id)};'
        )
        self.nodes(inner.children, depth - 1, indent + 1, executor)
        self.lines.append(f"{pad}}}")
        if fusion:
            self.legend_items.add(_FUSION_REGION)

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
            self._seen_tag(t)
        self._seen_executor(executor)
        outs = ", ".join(n.outputs[:3]) + (", ..." if len(n.outputs) > 3 else "")
        name = op_name(n)
        if outs:
            label = f"{_short(outs, 40)} =\n{_short(name)}"
        else:  # a check or a write-back: what it checks or writes is the point
            line = n.shown_line
            args = line[len(name) + 1 : -1] if line.startswith(name + "(") else line
            label = f"{_short(name)}\n{_short(args, 44)}"
        if executor:
            label += f"\n[{executor}]"
        tip = n.shown_line
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
        self.legend_items.add(_IN_FLIGHT)
        colour = TAG_STYLE["communication"][1]
        return {"style": '"dashed,bold"', "color": _q(colour), "fontcolor": _q(colour)}

    def edges(self, attrs=None) -> None:
        """The edges, one per (producer, consumer) pair; ``attrs(src, dst, names)`` gives DOT
        attributes ({name: quoted value}) that replace or add to an edge's (the pair graph
        draws the saved values crossing the cut its way)."""
        merged: dict[tuple[str, str], list[str]] = {}
        for src, dst, name in self.edge_list:
            merged.setdefault((src, dst), []).append(name)
        spans = {e: self._span(*e) for e in merged}
        long = [e for e, n in spans.items() if n > LONG_SPAN]
        stubbed = set(long) if sum(spans[e] for e in long) > LONG_TOTAL else set()
        stubs: dict[str, list[tuple[str, list[str]]]] = {}  # consumer -> its long edges, drawn as one stub
        for (src, dst), names in merged.items():
            if (src, dst) in stubbed:
                stubs.setdefault(dst, []).append((src, names))
                continue
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
        for i, (dst, edges) in enumerate(stubs.items()):
            self._stub(f"{self.prefix}far{i}", dst, edges, attrs)

    def _span(self, src: str, dst: str) -> int:
        """How many drawn nodes an edge passes (by drawing order): an input's edges count 0, an
        edge from another writer's node (the forward's, in the pair graph) as many as this side has."""

        def order(nid: str) -> int | None:
            rest = nid[len(self.prefix) :] if nid.startswith(self.prefix) else None
            if rest == "ret":
                return self.count
            return int(rest[1:]) if rest and rest[0] == "n" and rest[1:].isdigit() else None

        if src.startswith(f"{self.prefix}in_"):
            return 0
        a, b = order(src), order(dst)
        if b is None:
            return 0
        return self.count if a is None else abs(b - a)  # from another writer: as long as this side

    def _stub(self, sid: str, dst: str, edges: list[tuple[str, list[str]]], attrs) -> None:
        """Long edges into ``dst`` drawn as one short one from a note naming what they carry: each
        long edge makes graphviz route a chain of hidden nodes through every rank it passes, and
        hundreds of them (a training step's forward returning every saved value) took ``dot``
        minutes or crashed it. The producers still say what they make in their labels."""
        names = [n for _, ns in edges for n in ns]
        shown = ", ".join(names[:4]) + (f" +{len(names) - 4} more" if len(names) > 4 else "")
        where = f"from {len(edges)} nodes far above" if len(edges) > 1 else "from far above"
        label = _q(f"{shown}\n({where})")
        self.lines.append(
            f'  {sid} [label={label} shape=note style=dashed color="#999999" '
            f"fontname=Helvetica fontsize=8 tooltip={_q(', '.join(names))}];"
        )
        a = {"tooltip": _q(", ".join(names)), "style": "dashed"}
        if attrs is not None:
            a.update(attrs(edges[0][0], dst, names))
            a.pop("label", None)
        self.lines.append(f"  {sid} -> {dst} [{' '.join(f'{k}={v}' for k, v in a.items())}];")

    def _seen_executor(self, executor: str | None) -> None:
        fill, border, shape, line = executor_style(executor)
        text = executor or "not claimed (dashed)"
        self.legend_items.add(LegendItem(0, text, shape, f"filled,{line}", fill, border, 1.0))

    def _seen_tag(self, tag: str) -> None:
        text, colour, shape, extra = TAG_STYLE[tag]
        if shape or extra == "bold":
            self.legend_items.add(
                LegendItem(4, text, shape or "box", "filled", "#ffffff", colour, 2.2 if extra else 1.0)
            )

    def legend(self) -> None:
        items = [dataclasses.astuple(x)[1:] for x in sorted(self.legend_items)]
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
