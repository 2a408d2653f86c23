"""A pass read by module: its top-level BoundSymbols grouped by the nn.Module call they were
recorded in (``BoundSymbol.scope``), modules nested in the modules that called them.

    tree = pass_model.modules()          # a ModuleTree, made on first use and kept
    tree.items                           # top level: ModuleGroups and Nodes, in trace order
    tree.groups["blocks.0.attn"]         # a ModuleGroup: path, cls, items, op_count()

A module is one group however many times it is called; a group's items are its own
BoundSymbols and its submodules' groups, in the order they first appear. A ``del`` line (no
scope of its own) goes with the line before it, so freeing a module's intermediates stays in
that module. A line with no scope of its own whose subsymbols have scopes (a fusion region
made by a pass) goes with the innermost module that holds all of them. Lines recorded outside
any module stay at the top level. Building the tree reads
each top-level node's scope once (an attribute, nothing printed), so it stays linear: the
views then read only the part they show.
"""

from __future__ import annotations

import re

from explorer.model.nodes import Node, path_to
from explorer.model.passes import PassModel
from explorer.model.seconds import fmt_seconds
from explorer.model.traces import collector_paused

MODULE_ID_PREFIX = "module:"
_INDEXED = re.compile(r"^(.*?)(\d+)$")
_MADE_WHILE_TRACING = re.compile(r"^(?:(.*)\.)?<[^<>]*>$")


def module_id(path: str) -> str:
    """The id a module's group has in the views (never a BoundSymbol's id: those are names)."""
    return MODULE_ID_PREFIX + path


def is_module_id(node_id: str | None) -> bool:
    return node_id is not None and node_id.startswith(MODULE_ID_PREFIX)


class ModuleGroup:
    """One module of a pass: ``path`` (``""`` for the jitted module itself), ``cls`` (its
    class name), ``parent`` (the calling module's group, or None) and ``items`` (its own
    top-level BoundSymbols' nodes and its submodules' groups, in order of first appearance)."""

    __slots__ = ("path", "cls", "parent", "id", "items", "_ops", "_nodes", "_label")

    def __init__(self, path: str, cls: str, parent: ModuleGroup | None):
        self.path = path
        self.cls = cls
        self.parent = parent
        self.id = module_id(path)
        self.items: list[ModuleGroup | Node] = []
        self._ops: int | None = None
        self._nodes: list[Node] | None = None
        self._label: str | None = None

    # a group shows like a node in the tree: these are what the tree's budget reads
    @property
    def children(self) -> list[ModuleGroup | Node]:
        return self.items

    @property
    def name(self) -> str:
        return self.path or "<root>"

    @property
    def label(self) -> str:
        """How the views name it: its path, but a module met only while tracing (its path ends
        with ``<Cls>``, e.g. the ``Func`` module a kernel library wraps a function in) is named
        by the function its lines came from: ``self_attn: apply_rotary_pos_emb()``."""
        if self._label is None:
            self._label = self.name
            m = _MADE_WHILE_TRACING.match(self.path)
            if m is not None:
                fn = next((n.source.function for n in self.nodes() if n.source is not None), None)
                if fn and fn not in ("forward", "__call__", "<module>"):
                    self._label = f"{m[1] or '<root>'}: {fn}()"
        return self._label

    @property
    def depth(self) -> int:
        d, g = 0, self.parent
        while g is not None:
            d, g = d + 1, g.parent
        return d

    def groups(self):
        """This group and every group below it, parents first."""
        stack = [self]
        while stack:
            g = stack.pop()
            yield g
            stack.extend(reversed([i for i in g.items if isinstance(i, ModuleGroup)]))

    def nodes(self) -> list[Node]:
        """Every top-level BoundSymbol's node in this module and its submodules, in trace order
        of the groups (a module's own lines, then each submodule's as it comes)."""
        if self._nodes is None:
            out: list[Node] = []
            stack: list = [iter(self.items)]
            while stack:
                for item in stack[-1]:
                    if isinstance(item, ModuleGroup):
                        stack.append(iter(item.items))
                        break
                    out.append(item)
                else:
                    stack.pop()
            self._nodes = out
        return self._nodes

    def op_count(self) -> int:
        """The BoundSymbols it runs (its submodules' included), ``del`` lines not counted."""
        if self._ops is None:
            self._ops = sum(1 for n in self.nodes() if not _is_del(n))
        return self._ops

    def seconds(self, times: dict[str, float] | None) -> float | None:
        """The measured time of its lines (None when none of them was timed)."""
        if not times:
            return None
        found = [times[n.id] for n in self.nodes() if n.id in times]
        return sum(found) if found else None

    def summary(self, times: dict[str, float] | None = None) -> str:
        """``blocks.0.attn (Attention), 14 ops, 1.20 ms``."""
        ops = self.op_count()
        text = f"{self.label} ({self.cls}), {ops} op{'' if ops == 1 else 's'}"
        t = self.seconds(times)
        return text + (f", {fmt_seconds(t)}" if t is not None else "")

    def __repr__(self) -> str:
        return f"<ModuleGroup {self.summary()}>"


def _is_del(n: Node) -> bool:
    """Read off the node's facts: its ``tags`` cost more (they look at the subsymbols)."""
    return n._facts.is_del


class ModuleTree:
    """The top-level BoundSymbols of one pass, grouped by module (see the module docstring)."""

    @collector_paused()
    def __init__(self, p: PassModel):
        self.items: list[ModuleGroup | Node] = []
        self.groups: dict[str, ModuleGroup] = {}  # path -> group, in order of first appearance
        self.group_of: dict[str, ModuleGroup | None] = {}  # top-level node id -> its group
        self._by_scope: dict[int, ModuleGroup] = {}  # id(ModuleScope) -> group
        self._scopes: list = []  # keeps the scopes keyed above alive
        last: ModuleGroup | None = None
        for n in p.nodes:
            f = n._facts  # a BoundSymbol's or a loaded node's (see explorer.model.saved)
            scope = f.scope
            if scope is not None:
                g = self._group(scope)
            elif f.is_del:
                g = last
            else:
                scope = f.subsymbol_scope()
                g = self._group(scope) if scope is not None else None
            (g.items if g is not None else self.items).append(n)
            self.group_of[n.id] = g
            last = g

    def _group(self, scope) -> ModuleGroup:
        g = self._by_scope.get(id(scope))
        if g is not None:
            return g
        g = self.groups.get(scope.path)
        if g is None:
            parent = self._group(scope.parent) if scope.parent is not None else None
            g = self.groups[scope.path] = ModuleGroup(scope.path, scope.cls, parent)
            (parent.items if parent is not None else self.items).append(g)
        self._by_scope[id(scope)] = g
        self._scopes.append(scope)
        return g

    @property
    def has_modules(self) -> bool:
        return bool(self.groups)

    def group(self, node_id: str) -> ModuleGroup | None:
        """The group of a module id (``module:blocks.0``), or None."""
        if not is_module_id(node_id):
            return None
        return self.groups.get(node_id[len(MODULE_ID_PREFIX) :])

    def chain(self, g: ModuleGroup | None) -> list[ModuleGroup]:
        """The groups from the top down to ``g``."""
        out = []
        while g is not None:
            out.append(g)
            g = g.parent
        return out[::-1]

    def path_to(self, p: PassModel, node_id: str) -> list:
        """The groups and nodes from the top level down to ``node_id`` (a module id or a
        BoundSymbol's, at any depth); [] when it is not there."""
        g = self.group(node_id)
        if g is not None:
            return self.chain(g)
        below = path_to(p._top(), node_id)
        if not below:
            return []
        return self.chain(self.group_of.get(below[0].id)) + below

    def search(self, query: str, limit: int | None = None) -> list[ModuleGroup]:
        """Modules whose path (``layers.0.self_attn``) or class contains ``query``."""
        q = query.strip().lower()
        if not q:
            return []
        found = [
            g
            for g in self.groups.values()
            if q in g.path.lower() or q == g.cls.lower() or (g.label != g.name and q in g.label.lower())
        ]
        return found[:limit] if limit is not None else found


def _modules(self: PassModel) -> ModuleTree:
    """Its top-level BoundSymbols grouped by module (a ``ModuleTree``), made on first use."""
    if self._modules is None:
        self._modules = ModuleTree(self)
    return self._modules


# ``pass_model.modules()``: set here, as the model imports no module above it
PassModel.modules = _modules


def layer_runs(items: list) -> list[list[ModuleGroup]]:
    """Runs of repeated layers among ``items``: sibling modules of the same class whose paths
    differ only by a last index counting up (``layers.0``, ``layers.1``, ...), two or more."""
    runs: list[list[ModuleGroup]] = []
    run: list[ModuleGroup] = []
    prev = None  # (prefix, index, cls) of the last group of the run
    for item in items:
        if not isinstance(item, ModuleGroup):
            continue
        m = _INDEXED.match(item.path)
        key = (m[1], int(m[2]), item.cls) if m else None
        if key and prev and key[0] == prev[0] and key[2] == prev[2] and key[1] == prev[1] + 1:
            run.append(item)
        else:
            if len(run) > 1:
                runs.append(run)
            run = [item] if key else []
        prev = key
    if len(run) > 1:
        runs.append(run)
    return runs


def module_parameters(g: ModuleGroup, args: list[str]) -> list[tuple[str, str]]:
    """The computation's inputs that the module's lines read (its parameters and buffers, and
    any input it is given directly): (name, path of the module whose line reads it first)."""
    wanted = set(args)
    out: dict[str, str] = {}
    for sub in g.groups():
        for item in sub.items:
            if isinstance(item, ModuleGroup):
                continue
            for name in item.inputs:
                if name in wanted and name not in out:
                    out[name] = sub.path
    order = {a: i for i, a in enumerate(args)}
    return sorted(out.items(), key=lambda kv: order[kv[0]])
