"""Delete last used: free each intermediate right after its last use (``del t0``).

Before::

    t0 = torch.sin(x)
    t1 = torch.mul(t0, 2)
    return t1

After::

    t0 = torch.sin(x)
    t1 = torch.mul(t0, 2)
    del t0
    return t1
"""

from __future__ import annotations

from thunder.core.proxies import proxies_in
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import Tag
from thunder.core.trace import Trace
from thunder.ops.python import python_del


def del_last_used(trace: Trace, *, executor_symbol=None) -> Trace:
    out = trace.derive("Delete Last Used")
    keep = {p.name for p in proxies_in(trace.output)} | {p.name for p in proxies_in(trace.args)}
    keep |= set(trace.ctx_objects)  # (objects the program names, not its values)
    seen: set[str] = set(keep)
    new: list[BoundSymbol] = []
    for bsym in reversed(trace.bound_symbols):
        dead = []
        for p in proxies_in((bsym.args, bsym.kwargs)) + proxies_in(bsym.output):
            if p.name not in seen:
                seen.add(p.name)
                dead.append(p)
        if dead:
            new.append(
                BoundSymbol(executor_symbol or python_del, tuple(dead), {}, None, tags=frozenset({Tag.DEL}))
            )
        new.append(bsym)
    out.bound_symbols = new[::-1]
    return out
