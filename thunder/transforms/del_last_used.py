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

from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.pytree import tree_leaves
from thunder.core.symbol import BoundSymbol
from thunder.core.trace import Trace
from thunder.ops.python import python_del


def _proxies(x) -> list:
    return [p for p in tree_leaves(x) if isinstance(p, (TensorProxy, Proxy))]


def del_last_used(trace: Trace, *, executor_symbol=None) -> Trace:
    out = trace.derive("Delete Last Used")
    keep = {p.name for p in _proxies(trace.output)} | {p.name for p in _proxies(trace.args)}
    seen: set[str] = set(keep)
    new: list[BoundSymbol] = []
    for bsym in reversed(trace.bound_symbols):
        dead = []
        for p in _proxies((bsym.args, bsym.kwargs)) + _proxies(bsym.output):
            if p.name not in seen:
                seen.add(p.name)
                dead.append(p)
        if dead:
            new.append(
                BoundSymbol(executor_symbol or python_del, tuple(dead), {}, None, tags=frozenset({"del"}))
            )
        new.append(bsym)
    out.bound_symbols = new[::-1]
    return out
