"""The executor interface: an executor looks at a BoundSymbol and may claim it.

Claiming returns a new BoundSymbol whose symbol is the executor's (``torch.add``), whose
single subsymbol is the BoundSymbol it replaces (so the printed trace keeps ``ltorch.add``
and ``prims.add`` as comments below the executed line).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from thunder.core.symbol import BoundSymbol, Symbol


@dataclass
class Impl:
    """How an executor runs one symbol: the executor symbol and when it may."""

    symbol: Symbol
    check: Callable | None = None  # (*args, **kwargs) -> bool
    translate: Callable | None = None  # (bsym) -> (args, kwargs) for the executor symbol


class Executor:
    """Claims BoundSymbols through a table ``symbol id -> [Impl, ...]``."""

    def __init__(self, name: str):
        self.name = name
        self.impls: dict[str, list[Impl]] = {}

    def register(self, sym_id: str, impl: Impl) -> None:
        self.impls.setdefault(sym_id, []).append(impl)

    def claim(self, bsym: BoundSymbol) -> BoundSymbol | None:
        for impl in self.impls.get(bsym.sym.id, ()):
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
                tags=bsym.tags | bsym.sym.tags & _KEPT_TAGS,
                info={**bsym.info, "claimed_by": self.name},  # keeps what the grad pass noted
            )
        return None

    def why_not(self, bsym: BoundSymbol) -> str:
        if bsym.sym.id not in self.impls:
            return f"{self.name} has no implementation of {bsym.sym.id}"
        return f"{self.name} cannot run {bsym.sym.id} with these arguments"

    def __repr__(self) -> str:
        return f"<Executor {self.name}>"


# Tags of the replaced symbol that tools still want to see on the executed line.
_KEPT_TAGS = frozenset({"inplace", "writeback", "dataclass_new", "prologue_check", "unpack", "del"})


def executor_symbol(path: str, impl: Callable, executor: str, *, printer=None) -> Symbol:
    """A symbol printed as ``path`` (``torch.nn.functional.linear``) that calls ``impl``."""
    module, _, name = path.rpartition(".")
    sym = Symbol(name, module, impl=impl, executor=executor)
    sym.printer = printer
    return sym
