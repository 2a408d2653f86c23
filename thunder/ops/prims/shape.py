"""Shape primitives: broadcast_in_dim, reshape, transpose, slice, squeeze, cat, flip and
bitcast (the same bytes read as another dtype)."""

from __future__ import annotations

import builtins
import math

from thunder.core.tags import Tag
from thunder.ops.meta import (
    ShapeError,
    canonical_dim,
    common_device,
    dtype_of,
    new_tensor,
    result_dtype,
    shape_of,
)
from thunder.ops.prims.declare import _prim


# -- shape --------------------------------------------------------------------------------
def _broadcast_in_dim_meta(a, shape, broadcast_dims):
    ashape = shape_of(a)
    if len(broadcast_dims) != len(ashape):
        raise ShapeError(f"prims.broadcast_in_dim: {len(ashape)} dims but broadcast_dims={broadcast_dims}")
    for d, bd in zip(ashape, broadcast_dims):
        if d != 1 and d != shape[bd]:
            raise ShapeError(f"prims.broadcast_in_dim: cannot broadcast {ashape} to {tuple(shape)}")
    return new_tensor(tuple(shape), dtype_of(a), a.meta_device, a)


broadcast_in_dim = _prim("broadcast_in_dim", _broadcast_in_dim_meta, Tag.SHAPE)


def _reshape_meta(a, shape):
    n = math.prod(shape_of(a))
    if math.prod(shape) != n:
        raise ShapeError(f"prims.reshape: shape {tuple(shape)} is invalid for a tensor of {n} elements")
    return new_tensor(tuple(shape), dtype_of(a), a.meta_device, a)


reshape = _prim("reshape", _reshape_meta, Tag.SHAPE)


def _transpose_meta(a, permutation):
    s = shape_of(a)
    if sorted(permutation) != list(range(len(s))):
        raise ShapeError(f"prims.transpose: {permutation} is not a permutation of {len(s)} dims")
    return new_tensor(tuple(s[p] for p in permutation), dtype_of(a), a.meta_device, a)


transpose = _prim("transpose", _transpose_meta, Tag.SHAPE)


def _slice_meta(a, start_indices, end_indices, strides=None):
    s = shape_of(a)
    strides = strides or (1,) * len(s)
    out = []
    for lo, hi, st, d in zip(start_indices, end_indices, strides, s):
        if not (0 <= lo <= hi <= d) or st < 1:
            raise ShapeError(f"prims.slice: bad slice [{lo}:{hi}:{st}] of a dimension of length {d}")
        out.append((hi - lo + st - 1) // st)
    return new_tensor(tuple(out), dtype_of(a), a.meta_device, a)


# bound as ``slice`` at the end of ``thunder/ops/prims/__init__.py`` (``prims.slice`` in printed traces)
slice_prim = _prim("slice", _slice_meta, Tag.SHAPE)


def _squeeze_meta(a, dims):
    s = shape_of(a)
    for d in dims:
        if s[d] != 1:
            raise ShapeError(f"prims.squeeze: dimension {d} has length {s[d]}, not 1")
    return new_tensor(tuple(x for i, x in enumerate(s) if i not in dims), dtype_of(a), a.meta_device, a)


squeeze = _prim("squeeze", _squeeze_meta, Tag.SHAPE)


def _cat_meta(tensors, dim):
    if not tensors:
        raise ShapeError("prims.cat: expected a non-empty list of tensors")
    shapes = [shape_of(t) for t in tensors]
    ref = shapes[0]
    dim = canonical_dim(dim, len(ref), "prims.cat")
    for s in shapes:
        if len(s) != len(ref) or any(x != y for i, (x, y) in enumerate(zip(s, ref)) if i != dim):
            raise ShapeError(f"prims.cat: shapes {shapes} do not match outside dimension {dim}")
    out = list(ref)
    out[dim] = builtins.sum(s[dim] for s in shapes)
    return new_tensor(tuple(out), result_dtype(*tensors), common_device("prims.cat", *tensors), *tensors)


cat = _prim("cat", _cat_meta, Tag.SHAPE)


def _flip_meta(a, dims):
    return new_tensor(shape_of(a), dtype_of(a), a.meta_device, a)


flip = _prim("flip", _flip_meta, Tag.SHAPE)


def _bitcast_meta(a, dtype):
    """Each element's bytes read as ``dtype``; of another size, the last dim holds as many
    bytes as before (eager's ``Tensor.view(dtype)``). The result is outside the autograd graph,
    as eager's (its autograd does not differentiate the reinterpretation)."""
    s, old, new = shape_of(a), dtype_of(a).itemsize, dtype.itemsize
    if old != new:
        if not s or (s[-1] * old) % new:
            raise ShapeError(
                f"Tensor.view({dtype}): a tensor of shape {s} and {dtype_of(a)} cannot be viewed as {dtype}: "
                f"the last dim's {s[-1] * old if s else old} bytes are not a multiple of {new}"
                + (" (a 0-dim tensor keeps its size)" if not s else "")
            )
        s = s[:-1] + (s[-1] * old // new,)
    return new_tensor(s, dtype, a.meta_device)


bitcast = _prim("bitcast", _bitcast_meta, Tag.SHAPE)
