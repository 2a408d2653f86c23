"""The model's nodes: a ``Node`` per BoundSymbol, the facts it reads off it on first use
(``_Facts``, shared by every node of that BoundSymbol), and the ``_Builder`` that makes the
nodes of a series, reusing what a pass kept as it was."""

from __future__ import annotations

import dataclasses
import linecache
import os
import re
import sys

from explorer.model.collective_call import COMMUNICATION, collective_call
from explorer.model.proxies import ProxyTable, _proxies_in, jsonable
from thunder.core.printing import Printer, bsym_line
from thunder.core.proxies import TensorProxy
from thunder.core.symbol import common_scope
from thunder.core.tags import Tag

# Tags worth showing: from BoundSymbol.tags, or from Symbol.tags when the symbol carries them.
# A node's tags are their names (``Tag.value``), so the model stays plain data.
NOTABLE_TAGS = frozenset(
    {
        Tag.FLATTEN_TENSOR_SUBCLASS,
        Tag.UNFLATTEN_TENSOR_SUBCLASS,
        Tag.TENSOR_SUBCLASS,
        Tag.DATACLASS_NEW,
        Tag.WRITEBACK,
        Tag.FUSION,
        Tag.BACKWARD,
        Tag.SAVED_FOR_BACKWARD,
        Tag.RECOMPUTED,
        Tag.RECOMPUTE_IN_BACKWARD,
        Tag.PROLOGUE_CHECK,
        Tag.UNPACK,
        Tag.INPLACE,
        Tag.DEL,
        Tag.COMMUNICATION,
    }
)
_SUBCLASS_STEP_TAGS = frozenset({Tag.FLATTEN_TENSOR_SUBCLASS, Tag.UNFLATTEN_TENSOR_SUBCLASS})


_CELL_FILE = re.compile(
    r"(^<ipython-input-\d+-[0-9a-f]+>$)|(/ipykernel_\d+/\d+\.py$)|(^<thunder_trace cell \d+>$)"
)
_INPUT_FILE = re.compile(r"^<ipython-input-(\d+)-[0-9a-f]+>$")
# a notebook cell's file name -> its number (``In[3]``): ``%%thunder_trace`` notes its cells here;
# IPython's own cells are looked up in its compiler's table
CELL_NUMBERS: dict[str, int] = {}
# a search for a notebook location: ``In[3] line 2``, ``In[3]:2``, ``In[3]``
CELL_LOCATION = re.compile(r"^\s*in\s*\[\s*(\d+)\s*\](?:\s*(?:line\s*|:\s*)(\d+))?\s*$", re.IGNORECASE)


def is_cell_file(path: str) -> bool:
    """Whether a file name is a notebook cell's (IPython's, ipykernel's, ``%%thunder_trace``'s)."""
    return _CELL_FILE.search(path) is not None


def cell_number(path: str) -> int | None:
    """The ``In[n]`` number of the notebook cell a file name stands for (None: not a cell, or
    not known in this process)."""
    n = CELL_NUMBERS.get(path)
    if n is not None:
        return n
    m = _INPUT_FILE.match(path)
    if m is not None:
        return int(m[1])
    if _CELL_FILE.search(path):
        ipython = sys.modules.get("IPython")  # (not imported here: only read when running in it)
        shell = ipython.get_ipython() if ipython is not None else None
        known = getattr(getattr(shell, "compile", None), "_filename_map", None)
        if isinstance(known, dict) and isinstance(known.get(path), int):
            return known[path]
    return None


@dataclasses.dataclass
class SourceInfo:
    """The user's source line a BoundSymbol came from."""

    file: str
    line: int
    function: str
    code: str

    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def location(self) -> str:
        """As a notebook user names it: ``In[3] line 2`` for a cell (the line in the cell),
        ``model.py:12`` for a file."""
        if is_cell_file(self.file):
            n = cell_number(self.file)
            return f"In[{n}] line {self.line}" if n is not None else f"cell line {self.line}"
        return f"{os.path.basename(self.file)}:{self.line}"


class Node:
    """One BoundSymbol. ``line`` is how it prints; ``children`` are its subsymbols.

    Only ``id`` is set when a node is made. The rest is read from its facts on first use: the
    BoundSymbol's (``_Facts``, shared by every node of that BoundSymbol: passes keep most
    BoundSymbols as they were) or, for a model loaded from JSON, the saved data's
    (``explorer.model.saved``); ``children`` are made when first asked for: a view of a 40,000-line
    trace touches the few hundred nodes it shows, not all of them and their subsymbols.
    """

    __slots__ = ("id", "_facts", "_children")

    def __init__(self, node_id: str, facts: _Facts):
        self.id = node_id
        self._facts = facts
        self._children: list[Node] | None = None

    line = property(lambda self: self._facts.line, doc="How the BoundSymbol prints (no indentation).")
    inputs = property(lambda self: self._facts.inputs, doc="Names of the proxies it reads.")
    outputs = property(lambda self: self._facts.outputs, doc="Names of the proxies it makes.")
    tags = property(lambda self: self._facts.tags, doc="Tags worth showing (see NOTABLE_TAGS).")
    source = property(lambda self: self._facts.source, doc="The user's source line, if recorded.")
    info = property(lambda self: self._facts.info, doc="BoundSymbol.info, as plain data.")
    bsym_info = property(
        lambda self: self._facts.bsym_info, doc="BoundSymbol.info as it is (a ``BoundSymbolInfo``)."
    )
    sym = property(lambda self: self._facts.sym_name)
    module = property(lambda self: self._facts.sym_module)
    header = property(lambda self: self._facts.header)
    scope = property(
        lambda self: self._facts.scope,
        doc="The ``ModuleScope`` (path, cls, parent) of the nn.Module call it was recorded in, or None.",
    )
    executor = property(lambda self: self._facts.executor)
    collective = property(
        lambda self: self._facts.collective,
        doc="A collective's call (``explorer.model.communication``): kind and arguments, or None.",
    )

    @property
    def shown_line(self) -> str:
        """How the views show the line to a PyTorch user: an executor's helper that calls a
        torch function it is handed (``torchex.scalar_first(torch.mul, 2, t1)``) shows as that
        torch call (``torch.mul(2, t1)``); ``via`` names the helper. Anything else: ``line``."""
        return self._facts.shown[0]

    @property
    def via(self) -> str | None:
        """The executor helper a line runs through when ``shown_line`` shows another call."""
        return self._facts.shown[1]

    @property
    def torch_name(self) -> str | None:
        """The torch function a torch-language op stands for (``torch.Tensor.__getitem__`` for
        ``ltorch.getitem``), where its Symbol says so."""
        name = getattr(self._facts, "torch_impl", None)
        return name if isinstance(name, str) else None

    @property
    def shown_sym(self) -> str:
        """The name of what ``shown_line`` calls: ``sym_id``, or for a line shown as another call
        (``via``), that call's (``torch.mul`` for ``torchex.scalar_first(torch.mul, 2, t1)``)."""
        if self.via is None:
            return self.sym_id
        at = self.line.find(self.via + "(")  # shown_line has the call where the helper was
        shown = self.shown_line
        end = shown.find("(", at) if at >= 0 else -1
        return shown[at:end] if end > at else self.sym_id

    @property
    def repro(self) -> str | None:
        """A fusion region's standalone script (nvFuser's ``repro()``), or None."""
        return self._facts.repro()

    @property
    def children(self) -> list[Node]:
        if self._children is None:
            self._children = self._facts.child_nodes(self.id + "/") if self._facts.has_children else []
        return self._children

    @property
    def sym_id(self) -> str:
        return f"{self.module}.{self.sym}" if self.module else self.sym

    def walk(self):
        """This node and all nodes below it, parents first."""
        stack = [self]
        while stack:
            n = stack.pop()
            yield n
            if n._facts.has_children:
                stack.extend(reversed(n.children))

    def size(self) -> int:
        """This node and all below it (counted on the BoundSymbols: no nodes are made)."""
        return self._facts.size

    def line_count(self) -> int:
        """How many lines it prints as: header comments, its line, its subsymbols."""
        return self._facts.line_count

    def prints_unlike(self, other: Node) -> bool:
        """Whether the two print differently, their subsymbols included."""
        return self._facts.prints_unlike(other._facts)

    def __repr__(self) -> str:
        return f"<Node {self.id}: {self.line}>"


def path_to(top: dict[str, Node], node_id: str) -> list[Node]:
    """The nodes from the top level down to ``node_id`` ([] when it is not there); ``top``
    maps the top-level ids to their nodes. A subsymbol's id extends its parent's with ``/``,
    so only the branch that leads to it is read."""
    n = top.get(node_id)
    if n is not None:
        return [n]
    for i, ch in enumerate(node_id):
        if ch != "/" or node_id[:i] not in top:
            continue  # (an id may hold a "/" of its own: try each top-level prefix)
        path = [top[node_id[:i]]]
        while path[-1].id != node_id:
            below = path[-1].children
            n = next((c for c in below if c.id == node_id or node_id.startswith(c.id + "/")), None)
            if n is None:
                break
            path.append(n)
        if path[-1].id == node_id:
            return path
    return []


_UNSET = object()


def _is_subclass_step(b) -> bool:
    """A tensor subclass's flatten or unflatten, by the tags a node of it would show."""
    return bool(_SUBCLASS_STEP_TAGS & b.tags or _SUBCLASS_STEP_TAGS & b.sym.tags)


class _Facts:
    """What the views read off one BoundSymbol, each computed on first use."""

    __slots__ = (
        "bsym",
        "builder",
        "node",
        "_outputs",
        "_line",
        "_inputs",
        "_tags",
        "_size",
        "_lines",
        "_source",
        "_info",
        "_collective",
        "_shown",
    )

    def __init__(self, bsym, builder: _Builder):
        self.bsym = bsym  # kept: ids of BoundSymbols key the builder's tables
        self.builder = builder
        self._outputs = self._line = self._inputs = self._tags = self._size = self._lines = None
        self._source = self._info = self._collective = _UNSET
        self._shown = None
        self.node = None  # the first node made for it

    # what a Node reads through its facts; a loaded model's facts (explorer.model.saved) have the same
    bsym_info = property(lambda self: self.bsym.info)
    sym_name = property(lambda self: self.bsym.sym.name)
    sym_module = property(lambda self: self.bsym.sym.module)
    torch_impl = property(lambda self: getattr(self.bsym.sym, "torch_impl", None))
    header = property(lambda self: self.bsym.header)
    scope = property(lambda self: self.bsym.scope)
    has_children = property(lambda self: bool(self.bsym.subsymbols))

    @property
    def executor(self) -> str | None:
        return getattr(self.bsym.sym, "executor", None) or self.bsym.info.claimed_by

    @property
    def is_del(self) -> bool:
        """Tagged ``del`` (read off the BoundSymbol: ``tags`` also look at the subsymbols)."""
        return self.bsym.has_tag(Tag.DEL)

    @property
    def shown(self) -> tuple[str, str | None]:
        """(the line as shown, the helper it runs through or None): see ``Node.shown_line``."""
        if self._shown is None:
            self._shown = (self.line, None)
            args, sym = self.bsym.args, self.bsym.sym
            fn = args[0] if args else None
            if (
                callable(fn)
                and not isinstance(fn, type)
                and str(getattr(fn, "__module__", "")).startswith("torch")
            ):
                head = f"{sym.module}.{sym.name}(" if sym.module else f"{sym.name}("
                line = self.line
                at = line.find(head)
                end = line.find(", ", at + len(head)) if at >= 0 else -1
                called = line[at + len(head) : end] if end > 0 else ""
                if called.startswith("torch.") and called.replace(".", "").replace("_", "").isalnum():
                    self._shown = (line[:at] + called + "(" + line[end + 2 :], head[:-1])
        return self._shown

    def repro(self) -> str | None:
        make = getattr(self.bsym.sym.impl, "repro", None)
        return make() if callable(make) else None

    def child_nodes(self, prefix: str) -> list[Node]:
        return self.builder.nodes(self.bsym.subsymbols, prefix)

    def subsymbol_scope(self):
        """The innermost module path enclosing all its subsymbols (a fusion region's), or None."""
        return common_scope(self.bsym.subsymbols, by_path=True) if self.bsym.subsymbols else None

    @property
    def collective(self) -> dict | None:
        if self._collective is _UNSET:
            self._collective = collective_call(self.bsym)
        return self._collective

    @property
    def outputs(self) -> tuple[str, ...]:
        if self._outputs is None:
            out = self.bsym.output
            if type(out) is TensorProxy:  # the usual case, read without a list
                self._outputs = self.builder.proxies.note((out,))
            else:
                self._outputs = self.builder.proxies.note(_proxies_in(out, []))
        return self._outputs

    @property
    def line(self) -> str:
        if self._line is None:
            self._line = bsym_line(self.bsym, self.builder.printer)
        return self._line

    @property
    def inputs(self) -> tuple[str, ...]:
        if self._inputs is None:
            b = self.bsym
            self._inputs = self.builder.proxies.note(_proxies_in((b.args, b.kwargs), []))
        return self._inputs

    @property
    def tags(self) -> tuple[str, ...]:
        if self._tags is None:
            b, sym = self.bsym, self.bsym.sym
            tags = {t.value for t in b.tags | (sym.tags & NOTABLE_TAGS)}
            if any(_is_subclass_step(c) for c in b.subsymbols):
                tags.add(Tag.TENSOR_SUBCLASS.value)
            if self.collective is not None:  # the executor's line of a collective too
                tags.add(COMMUNICATION)
            self._tags = tuple(sorted(tags))
        return self._tags

    @property
    def source(self) -> SourceInfo | None:
        if self._source is _UNSET:
            self._source = self.builder.source(self.bsym.source)
        return self._source

    @property
    def info(self) -> dict:
        if self._info is _UNSET:
            self._info = jsonable(self.bsym.info.noted())
        return self._info

    @property
    def size(self) -> int:
        if self._size is None:
            n = 1
            for c in self.bsym.subsymbols:
                n += self.builder.facts(c).size
            self._size = n
        return self._size

    @property
    def line_count(self) -> int:
        if self._lines is None:
            header = self.bsym.header
            n = 1 + (len(header.splitlines()) if header else 0)
            for c in self.bsym.subsymbols:
                n += self.builder.facts(c).line_count
            self._lines = n
        return self._lines

    def prints_unlike(self, other: _Facts) -> bool:
        """Whether the two BoundSymbols print differently, their subsymbols included."""
        a, b = self.bsym.sym, other.bsym.sym
        if a.id != b.id and getattr(a, "printer", None) is None and getattr(b, "printer", None) is None:
            return True  # a call prints as `out = module.name(...)`: another symbol, another line
        return self.line != other.line or not self.same_below(other)

    def same_below(self, other: _Facts) -> bool:
        """Whether the subsymbols of both print the same, all the way down."""
        mine, theirs = self.bsym.subsymbols, other.bsym.subsymbols
        if len(mine) != len(theirs):
            return False
        facts = self.builder.facts
        for a, b in zip(mine, theirs):
            if a is not b:
                fa, fb = facts(a), other.builder.facts(b)
                if fa.line != fb.line or not fa.same_below(fb):
                    return False
        return True


class _Builder:
    """Makes the nodes of one series. Facts are kept per BoundSymbol and nodes per
    (BoundSymbol, id), so what a pass kept as it was is neither read nor made again."""

    def __init__(self):
        self.proxies = ProxyTable()
        self._facts: dict[int, _Facts] = {}
        self._nodes: dict[tuple[int, str], Node] = {}
        self.sources: dict[tuple[str, int], SourceInfo] = {}
        self.printer = Printer()

    def facts(self, b) -> _Facts:
        f = self._facts.get(id(b))
        if f is None:
            f = self._facts[id(b)] = _Facts(b, self)
        return f

    def source(self, loc) -> SourceInfo | None:
        if loc is None:
            return None
        key = (loc.filename, loc.lineno)
        info = self.sources.get(key)
        if info is None:
            code = linecache.getline(loc.filename, loc.lineno).strip()
            info = self.sources[key] = SourceInfo(loc.filename, loc.lineno, loc.function, code)
        return info

    def nodes(self, bsyms, prefix: str) -> list[Node]:
        out = []
        seen: dict[str, int] = {}
        made = self._nodes
        for b in bsyms:
            f = self.facts(b)
            key = ",".join(f.outputs) if f.outputs else None
            if key is None or key in seen:
                # by name, not module: prims.check_len and pythonex.check_len are the same line
                key = key or f"{b.sym.name}({','.join(f.inputs)})"
                n = seen.get(key, 0)
                seen[key] = n + 1
                if n:
                    key = f"{key}#{n}"
            else:
                seen[key] = 1
            node_id = prefix + key
            node = f.node
            if node is None:
                node = f.node = Node(node_id, f)
            elif node.id != node_id:  # a BoundSymbol seen elsewhere: a top-level line now below a claim
                node = made.get((id(b), node_id))
                if node is None:
                    node = made[(id(b), node_id)] = Node(node_id, f)
            out.append(node)
        return out
