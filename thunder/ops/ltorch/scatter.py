"""Indexed writes: ``scatter``, ``scatter_add``, ``scatter_reduce``, ``index_put``,
``index_add``, ``index_copy``, ``index_fill``, ``masked_scatter`` (out of place; the in-place
``x.scatter_(...)`` forms are made functional by the frontend).

Sums and means are compositions of ``prims.scatter_add``; a plain scatter, where a later
write wins over an earlier one at a repeated index, is ``prims.scatter``; products, maxima
and minima are ``prims.scatter_reduce``. ``index_put`` shares the indexing machinery of
``a[key] = value``.
"""

from __future__ import annotations

import math

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch.factories import _cast_number
from thunder.ops.ltorch.inplace import write_indexed
from thunder.ops.ltorch.shape import wrap_index
from thunder.ops.meta import (
    ShapeError,
    broadcast_shapes,
    canonical_dim,
    device_of,
    dtype_of,
    is_tensor,
    shape_of,
)

T = torch.Tensor


def _dim(a, dim: int, op: str) -> int:
    return canonical_dim(dim, len(shape_of(a)), op)


def _filled(index, value, like):
    """A tensor shaped like ``index`` holding ``value`` in ``like``'s dtype."""
    return prims.full(
        shape_of(index), _cast_number(value, dtype_of(like)), dtype=dtype_of(like), device=device_of(like)
    )


def _src(src, index, a, op: str):
    """``src`` as a tensor of ``a``'s dtype: a number fills the index's shape."""
    if not is_tensor(src):
        return _filled(index, src, a)
    if dtype_of(src) is not dtype_of(a):
        raise ShapeError(f"{op}: src ({dtype_of(src)}) must have the input's dtype ({dtype_of(a)})")
    return src


@torchsymbol(torch.scatter, T.scatter, torch_impl="torch.scatter", tags=(Tag.INDEXING,))
def scatter(a, dim: int, index, src=None, *, value=None, reduce: str | None = None):
    """``a`` with ``src`` (a tensor, or a number ``value``) written at ``index`` along ``dim``;
    ``reduce="add"``/``"multiply"`` combines instead of overwriting."""
    op = "torch.scatter"
    d = _dim(a, dim, op)
    src = _src(value if src is None else src, index, a, op)
    a, index, src, back = _aligned(a, index, src)
    if reduce is None:
        return back(prims.scatter(a, d, index, src))
    if reduce == "add":
        return back(prims.scatter_add(a, d, index, src))
    if reduce == "multiply":
        return back(prims.scatter_reduce(a, d, index, src, "prod", True))
    raise ShapeError(f"{op}: reduce must be 'add' or 'multiply', got {reduce!r}")


@torchsymbol(torch.scatter_add, T.scatter_add, torch_impl="torch.scatter_add", tags=(Tag.INDEXING,))
def scatter_add(a, dim: int, index, src):
    d = _dim(a, dim, "torch.scatter_add")
    a, index, src, back = _aligned(a, index, src)
    return back(prims.scatter_add(a, d, index, src))


@torchsymbol(torch.scatter_reduce, T.scatter_reduce, torch_impl="torch.scatter_reduce", tags=(Tag.INDEXING,))
def scatter_reduce(a, dim: int, index, src, reduce: str, *, include_self: bool = True):
    """sum and mean compose ``scatter_add`` (a mean divides by the number of values each
    position received, counting its own with ``include_self``; integers floor-divide, as
    torch does); prod, amax and amin are ``prims.scatter_reduce``."""
    op = "torch.scatter_reduce"
    d = _dim(a, dim, op)
    src = _src(src, index, a, op)
    a, index, src, back = _aligned(a, index, src)
    if reduce in prims.SCATTER_REDUCTIONS:
        return back(prims.scatter_reduce(a, d, index, src, reduce, include_self))
    if reduce not in ("sum", "mean"):
        raise ShapeError(f"{op}: reduce must be one of sum, prod, mean, amax, amin, got {reduce!r}")
    base = a if include_self else prims.scatter(a, d, index, _filled(index, 0, a))
    total = prims.scatter_add(base, d, index, src)
    if reduce == "sum":
        return back(total)
    ones = _filled(index, 1, a)
    count = prims.scatter_add(
        prims.full(shape_of(a), int(include_self), dtype=dtype_of(a), device=device_of(a)), d, index, ones
    )
    count = prims.where(prims.eq(count, 0), 1, count)
    dt = dtype_of(a)
    if dt.is_floating_point or dt.is_complex:
        return back(prims.div(total, count))
    return back(prims.floor_divide(total, count))


def _aligned(a, index, src):
    """(a, index, src, back) as the prims take them: an int32 index as int64; only the part
    of ``src`` the index covers (torch reads no more of it, so the rest gets no gradient);
    a 0-dim ``a`` (with a one-element index and src) as a vector, ``back`` making the result
    0-dim again."""
    if dtype_of(index) is torch.int32:
        index = prims.convert_element_type(index, torch.int64)
    back = _same
    if not shape_of(a):
        a, back = prims.reshape(a, (1,)), _to_scalar
        index = prims.reshape(index, (1,)) if shape_of(index) != (1,) else index
        src = prims.reshape(src, (1,)) if shape_of(src) != (1,) else src
    si, ss = shape_of(index), shape_of(src)
    if si != ss and len(si) == len(ss) and all(i <= j for i, j in zip(si, ss)):
        src = prims.slice_prim(src, (0,) * len(si), tuple(si), (1,) * len(si))
    return a, index, src, back


def _same(x):
    return x


def _to_scalar(x):
    return prims.reshape(x, ())


@torchsymbol(torch.index_put, T.index_put, torch_impl="torch.index_put", tags=(Tag.INDEXING,))
def index_put(a, indices, values, accumulate: bool = False):
    """``a[indices] = values`` (``accumulate``: ``+=``, repeated indices adding up); a None
    among ``indices`` takes its whole dimension."""
    key = tuple(slice(None) if i is None else i for i in indices)
    return write_indexed(a, key, values, accumulate, "torch.index_put")


@torchsymbol(torch.index_add, T.index_add, torch_impl="torch.index_add", tags=(Tag.INDEXING,))
def index_add(a, dim: int, index, source, *, alpha=1):
    d = _dim(a, dim, "torch.index_add")
    if not shape_of(a):  # a 0-dim tensor: as the one-element vector it views
        return prims.reshape(
            index_add(prims.reshape(a, (1,)), 0, index, prims.reshape(source, (1,)), alpha=alpha), ()
        )
    if dtype_of(index) is not torch.int64:  # torch takes int32 (and uint8) indices too
        index = prims.convert_element_type(index, torch.int64)
    src = shape_of(source)
    full_index = prims.broadcast_in_dim(index, src, (d,)) if src else index
    if alpha != 1:
        source = prims.mul(source, alpha)
    return prims.scatter_add(a, d, full_index, source)


@torchsymbol(torch.index_copy, T.index_copy, torch_impl="torch.index_copy", tags=(Tag.INDEXING,))
def index_copy(a, dim: int, index, source):
    return prims.index_copy(a, index, _dim(a, dim, "torch.index_copy"), source)


@torchsymbol(torch.index_fill, T.index_fill, torch_impl="torch.index_fill", tags=(Tag.INDEXING,))
def index_fill(a, dim: int, index, value):
    """``value`` (a number or a 0-dim tensor) in the slices ``index`` selects along ``dim``:
    a position is filled when it equals any of the (wrapped) indices."""
    op = "torch.index_fill"
    s = shape_of(a)
    if len(shape_of(index)) > 1:
        raise ShapeError(f"{op}: index must be a vector or a 0-dim tensor, got shape {shape_of(index)}")
    d = _dim(a, dim, op) if s else 0
    n, k = (s[d] if s else 1), math.prod(shape_of(index))
    if k == 0:
        return a
    idx = wrap_index(prims.reshape(index, (k,)) if shape_of(index) != (k,) else index, n)
    pos = prims.iota(n, start=0, step=1, dtype=torch.int64, device=device_of(a))
    hit = prims.amax(
        prims.eq(prims.broadcast_in_dim(pos, (n, k), (0,)), prims.broadcast_in_dim(idx, (n, k), (1,))), (1,)
    )
    mask = prims.broadcast_in_dim(hit, s, (d,)) if s else prims.reshape(hit, ())
    return prims.where(mask, _value(value, a, op), a)


def _value(value, a, op: str):
    if is_tensor(value):
        if shape_of(value):
            raise ShapeError(f"{op}: value must be a number or a 0-dim tensor, got shape {shape_of(value)}")
        return value if dtype_of(value) is dtype_of(a) else prims.convert_element_type(value, dtype_of(a))
    return _cast_number(value, dtype_of(a))


@torchsymbol(torch.masked_scatter, T.masked_scatter, torch_impl="torch.masked_scatter", tags=(Tag.INDEXING,))
def masked_scatter(a, mask, source):
    """Where ``mask`` holds, the next element of ``source`` (in row-major order): the k-th True
    takes ``source.flatten()[k]``, its position found by a running count of the mask."""
    op = "torch.masked_scatter"
    if dtype_of(mask) is not torch.bool:
        raise ShapeError(f"{op}: mask must be a bool tensor, got {dtype_of(mask)}")
    shape = broadcast_shapes(shape_of(a), shape_of(mask), op=op)
    a_b = _expand(a, shape)
    m = math.prod(shape_of(source))
    if m == 0:
        return a_b  # an empty source: a mask that selects anything is an error in eager
    n = math.prod(shape)
    flat_mask = prims.reshape(_expand(mask, shape), (n,))
    rank = prims.sub(prims.cumsum(prims.convert_element_type(flat_mask, torch.int64), 0), 1)
    src = prims.reshape(source, (m,)) if shape_of(source) != (m,) else source
    picked = prims.take(src, prims.maximum(rank, 0), 0)
    return prims.reshape(prims.where(flat_mask, picked, prims.reshape(a_b, (n,))), shape)


def _expand(x, shape):
    s = shape_of(x)
    if s == tuple(shape):
        return x
    return prims.broadcast_in_dim(x, tuple(shape), tuple(range(len(shape) - len(s), len(shape))))
