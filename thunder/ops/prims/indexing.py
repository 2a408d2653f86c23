"""Indexing primitives: gathers (take, take_along_axis), writes at indices (index_copy,
scatter, scatter_add, scatter_reduce, index_put) and topk."""

from __future__ import annotations

import torch

from thunder.ops.meta import ShapeError, dtype_of, new_tensor, shape_of
from thunder.ops.prims.declare import _prim


# -- indexing -----------------------------------------------------------------------------
def _take_meta(a, index, dim):
    s = list(shape_of(a))
    if dtype_of(index) not in (torch.int64, torch.int32):
        raise ShapeError(f"prims.take: index must be an integer tensor, got {dtype_of(index)}")
    s[dim : dim + 1] = list(shape_of(index))
    return new_tensor(tuple(s), dtype_of(a), a.meta_device, a)


take = _prim("take", _take_meta)


def _take_along_axis_meta(a, index, dim):
    return new_tensor(shape_of(index), dtype_of(a), a.meta_device, a)


take_along_axis = _prim("take_along_axis", _take_along_axis_meta)


def _index_copy_meta(a, index, dim, src):
    return new_tensor(shape_of(a), dtype_of(a), a.meta_device, a, src)


index_copy = _prim("index_copy", _index_copy_meta)


def _check_scatter(op: str, a, dim, index, src) -> None:
    sa, si, ss = shape_of(a), shape_of(index), shape_of(src)
    if dtype_of(index) is not torch.int64:
        raise ShapeError(f"{op}: index must be an int64 tensor, got {dtype_of(index)}")
    if not len(sa) == len(si) == len(ss):
        raise ShapeError(f"{op}: input {sa}, index {si} and src {ss} must have the same number of dimensions")
    for d, (n, i, m) in enumerate(zip(sa, si, ss)):
        if i > m or (d != dim and i > n):
            raise ShapeError(
                f"{op}: index {si} is larger than src {ss} or input {sa} outside dimension {dim}"
            )


def _scatter_add_meta(a, dim, index, src):
    _check_scatter("prims.scatter_add", a, dim, index, src)
    return new_tensor(shape_of(a), dtype_of(a), a.meta_device, a, src)


scatter_add = _prim("scatter_add", _scatter_add_meta)


def _scatter_meta(a, dim, index, src):
    _check_scatter("prims.scatter", a, dim, index, src)
    return new_tensor(shape_of(a), dtype_of(a), a.meta_device, a, src)


# writes src[i] at a[index[i]] along ``dim`` (last write wins where indices repeat, as torch's
# kernel does): a sum of one-hot terms cannot say which write wins, so this is a prim
scatter = _prim("scatter", _scatter_meta)

SCATTER_REDUCTIONS = ("prod", "amax", "amin")


def _scatter_reduce_meta(a, dim, index, src, reduce, include_self):
    if reduce not in SCATTER_REDUCTIONS:
        raise ShapeError(f"prims.scatter_reduce: reduce must be one of {SCATTER_REDUCTIONS}, got {reduce!r}")
    _check_scatter("prims.scatter_reduce", a, dim, index, src)
    return new_tensor(shape_of(a), dtype_of(a), a.meta_device, a, src)


# product, maximum or minimum of the values scattered to each position (and the input's own,
# with ``include_self``); sums and means are compositions of ``scatter_add``
scatter_reduce = _prim("scatter_reduce", _scatter_reduce_meta)


def _index_put_meta(a, indices, values, accumulate):
    return new_tensor(shape_of(a), dtype_of(a), a.meta_device, a, values)


index_put = _prim("index_put", _index_put_meta)


def _topk_meta(a, k, dim, largest, sorted):
    s = list(shape_of(a))
    s[dim] = k
    return (
        new_tensor(tuple(s), dtype_of(a), a.meta_device, a),
        new_tensor(tuple(s), torch.int64, a.meta_device),
    )


topk = _prim("topk", _topk_meta)
