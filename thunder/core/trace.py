"""Traces: an ordered list of BoundSymbols with inputs, output, names and provenance.

``str(trace)`` is deterministic runnable Python (no timings, no addresses);
``trace.python_callable()`` compiles it. While a trace is being recorded it is the
*current trace* (``thunder.core.context``): calling a Symbol appends a BoundSymbol to it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re

import torch

from thunder.core.passinfo import TraceInfo
from thunder.core.printing import MODULE_PATHS, Printer, Program, print_program
from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.pytree import tree_leaves
from thunder.core.source import SourceLocation
from thunder.core.symbol import BoundSymbol, Symbol
from thunder.core.tags import Tag


@dataclasses.dataclass
class Provenance:
    """Which pass made a trace and how long it took (kept out of ``str(trace)``)."""

    pass_name: str
    seconds: float = 0.0


_IDENT = re.compile(r"[^0-9a-zA-Z_]")


def sanitize_name(name: str) -> str:
    name = _IDENT.sub("_", name)
    if not name or name[0].isdigit():
        name = "_" + name
    return name


class Trace:
    """A program of BoundSymbols. ``name`` is the printed function's name."""

    def __init__(self, name: str = "computation", *, tags: tuple[str, ...] = ()):
        # ``tags``: the trace's kind and role ("computation", "forward", "backward", ...)
        self.name = name
        self.bound_symbols: list[BoundSymbol] = []
        self.args: list = []
        self.output = None
        self.provenance: Provenance | None = None
        self.tags: set[str] = set(tags)
        self.names: set[str] = set()
        self._counters: dict[str, int] = {}
        self._scopes: list[list[BoundSymbol]] = [self.bound_symbols]
        self._modes: list[bool] = []  # the grad mode each open decomposition began under
        self._source: SourceLocation | None = None
        # set by acquisition: finds the user's source line for a new top-level BoundSymbol
        self.source_finder = None
        # set by acquisition: the module call being traced (every BoundSymbol records it)
        self.scope = None
        # grad mode when recording began; ops recorded under another mode are tagged
        self.grad_enabled = torch.is_grad_enabled()
        # printed parameter list when it is not the proxies in ``args`` (``*args, **kwargs``)
        self.signature: str | None = None
        # objects the printed source refers to by name (the jitted module, captured tensors)
        self.ctx_objects: dict[str, object] = {}
        # what passes note for later ones (``info.saved_for_backward``), not printed; kept by derive
        self.info = TraceInfo()

    # -- names -------------------------------------------------------------------------
    def make_name(self, prefix: str = "t") -> str:
        i = self._counters.get(prefix, 0)
        while f"{prefix}{i}" in self.names:
            i += 1
        self._counters[prefix] = i + 1
        name = f"{prefix}{i}"
        self.names.add(name)
        return name

    def add_name(self, name: str) -> str:
        """Reserve ``name`` (made unique with a suffix if taken) and return it."""
        name = sanitize_name(name)
        base, i = name, 1
        # (never the name of a module the printed code imports: an argument named ``torch`` or
        # ``pythonex`` would shadow it in the whole function)
        while name in self.names or name == "torch" or name in MODULE_PATHS:
            name, i = f"{base}_{i}", i + 1
        self.names.add(name)
        return name

    def tensor(self, shape, dtype, device, requires_grad=False, *, name: str | None = None) -> TensorProxy:
        return TensorProxy(
            self.add_name(name) if name else self.make_name("t"), shape, dtype, device, requires_grad
        )

    # -- recording ------------------------------------------------------------------------
    def record(self, sym: Symbol, args: tuple, kwargs: dict):
        top = len(self._scopes) == 1
        if top and self.source_finder is not None:
            self._source = self.source_finder()
        if sym.meta is not None:
            out = sym.meta(*args, **kwargs)
            subsymbols: list[BoundSymbol] = []
        else:
            subsymbols = []
            self._scopes.append(subsymbols)
            self._modes.append(torch.is_grad_enabled())
            try:
                out = sym.decomposition(*args, **kwargs)
            finally:
                self._scopes.pop()
                self._modes.pop()
            if not subsymbols and _returns_an_input(out, args, kwargs):
                return out  # a no-op (``x.contiguous()``, ``x.to(x.dtype)``) records nothing
        tags = frozenset()
        if torch.is_grad_enabled() is not (self.grad_enabled if top else self._modes[-1]):
            # ``with torch.no_grad():`` inside the traced code (or inside an op's
            # decomposition, as ``detach``'s): the line runs the same way
            tags = GRAD_TAGS[torch.is_grad_enabled()]
        bsym = BoundSymbol(
            sym, args, kwargs, out, subsymbols, source=self._source, tags=tags, scope=self.scope
        )
        self._scopes[-1].append(bsym)
        return out

    @contextlib.contextmanager
    def below_autograd(self):
        """Run the rest of the open decomposition under ``torch.no_grad()`` as its own mode (a
        subclass's dispatch runs below autograd): what it records is not tagged to run under
        no_grad, as a ``with torch.no_grad():`` block inside a decomposition would be."""
        self._modes.append(False)
        try:
            with torch.no_grad():
                yield
        finally:
            self._modes.pop()

    def add_bsym(self, bsym: BoundSymbol) -> None:
        self._scopes[-1].append(bsym)

    @property
    def recording(self) -> list[BoundSymbol]:
        """The list BoundSymbols are recorded into now (a decomposition's while it runs)."""
        return self._scopes[-1]

    # -- deriving -------------------------------------------------------------------------
    def derive(self, pass_name: str) -> Trace:
        """A new, empty trace that shares this one's names, inputs and output (for passes)."""
        t = Trace(self.name, tags=tuple(self.tags))
        t.args = list(self.args)
        t.output = self.output
        t.names = set(self.names)
        t._counters = dict(self._counters)
        t.provenance = Provenance(pass_name)
        t.ctx_objects = dict(self.ctx_objects)
        t.signature = self.signature
        t.grad_enabled = self.grad_enabled
        t.info = self.info.copy()
        return t

    def scratch(self, grad_enabled: bool) -> Trace:
        """An empty trace to record apart into, sharing this one's names (what it records takes
        names this trace will not give again)."""
        t = Trace("scratch")
        t.names, t._counters, t.grad_enabled = self.names, self._counters, grad_enabled
        return t

    # -- printing -------------------------------------------------------------------------
    def program(self, printer: Printer | None = None) -> Program:
        """The printed source with its line map and namespace (see ``print_program``)."""
        return print_program(self, printer)

    def python(self, printer: Printer | None = None) -> str:
        return print_program(self, printer).source

    def __str__(self) -> str:
        return self.python()

    def __repr__(self) -> str:
        return f"<Trace {self.name} ({len(self.bound_symbols)} bound symbols)>"

    def _repr_pretty_(self, p, cycle) -> None:
        # IPython shows the program as text (the explorer, once imported, adds an HTML view);
        # a very long one is cut, so displaying a large model's trace stays cheap
        p.text(self.head(DISPLAY_LIMIT))

    def head(self, n: int) -> str:
        """The printed program with its first ``n`` top-level BoundSymbols (all if fewer)."""
        if len(self.bound_symbols) <= n:
            return str(self)
        cut = self.derive(self.provenance.pass_name if self.provenance else "")
        cut.provenance = self.provenance
        cut.bound_symbols = self.bound_symbols[:n]
        lines = str(cut).splitlines()
        more = f"  # ... {len(self.bound_symbols) - n} more bound symbols (str(trace) prints them all)"
        return "\n".join(lines[:-1] + [more, lines[-1]]) + "\n"

    def python_callable(self):
        """The trace compiled to a Python function; ``fn.__thunder_program__`` is the Program
        it was compiled from: ``self.program()`` with its comment lines (subsymbols, headers)
        left empty, which are most of a large trace's text. Every line number, span and the
        line map are the full program's, so a line of the compiled code (in a traceback) is
        the same line of ``str(trace)``."""
        program = self.program(Printer(blank_comments=True))
        code = compile(program.source, f"thunder.{self.name}", "exec")
        ns = program.namespace()
        exec(code, ns)
        fn = ns[self.name]
        fn.__thunder_program__ = program
        return fn


# How many top-level BoundSymbols a notebook's text display of a trace prints.
DISPLAY_LIMIT = 1000

# Tags for ops recorded under a grad mode other than the trace's.
GRAD_TAGS = {False: frozenset({Tag.NO_GRAD}), True: frozenset({Tag.ENABLE_GRAD})}


def _returns_an_input(out, args, kwargs) -> bool:
    if not isinstance(out, Proxy):
        return False
    return any(a is out for a in tree_leaves((args, kwargs)))
