"""Symbols (operations) and BoundSymbols (one call of an operation in a trace).

A ``Symbol`` is either a primitive, with a ``meta`` function that makes its output proxies,
or a composite, with a python ``fn`` that calls other symbols (its decomposition becomes the
BoundSymbol's ``subsymbols``). Executor symbols (``torch.add``) carry the callable that runs.
Called with no trace active, a symbol runs eagerly, so every printed trace is executable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.pytree import tree_leaves

# id of a symbol -> eager implementation; filled by the torch executor.
EAGER_IMPLS: dict[str, Callable] = {}


class Symbol:
    """An operation. ``id`` is ``module.name``, which is also how it prints."""

    def __init__(
        self,
        name: str,
        module: str,
        *,
        meta: Callable | None = None,
        fn: Callable | None = None,
        impl: Callable | None = None,
        tags: tuple[str, ...] = (),
        doc: str | None = None,
        executor: str | None = None,
    ):
        self.name = name
        self.module = module
        self.meta = meta
        self.fn = fn
        self.impl = impl
        self.tags = frozenset(tags)
        # the executor that runs this symbol ("torch", "nvfuser", ...); None for ltorch/prims
        self.executor = executor
        # optional ``(bsym, printer) -> str`` for symbols that do not print as a call
        self.printer = None
        self.id = f"{module}.{name}"
        self.__doc__ = doc or (fn.__doc__ if fn is not None else None) or (meta.__doc__ if meta else None)

    def __call__(self, *args, **kwargs):
        from thunder.core.trace import current_trace

        trc = current_trace()
        if trc is None:
            return self.eager(*args, **kwargs)
        return trc.record(self, args, kwargs)

    def eager(self, *args, **kwargs):
        impl = self.impl or EAGER_IMPLS.get(self.id)
        if impl is not None:
            return impl(*args, **kwargs)
        if self.fn is not None:
            return self.fn(*args, **kwargs)
        raise RuntimeError(f"thunder: {self.id} has no eager implementation")

    def __repr__(self) -> str:
        return f"[Symbol {self.id}]"

    def __reduce__(self):
        return (_symbol_by_id, (self.id,))


SYMBOLS: dict[str, Symbol] = {}


def register(sym: Symbol) -> Symbol:
    if sym.id in SYMBOLS:
        raise ValueError(f"thunder: symbol {sym.id} is defined twice")
    SYMBOLS[sym.id] = sym
    return sym


def _symbol_by_id(id: str) -> Symbol:
    return SYMBOLS[id]


@dataclasses.dataclass(frozen=True)
class SourceLocation:
    """Where in the user's program a BoundSymbol came from."""

    filename: str
    lineno: int
    function: str

    def line(self) -> str:
        import linecache

        return linecache.getline(self.filename, self.lineno).strip()

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} in {self.function}"


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
    # facts for tools that are not printed: {"declined": {"nvfuser": "why"}, "time_s": ...}
    info: dict = dataclasses.field(default_factory=dict)

    def from_bsym(self, **changes) -> BoundSymbol:
        return dataclasses.replace(self, **changes)

    @property
    def flat_proxy_args(self) -> list:
        return [a for a in tree_leaves((self.args, self.kwargs)) if isinstance(a, (TensorProxy, Proxy))]

    @property
    def flat_proxy_outs(self) -> list:
        return [o for o in tree_leaves(self.output) if isinstance(o, (TensorProxy, Proxy))]

    def __repr__(self) -> str:
        from thunder.core.printing import bsym_lines

        return "\n".join(bsym_lines(self, indent=0))
