"""The collapsible BoundSymbol tree as static HTML (no script: ``<details>``).

Every BoundSymbol with subsymbols is a ``<details>`` element, open down to ``open_depth``.
An element budget keeps a 40,000-line trace light: nodes are chosen breadth first (all
top-level lines before any subsymbol) until the budget is spent, and every list that was cut
ends with "... N more". Search hits and the selected line come first, with their parents
open (up to half the budget); only the nodes shown are read.

Grouped by module (``modules=pass_model.modules()``), each module is a ``<details>`` of its
own: its path, class, op count and measured time, its lines and its submodules inside; modules
are open down to ``module_depth`` levels, and a group counts as one element of the budget.

A collective's line has a badge with its kind, the bytes one rank moves and the process group;
on a top-level start the badge's tooltip names its wait and the lines that overlap it (read
from the start to its wait only, see ``explorer.model.communication.pairing``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from html import escape

from explorer.model.communication import WAIT, Collective, pairing
from explorer.model.modules import ModuleGroup, ModuleTree
from explorer.model.nodes import Node, path_to
from explorer.model.seconds import fmt_seconds
from explorer.model.traces import collector_paused
from explorer.views.style import TAG_STYLE, css_class, executor_class
from explorer.views.text import DEFAULT_BUDGET, location

MODULE_DEPTH = 2  # module groups open by default: the jitted module and its children

__all__ = [
    "DEFAULT_BUDGET",
    "MODULE_DEPTH",
    "badges_html",
    "comm_badge_html",
    "group_line_html",
    "line_html",
    "split_comment",
    "tree_html",
]


@collector_paused()
def tree_html(
    nodes: list[Node],
    *,
    open_depth: int = 1,
    budget: int = DEFAULT_BUDGET,
    hits: Iterable[str] = (),
    selected: str | None = None,
    marks: dict[str, str] | None = None,
    times: dict[str, float] | None = None,
    modules: ModuleTree | None = None,
    module_depth: int = MODULE_DEPTH,
    collapsed: Iterable[str] = (),
    expanded: Iterable[str] = (),
    opened: Iterable[str] = (),
    closed: Iterable[str] = (),
) -> str:
    """The tree of ``nodes`` as HTML (to be placed inside an element of class ``thx``), at
    most ``budget`` nodes of it.

    ``hits`` and ``selected`` are node ids to highlight (hits in the order to prefer when not
    all fit; a module's id is ``module:<path>``); ``marks`` maps node ids to a CSS class
    (``added``, ``rewritten``); ``times`` maps node ids to measured seconds. With ``modules``
    (the pass's ``ModuleTree``) the lines are grouped by module, modules open down to
    ``module_depth`` levels except the paths in ``collapsed``; those in ``expanded`` are open.
    ``opened`` / ``closed``: ids of lines (and modules) the reader unfolded or folded by hand,
    kept so across selections and searches (a hit or the selection inside a folded line still
    opens it, so it can be seen); an opened line's subsymbols are listed within the budget.
    """
    included: set[int] = set()
    force_open: set[int] = set()
    hits = list(dict.fromkeys(hits))
    wanted = ([selected] if selected else []) + hits
    top: list = modules.items if modules is not None else nodes
    opened = set(opened)
    if wanted or opened:
        if modules is not None:
            find = _module_paths(nodes, modules)
        else:
            index = {n.id: n for n in nodes}

            def find(node_id: str) -> list:
                return path_to(index, node_id)

        _include_paths(find, wanted, included, force_open, budget // 2)
        room = budget // 4  # what the reader unfolded lists its subsymbols, within a quarter of the budget
        for node_id in opened:
            path = find(node_id)
            if not path or isinstance(path[-1], ModuleGroup):
                continue
            new = [n for n in path + path[-1].children if id(n) not in included]
            if len(new) > room:
                break
            room -= len(new)
            included.update(id(n) for n in new)
    _choose(top, budget - len(included), included)
    r = _Renderer(included, force_open, open_depth, set(hits), selected, marks or {}, times or {})
    r.opened, r.closed = opened, set(closed)
    r.top = nodes
    r.module_open, r.collapsed, r.expanded = module_depth, set(collapsed), set(expanded)
    body = r.list(top, 0, 0)
    return f'<div class="tree">{body or "<span class=note>(no bound symbols)</span>"}</div>'


def _module_paths(nodes: list[Node], modules: ModuleTree):
    """Finds a node or module id below the module groups (see ``ModuleTree.path_to``)."""
    index = {n.id: n for n in nodes}

    def find(node_id: str) -> list:
        g = modules.group(node_id)
        if g is not None:
            return modules.chain(g)
        below = path_to(index, node_id)
        return modules.chain(modules.group_of.get(below[0].id)) + below if below else []

    return find


def _choose(nodes: list[Node], budget: int, included: set[int]) -> None:
    """Breadth first, add to ``included`` (``id(node)``) the nodes that fit in the budget;
    the nodes already there are opened like the others but not counted again."""
    frontier = nodes
    remaining = budget
    while frontier and remaining > 0:
        take = []
        for n in frontier:
            if id(n) not in included:
                if remaining == 0:
                    break
                included.add(id(n))
                remaining -= 1
            take.append(n)
        frontier = [c for n in take for c in n.children]


def _include_paths(find, wanted: list[str], included: set[int], force_open: set[int], budget: int) -> None:
    """Include wanted nodes and their ancestors, opening the ancestors, while they fit in
    ``budget`` nodes. ``find`` gives the path down to an id: a node is found by walking down
    its id (a subsymbol's id extends its parent's with ``/``), so only the branches that lead
    to it are read."""
    for node_id in wanted:
        path = find(node_id)
        new = [n for n in path if id(n) not in included]
        if len(included) + len(new) > budget:
            break
        included.update(id(n) for n in new)
        force_open.update(id(n) for n in path[:-1])


class _Renderer:
    def __init__(self, included, force_open, open_depth, hits, selected, marks, times):
        self.included = included
        self.force_open = force_open
        self.open_depth = open_depth
        self.hits = hits
        self.selected = selected
        self.marks = marks
        self.times = times
        self.module_open = 0
        self.collapsed: set[str] = set()
        self.expanded: set[str] = set()
        self.opened: set[str] = set()  # ids unfolded by hand
        self.closed: set[str] = set()  # ids folded by hand (a hit or the selection inside still opens them)
        self.top: list[Node] = []  # the pass's top-level lines, in trace order
        self._positions: dict[str, int] | None = None

    def in_flight(self, n: Node) -> str | None:
        """A top-level start's tooltip: what it moves, its wait and the lines in between."""
        if self._positions is None:
            self._positions = {m.id: i for i, m in enumerate(self.top)}
        i = self._positions.get(n.id)
        if i is None or self.top[i] is not n:
            return None
        c = pairing(self.top, i)
        if c is None:
            return None
        end = self._positions.get(c.wait) if c.wait is not None else None
        lines = {m.id: m.line for m in self.top[i + 1 : end]} if end is not None else None
        return f"{c.label()}\n{c.in_flight(lines)}"

    def list(self, nodes: list, depth: int, module_depth: int = 0, parent_source=None) -> str:
        """``depth``: how deep the BoundSymbols are below the top level (0: top-level lines);
        ``module_depth``: how many module groups enclose them; ``parent_source``: the source
        line of the BoundSymbol they are the subsymbols of (not repeated on each)."""
        parts = []
        skipped = 0
        for n in nodes:
            if id(n) in self.included:
                if skipped:
                    parts.append(_more(skipped))
                    skipped = 0
                if isinstance(n, ModuleGroup):
                    parts.append(self.group(n, module_depth))
                else:
                    parts.append(self.node(n, depth, parent_source))
            else:
                skipped += 1
        if skipped:
            parts.append(_more(skipped))
        return "".join(parts)

    def node(self, n: Node, depth: int, parent_source=None) -> str:
        cls = []
        if n.id in self.hits:
            cls.append("hit")
        if n.id == self.selected:
            cls.append("sel")
        mark = self.marks.get(n.id)
        if mark:
            cls.append(mark)
        if "del" in n.tags:
            cls.append("del")
        title = self.in_flight(n) if depth == 0 and n.collective is not None else None
        src = n.source
        same = (
            src is not None and parent_source is not None and (src is parent_source or src == parent_source)
        )
        head = line_html(n, self.times.get(n.id), comm_title=title, source=not same)
        did = escape(n.id)
        if not n.children:
            return f'<div class="leaf {" ".join(cls)}" data-id="{did}">{head}</div>'
        if id(n) in self.force_open or n.id in self.opened:
            is_open = True
        else:
            is_open = depth < self.open_depth and n.id not in self.closed
        kids = self.list(n.children, depth + 1, parent_source=src)
        return (
            f'<details class="n {" ".join(cls)}" data-id="{did}"{" open" if is_open else ""}>'
            f'<summary>{head}</summary><div class="kids">{kids}</div></details>'
        )

    def group(self, g: ModuleGroup, module_depth: int) -> str:
        cls = ["n", "mod"]
        if g.id in self.hits:
            cls.append("hit")
        if g.id == self.selected:
            cls.append("sel")
        if g.path in self.collapsed:
            is_open = False
        elif id(g) in self.force_open or g.id in self.opened:
            is_open = True
        elif g.id in self.closed:
            is_open = False
        else:
            is_open = module_depth < self.module_open or g.path in self.expanded
        kids = self.list(g.items, 0, module_depth + 1)
        return (
            f'<details class="{" ".join(cls)}" data-id="{escape(g.id)}"{" open" if is_open else ""}>'
            f"<summary>{group_line_html(g, self.times)}</summary>"
            f'<div class="kids">{kids}</div></details>'
        )


def group_line_html(g: ModuleGroup, times: dict[str, float] | None = None) -> str:
    """A module's line: path, class, op count and (when measured) time."""
    ops = g.op_count()
    parts = [
        f'<span class="ln mp">{escape(g.label)}</span>',
        f'<span class="b mc">{escape(g.cls)}</span>',
        f'<span class="note"> {ops} op{"" if ops == 1 else "s"}</span>',
    ]
    t = g.seconds(times)
    if t is not None:
        parts.append(f'<span class="tm">{fmt_seconds(t)}</span>')
    return "".join(parts)


def _more(n: int) -> str:
    return f'<div class="more">... {n} more</div>'


def line_html(
    n: Node, seconds: float | None = None, *, comm_title: str | None = None, source: bool = True
) -> str:
    """One BoundSymbol's line: code, type comment, executor, tags, source, time
    (``comm_title``: the tooltip of a collective's badge; ``source``: False leaves out where it
    comes from, as a subsymbol from the same line as its parent does). An executor's helper
    that calls a torch function shows as that call (``Node.shown_line``), the helper in a badge."""
    code, comment = split_comment(n, shown=True)
    parts = [f'<span class="ln">{escape(code)}</span>']
    if comment:
        parts.append(f'<span class="ty ln">  # {escape(comment)}</span>')
    via = n.via
    if via is not None:
        parts.append(f'<span class="b via" title="{escape(n.line)}">via {escape(via)}</span>')
    parts.append(badges_html(n, comm_title=comm_title))
    if source and n.source is not None:
        s = n.source
        title = escape(f"{os.path.basename(s.file)}:{s.line} in {s.function}\n{s.code}")
        parts.append(f'<span class="src" title="{title}">{escape(location(s))}</span>')
    if seconds is not None:
        parts.append(f'<span class="tm">{fmt_seconds(seconds)}</span>')
    return "".join(parts)


def badges_html(n: Node, skip=(), *, comm_title: str | None = None) -> str:
    """The executor and tag badges of a line (but the tags in ``skip``); a collective's says
    what it moves (``comm_badge_html``)."""
    parts = []
    if n.executor:
        cls = executor_class(n.executor)
        parts.append(f'<span class="b {cls}">{escape(n.executor)}</span>')
    for t in n.tags:
        if t in skip:
            continue
        if t == "communication" and n.collective is not None:
            parts.append(comm_badge_html(n, comm_title))
            continue
        text = TAG_STYLE.get(t, (t,))[0]
        parts.append(f'<span class="b g-{css_class(t)}">{escape(text)}</span>')
    return "".join(parts)


def comm_badge_html(n: Node, title: str | None = None) -> str:
    """A collective's badge: ``all_reduce sum, 4.0 KiB per rank, group '0' of 8 ranks`` on a
    start, ``wait t1`` on the wait that ends the start making ``t1``."""
    c = Collective.of(n)
    if c is not None:
        text = c.label()
    else:
        started = list(n.inputs)
        text = f"{WAIT} {', '.join(started)}" if started else WAIT
        title = title or f"ends the collective that makes {', '.join(started) or '?'}"
    return f'<span class="b g-communication cm" title="{escape(title or text)}">{escape(text)}</span>'


def split_comment(n: Node, *, shown: bool = False) -> tuple[str, str]:
    """``t0 = f(x)  # t0: "cpu f32[3]"`` -> (``t0 = f(x)``, ``t0: "cpu f32[3]"``); ``shown``:
    of the line as the views show it (``Node.shown_line``)."""
    line = n.shown_line if shown else n.line
    if n.outputs:
        code, sep, comment = line.rpartition("  # ")
        if sep:
            return code, comment
    return line, ""
