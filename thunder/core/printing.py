"""Printing traces as deterministic, runnable Python, with a map back to the BoundSymbols.

``print_program(trace)`` gives a ``Program``: the source, which top-level BoundSymbol each
line belongs to (``line_map``, ``spans``) and the namespace the code needs (``ctx``: the
modules its symbols print under and the objects it names). Tools that need structure (cache
miss reasons, per-line timing) read these, never the text.

Values print as Python source: proxies by name, dtypes as ``torch.float32``, a dataclass
instance as ``__main___MyContainer(res=t0, num=1)`` (its class named by module + qualname
with ``.``, ``<``, ``>`` turned into ``_``). Objects that have no source form (classes,
callables) are placed into the trace's execution namespace under a deterministic name;
``Printer.ctx`` collects them.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import re

import torch

from thunder.core.proxies import NumberProxy, Proxy, TensorProxy, proxies_in
from thunder.core.symbolic import SizeRelations, size_source
from thunder.core.tags import Tag

# printed module name -> the module to import under that name (``ltorch`` -> thunder.ops.ltorch);
# filled as Symbols are declared
MODULE_PATHS: dict[str, str] = {}


def class_name(cls: type) -> str:
    """``__main__.Outer.<locals>.C`` -> ``__main___Outer__locals__C`` (every character that
    cannot be in an identifier becomes ``_``)."""
    return re.sub(r"\W", "_", f"{cls.__module__}_{cls.__qualname__}")


_DTYPES = {d: f"torch.{str(d).split('.')[-1]}" for d in vars(torch).values() if isinstance(d, torch.dtype)}


class Printer:
    """Turns values into source text; remembers objects the source refers to by name."""

    def __init__(self, *, blank_comments: bool = False):
        self.ctx: dict[str, object] = {}
        self._names: dict[int, str] = {}
        # subsymbols (and headers) print as empty lines, and type comments not at all: the
        # code to compile, whose line numbers are the full program's (``Trace.python_callable``)
        self.blank_comments = blank_comments
        # the program's local names (its proxies, its parameters), which a name given to an
        # object must not shadow (``print_program`` sets them)
        self.taken: set[str] = set()
        self._scratch: dict[str, str] = {}

    def name_object(self, obj, preferred: str) -> str:
        key = id(obj)
        if key in self._names:
            return self._names[key]
        name, i = preferred, 1
        while (name in self.ctx and self.ctx[name] is not obj) or name in self.taken:
            name, i = f"{preferred}_{i}", i + 1
        self.ctx[name] = obj
        self._names[key] = name
        return name

    def builtin(self, fn) -> str:
        """How the source calls the builtin ``fn`` (``float``): by its name, unless a value of
        the program has that name (an argument named ``float``), then as a named object."""
        return fn.__name__ if fn.__name__ not in self.taken else self.name_object(fn, f"_{fn.__name__}")

    def scratch(self, preferred: str) -> str:
        """A local name for a temporary of one line (a check's shortcut binds the dict it
        reads with ``:=``), distinct from the program's values and the objects it names."""
        name = self._scratch.get(preferred)
        if name is None:
            name, i = preferred, 1
            while name in self.ctx or name in self.taken:
                name, i = f"{preferred}_{i}", i + 1
            self.taken.add(name)
            self._scratch[preferred] = name
        return name

    def value(self, x) -> str:
        if isinstance(x, Proxy):
            return x.name
        t = type(x)
        if x is None or t is bool or t is int or t is str:
            return repr(x)
        if t is tuple:
            inner = ", ".join([self.value(v) for v in x])
            return f"({inner},)" if len(x) == 1 else f"({inner})"
        if t is float:
            if math.isnan(x) or math.isinf(x):
                return f"{self.builtin(float)}('{x}')"
            return repr(x)
        if t is complex:
            return f"{self.builtin(complex)}({x.real!r}, {x.imag!r})"
        if isinstance(x, torch.dtype):
            return _DTYPES.get(x, str(x))
        if isinstance(x, torch.device):
            return f"torch.device({str(x)!r})"
        if t is SizeRelations:
            return repr(x.sources())
        if t is torch.SymInt or t is torch.SymBool:  # a symbolic size: its expression (``2*s0 + 1``)
            text = size_source(x)
            return text if text.isidentifier() or text.lstrip("-").isdigit() else f"({text})"
        if isinstance(x, torch.Size):  # not a tuple: a prologue compares the type too
            return f"torch.Size({self.value(list(x))})"
        if t is list:
            return "[" + ", ".join([self.value(v) for v in x]) + "]"
        if t is dict:
            return "{" + ", ".join(f"{self.value(k)}: {self.value(v)}" for k, v in x.items()) + "}"
        if t is slice:
            return f"{self.builtin(slice)}({self.value(x.start)}, {self.value(x.stop)}, {self.value(x.step)})"
        if x is Ellipsis:
            return "..."
        if isinstance(x, type):
            return self.name_object(x, class_name(x))
        if isinstance(x, tuple) and hasattr(t, "_fields"):
            eager = getattr(t, "__torch_return_type__", None)
            if eager is not None:  # (an op's result: eager's class, a structseq built from a tuple)
                cls = self.name_object(eager, class_name(eager))
                return f"{cls}((" + "".join(f"{self.value(v)}, " for v in x) + "))"
            cls = self.name_object(t, class_name(t))
            return f"{cls}(" + ", ".join(f"{f}={self.value(v)}" for f, v in zip(t._fields, x)) + ")"
        if dataclasses.is_dataclass(x):
            cls = self.name_object(t, class_name(t))
            fields = [f.name for f in dataclasses.fields(x) if hasattr(x, f.name)]
            return f"{cls}(" + ", ".join(f"{f}={self.value(getattr(x, f))}" for f in fields) + ")"
        if isinstance(x, enum.Enum):
            return f"{self.name_object(t, class_name(t))}.{x.name}"
        if isinstance(x, torch.memory_format) or isinstance(x, torch.layout):
            return str(x)
        name = getattr(x, "__name__", None)
        if name is not None and getattr(torch, name, None) is x:
            return f"torch.{name}"  # a torch function passed as a value (``torch.sub``)
        # Anything else (a callable, an opaque constant) is referred to by name.
        return self.name_object(x, "_" + re.sub(r"\W", "_", getattr(x, "__name__", type(x).__name__)))

    def call(self, sym_id: str, args, kwargs) -> str:
        value = self.value
        parts = [a.name if isinstance(a, Proxy) else value(a) for a in args]
        if kwargs:
            parts += [f"{k}={value(v)}" for k, v in kwargs.items()]
        return f"{sym_id}({', '.join(parts)})"


def type_comment(values) -> str:
    """``t0: "cpu f32[3]"`` for each tensor among ``values``."""
    parts = []
    for v in values:
        if isinstance(v, Proxy):
            parts.append(f'{v.name}: "{v.type_string()}"')
    return ", ".join(parts)


def output_str(printer: Printer, output) -> str:
    if output is None:
        return ""
    if isinstance(output, Proxy):
        return output.name
    if isinstance(output, (tuple, list)) and output and all(isinstance(o, Proxy) for o in output):
        return "(" + ", ".join(o.name for o in output) + ("," if len(output) == 1 else "") + ")"
    # Outputs that are not plain proxies (a tuple with a constant) bind to a throwaway name.
    return "_"


def bsym_line(bsym, printer: Printer) -> str:
    """``t0 = torch.add(x, 1)  # t0: "cpu f32[3]"`` (no indentation). In the code to compile,
    a check with a shortcut (``Symbol.fast``) prints as ``if not (<shortcut>): <check>``."""
    if printer.blank_comments:
        fast = getattr(bsym.sym, "fast", None)
        test = fast(bsym, printer) if fast is not None else None
        if test is not None:
            return f"if not ({test}): {_bsym_line(bsym, printer)}"
    return _bsym_line(bsym, printer)


def _callee(sym, printer: Printer) -> str:
    """How the line calls ``sym``: as it prints (``torch.ops.aten.threshold_backward.default``),
    except that the code to compile calls an aten operator's C++ entry point (``_op``, all that
    ``OpOverload.__call__`` calls) by a name of its own, without that Python frame."""
    impl = sym.impl
    if printer.blank_comments and type(impl) is torch._ops.OpOverload:
        return printer.name_object(impl._op, "_aten_" + re.sub(r"\W", "_", impl.__name__))
    return sym.id


def _bsym_line(bsym, printer: Printer) -> str:
    custom = getattr(bsym.sym, "printer", None)
    if custom is not None:
        return custom(bsym, printer)
    call = printer.call(_callee(bsym.sym, printer), bsym.args, bsym.kwargs)
    output = bsym.output
    if printer.blank_comments:  # the code to compile: its type comments are not printed either
        out = output.name if isinstance(output, Proxy) else output_str(printer, output)
        return f"{out} = {call}" if out else call
    if isinstance(output, Proxy):  # the common case, one value
        return f'{output.name} = {call}  # {output.name}: "{output.type_string()}"'
    out = output_str(printer, output)
    line = f"{out} = {call}" if out else call
    comment = type_comment(proxies_in(output))
    return f"{line}  # {comment}" if comment else line


def bsym_lines(bsym, indent: int, printer: Printer | None = None, *, comment: bool = False) -> list[str]:
    """The line for ``bsym`` and, below it as comments, its subsymbols, nested."""
    lines: list[str] = []
    _add_lines(bsym, indent, printer or Printer(), comment, lines)
    return lines


def _add_lines(bsym, indent: int, printer: Printer, comment: bool, lines: list[str]) -> None:
    if comment and printer.blank_comments:  # one empty line per comment line
        lines += [""] * _comment_lines(bsym)
        return
    pad = "  " * indent
    if bsym.header:
        lines += [f"{pad}# {h}" for h in bsym.header.splitlines()]
    text = bsym_line(bsym, printer)
    lines.append(f"{pad}# {text}" if comment else f"{pad}{text}")
    for sub in bsym.subsymbols:
        _add_lines(sub, indent + 1, printer, True, lines)


def _comment_lines(bsym) -> int:
    """How many lines ``bsym`` prints as a comment: its header, its line, its subsymbols'."""
    n = 1 + (len(bsym.header.splitlines()) if bsym.header else 0)
    for sub in bsym.subsymbols:
        n += _comment_lines(sub)
    return n


@dataclasses.dataclass
class Program:
    """A printed trace. ``spans[i]`` is ``(first line, last line, indent)`` of the i-th
    top-level BoundSymbol (1-based lines, its subsymbol comments included; ``indent`` in
    levels); ``line_map`` maps each of those lines to its BoundSymbol; ``ctx`` holds the
    objects the source names; ``namespace()`` is everything it needs to run."""

    source: str
    spans: list[tuple[int, int, int]]
    line_map: dict[int, object]
    ctx: dict[str, object]
    body_start: int  # the line after ``def ...:``
    modules: dict[str, str]  # name in the source -> the module imported under it

    def bsym_at(self, lineno: int):
        """The top-level BoundSymbol printed on ``lineno`` (None for other lines)."""
        return self.line_map.get(lineno)

    def namespace(self) -> dict[str, object]:
        """What the source needs to run: its modules (imported now) and named objects."""
        import importlib

        ns: dict[str, object] = {m: importlib.import_module(path) for m, path in self.modules.items()}
        ns.update(self.ctx)
        return ns


# How BoundSymbols recorded under another grad mode than the trace's print.
GRAD_BLOCKS = {Tag.NO_GRAD: "with torch.no_grad():", Tag.ENABLE_GRAD: "with torch.enable_grad():"}


def print_program(trace, printer: Printer | None = None) -> Program:
    """``trace`` as a runnable Python function and the map from its lines to BoundSymbols."""
    printer = printer or Printer()
    for k, v in trace.ctx_objects.items():
        printer.ctx[k] = v
    printer.taken |= {p.name for p in proxies_in(trace.args)} | set(re.findall(r"\w+", trace.signature or ""))
    for bsym in trace.bound_symbols:
        printer.taken.update(p.name for p in proxies_in((bsym.args, bsym.kwargs, bsym.output)))
    body: list[str] = []
    spans: list[tuple[int, int, int]] = []
    bsym_of_line: list[object] = []  # per body line
    for p in trace.args:
        if isinstance(p, (TensorProxy, NumberProxy)):
            body.append("" if printer.blank_comments else f"  # {type_comment([p])}")
            bsym_of_line.append(None)
    block = None  # the grad-mode block being printed (``with torch.no_grad():``)
    modules: set[str] = set()
    for bsym in trace.bound_symbols:
        tags = bsym.tags
        mode = (
            None if tags.isdisjoint(GRAD_BLOCKS) else next(GRAD_BLOCKS[t] for t in tags if t in GRAD_BLOCKS)
        )
        if mode is not None and mode != block:
            body.append(f"  {mode}")
            bsym_of_line.append(None)
        block = mode
        indent = 2 if mode else 1
        lines = bsym_lines(bsym, indent, printer)
        modules.update(bsym.sym.imports)
        spans.append((len(body), len(body) + len(lines) - 1, indent))  # body-relative, fixed below
        body += lines
        bsym_of_line += [bsym] * len(lines)
    body.append(f"  return {printer.value(trace.output)}")
    bsym_of_line.append(None)
    head = []
    if trace.provenance is not None:
        head.append(f"# Constructed by {trace.provenance.pass_name}")
    head.append("import torch")
    modules.discard("torch")
    for m in sorted(modules):
        path = MODULE_PATHS.get(m)
        head.append(f"import {path} as {m}" if path is not None else f"import {m}")
    sig = trace.signature or ", ".join(printer.value(a) for a in trace.args)
    head += ["", f"def {trace.name}({sig}):"]
    first = len(head) + 1  # the 1-based number of the first body line
    spans = [(a + first, b + first, ind) for a, b, ind in spans]
    line_map = {i + first: b for i, b in enumerate(bsym_of_line) if b is not None}
    paths = {"torch": "torch", **{m: MODULE_PATHS.get(m, m) for m in modules}}
    return Program("\n".join(head + body) + "\n", spans, line_map, dict(printer.ctx), first, paths)
