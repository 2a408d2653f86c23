"""Reductions (sum, prod, amax/amin, argmax/argmin, var, cumsum) and the primitives of linear
algebra (matmul, linear, grouped_mm)."""

from __future__ import annotations

import torch

from thunder.core.tags import Tag
from thunder.ops.meta import (
    ShapeError,
    broadcast_shapes,
    canonical_dims,
    common_device,
    dtype_of,
    is_tensor,
    new_tensor,
    shape_of,
)
from thunder.ops.prims.declare import _prim


# -- reductions ---------------------------------------------------------------------------
def _reduction_meta(name: str, rule: str):
    def meta(a, dims, *, dtype=None):
        s = shape_of(a)
        dims = canonical_dims(dims, len(s), f"prims.{name}")
        out = tuple(x for i, x in enumerate(s) if i not in dims)
        dt = dtype or dtype_of(a)
        if rule == "sum" and dtype is None and not (dt.is_floating_point or dt.is_complex):
            dt = torch.int64
        if rule == "index":
            dt = torch.int64
        return new_tensor(out, dt, a.meta_device, a)

    meta.__name__ = f"{name}_meta"
    return meta


sum = _prim("sum", _reduction_meta("sum", "sum"), Tag.REDUCTION)
prod = _prim("prod", _reduction_meta("prod", "sum"), Tag.REDUCTION)
amax = _prim("amax", _reduction_meta("amax", "same"), Tag.REDUCTION)
amin = _prim("amin", _reduction_meta("amin", "same"), Tag.REDUCTION)
argmax = _prim("argmax", _reduction_meta("argmax", "index"), Tag.REDUCTION)
argmin = _prim("argmin", _reduction_meta("argmin", "index"), Tag.REDUCTION)


def _var_meta(a, dims, *, correction):
    s = shape_of(a)
    dims = canonical_dims(dims, len(s), "prims.var")
    dt = dtype_of(a)
    if dt.is_complex:
        dt = torch.float32 if dt is torch.complex64 else torch.float64
    return new_tensor(tuple(x for i, x in enumerate(s) if i not in dims), dt, a.meta_device, a)


var = _prim("var", _var_meta, Tag.REDUCTION)


def _cumsum_meta(a, dim, *, dtype=None):
    dt = dtype or dtype_of(a)
    if dtype is None and not (dt.is_floating_point or dt.is_complex):
        dt = torch.int64
    return new_tensor(shape_of(a), dt, a.meta_device, a)


cumsum = _prim("cumsum", _cumsum_meta, Tag.REDUCTION)


# -- linear algebra -----------------------------------------------------------------------
def _matmul_meta(a, b):
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) == 0 or len(sb) == 0:
        raise ShapeError("prims.matmul: both arguments need at least one dimension")
    if sa[-1] != (sb[0] if len(sb) == 1 else sb[-2]):
        raise ShapeError(f"prims.matmul: shapes {sa} and {sb} cannot be multiplied")
    if dtype_of(a) != dtype_of(b):
        raise ShapeError(f"prims.matmul: expected the same dtype, got {dtype_of(a)} and {dtype_of(b)}")
    if len(sb) == 1:
        out = sa[:-1]
    elif len(sa) == 1:
        out = sb[:-2] + sb[-1:]
    else:
        out = broadcast_shapes(sa[:-2], sb[:-2], op="prims.matmul") + (sa[-2], sb[-1])
    return new_tensor(out, dtype_of(a), common_device("prims.matmul", a, b), a, b)


matmul = _prim("matmul", _matmul_meta)


def _linear_meta(a, w, bias):
    sa, sw = shape_of(a), shape_of(w)
    if sa[-1] != sw[-1]:
        raise ShapeError(f"prims.linear: input {sa} and weight {sw} do not match")
    if dtype_of(a) != dtype_of(w):
        raise ShapeError(f"prims.linear: expected the same dtype, got {dtype_of(a)} and {dtype_of(w)}")
    out = sa[:-1] + (sw[0],) if len(sw) == 2 else sa[:-1]
    return new_tensor(
        out, dtype_of(a), common_device("prims.linear", a, w, *(bias,) * is_tensor(bias)), a, w, bias
    )


linear = _prim("linear", _linear_meta)


def _grouped_mm_meta(a, b, offs):
    """``torch._grouped_mm``'s ragged forms, ``offs`` the (G,) ends of G runs: the rows of ``a``
    (M, K) in run g times ``b[g]`` of ``b`` (G, K, N), giving (M, N) (a mixture of experts'
    layer); or, ``b`` 2-D (K, N), run g of the K dimension, giving (G, M, N) (that layer's
    weight gradient)."""
    sa, sb, so = shape_of(a), shape_of(b), shape_of(offs)
    if dtype_of(offs) not in (torch.int32, torch.int64) or len(so) != 1:
        raise ShapeError(f"prims.grouped_mm: offs must be a 1-D integer tensor, got {dtype_of(offs)} {so}")
    if dtype_of(a) != dtype_of(b):
        raise ShapeError(f"prims.grouped_mm: expected the same dtype, got {dtype_of(a)} and {dtype_of(b)}")
    if len(sa) == 2 and len(sb) == 3 and sa[1] == sb[1] and so[0] == sb[0]:
        out = (sa[0], sb[2])
    elif len(sa) == 2 and len(sb) == 2 and sa[1] == sb[0]:
        out = (so[0], sa[0], sb[1])
    else:
        raise ShapeError(
            f"prims.grouped_mm: shapes {sa} and {sb} with {so[0]} groups are neither (M, K) x (G, K, N) nor "
            "(M, K) x (K, N)"
        )
    return new_tensor(out, dtype_of(a), common_device("prims.grouped_mm", a, b, offs), a, b)


grouped_mm = _prim("grouped_mm", _grouped_mm_meta)
