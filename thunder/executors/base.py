"""The executor interface: an executor looks at a BoundSymbol and may claim it.

Claiming returns a new BoundSymbol whose symbol is the executor's (``torch.add``), whose
single subsymbol is the BoundSymbol it replaces (so the printed trace keeps ``ltorch.add``
and ``prims.add`` as comments below the executed line). An executor's implementations are a
``SymbolTable`` keyed by the op's Symbol.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from thunder.core.symbol import BoundSymbol, Symbol, SymbolTable
from thunder.core.tags import Tag


@dataclass(frozen=True)
class Drawing:
    """How viewers draw what an executor runs: fill and border colours, and a second cue that
    is not colour (a graphviz node shape, a border style)."""

    fill: str
    border: str
    shape: str = "box"
    line: str = "solid"


@dataclass
class Impl:
    """How an executor runs one symbol: the executor symbol and when it may."""

    symbol: Symbol
    check: Callable | None = None  # (*args, **kwargs) -> bool
    translate: Callable | None = None  # (bsym) -> (args, kwargs) for the executor symbol


class Executor:
    """Claims BoundSymbols through its table ``{op Symbol: [Impl, ...]}``.

    What the rest of thunder and the explorer need to know of an executor is here, so that
    none of them names one (``thunder/executors/registry.py`` finds them by name):
    """

    # in the default list of executors when available, before those of lower priority
    default: bool = False
    priority: int = 0
    # runs every prim (torch): the fallback after the executors a call asks for
    runs_every_prim: bool = False
    # runs the prologue's checks and the epilogue's Python: always last
    runs_host: bool = False
    # its implementations are torch calls that run on meta tensors too (a viewer replays them
    # to see which outputs share an input's memory)
    runs_on_meta: bool = False
    # how viewers draw what it runs (None: a colour of their own)
    drawing: Drawing | None = None

    def __init__(self, name: str):
        self.name = name
        self.impls = SymbolTable(f"the {name} executor's implementations")

    def unavailable_reason(self) -> str | None:
        """Why this executor cannot run here (no device, a missing package), or None."""
        return None

    def wait(self, timeout: float | None = None) -> None:
        """Block until the compilations it started in the background are done (none here)."""

    def register(self, sym: Symbol, impl: Impl) -> None:
        self.impls.setdefault(sym, []).append(impl)

    def implementations(self, sym: Symbol) -> list[Impl]:
        """The ways this executor may run ``sym`` (an executor may find more than its table)."""
        return self.impls.get(sym, ())

    def claim(self, bsym: BoundSymbol) -> BoundSymbol | None:
        for impl in self.implementations(bsym.sym):
            if impl.check is not None and not impl.check(*bsym.args, **bsym.kwargs):
                continue
            args, kwargs = impl.translate(bsym) if impl.translate else (bsym.args, bsym.kwargs)
            return BoundSymbol(
                impl.symbol,
                args,
                kwargs,
                bsym.output,
                [bsym],
                source=bsym.source,
                tags=bsym.tags | bsym.sym.tags & KEPT_TAGS,
                scope=bsym.scope,
                info=bsym.info.claimed(self.name),  # keeps what the grad pass noted
            )
        return None

    def why_not(self, bsym: BoundSymbol) -> str:
        if not self.implementations(bsym.sym):
            return f"{self.name} has no implementation of {bsym.sym.id}"
        return f"{self.name} cannot run {bsym.sym.id} with these arguments"

    def __repr__(self) -> str:
        return f"<Executor {self.name}>"


# Tags of the replaced symbol that tools still want to see on the executed line.
KEPT_TAGS = frozenset(
    {Tag.INPLACE, Tag.WRITEBACK, Tag.DATACLASS_NEW, Tag.PROLOGUE_CHECK, Tag.UNPACK, Tag.DEL}
)


def executor_symbol(
    path: str,
    impl: Callable | None,
    executor: str,
    *,
    printer=None,
    module_path: str | None = None,
    imports: tuple[str, ...] | None = None,
    fast=None,
) -> Symbol:
    """A symbol printed as ``path`` (``torch.nn.functional.linear``) that calls ``impl``.

    ``module_path``: the module the printed code imports as the first part of ``path``
    (``torchex`` -> ``thunder.executors.torchex``); ``None`` when it imports as written.
    ``fast``: a check's shortcut, printed before its call in the compiled code (``Symbol.fast``).
    """
    module, _, name = path.rpartition(".")
    return Symbol(
        name,
        module,
        impl=impl,
        executor=executor,
        printer=printer,
        module_path=module_path,
        imports=imports,
        fast=fast,
    )
