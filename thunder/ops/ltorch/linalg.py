"""Contractions and distances: ``tensordot`` (one matmul between reshaped operands) and
``cdist`` (pairwise p-norm distances)."""

from __future__ import annotations

import math

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch.factories import in_graph_of
from thunder.ops.meta import (
    ShapeError,
    broadcast_shapes,
    canonical_dim,
    device_of,
    dtype_of,
    is_tensor,
    shape_of,
)

_LOW_PRECISION = (torch.bfloat16, torch.float16)


@torchsymbol(torch.tensordot, torch_impl="torch.tensordot", tags=(Tag.MATMUL,))
def tensordot(a, b, dims=2, out=None):
    """Sum over ``dims`` (the last n of ``a`` with the first n of ``b``, or two lists of
    dims): the contracted dims are moved together and flattened into one matmul."""
    op = "torch.tensordot"
    if out is not None:
        raise ShapeError(f"{op}: out= is not supported")
    sa, sb = shape_of(a), shape_of(b)
    if is_tensor(dims):
        raise ShapeError(f"{op}: dims given as a tensor are data-dependent; pass an int or two lists of ints")
    if isinstance(dims, int):
        if dims < 0 or dims > min(len(sa), len(sb)):
            raise ShapeError(f"{op}: dims={dims} is out of range for shapes {sa} and {sb}")
        da, db = list(range(len(sa) - dims, len(sa))), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    da = [canonical_dim(d, len(sa), op) for d in da]
    db = [canonical_dim(d, len(sb), op) for d in db]
    if len(da) != len(db) or any(sa[i] != sb[j] for i, j in zip(da, db)):
        raise ShapeError(f"{op}: contracted dims {da} of {sa} and {db} of {sb} do not match")
    free_a = [i for i in range(len(sa)) if i not in da]
    free_b = [j for j in range(len(sb)) if j not in db]
    k = math.prod(sa[i] for i in da)

    def arrange(x, s, order, shape):
        if order != list(range(len(s))):
            x = prims.transpose(x, tuple(order))
        return prims.reshape(x, shape) if tuple(shape) != shape_of(x) else x

    a2 = arrange(a, sa, free_a + da, (math.prod(sa[i] for i in free_a), k))
    b2 = arrange(b, sb, db + free_b, (k, math.prod(sb[j] for j in free_b)))
    out_shape = tuple(sa[i] for i in free_a) + tuple(sb[j] for j in free_b)
    return prims.reshape(prims.matmul(a2, b2), out_shape)


def _safe_root(s, p: float):
    """s ** (1/p) with a zero gradient where s is 0 (a zero distance), as torch's cdist has."""
    zero = prims.eq(s, 0)
    root = prims.sqrt(prims.where(zero, 1.0, s)) if p == 2 else prims.pow(prims.where(zero, 1.0, s), 1.0 / p)
    return prims.where(zero, 0.0, root)


@torchsymbol(torch.cdist, torch_impl="torch.cdist", tags=(Tag.REDUCTION,))
def cdist(x1, x2, p: float = 2.0, compute_mode: str | None = None):
    """Distances between the rows of ``x1`` (..., P, M) and of ``x2`` (..., R, M): the
    p-norm of every difference, (..., P, R)."""
    op = "torch.cdist"
    s1, s2 = shape_of(x1), shape_of(x2)
    if len(s1) < 2 or len(s2) < 2 or s1[-1] != s2[-1]:
        raise ShapeError(f"{op}: expected (..., P, M) and (..., R, M) with the same M, got {s1} and {s2}")
    if p < 0:
        raise ShapeError(f"{op}: p must be non-negative, got {p}")
    dt = dtype_of(x1)
    if not dt.is_floating_point:
        raise ShapeError(f"{op}: expected floating point inputs, got {dt}")
    batch = broadcast_shapes(s1[:-2], s2[:-2], op=op)
    P, R, M = s1[-2], s2[-2], s1[-1]
    nb = len(batch)
    grid = batch + (P, R, M)
    a = prims.broadcast_in_dim(x1, grid, tuple(range(nb - len(s1) + 2, nb)) + (nb, nb + 2))
    b = prims.broadcast_in_dim(x2, grid, tuple(range(nb - len(s2) + 2, nb)) + (nb + 1, nb + 2))
    if dt in _LOW_PRECISION:
        a, b = prims.convert_element_type(a, torch.float32), prims.convert_element_type(b, torch.float32)
    mag = prims.abs(prims.sub(a, b))
    last = (nb + 2,)
    if p == 0:  # a count: in the inputs' graph with a zero gradient, as torch's
        count = prims.sum(prims.convert_element_type(prims.ne(mag, 0), dtype_of(mag)), last)
        out = in_graph_of(count, prims.sum(mag, last))
    elif p == 1:
        out = prims.sum(mag, last)
    elif p == math.inf:
        out = (
            prims.amax(mag, last)
            if M
            else prims.full(batch + (P, R), 0.0, dtype=dtype_of(mag), device=device_of(mag))
        )
    elif p == 2:
        out = _safe_root(prims.sum(prims.mul(mag, mag), last), 2)
    else:
        out = _safe_root(prims.sum(prims.pow(mag, p), last), p)
    return out if dt not in _LOW_PRECISION else prims.convert_element_type(out, dt)
