"""Scans along a dimension: ``cumprod``, ``logcumsumexp``, ``cummax`` and ``cummin``
(``cumsum`` is a prim).

Each is a prefix scan of an associative operation, composed as log2(n) steps that combine
each element with the one ``2**k`` places before it (an identity value shifted in at the
start): products stay exact for integers and correct where an element is zero, and
``logcumsumexp`` is a running ``logaddexp``, finite for a prefix far below the row's
maximum (a single shift by the maximum would underflow it to -inf). ``cummax``/``cummin``
scan (value, index) pairs: the later element wins a tie and a NaN beats every number, which
is the running extremum and index torch's kernel keeps.
"""

from __future__ import annotations

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import result_type, torchsymbol
from thunder.ops.ltorch.elementwise import logaddexp_core
from thunder.ops.meta import LOW_PRECISION_DTYPES, ShapeError, canonical_dim, device_of, dtype_of, shape_of

T = torch.Tensor


def _shifted(x, d: int, k: int, fill):
    """``x`` moved ``k`` places along ``d``, ``fill`` shifted in at the start."""
    s = shape_of(x)
    lo, hi = [0] * len(s), list(s)
    hi[d] = s[d] - k
    head = prims.slice(x, tuple(lo), tuple(hi), (1,) * len(s))
    fill_shape = list(s)
    fill_shape[d] = k
    return prims.cat([prims.full(tuple(fill_shape), fill, dtype=dtype_of(x), device=device_of(x)), head], d)


def _scan(a, d: int, combine, identity):
    k = 1
    while k < shape_of(a)[d]:
        a = combine(a, _shifted(a, d, k, identity))
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
    x = prims.convert_element_type(a, torch.float32) if dt in LOW_PRECISION_DTYPES else a
    out = _scan(x, d, logaddexp_core, float("-inf"))
    return out if dt not in LOW_PRECISION_DTYPES else prims.convert_element_type(out, dt)


cummax_result = result_type("cummax", ["values", "indices"])
cummin_result = result_type("cummin", ["values", "indices"])


def _cum_extremum(a, dim: int, largest: bool, op: str):
    d = _scan_dim(a, dim, op)
    if d is None:
        return prims.clone(a), prims.full((), 0, dtype=torch.int64, device=device_of(a))
    s, dt = shape_of(a), dtype_of(a)
    if dt is torch.bool:
        worst = not largest
    elif dt.is_floating_point:
        worst = float("-inf") if largest else float("inf")
    else:
        info = torch.iinfo(dt)
        worst = info.min if largest else info.max
    index = prims.broadcast_in_dim(
        prims.iota(s[d], start=0, step=1, dtype=torch.int64, device=device_of(a)), s, (d,)
    )
    values, k = a, 1
    while k < s[d]:
        before_v, before_i = _shifted(values, d, k, worst), _shifted(index, d, k, -1)
        later = prims.ge(values, before_v) if largest else prims.le(values, before_v)
        if dt.is_floating_point:
            later = prims.logical_or(later, prims.isnan(values))
        values = prims.where(later, values, before_v)
        index = prims.where(later, index, before_i)
        k *= 2
    # the values read where the indices point: the gradient goes there, as torch's
    return prims.take_along_axis(a, index, d), index


@torchsymbol(torch.cummax, T.cummax, torch_impl="torch.cummax", tags=(Tag.REDUCTION,))
def cummax(a, dim: int):
    return cummax_result(*_cum_extremum(a, dim, True, "torch.cummax"))


@torchsymbol(torch.cummin, T.cummin, torch_impl="torch.cummin", tags=(Tag.REDUCTION,))
def cummin(a, dim: int):
    return cummin_result(*_cum_extremum(a, dim, False, "torch.cummin"))
