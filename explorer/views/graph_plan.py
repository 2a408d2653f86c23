"""What a graph draws: the depth dial passing through chains of claims (``unwrap``) down to
torch-language ops (prims only with ``decompose``: ``opened``, ``leaf_of``), how many graph
nodes a depth makes (``count_nodes``), and which modules are drawn open and which
folded into one node (``ModulePlan``)."""

from __future__ import annotations

import dataclasses

from explorer.model.modules import ModuleGroup, layer_runs
from explorer.model.nodes import Node

DEFAULT_MODULE_DEPTH = 3  # modules nested deeper than this are drawn as one node


TORCH_LEVEL = "ltorch"  # the module of torch-language symbols: what a PyTorch user calls


def unwrap(n: Node, decompose: bool = False) -> Node:
    """Through the chain of claims: ``torch.sin`` -> ``ltorch.sin`` -> ``prims.sin``. A claimed
    op has the op it claimed as its only subsymbol, with the same outputs; opening it shows
    nothing new, so the depth dial passes through it. The chain stops at the torch-language
    symbol (``ltorch.sin``) unless ``decompose`` asks for prims, then it goes to the last."""
    while len(n.children) == 1 and "fusion" not in n.tags and n.children[0].outputs == n.outputs:
        if not decompose and n.module == TORCH_LEVEL:
            break
        n = n.children[0]
    return n


def opened(n: Node, depth: int, decompose: bool = False) -> Node | None:
    """The node whose subsymbols are drawn in place of ``n`` at ``depth`` (``n`` itself, or the
    end of its chain of claims), or None when ``n`` is drawn as one node. Without
    ``decompose`` a torch-language op made of prims is not opened (``torch.arange`` stays
    ``torch.arange`` at every depth, not ``prims.iota``); one made of other torch-language ops,
    or of a tensor subclass's flatten, aten calls and unflatten, is."""
    if depth <= 0 or not n.children:
        return None
    inner = unwrap(n, decompose)
    if not inner.children:
        return None
    if not decompose and inner.module == TORCH_LEVEL and all(c.module == "prims" for c in inner.children):
        return None
    return inner


def leaf_of(n: Node, decompose: bool = False) -> Node:
    """The node a graph draws for ``n`` when it is not opened: ``n`` itself (what the trace
    prints, ``torch.softmax``), or with ``decompose`` the end of its chain of claims."""
    return unwrap(n, True) if decompose and n.children else n


def count_nodes(nodes: list[Node], depth: int, limit: int | None = None, decompose: bool = False) -> int:
    """How many graph nodes ``nodes`` make when opened down to ``depth``; with ``limit``,
    counting stops once past it (the answer is then some number above ``limit``), so asking
    whether a 40,000-line trace fits reads a few hundred of its nodes."""
    total = 0
    for n in nodes:
        if "del" in n.tags:
            continue
        inner = opened(n, depth, decompose)
        if inner is not None:
            room = None if limit is None else limit - total
            total += count_nodes(inner.children, depth - 1, room, decompose)
        else:
            total += 1
        if limit is not None and total > limit:
            break
    return total


def _one_op(g: ModuleGroup) -> bool:
    return g.op_count() == 1 and not any(isinstance(i, ModuleGroup) for i in g.items)


@dataclasses.dataclass(frozen=True)
class Line:
    """A line drawn as itself (its node, or its subsymbols at a deeper depth)."""

    node: Node


@dataclasses.dataclass(frozen=True)
class Open:
    """A module drawn open: a cluster around what it holds."""

    group: ModuleGroup


@dataclasses.dataclass(frozen=True)
class Folded:
    """Modules drawn as one node: one collapsed module, or a run of repeated layers."""

    groups: list[ModuleGroup]


Entry = Line | Open | Folded


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

    def entries(self, items: list, level: int) -> list[Entry]:
        """``items`` as what is drawn: a line (``Line``), a module drawn open (``Open``), or
        modules drawn as one node (``Folded``)."""
        folded_in_run: set[int] = set()
        for run in layer_runs(items):
            for g in run[self.repeats :]:
                if g.path not in self.expanded:
                    folded_in_run.add(id(g))
        out: list[Entry] = []
        for item in items:
            if not isinstance(item, ModuleGroup):
                out.append(Line(item))
                continue
            if item.path in self.collapsed:
                out.append(Folded([item]))
            elif id(item) in folded_in_run:
                if out and isinstance(out[-1], Folded) and id(out[-1].groups[-1]) in folded_in_run:
                    out[-1].groups.append(item)  # the next layer of the same run
                else:
                    out.append(Folded([item]))
            elif item.path in self.expanded or level < self.module_depth or _one_op(item):
                out.append(Open(item))  # a module of one line: that line says more than a box
            else:
                out.append(Folded([item]))
        return out

    def count(
        self, items: list, depth: int, level: int = 0, limit: int | None = None, decompose: bool = False
    ) -> int:
        """How many graph nodes ``items`` make (see ``count_nodes``)."""
        total = 0
        for e in self.entries(items, level):
            room = None if limit is None else limit - total
            if isinstance(e, Line):
                total += count_nodes([e.node], depth, room, decompose)
            elif isinstance(e, Open):
                total += self.count(e.group.items, depth, level + 1, room, decompose)
            else:
                total += 1
            if limit is not None and total > limit:
                break
        return total
