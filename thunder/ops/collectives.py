"""Collectives of ``torch.distributed`` as prims: each moves tensors between the ranks of a
process group, and is run by the torch executor through torch's own functional collectives
(``torch.ops._c10d_functional``), on the group the trace names.

Every collective is asynchronous in the trace: a start (``prims.all_reduce``,
``prims.all_gather``, ``prims.reduce_scatter``, ``prims.broadcast``,
``prims.all_to_all_single``) whose output may only be read through the ``prims.wait`` that
ends it. What sits between a start and its wait is what overlaps the communication; a
synchronous call (``dist.all_reduce(t)``) is a start followed at once by its wait.

A process group is named in the trace by its name (``ProcessGroup.group_name``, ``'0'`` for
the default group), a string that prints, compares and pickles; ``group_of`` finds the
group again when the program runs. Reductions are named by strings as the functional
collectives name them (``'sum'``, ``'avg'``, ``'product'``, ``'min'``, ``'max'``).

Tagged ``Tag.COMMUNICATION``, so passes and the explorer find them without naming them.
"""

from __future__ import annotations

import torch

from thunder.core.symbol import Symbol, register
from thunder.core.tags import Tag
from thunder.ops.meta import ShapeError, dtype_of, is_tensor, new_tensor, shape_of

__all__ = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all_single", "wait"]

REDUCE_OPS = ("sum", "avg", "product", "min", "max")


def group_of(name: str):
    """The process group named ``name`` (a clear error once it was destroyed, or if
    torch.distributed was never initialised)."""
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized():
        raise ShapeError(
            f"thunder: the process group {name!r} is unknown: torch.distributed is not initialised in this "
            "process (call torch.distributed.init_process_group first)"
        )
    try:
        return torch._C._distributed_c10d._resolve_process_group(name)
    except (RuntimeError, ValueError) as e:
        raise ShapeError(
            f"thunder: the process group {name!r} is unknown to torch.distributed (destroyed, or made in another "
            f"process): {e}"
        ) from None


def group_size(name: str) -> int:
    return group_of(name).size()


def _start(name: str, meta) -> Symbol:
    # printed as ``prims.<name>`` (``thunder.ops.prims`` re-exports these)
    return register(
        Symbol(name, "prims", meta=meta, tags=(Tag.PRIM, Tag.COMMUNICATION), module_path="thunder.ops.prims")
    )


def _tensor(a, op: str):
    if not is_tensor(a):
        raise ShapeError(f"prims.{op}: expected a tensor, got {type(a).__name__}")
    return a


def _reduce_op(op, name: str) -> None:
    if op not in REDUCE_OPS:
        raise ShapeError(f"prims.{name}: the reduction must be one of {REDUCE_OPS}, got {op!r}")


def _like(a, shape=None):
    return new_tensor(tuple(shape_of(a)) if shape is None else tuple(shape), dtype_of(a), a.meta_device, a)


def _all_reduce_meta(a, op, group):
    _tensor(a, "all_reduce")
    _reduce_op(op, "all_reduce")
    group_size(group)
    return _like(a)


def _all_gather_meta(a, group):
    s = shape_of(_tensor(a, "all_gather"))
    if not s:
        raise ShapeError("prims.all_gather: expected a tensor of at least one dimension, got a 0-d tensor")
    return _like(a, (s[0] * group_size(group), *s[1:]))


def _reduce_scatter_meta(a, op, group):
    s = shape_of(_tensor(a, "reduce_scatter"))
    _reduce_op(op, "reduce_scatter")
    n = group_size(group)
    if not s or s[0] % n:
        raise ShapeError(
            f"prims.reduce_scatter: the first dimension of a tensor of shape {tuple(s)} must be a multiple of the "
            f"group's size {n}"
        )
    return _like(a, (s[0] // n, *s[1:]))


def _broadcast_meta(a, src, group):
    _tensor(a, "broadcast")
    if not isinstance(src, int):
        raise ShapeError(f"prims.broadcast: src must be a rank (an int), got {src!r}")
    group_size(group)
    return _like(a)


def _all_to_all_single_meta(a, output_split_sizes, input_split_sizes, group):
    s = shape_of(_tensor(a, "all_to_all_single"))
    n = group_size(group)
    for what, splits in (("input", input_split_sizes), ("output", output_split_sizes)):
        if splits is not None and len(splits) != n:
            raise ShapeError(f"prims.all_to_all_single: {len(splits)} {what} splits for a group of {n} ranks")
    if input_split_sizes is not None and sum(input_split_sizes) != s[0]:
        raise ShapeError(
            f"prims.all_to_all_single: the input splits {list(input_split_sizes)} do not add up to the first "
            f"dimension {s[0]}"
        )
    if output_split_sizes is not None:
        return _like(a, (sum(output_split_sizes), *s[1:]))
    if not s or s[0] % n:
        raise ShapeError(
            f"prims.all_to_all_single: without splits the first dimension of {tuple(s)} must be a multiple of {n}"
        )
    return _like(a)


def _wait_meta(a):
    return _like(_tensor(a, "wait"))


all_reduce = _start("all_reduce", _all_reduce_meta)
all_gather = _start("all_gather", _all_gather_meta)
reduce_scatter = _start("reduce_scatter", _reduce_scatter_meta)
broadcast = _start("broadcast", _broadcast_meta)
all_to_all_single = _start("all_to_all_single", _all_to_all_single_meta)
wait = _start("wait", _wait_meta)

STARTS = frozenset({all_reduce, all_gather, reduce_scatter, broadcast, all_to_all_single})


def bytes_moved(sym: Symbol, inputs: list, outputs: list) -> int:
    """The bytes one rank sends or receives in the collective ``sym``: the reduced tensor for
    all_reduce, reduce_scatter and all_to_all, the gathered output for all_gather, the tensor
    for broadcast; 0 for a wait. ``inputs``/``outputs`` are the tensor proxies (or tensors)."""

    def nbytes(t) -> int:
        n = 1
        for d in shape_of(t):
            n *= d
        return n * dtype_of(t).itemsize

    if sym is wait or not inputs:
        return 0
    if sym is all_gather:
        return nbytes(outputs[0]) if outputs else 0
    return nbytes(inputs[0])
