"""Ordering a region's prims for Inductor: matmuls next to each other.

On CPU, Inductor's generated code runs each stretch of work between two calls of an extern
kernel (``mm``, ``bmm``, ``addmm``: what matmuls lower to) as one C++ function, one call from
Python, and it keeps the graph's order (``compile_program`` turns off the pass that would
move each producer next to its first user). A backward in the order thunder's grad transform
writes it alternates: for each linear layer the input gradient's matmul, the elementwise work
that needs it, the weight gradient's matmul, the bias gradient's sum, ... each stretch a call
of its own (46 in a 4-block GPT's backward, where AOTAutograd's order gives 25).
``matmuls_together`` orders a region's prims in stretches of matmuls and stretches of the
other work, with as few stretches as their dependencies allow: the same operations in fewer,
larger C++ functions (29 in that backward; the rest are copies Inductor makes of saved
tensors whose layout ``bmm`` cannot take, one before each such ``bmm``).

Each prim gets a stretch (slots 0, 1, 2, ...: even for other work, odd for matmuls; a shape
operation, a view that is no kernel, goes with its first user):

- work whose results are used in the region goes as late as its users allow (a layer norm's
  output recomputed for a weight gradient lands with the layer norm's backward, which
  Inductor fuses it with anyway);
- work that only makes outputs (a bias gradient's sum) goes as early as its inputs allow, in
  a stretch that other work makes anyway;
- a matmul that only makes an output (a weight gradient) goes one matmul stretch after the
  earliest, with the next layer's input-gradient matmul (its operand, often recomputed, is
  then made in the stretch between them).

Within a stretch the trace order holds, except that a matmul that reads what the stretch
just before made comes first: Inductor computes an elementwise result where its first
extern user needs it, so that user must open its stretch.

Before (two C++ functions: ``mul``, then ``sum``)::

    t1 = prims.matmul(g, w)      # an input gradient
    t2 = prims.mul(t1, 2)
    t3 = prims.matmul(x, g)      # a weight gradient (an output)
    t4 = prims.sum(g, (0,))      # a bias gradient (an output)
    t5 = prims.matmul(t2, w)

After (one: ``mul`` and ``sum``)::

    t1 = prims.matmul(g, w)
    t3 = prims.matmul(x, g)
    t2 = prims.mul(t1, 2)
    t4 = prims.sum(g, (0,))
    t5 = prims.matmul(t2, w)
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from thunder.core.proxies import proxy_names
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import Tag
from thunder.core.trace import Trace


def matmuls_together(trace: Trace, is_matmul: Callable[[BoundSymbol], bool]) -> Trace:
    """``trace`` (a region: no effects, no random draws) with its prims in stretches of
    matmuls (``is_matmul``) and of other work, as the module docstring says."""
    bsyms = trace.bound_symbols
    n = len(bsyms)
    producer: dict[str, int] = {}
    preds: list[set[int]] = []
    users: list[list[int]] = [[] for _ in range(n)]
    for i, b in enumerate(bsyms):
        preds.append({producer[name] for name in proxy_names((b.args, b.kwargs)) if name in producer})
        for p in preds[i]:
            users[p].append(i)
        for name in proxy_names(b.output):
            producer.setdefault(name, i)
    # 1 for a matmul, 0 for other work, None for a shape operation
    parity = [None if Tag.SHAPE in b.sym.tags else int(is_matmul(b)) for b in bsyms]
    earliest = [0] * n
    for i in range(n):
        e = max((earliest[p] for p in preds[i]), default=0)
        earliest[i] = e + 1 if parity[i] is not None and e % 2 != parity[i] else e
    slot = [0] * n
    for i in reversed(range(n)):
        if not users[i]:  # only makes an output
            slot[i] = earliest[i] + 2 if parity[i] == 1 else earliest[i]
            continue
        latest = min(slot[u] for u in users[i])
        slot[i] = latest - 1 if parity[i] is not None and latest % 2 != parity[i] else latest
    # work that only makes outputs joins the first stretch of other work it may (none of its
    # own before the first matmul, say)
    taken = sorted({slot[i] for i in range(n) if parity[i] == 0 and users[i]})
    for i in range(n):
        if parity[i] == 0 and not users[i]:
            slot[i] = next((s for s in taken if s >= slot[i]), slot[i])
    # the stretch of other work each value comes from, through views (-1: none)
    made = [-1] * n
    for i in range(n):
        if parity[i] == 0:
            made[i] = slot[i]
        elif parity[i] is None:
            made[i] = max((made[p] for p in preds[i]), default=-1)
    # (a matmul that does not waits for those that do; views and other work do not wait)
    waits = [parity[i] == 1 and all(made[p] != slot[i] - 1 for p in preds[i]) for i in range(n)]
    waiting = [len(p) for p in preds]
    ready = [(slot[i], waits[i], i) for i in range(n) if not waiting[i]]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        *_, i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if not waiting[u]:
                heapq.heappush(ready, (slot[u], waits[u], u))
    if order == list(range(n)):
        return trace
    out = trace.derive("Order for Inductor")
    out.bound_symbols = [bsyms[i] for i in order]
    return out
