"""The claiming pass: give every BoundSymbol to the first executor that can run it.

Executors are asked in priority order; a BoundSymbol nobody claims is replaced by its
subsymbols, which are asked in turn. A primitive nobody claims is an error naming it.

Before::

    t0 = ltorch.softmax(x, 1)
      # t1 = prims.amax(x, (1,)) ...

After (torch executor)::

    t0 = torch.softmax(x, 1)
      # t0 = ltorch.softmax(x, 1)
        # t1 = prims.amax(x, (1,)) ...
"""

from __future__ import annotations

from collections.abc import Sequence

from thunder.core.passinfo import BoundSymbolInfo
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import GRAD_MODE_TAGS, Tag, inherit
from thunder.core.trace import Trace
from thunder.executors.base import Executor


class UnclaimedError(RuntimeError):
    pass


# Tags of a BoundSymbol that hold for its decomposition too (the grad mode it ran under, and
# whether it belongs to a backward).
_INHERITED_TAGS = GRAD_MODE_TAGS | {Tag.BACKWARD, Tag.RECOMPUTED}
# What the grad pass noted on a BoundSymbol that holds for its decomposition too.
_INHERITED_INFO = frozenset({"differentiates", "vjp", "recomputes"})


def claim(trace: Trace, executors: Sequence[Executor]) -> Trace:
    out = trace.derive("Transform for execution")
    for bsym in trace.bound_symbols:
        out.bound_symbols.extend(claim_bsym(bsym, executors))
    return out


def claim_bsym(bsym: BoundSymbol, executors: Sequence[Executor]) -> list[BoundSymbol]:
    """``bsym`` claimed whole by the first executor that can, else its subsymbols, each so."""
    declined = {}
    for ex in executors:
        claimed = ex.claim(bsym)
        if claimed is not None:
            if declined:
                claimed.info.declined = declined
            return [claimed]
        declined[ex.name] = ex.why_not(bsym)
    if not bsym.subsymbols:
        where = f" (from {bsym.source})" if bsym.source else ""
        raise UnclaimedError(
            f"thunder: no executor can run {bsym.sym.id}{where}; asked: {', '.join(e.name for e in executors)}"
            f" ({'; '.join(declined.values())})"
        )
    result = []
    noted = {k: v for k in _INHERITED_INFO if (v := getattr(bsym.info, k)) is not None}
    for sub in bsym.subsymbols:
        tags = inherit(sub.tags, bsym.tags, _INHERITED_TAGS)
        if sub.source is None or sub.scope is None or tags != sub.tags or noted:
            sub = sub.from_bsym(
                source=sub.source or bsym.source,
                tags=tags,
                scope=sub.scope or bsym.scope,
                info=BoundSymbolInfo(**noted).merged(sub.info),
            )
        result.extend(claim_bsym(sub, executors))
    return result
