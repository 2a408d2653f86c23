"""``put`` and ``index_reduce``: indexed writes composed of the scatters of
``thunder/ops/ltorch/scatter.py`` (their gradients come from those)."""

from __future__ import annotations

import math

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch.scatter import index_put, scatter_reduce
from thunder.ops.ltorch.shape import wrap_index
from thunder.ops.meta import ShapeError, canonical_dim, dtype_of, shape_of

T = torch.Tensor


@torchsymbol(torch.put, T.put, torch_impl="torch.put", tags=(Tag.INDEXING,))
def put(a, index, source, accumulate: bool = False):
    """``source`` written into the flattened ``a`` at ``index`` (negative from the end;
    ``accumulate``: added, repeated indices adding up)."""
    op = "torch.put"
    if dtype_of(index) is not torch.int64:
        raise ShapeError(f"{op}: index must be an int64 tensor, got {dtype_of(index)}")
    n, k = math.prod(shape_of(a)), math.prod(shape_of(index))
    if math.prod(shape_of(source)) != k:
        raise ShapeError(
            f"{op}: source {shape_of(source)} and index {shape_of(index)} must have as many elements"
        )
    if k == 0:
        return a
    flat = prims.reshape(a, (n,))
    idx = wrap_index(prims.reshape(index, (k,)), n)
    src = prims.reshape(source, (k,))
    return prims.reshape(index_put(flat, (idx,), src, accumulate), shape_of(a))


@torchsymbol(torch.index_reduce, T.index_reduce, torch_impl="torch.index_reduce", tags=(Tag.INDEXING,))
def index_reduce(a, dim: int, index, source, reduce: str, *, include_self: bool = True):
    """The slices of ``source`` combined (prod, mean, amax, amin) into the slices ``index``
    selects along ``dim``: ``scatter_reduce`` with the index spread over the other dims."""
    op = "torch.index_reduce"
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise ShapeError(f"{op}: reduce must be one of prod, mean, amax, amin, got {reduce!r}")
    s = shape_of(source)
    if not shape_of(a):  # a 0-dim tensor: as the one-element vector it views
        one = index_reduce(
            prims.reshape(a, (1,)),
            0,
            prims.reshape(index, (1,)),
            prims.reshape(source, (1,)),
            reduce,
            include_self=include_self,
        )
        return prims.reshape(one, ())
    d = canonical_dim(dim, len(shape_of(a)), op)
    full_index = prims.broadcast_in_dim(index, s, (d,)) if len(s) > 1 else index
    return scatter_reduce(a, d, full_index, source, reduce, include_self=include_self)
