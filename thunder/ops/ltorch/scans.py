"""Scans along a dimension: ``cumprod`` and ``logcumsumexp`` (``cumsum`` is a prim).

Both are prefix scans of an associative operation, composed as log2(n) steps that combine
each element with the one ``2**k`` places before it (an identity value shifted in at the
start): products stay exact for integers and correct where an element is zero, and
``logcumsumexp`` is a running ``logaddexp``, finite for a prefix far below the row's
maximum (a single shift by the maximum would underflow it to -inf).
"""

from __future__ import annotations

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch.elementwise import logaddexp_core
from thunder.ops.meta import ShapeError, canonical_dim, device_of, dtype_of, shape_of

T = torch.Tensor
_LOW_PRECISION = (torch.bfloat16, torch.float16)


def _scan(a, d: int, combine, identity):
    s = shape_of(a)
    n = s[d]
    k = 1
    while k < n:
        lo, hi = [0] * len(s), list(s)
        hi[d] = n - k
        head = prims.slice(a, tuple(lo), tuple(hi), (1,) * len(s))
        fill_shape = list(s)
        fill_shape[d] = k
        fill = prims.full(tuple(fill_shape), identity, dtype=dtype_of(a), device=device_of(a))
        a = combine(a, prims.cat([fill, head], d))
        k *= 2
    return a


def _scan_dim(a, dim: int, op: str) -> int | None:
    s = shape_of(a)
    d = canonical_dim(dim, len(s), op)
    return d if s else None


@torchsymbol(torch.cumprod, T.cumprod, torch_impl="torch.cumprod", tags=(Tag.REDUCTION,))
def cumprod(a, dim: int, *, dtype: torch.dtype | None = None):
    op = "torch.cumprod"
    d = _scan_dim(a, dim, op)
    if dtype is not None and dtype is not dtype_of(a):
        a = prims.convert_element_type(a, dtype)
    elif not (dtype_of(a).is_floating_point or dtype_of(a).is_complex):
        a = prims.convert_element_type(a, torch.int64)  # integers and bools multiply as int64
    if d is None:
        return a
    one = 1 if not dtype_of(a).is_floating_point else 1.0
    return _scan(a, d, prims.mul, one)


@torchsymbol(torch.logcumsumexp, T.logcumsumexp, torch_impl="torch.logcumsumexp", tags=(Tag.REDUCTION,))
def logcumsumexp(a, dim: int):
    op = "torch.logcumsumexp"
    dt = dtype_of(a)
    if not dt.is_floating_point:
        raise ShapeError(f"{op}: expected a floating point input, got {dt}")
    d = _scan_dim(a, dim, op)
    if d is None:
        return a
    x = prims.convert_element_type(a, torch.float32) if dt in _LOW_PRECISION else a
    out = _scan(x, d, logaddexp_core, float("-inf"))
    return out if dt not in _LOW_PRECISION else prims.convert_element_type(out, dt)
