"""Before a program that communicates first runs: do all ranks of each group run the same
collectives?

Eager torch.distributed does not check: with gloo, an ``all_reduce`` of 3 elements on one rank
and 4 on another gives one rank a wrong result without an error and the other a closed
connection, and a collective one rank skips hangs the others. A compiled program knows its
collectives before it runs, so each compilation that communicates publishes its plan (each
collective's kind, reduction, shapes and dtype, in order, forward then backward) in
torch.distributed's store, and compares it with every other rank's plan of the same
compilation (the n-th compilation over that group in each process). A difference is a clear
error on every rank, naming the collective, each rank's version of it and the user's line; a
rank that never publishes (it did not trace at this call: another input shape on that rank
only) is an error after ``PLAN_TIMEOUT`` seconds instead of a hang, unless its plan is one
every rank already agreed on (a smaller last batch on one rank reduces the same gradients):
that one runs what the others run, and is not compared again.
"""

from __future__ import annotations

import collections
import datetime
import json
import os

import torch

from thunder.core.errors import ThunderError, at
from thunder.core.proxies import TensorProxy
from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.collectives import group_of

PLAN_TIMEOUT = float(os.environ.get("THUNDER_PLAN_TIMEOUT", "60"))
_compilations: collections.Counter = collections.Counter()  # group name -> compilations over it
# group name -> the plans every rank of it has agreed on: a compilation with one of those plans
# (a rank that traced again alone for a smaller last batch: the same gradients to reduce) runs
# collectives every rank runs, and is not compared again
_agreed: dict[str, set[str]] = collections.defaultdict(set)


class CollectiveMismatchError(ThunderError):
    """The ranks of a process group would run different collectives."""


def _entry(bsym) -> dict:
    tensors = [a for a in bsym.args if isinstance(a, TensorProxy)]
    rest = [a for a in bsym.args if not isinstance(a, TensorProxy)]
    e = {"op": bsym.sym.name, "args": repr(rest), "dtype": str(tensors[0].dtype) if tensors else ""}
    if bsym.sym is not prims.all_to_all_single:  # (each rank sends its own splits)
        e["shape"] = list(tensors[0].shape) if tensors else []
    return e


def plans(traces) -> dict[str, list]:
    """Group name -> its collectives in ``traces`` (each entry and the BoundSymbol it is)."""
    out: dict[str, list] = {}
    for trace in traces:
        if trace is None:
            continue
        for s in _communications(trace.bound_symbols):
            if s.sym is not prims.wait:
                out.setdefault(s.args[-1], []).append((_entry(s), s))
    return out


def _communications(bsyms) -> list:
    """The collectives among ``bsyms`` and their subsymbols (not looked into), in order."""
    out, todo = [], list(reversed(bsyms))
    while todo:  # (a stack, not recursion: every op of a model's final traces is visited)
        b = todo.pop()
        if Tag.COMMUNICATION in b.sym.tags:
            out.append(b)
        elif b.subsymbols:
            todo.extend(reversed(b.subsymbols))
    return out


def check_plan(traces, fn_name: str) -> None:
    """Compare the collectives of ``traces`` (a compilation's final traces) across ranks.
    Without a default process group no group exists for a collective to run over: nothing to
    compare, and the traces (every op of a model, decompositions included) are not walked."""
    if not torch.distributed.is_available() or not torch.distributed.is_initialized():
        return
    for group, entries in plans(traces).items():
        pg = group_of(group)
        if pg.size() == 1:
            continue
        mine = [e for e, _ in entries]
        text = json.dumps(mine)
        if text in _agreed[group]:
            continue
        dist = torch.distributed
        store = dist.distributed_c10d._get_default_store()
        n = _compilations[group]
        _compilations[group] += 1
        ranks = dist.get_process_group_ranks(pg)
        me = dist.get_rank()
        key = f"thunder/plan/{group}/{n}"
        store.set(f"{key}/{me}", text)
        others = [f"{key}/{r}" for r in ranks if r != me]
        try:
            store.wait(others, datetime.timedelta(seconds=PLAN_TIMEOUT))
        except Exception:
            raise CollectiveMismatchError(
                f"thunder: {fn_name} was compiled on rank {me} (compilation {n} over process group {group!r}), "
                f"but not all other ranks of the group compiled it within {PLAN_TIMEOUT:.0f} s: a rank that "
                "traced again alone (an input of another shape or value on this rank only) would wait forever in "
                "its first collective. Give every rank inputs of the same shapes."
            ) from None
        for r in ranks:
            if r == me:
                continue
            theirs = json.loads(store.get(f"{key}/{r}"))
            _compare(fn_name, group, me, mine, r, theirs, entries)
        _agreed[group].add(text)


def _compare(fn_name, group, me, mine, r, theirs, entries) -> None:
    def show(e) -> str:
        shape = "x".join(map(str, e.get("shape", []))) or "?"
        return f"{e['op']} of {e['dtype'].replace('torch.', '')}[{shape}] {e['args']}"

    for i, (a, b) in enumerate(zip(mine, theirs)):
        if a != b:
            raise CollectiveMismatchError(
                f"thunder: {fn_name}: the ranks of process group {group!r} would run different collectives: "
                f"collective {i} is {show(a)} on rank {me} but {show(b)} on rank {r} (eager would hang or give a "
                "wrong result)" + at(entries[i][1].source)
            )
    if len(mine) != len(theirs):
        raise CollectiveMismatchError(
            f"thunder: {fn_name}: rank {me} runs {len(mine)} collectives over process group {group!r} but rank "
            f"{r} runs {len(theirs)} (eager would hang)"
            + (at(entries[len(theirs)][1].source) if len(mine) > len(theirs) else "")
        )
