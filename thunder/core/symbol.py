"""Symbols (operations), the tables keyed by them, and BoundSymbols (one call in a trace).

A ``Symbol`` is a declared record, bound to a plain name in the source of the module that
defines it (``erf = elementwise_unary("erf", ...)`` in ``thunder/ops/prims/elementwise.py``).
A primitive has a ``meta`` function that makes its output proxies; a composite has a
``decomposition`` that calls other symbols (recorded as the BoundSymbol's ``subsymbols``);
an executor symbol (``torch.add``) has the ``impl`` that runs. Called with no trace active,
a symbol runs eagerly, so every printed trace is executable.

Per-op behaviour (executor implementations, gradient rules, fusion translators) lives in a
``SymbolTable`` keyed by the Symbol object, never by a name. Every table registers itself, so
a test can check that all of them agree with the set of declared symbols.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from thunder.core.context import current_trace
from thunder.core.passinfo import BoundSymbolInfo
from thunder.core.printing import MODULE_PATHS, bsym_lines
from thunder.core.proxies import proxies_in
from thunder.core.source import SourceLocation
from thunder.core.tags import Tag
from thunder.core.tags import tags as _tags


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Symbol:
    """An operation. ``id`` (``module.name``) is how it prints and how it is named in errors.

    ``module_path``: the module the printed code imports as ``module`` (``None``: ``module``
    is importable as written, e.g. ``torch.nn.functional``). ``printer``: a
    ``(bsym, printer) -> str`` for symbols that do not print as a call; ``imports``: the
    module names such a printer's text uses (default: ``module`` when it prints as a call).
    ``torch_impl``/``impl_check``: for torch-language ops, the torch callable that computes
    the whole op and when it may (the torch executor claims the op through it).
    ``fast``: for a prologue check, a ``(bsym, printer) -> str | None`` giving a Python
    expression that is true only where the check passes (its own shortcut, the one its
    implementation tests first); the code compiled to run (``Trace.python_callable``) tests it
    on the check's line and calls the check only where it is false, so a model's cached call
    makes no call for each module or tensor that is unchanged.
    """

    name: str
    module: str
    meta: Callable | None = None
    decomposition: Callable | None = None
    impl: Callable | None = None
    tags: frozenset = frozenset()
    printer: Callable | None = None
    module_path: str | None = None
    imports: tuple[str, ...] | None = None
    executor: str | None = None  # the executor that runs it ("torch", "nvfuser"); None for ops
    torch_impl: str | None = None
    impl_check: Callable | None = None
    doc: str | None = None
    fast: Callable | None = None
    id: str = dataclasses.field(init=False)

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "id", f"{self.module}.{self.name}")
        set_(self, "tags", _tags(*self.tags))
        if self.imports is None:
            set_(self, "imports", () if self.printer is not None else (self.module.split(".")[0],))
        if self.module_path is not None:
            known = MODULE_PATHS.setdefault(self.module, self.module_path)
            if known != self.module_path:
                raise ValueError(
                    f"thunder: module name {self.module!r} means both {known} and {self.module_path}"
                )
        fn = self.decomposition or self.meta or self.impl
        set_(self, "__doc__", self.doc or getattr(fn, "__doc__", None))

    def __call__(self, *args, **kwargs):
        trc = current_trace()
        if trc is None:
            return self.eager(*args, **kwargs)
        return trc.record(self, args, kwargs)

    def eager(self, *args, **kwargs):
        impl = self.impl or EAGER_IMPLS.get(self)
        if impl is not None:
            return impl(*args, **kwargs)
        if self.decomposition is not None:
            return self.decomposition(*args, **kwargs)
        raise RuntimeError(f"thunder: {self.id} has no eager implementation")

    def __repr__(self) -> str:
        return f"[Symbol {self.id}]"

    def __reduce__(self):
        return (_symbol_by_id, (self.id,))


# Every declared op (prims, torch language, aten), by id: what the tables are checked against.
SYMBOLS: dict[str, Symbol] = {}


def register(sym: Symbol) -> Symbol:
    """Declare ``sym`` as an op (executor symbols and fusion regions are not declared)."""
    if sym.id in SYMBOLS:
        raise ValueError(f"thunder: symbol {sym.id} is defined twice")
    SYMBOLS[sym.id] = sym
    return sym


def _symbol_by_id(id: str) -> Symbol:
    return SYMBOLS[id]


class MissingEntryError(KeyError):
    """A per-op table has no entry for an op; the message names both."""

    def __str__(self) -> str:
        return str(self.args[0])


class SymbolTable(dict):
    """A per-op table: ``{Symbol: value}``, with a name for its errors.

    ``table[sym]`` for a symbol without an entry raises ``MissingEntryError`` naming the op
    and the table; ``table.get(sym)`` returns ``None``. Every table is listed in ``TABLES``.
    """

    def __init__(self, name: str, entries: dict | None = None, *, hint: str = ""):
        super().__init__()
        self.name = name
        self.hint = hint
        TABLES.append(self)
        for k, v in (entries or {}).items():
            self[k] = v

    def __setitem__(self, sym, value) -> None:
        if not isinstance(sym, Symbol):
            raise TypeError(f"thunder: {self.name} is keyed by Symbol objects, got {sym!r}")
        super().__setitem__(sym, value)

    def __missing__(self, sym):
        what = sym.id if isinstance(sym, Symbol) else repr(sym)
        raise MissingEntryError(
            f"thunder: {what} has no entry in {self.name}" + (f"; {self.hint}" if self.hint else "")
        )

    def __repr__(self) -> str:
        return f"<SymbolTable {self.name}: {len(self)} ops>"


TABLES: list[SymbolTable] = []

# How to run a prim outside a trace (filled by the torch executor).
EAGER_IMPLS = SymbolTable("the eager implementations of prims")


def undeclared_keys() -> list[str]:
    """Entries of any table for a symbol that is not a declared op (tests keep this empty)."""
    out = []
    for table in TABLES:
        for sym in table:
            if SYMBOLS.get(sym.id) is not sym:
                out.append(f"{table.name}: {sym.id}")
    return out


def symbols_with(*wanted: Tag) -> Iterable[Symbol]:
    """Declared symbols that carry every one of ``wanted``."""
    want = frozenset(wanted)
    return (s for s in SYMBOLS.values() if want <= s.tags)


@dataclasses.dataclass(frozen=True, eq=False)
class ModuleScope:
    """The ``nn.Module`` call an op was recorded in: the module's path from the jitted module
    (``model.layers.0.self_attn.q_proj``; ``""`` for the jitted module itself), its class
    name, and the enclosing call (``parent``). One object per module call, shared by every
    BoundSymbol recorded in it."""

    path: str
    cls: str
    parent: ModuleScope | None = None

    def chain(self) -> list[ModuleScope]:
        """The enclosing calls, outermost first, ending with this one."""
        out, s = [], self
        while s is not None:
            out.append(s)
            s = s.parent
        return out[::-1]

    def __str__(self) -> str:
        return f"{self.path or '<root>'} ({self.cls})"


def common_scope(bsyms, *, by_path: bool = False) -> ModuleScope | None:
    """The innermost module call enclosing every one of ``bsyms`` (None when one of them was
    recorded outside any module, or they share none). Calls are the same call by identity, or
    with ``by_path`` the same module path (two calls of one module count as one)."""
    common: list[ModuleScope] | None = None
    for b in bsyms:
        if b.scope is None:
            return None
        chain = b.scope.chain()
        if common is None:
            common = chain
            continue
        n = 0
        while n < min(len(common), len(chain)) and (
            common[n].path == chain[n].path if by_path else common[n] is chain[n]
        ):
            n += 1
        common = common[:n]
        if not common:
            return None
    return common[-1] if common else None


@dataclasses.dataclass(eq=False)
class BoundSymbol:
    """One call of ``sym`` in a trace."""

    sym: Symbol
    args: tuple
    kwargs: dict
    output: Any
    subsymbols: list[BoundSymbol] = dataclasses.field(default_factory=list)
    header: str = ""
    source: SourceLocation | None = None
    tags: frozenset = frozenset()
    scope: ModuleScope | None = None  # the module call it was recorded in, kept by every pass
    # what passes note on it (``info.claimed_by``), not printed
    info: BoundSymbolInfo = dataclasses.field(default_factory=BoundSymbolInfo)

    def from_bsym(self, **changes) -> BoundSymbol:
        """A copy with ``changes``; its ``info`` is its own (a pass noting on the copy leaves
        the original, which an earlier trace or a recorded backward still holds, as it was)."""
        if "info" not in changes:
            changes["info"] = self.info.copy()
        return dataclasses.replace(self, **changes)

    def has_tag(self, tag: Tag) -> bool:
        """``tag`` is on this call or on its symbol."""
        return tag in self.tags or tag in self.sym.tags

    def draws(self) -> bool:
        """This call, or an op it decomposes into, draws random numbers (``Tag.RANDOM``)."""
        return self.has_tag(Tag.RANDOM) or any(s.draws() for s in self.subsymbols)

    @property
    def flat_proxy_args(self) -> list:
        return proxies_in((self.args, self.kwargs))

    @property
    def flat_proxy_outs(self) -> list:
        return proxies_in(self.output)

    def __repr__(self) -> str:
        return "\n".join(bsym_lines(self, indent=0))
