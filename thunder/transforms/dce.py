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

from thunder.core.proxies import proxy_names
from thunder.core.tags import EFFECT_TAGS
from thunder.core.trace import Trace


def dce(trace: Trace) -> Trace:
    out = trace.derive("Dead Code Elimination")
    needed = proxy_names(trace.output)
    kept = []
    for bsym in reversed(trace.bound_symbols):
        outs = proxy_names(bsym.output)
        if (bsym.sym.tags | bsym.tags) & EFFECT_TAGS or outs & needed:
            kept.append(bsym)
            needed |= proxy_names((bsym.args, bsym.kwargs))
    out.bound_symbols = kept[::-1]
    return out
