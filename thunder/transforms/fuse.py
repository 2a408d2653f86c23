"""Fusion: group what fusion executors claimed into regions, one BoundSymbol per region.

Claiming left the BoundSymbols a fusion executor took as they were, marked
``info.claimed_by``. This pass groups them into regions that respect the data
dependencies, not only neighbours, and replaces each region by one BoundSymbol (``Tag.FUSION``)
whose subsymbols are its members and whose inputs and outputs are exactly what crosses its
boundary: the values its members use that it does not make, and the values it makes that a
later BoundSymbol uses or the trace returns.

Before (``sin``, ``cos``, ``mul`` claimed by torchcompile, the matmul by torch)::

    t0 = ltorch.sin(x)
    t1 = torch.matmul(t0, w)
    t2 = ltorch.mul(t1, 2)
    t3 = ltorch.cos(x)
    return (t2, t3)

After::

    (t0, t3) = TorchCompile0(x)
      # t0 = ltorch.sin(x)
      # t3 = ltorch.cos(x)
    t1 = torch.matmul(t0, w)
    t2 = TorchCompile1(t1)
      # t2 = ltorch.mul(t1, 2)
    return (t2, t3)

``cos`` joins ``sin`` although the matmul stands between them; ``mul`` cannot: a region of
``sin`` and ``mul`` would need the matmul's result, which needs the region's own ``t0``.

The algorithm. The BoundSymbols are the nodes of a graph whose edges go from the one that
makes a value to each one that uses it; an effect (an in-place write, a write-back) is a
barrier: it depends on everything before it and everything after it depends on it; and each
random draw depends on the draw before it (they share the generator's state: a dropout mask
scheduled before a stochastic-depth draw would take that draw's numbers). The trace order is
a topological order. Walking it once, each node ``v`` gets

- ``anc[v]``: the groups with a member among ``v`` and its ancestors, and
- ``exits[v]``: the groups from which some path reaches ``v`` after passing through a node
  outside that group. For each predecessor ``p``: everything in ``exits[p]``, and every
  group in ``anc[p]`` other than ``p``'s own.

A claimed node may join a group of the same executor and grad mode only when that group is
not in ``exits[v]``: then every path from the group to ``v`` stays inside it (paths from
``v`` back into the group cannot exist: its members come earlier), so the group stays convex
(no path leaves it and comes back) and the graph with each group contracted to one node has
no cycle. A node joins the first group that makes one of its inputs and that it may join,
else the first group it may join at all (fusing independent work), else starts a group.
Groups are bits of an int, so the sets are ORs. The contracted graph is then scheduled in
trace order (Kahn's algorithm, the unit with the smallest first index first).

A fusion executor may refuse a region (``region_reason``: shape operations only, nothing to
fuse); its members are then claimed again by the other executors that are not fusion
executors, and each records why it was not fused.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Sequence

from thunder.core.proxies import proxies_in, proxy_names
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import EFFECT_TAGS, GRAD_MODE_TAGS
from thunder.core.trace import Trace
from thunder.executors.base import Executor
from thunder.executors.claim import claim_bsym
from thunder.executors.fusion import FusionExecutor, Region, fusion_executors


def fuse(trace: Trace, executors: Sequence[Executor]) -> Trace:
    fusers = fusion_executors(executors)
    bsyms = trace.bound_symbols
    kinds = [_kind(b, fusers) for b in bsyms]
    if not any(kinds):
        return trace
    preds = dependencies(bsyms)
    groups = partition(kinds, preds)
    others = [e for e in executors if not isinstance(e, FusionExecutor)]
    out = trace.derive("Fusion")
    group_of: dict[int, int] = {i: g for g, members in enumerate(groups) for i in members}
    users = _users(bsyms)
    returned = proxy_names(trace.output)
    counters: dict[str, int] = {}
    for unit in schedule(len(bsyms), preds, groups):
        if not isinstance(unit, list):
            out.bound_symbols.append(bsyms[unit])
            continue
        ex = fusers[kinds[unit[0]][0]]
        region = _region(bsyms, unit, group_of, users, returned)
        reason = ex.region_reason(region)
        if reason is not None:
            for i in unit:
                out.bound_symbols.extend(_unfuse(bsyms[i], ex, reason, others))
            continue
        n = counters.get(ex.region_prefix, 0)
        counters[ex.region_prefix] = n + 1
        region.name = f"{ex.region_prefix}{n}"
        out.bound_symbols.append(ex.region_bsym(region, kinds[unit[0]][1]))
    return out


def _kind(bsym: BoundSymbol, fusers: dict[str, FusionExecutor]):
    """(executor name, grad-mode tags) for a BoundSymbol a fusion executor claimed, else None:
    only BoundSymbols of one executor recorded under one grad mode share a region."""
    name = bsym.info.claimed_by
    if name not in fusers:
        return None
    return (name, bsym.tags & GRAD_MODE_TAGS)


def dependencies(bsyms: Sequence[BoundSymbol]) -> list[list[int]]:
    """For each BoundSymbol, the indices of those it must come after: the makers of the
    values it uses, around an effect everything before it / the effect itself, and for a
    random draw the draw before it (eager's generator gives numbers in call order)."""
    producer: dict[str, int] = {}
    preds: list[list[int]] = []
    barrier: int | None = None
    since: list[int] = []  # nodes after the last barrier
    last_draw: int | None = None
    for i, b in enumerate(bsyms):
        ps = {producer[n] for n in proxy_names((b.args, b.kwargs)) if n in producer}
        if barrier is not None:
            ps.add(barrier)
        if b.draws():
            if last_draw is not None:
                ps.add(last_draw)
            last_draw = i
        if (b.sym.tags | b.tags) & EFFECT_TAGS:
            ps.update(since)
            barrier, since = i, []
        else:
            since.append(i)
        preds.append(sorted(ps))
        for n in proxy_names(b.output):
            producer.setdefault(n, i)
    return preds


@dataclasses.dataclass(eq=False)
class _Group:
    kind: object
    bit: int
    members: list[int]


def partition(kinds: Sequence, preds: Sequence[Sequence[int]]) -> list[list[int]]:
    """Groups of node indices (each in trace order; groups by first member) such that every
    node of a group has its group's kind and no path between members leaves the group.
    ``kinds[i]`` is None for a node that is not fused."""
    n = len(kinds)
    group_of: list[_Group | None] = [None] * n
    anc = [0] * n  # bit masks of groups, see the module docstring
    exits = [0] * n
    groups: list[_Group] = []
    for v in range(n):
        ex = an = 0
        for p in preds[v]:
            g = group_of[p]
            ex |= exits[p] | (anc[p] & ~g.bit if g is not None else anc[p])
            an |= anc[p]
        exits[v] = ex
        kind = kinds[v]
        if kind is not None:
            makers = (group_of[p] for p in preds[v])
            target = next((g for g in makers if g is not None and g.kind == kind and not g.bit & ex), None)
            if target is None:
                target = next((g for g in groups if g.kind == kind and not g.bit & ex), None)
            if target is None:
                target = _Group(kind, 1 << len(groups), [])
                groups.append(target)
            target.members.append(v)
            group_of[v] = target
            an |= target.bit
        anc[v] = an
    return [g.members for g in groups]


def schedule(n: int, preds: Sequence[Sequence[int]], groups: list[list[int]]) -> list:
    """Nodes in an order that respects ``preds`` with each group contracted to one unit: a
    node index for a node outside the groups, the group's member list for a group. Among
    the units ready to go, the one with the smallest first index goes first."""
    unit_of = list(range(len(groups), len(groups) + n))
    for g, members in enumerate(groups):
        for i in members:
            unit_of[i] = g
    first = [members[0] for members in groups] + list(range(n))
    succs: dict[int, set[int]] = {}
    indegree: dict[int, int] = {}
    for v in range(n):
        u = unit_of[v]
        indegree.setdefault(u, 0)
        for p in preds[v]:
            pu = unit_of[p]
            if pu != u and u not in succs.setdefault(pu, set()):
                succs[pu].add(u)
                indegree[u] += 1
    ready = [(first[u], u) for u, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, u = heapq.heappop(ready)
        order.append(groups[u] if u < len(groups) else u - len(groups))
        for s in succs.get(u, ()):
            indegree[s] -= 1
            if indegree[s] == 0:
                heapq.heappush(ready, (first[s], s))
    if len(order) != len(indegree):
        raise AssertionError("thunder: the fusion regions form a cycle (a bug in partition)")
    return order


def _users(bsyms: Sequence[BoundSymbol]) -> dict[str, list[int]]:
    users: dict[str, list[int]] = {}
    for i, b in enumerate(bsyms):
        for name in proxy_names((b.args, b.kwargs)):
            users.setdefault(name, []).append(i)
    return users


def _region(bsyms, members: list[int], group_of, users, returned) -> Region:
    """The region of ``members``: inputs in order of first use, outputs in order of definition."""
    g = group_of[members[0]]
    made: set[str] = set()
    inputs, outputs, seen = [], [], set()
    for i in members:
        b = bsyms[i]
        for p in proxies_in((b.args, b.kwargs)):
            if p.name not in made and p.name not in seen:
                seen.add(p.name)
                inputs.append(p)
        for p in proxies_in(b.output):
            if p.name in made:
                continue
            made.add(p.name)
            if p.name in returned or any(group_of.get(u) != g for u in users.get(p.name, ())):
                outputs.append(p)
    return Region("", [bsyms[i] for i in members], inputs, outputs)


def _unfuse(bsym: BoundSymbol, ex: FusionExecutor, reason: str, others: Sequence[Executor]):
    """``bsym`` claimed again by the executors that do not fuse, noting why ``ex`` did not."""
    declined = {**(bsym.info.declined or {}), ex.name: f"{ex.name} did not fuse it: {reason}"}
    info = dataclasses.replace(bsym.info, claimed_by=None, declined=None)
    result = claim_bsym(bsym.from_bsym(info=info), others)
    for b in result:
        b.info.declined = {**declined, **(b.info.declined or {})}
    return result
