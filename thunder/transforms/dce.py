"""Dead code elimination: drop BoundSymbols whose outputs nobody uses.

BoundSymbols with effects (in-place writes, write-backs, prologue checks) are kept. With
``keep_draws`` (the user's program, before the grad pass), so are random draws whose values
nobody uses: eager draws them, and dropping one would give every later draw, in the function
and after it, other numbers than eager's (the generator would be behind). Later passes
(the backward, recomputations for a double backward) draw nothing of the user's and drop them.

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


def dce(trace: Trace, keep_draws: bool = False) -> Trace:
    out = trace.derive("Dead Code Elimination")
    needed = proxy_names(trace.output)
    kept = []
    for bsym in reversed(trace.bound_symbols):
        outs = proxy_names(bsym.output)
        if (bsym.sym.tags | bsym.tags) & EFFECT_TAGS or outs & needed or (keep_draws and bsym.draws()):
            kept.append(bsym)
            needed |= proxy_names((bsym.args, bsym.kwargs))
    out.bound_symbols = kept[::-1]
    return out
