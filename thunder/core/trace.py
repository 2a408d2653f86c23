"""Traces: an ordered list of BoundSymbols with inputs, output, names and provenance.

``str(trace)`` is deterministic runnable Python (no timings, no addresses);
``trace.python_callable()`` compiles it. While a trace is being recorded it is the
*current trace*: calling a Symbol appends a BoundSymbol to it.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from contextlib import contextmanager

import torch

from thunder.core.printing import Printer, bsym_lines, type_comment
from thunder.core.proxies import NumberProxy, Proxy, TensorProxy
from thunder.core.pytree import tree_leaves
from thunder.core.symbol import BoundSymbol, SourceLocation, Symbol

_local = threading.local()


def current_trace() -> Trace | None:
    return getattr(_local, "trace", None)


@contextmanager
def tracectx(trace: Trace | None):
    """Make ``trace`` the current trace (``None``: run symbols eagerly)."""
    prev = getattr(_local, "trace", None)
    _local.trace = trace
    try:
        yield trace
    finally:
        _local.trace = prev


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
        self.name = name
        self.bound_symbols: list[BoundSymbol] = []
        self.args: list = []
        self.output = None
        self.provenance: Provenance | None = None
        self.tags: set[str] = set(tags)
        self.names: set[str] = set()
        self._counters: dict[str, int] = {}
        self._scopes: list[list[BoundSymbol]] = [self.bound_symbols]
        self._source: SourceLocation | None = None
        # set by acquisition: finds the user's source line for a new top-level BoundSymbol
        self.source_finder = None
        # grad mode when recording began; ops recorded under another mode are tagged
        self.grad_enabled = torch.is_grad_enabled()
        # printed parameter list when it is not the proxies in ``args`` (``*args, **kwargs``)
        self.signature: str | None = None
        # objects the printed source refers to by name (the jitted module, captured tensors)
        self.ctx_objects: dict[str, object] = {}
        # facts for tools that are not printed ({"saved_for_backward": [...]}), kept by derive
        self.info: dict = {}

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
        while name in self.names:
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
            try:
                out = sym.fn(*args, **kwargs)
            finally:
                self._scopes.pop()
            if not subsymbols and _returns_an_input(out, args, kwargs):
                return out  # a no-op (``x.contiguous()``, ``x.to(x.dtype)``) records nothing
        tags = frozenset()
        if top and torch.is_grad_enabled() is not self.grad_enabled:
            # ``with torch.no_grad():`` inside the traced code: the line runs the same way
            tags = GRAD_TAGS[torch.is_grad_enabled()]
        bsym = BoundSymbol(sym, args, kwargs, out, subsymbols, source=self._source, tags=tags)
        self._scopes[-1].append(bsym)
        return out

    def add_bsym(self, bsym: BoundSymbol) -> None:
        self._scopes[-1].append(bsym)

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
        t.info = dict(self.info)
        return t

    # -- printing -------------------------------------------------------------------------
    def python(self, printer: Printer | None = None) -> str:
        printer = printer or Printer()
        for k, v in self.ctx_objects.items():
            printer.ctx[k] = v
        body: list[str] = []
        for p in self.args:
            if isinstance(p, (TensorProxy, NumberProxy)):
                c = type_comment([p])
                if c:
                    body.append(f"  # {c}")
        block = None  # the grad-mode block being printed (``with torch.no_grad():``)
        for bsym in self.bound_symbols:
            mode = next((GRAD_BLOCKS[t] for t in bsym.tags if t in GRAD_BLOCKS), None)
            if mode is not None and mode != block:
                body.append(f"  {mode}")
            block = mode
            body += bsym_lines(bsym, 2 if mode else 1, printer)
        body.append(f"  return {printer.value(self.output)}")
        modules = sorted(
            {_root_module(b.sym.module) for b in self.bound_symbols if b.sym.printer is None} - {"torch", ""}
        )
        head = []
        if self.provenance is not None:
            head.append(f"# Constructed by {self.provenance.pass_name}")
        head.append("import torch")
        head += [f"import {_IMPORTS[m]} as {m}" if m in _IMPORTS else f"import {m}" for m in modules]
        sig = self.signature or ", ".join(printer.value(a) for a in self.args)
        return "\n".join(head + ["", f"def {self.name}({sig}):"] + body) + "\n"

    def __str__(self) -> str:
        return self.python()

    def __repr__(self) -> str:
        return f"<Trace {self.name} ({len(self.bound_symbols)} bound symbols)>"

    def python_callable(self):
        printer = Printer()
        src = self.python(printer)
        ns = {"torch": torch, **_module_namespace(), **printer.ctx}
        code = compile(src, f"thunder.{self.name}", "exec")
        exec(code, ns)
        fn = ns[self.name]
        fn.__thunder_source__ = src
        return fn

    def _repr_mimebundle_(self, include=None, exclude=None):
        try:
            from explorer.html import trace_html  # the explorer is optional
        except Exception:
            return {"text/plain": str(self)}
        return {"text/plain": str(self), "text/html": trace_html(self)}


# Tags for ops recorded under a grad mode other than the trace's, and how they print.
GRAD_TAGS = {False: frozenset({"no_grad"}), True: frozenset({"enable_grad"})}
GRAD_BLOCKS = {"no_grad": "with torch.no_grad():", "enable_grad": "with torch.enable_grad():"}

_IMPORTS = {
    "ltorch": "thunder.ops.ltorch",
    "prims": "thunder.ops.prims",
    "aten": "thunder.ops.aten",
    "torchex": "thunder.executors.torchex",
    "pythonex": "thunder.executors.pythonex",
}


def _root_module(module: str) -> str:
    return module.split(".")[0]


def _module_namespace() -> dict:
    import importlib

    ns = {}
    for short, full in _IMPORTS.items():
        try:
            ns[short] = importlib.import_module(full)
        except ImportError:
            pass
    return ns


def _returns_an_input(out, args, kwargs) -> bool:
    if not isinstance(out, (TensorProxy, Proxy)):
        return False
    return any(a is out for a in tree_leaves((args, kwargs)))
