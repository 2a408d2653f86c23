"""Dead code elimination: drop BoundSymbols whose outputs nobody uses.

BoundSymbols with effects (in-place writes, write-backs, prologue checks) are kept.

Before::

    t0 = ltorch.sin(x)
    t1 = ltorch.cos(x)
    return t0

After::

    t0 = ltorch.sin(x)
    return t0
"""

from __future__ import annotations

from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.pytree import tree_leaves
from thunder.core.trace import Trace

# Symbol tags that mark an effect: such BoundSymbols are never removed.
EFFECT_TAGS = frozenset({"inplace", "writeback", "prologue_check", "random_seed"})


def _names(x) -> set[str]:
    return {p.name for p in tree_leaves(x) if isinstance(p, (TensorProxy, Proxy))}


def dce(trace: Trace) -> Trace:
    out = trace.derive("Dead Code Elimination")
    needed = _names(trace.output)
    kept = []
    for bsym in reversed(trace.bound_symbols):
        outs = _names(bsym.output)
        if (bsym.sym.tags | bsym.tags) & EFFECT_TAGS or outs & needed:
            kept.append(bsym)
            needed |= _names((bsym.args, bsym.kwargs))
    out.bound_symbols = kept[::-1]
    return out
