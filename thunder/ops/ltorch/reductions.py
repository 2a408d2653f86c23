"""Reductions: sum/mean/prod, nanmean, amax/amin, aminmax, max/min, argmax, var/std, norms,
softmax, cumsum.

``dim=None`` (or an empty list, as torch reads it) reduces every dimension; ``keepdim``
puts the reduced dimensions back as size 1 with ``prims.broadcast_in_dim``. bfloat16 and
float16 inputs are reduced in float32 and cast back once, as torch's kernels accumulate.
"""

from __future__ import annotations

import builtins
import math

import torch
import torch.nn.functional as F

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import result_type, torchsymbol
from thunder.ops.ltorch.factories import in_graph_of
from thunder.ops.meta import (
    LOW_PRECISION_DTYPES,
    ShapeError,
    canonical_dims,
    device_of,
    dtype_of,
    is_tensor,
    shape_of,
)

T = torch.Tensor

# What ``torch.max(x, dim)`` returns: a pair readable as ``.values`` / ``.indices``.
max_result = result_type("max", ["values", "indices"])
min_result = result_type("min", ["values", "indices"])


def reduction_dims(a, dim, op: str) -> tuple[int, ...]:
    """Canonical reduced dims; ``None`` and ``[]`` mean all of them (none for a 0-dim tensor)."""
    n = len(shape_of(a))
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(n))
    dims = canonical_dims(dim, n, op)
    return dims if n else ()


def keep_dims(out, shape, dims):
    """Put the reduced ``dims`` of ``shape`` back into ``out`` as size-1 dimensions."""
    if not dims:
        return out
    kept = tuple(1 if i in dims else s for i, s in enumerate(shape))
    return prims.broadcast_in_dim(out, kept, tuple(i for i in range(len(shape)) if i not in dims))


def _maybe_keep(out, a, dims, keepdim: bool):
    return keep_dims(out, shape_of(a), dims) if keepdim else out


def _cast(a, dtype):
    return a if dtype is None or dtype_of(a) is dtype else prims.convert_element_type(a, dtype)


def _upcast(a):
    """(a in float32 if it is bfloat16/float16, the dtype to cast the result back to)."""
    dt = dtype_of(a)
    if dt in LOW_PRECISION_DTYPES:
        return prims.convert_element_type(a, torch.float32), dt
    return a, None


def _reduce(prim, a, dims, **kwargs):
    """``prim`` over ``dims``; reducing no dimension (a 0-dim tensor) is the identity."""
    if not dims:
        return a
    return prim(a, dims, **kwargs)


def _numel(shape, dims) -> int:
    return math.prod(shape[d] for d in dims)


def _require_float(a, op: str):
    dt = dtype_of(a)
    if not (dt.is_floating_point or dt.is_complex):
        raise ShapeError(f"{op}: expected a floating point or complex input, got {dt}")


# -- sums and products ----------------------------------------------------------------------
def _sum_like(a, dims, dtype, keepdim, prim, op):
    a = _cast(a, dtype)
    a_up, back = _upcast(a)
    if dims:
        out = prim(a_up, dims)  # the prim sums integers and bools as int64
    elif not (dtype_of(a).is_floating_point or dtype_of(a).is_complex):
        out = _cast(a_up, torch.int64)
    else:
        out = a_up
    return _maybe_keep(_cast(out, back), a, dims, keepdim)


@torchsymbol(torch.sum, T.sum, torch_impl="torch.sum", tags=(Tag.REDUCTION,))
def sum(a, dim=None, keepdim: bool = False, *, dtype: torch.dtype | None = None):
    return _sum_like(a, reduction_dims(a, dim, "torch.sum"), dtype, keepdim, prims.sum, "torch.sum")


@torchsymbol(torch.nansum, T.nansum, torch_impl="torch.nansum", tags=(Tag.REDUCTION,))
def nansum(a, dim=None, keepdim: bool = False, *, dtype: torch.dtype | None = None):
    if dtype_of(a).is_floating_point:
        a = prims.where(prims.isnan(a), 0, a)
    return _sum_like(a, reduction_dims(a, dim, "torch.nansum"), dtype, keepdim, prims.sum, "torch.nansum")


@torchsymbol(torch.prod, T.prod, torch_impl="torch.prod", tags=(Tag.REDUCTION,))
def prod(a, dim: int | None = None, keepdim: bool = False, *, dtype: torch.dtype | None = None):
    if dim is not None and not isinstance(dim, int):
        raise ShapeError(f"torch.prod: dim must be an int, got {dim!r}")
    return _sum_like(a, reduction_dims(a, dim, "torch.prod"), dtype, keepdim, prims.prod, "torch.prod")


@torchsymbol(torch.mean, T.mean, torch_impl="torch.mean", tags=(Tag.REDUCTION,))
def mean(a, dim=None, keepdim: bool = False, *, dtype: torch.dtype | None = None):
    a = _cast(a, dtype)
    _require_float(a, "torch.mean")
    dims = reduction_dims(a, dim, "torch.mean")
    a_up, back = _upcast(a)
    out = _reduce(prims.sum, a_up, dims)
    if dims:
        out = prims.div(out, _numel(shape_of(a), dims))
    return _maybe_keep(_cast(out, back), a, dims, keepdim)


@torchsymbol(torch.nanmean, T.nanmean, torch_impl="torch.nanmean", tags=(Tag.REDUCTION,))
def nanmean(a, dim=None, keepdim: bool = False, *, dtype: torch.dtype | None = None):
    """The mean of the elements that are not NaN (NaN where all are): ``nansum`` over their
    count, as torch computes it."""
    _require_float(a, "torch.nanmean")
    count = sum(prims.logical_not(prims.isnan(a)), dim, keepdim)
    return prims.div(nansum(a, dim, keepdim, dtype=dtype), count)


@torchsymbol(torch.count_nonzero, T.count_nonzero, torch_impl="torch.count_nonzero", tags=(Tag.REDUCTION,))
def count_nonzero(a, dim=None):
    dims = reduction_dims(a, dim, "torch.count_nonzero")
    nz = prims.convert_element_type(prims.ne(a, 0), torch.int64)
    return _reduce(prims.sum, nz, dims)


@torchsymbol(torch.cumsum, T.cumsum, torch_impl="torch.cumsum", tags=(Tag.REDUCTION,))
def cumsum(a, dim: int, *, dtype: torch.dtype | None = None):
    (d,) = canonical_dims(dim, len(shape_of(a)), "torch.cumsum") or (0,)
    if not shape_of(a):
        return _sum_like(a, (), dtype, False, prims.sum, "torch.cumsum")
    return prims.cumsum(a, d, dtype=dtype)


# -- extrema --------------------------------------------------------------------------------
def _extremum(prim, a, dim, keepdim, op):
    dims = reduction_dims(a, dim, op)
    if builtins.any(shape_of(a)[d] == 0 for d in dims):
        raise ShapeError(f"{op}: cannot reduce over a zero-size dimension of shape {shape_of(a)}")
    return _maybe_keep(_reduce(prim, a, dims), a, dims, keepdim)


@torchsymbol(torch.amax, T.amax, torch_impl="torch.amax", tags=(Tag.REDUCTION,))
def amax(a, dim=(), keepdim: bool = False):
    return _extremum(prims.amax, a, dim, keepdim, "torch.amax")


@torchsymbol(torch.amin, T.amin, torch_impl="torch.amin", tags=(Tag.REDUCTION,))
def amin(a, dim=(), keepdim: bool = False):
    return _extremum(prims.amin, a, dim, keepdim, "torch.amin")


aminmax_result = result_type("aminmax", ["min", "max"])


@torchsymbol(torch.aminmax, T.aminmax, torch_impl="torch.aminmax", tags=(Tag.REDUCTION,))
def aminmax(a, *, dim: int | None = None, keepdim: bool = False):
    op = "torch.aminmax"
    if not shape_of(a):  # two copies, not the input itself
        reduction_dims(a, dim, op)  # (a dim out of range is still an error)
        return aminmax_result(prims.clone(a), prims.clone(a))
    return aminmax_result(
        _extremum(prims.amin, a, dim, keepdim, op), _extremum(prims.amax, a, dim, keepdim, op)
    )


def _arg_extremum(prim, a, dim, keepdim, op):
    s = shape_of(a)
    if dim is None:
        out = (
            prim(a, tuple(range(len(s)))) if s else prims.full((), 0, dtype=torch.int64, device=a.meta_device)
        )
        return prims.reshape(out, (1,) * len(s)) if keepdim and s else out
    (d,) = canonical_dims(dim, len(s), op) or (0,)
    if not s:
        return prims.full((), 0, dtype=torch.int64, device=a.meta_device)
    if s[d] == 0:
        raise ShapeError(f"{op}: cannot reduce over a zero-size dimension {d} of shape {s}")
    return _maybe_keep(prim(a, (d,)), a, (d,), keepdim)


@torchsymbol(torch.argmax, T.argmax, torch_impl="torch.argmax", tags=(Tag.REDUCTION,))
def argmax(a, dim: int | None = None, keepdim: bool = False):
    return _arg_extremum(prims.argmax, a, dim, keepdim, "torch.argmax")


@torchsymbol(torch.argmin, T.argmin, torch_impl="torch.argmin", tags=(Tag.REDUCTION,))
def argmin(a, dim: int | None = None, keepdim: bool = False):
    return _arg_extremum(prims.argmin, a, dim, keepdim, "torch.argmin")


def _max_min(a, dim, keepdim, which: str):
    op = f"torch.{which}"
    if is_tensor(dim):  # torch.max(a, other) is the elementwise maximum
        return (prims.maximum if which == "max" else prims.minimum)(a, dim)
    if dim is None:
        return _extremum(prims.amax if which == "max" else prims.amin, a, None, False, op)
    values = _extremum(prims.amax if which == "max" else prims.amin, a, dim, keepdim, op)
    if values is a:  # a 0-dim input: eager's values are a new tensor in the graph, not the input
        values = prims.clone(a)
    indices = _arg_extremum(prims.argmax if which == "max" else prims.argmin, a, dim, keepdim, op)
    return (max_result if which == "max" else min_result)(values, indices)


@torchsymbol(torch.max, T.max, torch_impl="torch.max", tags=(Tag.REDUCTION,))
def max(a, dim=None, keepdim: bool = False):
    """``torch.max(a)``, ``torch.max(a, dim)`` -> (values, indices), ``torch.max(a, other)``."""
    return _max_min(a, dim, keepdim, "max")


@torchsymbol(torch.min, T.min, torch_impl="torch.min", tags=(Tag.REDUCTION,))
def min(a, dim=None, keepdim: bool = False):
    """``torch.min(a)``, ``torch.min(a, dim)`` -> (values, indices), ``torch.min(a, other)``."""
    return _max_min(a, dim, keepdim, "min")


def _logical_reduction(a, dim, keepdim, prim, op):
    dims = reduction_dims(a, dim, op)
    b = a if dtype_of(a) is torch.bool else prims.ne(a, 0)
    if builtins.any(shape_of(a)[d] == 0 for d in dims):
        raise ShapeError(f"{op}: reducing a zero-size dimension of shape {shape_of(a)} is not supported")
    out = _maybe_keep(_reduce(prim, b, dims), a, dims, keepdim)
    return _cast(out, torch.uint8) if dtype_of(a) is torch.uint8 else out  # torch keeps uint8


@torchsymbol(torch.all, T.all, torch_impl="torch.all", tags=(Tag.REDUCTION,))
def all(a, dim=None, keepdim: bool = False):
    return _logical_reduction(a, dim, keepdim, prims.amin, "torch.all")


@torchsymbol(torch.any, T.any, torch_impl="torch.any", tags=(Tag.REDUCTION,))
def any(a, dim=None, keepdim: bool = False):
    return _logical_reduction(a, dim, keepdim, prims.amax, "torch.any")


# -- variance -------------------------------------------------------------------------------
def _var_args(dim, unbiased, correction, op):
    if isinstance(dim, builtins.bool):  # torch.var(a, unbiased)
        dim, unbiased = None, dim
    if correction is not None and unbiased is not None:
        raise ShapeError(f"{op}: give either unbiased or correction, not both")
    if correction is None:
        correction = 0 if unbiased is False else 1
    return dim, correction


def _var(a, dim, unbiased, keepdim, correction, op):
    dim, correction = _var_args(dim, unbiased, correction, op)
    _require_float(a, op)
    dims = reduction_dims(a, dim, op)
    a_up, back = _upcast(a)
    if dims:
        out = prims.var(a_up, dims, correction=correction)
    else:  # a 0-dim tensor: the variance of one sample
        out = prims.var(prims.reshape(a_up, (1,)), (0,), correction=correction)
    return _maybe_keep(_cast(out, back), a, dims, keepdim), dims


@torchsymbol(torch.var, T.var, torch_impl="torch.var", tags=(Tag.REDUCTION,))
def var(a, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None):
    return _var(a, dim, unbiased, keepdim, correction, "torch.var")[0]


@torchsymbol(torch.std, T.std, torch_impl="torch.std", tags=(Tag.REDUCTION,))
def std(a, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None):
    return prims.sqrt(_var(a, dim, unbiased, keepdim, correction, "torch.std")[0])


@torchsymbol(torch.var_mean, torch_impl="torch.var_mean", tags=(Tag.REDUCTION,))
def var_mean(a, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None):
    v, dims = _var(a, dim, unbiased, keepdim, correction, "torch.var_mean")
    return v, mean(a, dims, keepdim)


@torchsymbol(torch.std_mean, torch_impl="torch.std_mean", tags=(Tag.REDUCTION,))
def std_mean(a, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None):
    v, dims = _var(a, dim, unbiased, keepdim, correction, "torch.std_mean")
    return prims.sqrt(v), mean(a, dims, keepdim)


# -- norms ----------------------------------------------------------------------------------
@torchsymbol(torch.linalg.vector_norm, torch_impl="torch.linalg.vector_norm", tags=(Tag.REDUCTION,))
def vector_norm(a, ord=2, dim=None, keepdim: bool = False, *, dtype: torch.dtype | None = None):
    op = "torch.linalg.vector_norm"
    a = _cast(a, dtype)
    _require_float(a, op)
    dims = reduction_dims(a, dim, op)
    a_up, back = _upcast(a)
    mag = prims.abs(a_up)
    if ord == math.inf:
        out = _reduce(prims.amax, mag, dims)
    elif ord == -math.inf:
        out = _reduce(prims.amin, mag, dims)
    elif ord == 0:  # a count: in the input's graph with a zero gradient, as torch's
        count = _reduce(prims.sum, prims.convert_element_type(prims.ne(mag, 0), dtype_of(mag)), dims)
        out = in_graph_of(count, _reduce(prims.sum, mag, dims))
    elif ord == 1:
        out = _reduce(prims.sum, mag, dims)
    elif ord == 2:
        out = prims.sqrt(_reduce(prims.sum, prims.mul(mag, mag), dims))
    else:
        out = prims.pow(_reduce(prims.sum, prims.pow(mag, ord), dims), 1.0 / ord)
    return _maybe_keep(_cast(out, back), a, dims, keepdim)


@torchsymbol(torch.norm, T.norm, torch_impl="torch.norm", tags=(Tag.REDUCTION,))
def norm(a, p="fro", dim=None, keepdim: bool = False, dtype: torch.dtype | None = None):
    """``torch.norm`` for vector norms (``p`` a number, or ``"fro"`` over any dims)."""
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, str):
        raise ShapeError(f"torch.norm: p={p!r} is not supported; use a number or 'fro'")
    return vector_norm(a, p, dim, keepdim, dtype=dtype)


# -- softmax family -------------------------------------------------------------------------
def _softmax_dim(a, dim, op) -> int:
    if dim is None:
        raise ShapeError(f"{op}: dim must be given")
    (d,) = canonical_dims(dim, len(shape_of(a)), op) or (0,)
    return d


def _row_max(a, d):
    # as torch: a row of -inf (or with +inf) gives nan, so no guard against inf here
    return keep_dims(prims.amax(a, (d,)), shape_of(a), (d,))


def _softmax_args(_stacklevel, dtype):
    # torch.softmax(a, dim, dtype) passes the dtype where F.softmax has _stacklevel
    return _stacklevel if isinstance(_stacklevel, torch.dtype) else dtype


def _no_stacklevel(a, dim=None, _stacklevel=None, dtype=None, **kwargs) -> builtins.bool:
    return not isinstance(_stacklevel, int) and "_stacklevel" not in kwargs


def _softmax_core(a, dim, dtype, op, log: builtins.bool):
    a = _cast(a, dtype)
    _require_float(a, op)
    d = _softmax_dim(a, dim, op)
    a_up, back = _upcast(a)
    shifted = prims.sub(a_up, _row_max(a_up, d)) if shape_of(a) else prims.sub(a_up, a_up)
    e = prims.exp(shifted)
    s = keep_dims(prims.sum(e, (d,)), shape_of(a), (d,)) if shape_of(a) else e
    out = prims.sub(shifted, prims.log(s)) if log else prims.div(e, s)
    return _cast(out, back)


@torchsymbol(
    torch.softmax,
    T.softmax,
    F.softmax,
    torch.special.softmax,
    torch_impl="torch.softmax",
    impl_check=_no_stacklevel,
    tags=(Tag.REDUCTION,),
)
def softmax(a, dim: int | None = None, _stacklevel=3, dtype: torch.dtype | None = None):
    return _softmax_core(a, dim, _softmax_args(_stacklevel, dtype), "torch.softmax", False)


@torchsymbol(
    torch.log_softmax,
    T.log_softmax,
    F.log_softmax,
    torch.special.log_softmax,
    torch_impl="torch.log_softmax",
    impl_check=_no_stacklevel,
    tags=(Tag.REDUCTION,),
)
def log_softmax(a, dim: int | None = None, _stacklevel=3, dtype: torch.dtype | None = None):
    return _softmax_core(a, dim, _softmax_args(_stacklevel, dtype), "torch.log_softmax", True)


@torchsymbol(F.softmin, torch_impl="torch.nn.functional.softmin", tags=(Tag.REDUCTION,))
def softmin(a, dim: int | None = None, _stacklevel=3, dtype: torch.dtype | None = None):
    return _softmax_core(prims.neg(_cast(a, dtype)), dim, None, "F.softmin", False)


@torchsymbol(
    torch.logsumexp, T.logsumexp, torch.special.logsumexp, torch_impl="torch.logsumexp", tags=(Tag.REDUCTION,)
)
def logsumexp(a, dim, keepdim: bool = False):
    op = "torch.logsumexp"
    if not (dtype_of(a).is_floating_point or dtype_of(a).is_complex):
        a = _cast(a, torch.get_default_dtype())
    dims = reduction_dims(a, dim, op)
    if not dims:
        return a
    a_up, back = _upcast(a)
    m = prims.amax(a_up, dims)
    m = prims.where(prims.isinf(m), 0, m)
    shifted = prims.sub(a_up, keep_dims(m, shape_of(a), dims))
    out = prims.add(prims.log(prims.sum(prims.exp(shifted), dims)), m)
    return _maybe_keep(_cast(out, back), a, dims, keepdim)


topk_result = result_type("topk", ["values", "indices"])


@torchsymbol(torch.topk, T.topk, torch_impl="torch.topk", tags=(Tag.REDUCTION,))
def topk(a, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    s = shape_of(a)
    (d,) = canonical_dims(dim, len(s), "torch.topk") or (0,)
    if s and not 0 <= k <= s[d]:
        raise ShapeError(f"torch.topk: k={k} is out of range for dimension {d} of size {s[d]}")
    if not s:  # a 0-dim tensor: its one element, as the one-element vector it views
        values, indices = prims.topk(prims.reshape(a, (1,)), k, 0, largest, sorted)
        return (
            topk_result(prims.reshape(values, ()), prims.reshape(indices, ()))
            if k == 1
            else topk_result(values, indices)
        )
    values, indices = prims.topk(a, k, d, largest, sorted)
    return topk_result(values, indices)


sort_result = result_type("sort", ["values", "indices"])


@torchsymbol(torch.sort, T.sort, torch_impl="torch.sort", tags=(Tag.REDUCTION,))
def sort(a, dim: int = -1, descending: bool = False, stable: bool = False):
    s = shape_of(a)
    (d,) = canonical_dims(dim, len(s), "torch.sort") or (0,)
    values, indices = prims.sort(a, d, descending, stable)
    return sort_result(values, indices)


@torchsymbol(torch.argsort, T.argsort, torch_impl="torch.argsort", tags=(Tag.REDUCTION,))
def argsort(a, dim: int = -1, descending: bool = False, stable: bool = False):
    s = shape_of(a)
    (d,) = canonical_dims(dim, len(s), "torch.argsort") or (0,)
    return prims.sort(a, d, descending, stable)[1]


@torchsymbol(torch.histc, T.histc, torch_impl="torch.histc", tags=(Tag.REDUCTION,))
def histc(a, bins: int = 100, min=0, max=0):
    """Counts of ``a``'s elements in ``bins`` equal bins over [min, max] (the data's own range
    when min == max, widened by 1 each way if that is a single value); elements outside are
    ignored and ``max`` itself counts in the last bin. An element's bin is
    ``int((x - min) * bins / (max - min))``, in the input's dtype, as torch's CPU kernel."""
    op = "torch.histc"
    dt = dtype_of(a)
    if not dt.is_floating_point:
        raise ShapeError(f"{op}: expected a floating point input, got {dt}")
    if bins <= 0:
        raise ShapeError(f"{op}: bins must be > 0, got {bins}")
    if min > max:
        raise ShapeError(f"{op}: max must be larger than min, got min={min}, max={max}")
    n = math.prod(shape_of(a))
    x = prims.reshape(a, (n,)) if shape_of(a) != (n,) else a
    dev = device_of(a)
    if min == max and n:
        lo, hi = prims.amin(x, (0,)), prims.amax(x, (0,))
        same = prims.eq(lo, hi)
        lo, hi = prims.where(same, prims.sub(lo, 1), lo), prims.where(same, prims.add(hi, 1), hi)
    else:
        lo, hi = (float(min) - 1, float(max) + 1) if min == max else (float(min), float(max))
        # the edges are held, and their difference taken, in the input's dtype
        lo_t, hi_t = torch.tensor(lo, dtype=dt), torch.tensor(hi, dtype=dt)
        lo, hi, width = lo_t.item(), hi_t.item(), (hi_t - lo_t).item()
    counts = prims.full((bins + 1,), 0, dtype=dt, device=dev)
    if not n:
        return prims.slice(counts, (0,), (bins,), (1,))
    if is_tensor(lo):
        width = prims.sub(hi, lo)
    pos = prims.convert_element_type(prims.div(prims.mul(prims.sub(x, lo), bins), width), torch.int64)
    pos = prims.where(prims.eq(pos, bins), bins - 1, pos)
    inside = prims.logical_and(prims.ge(x, lo), prims.le(x, hi))
    slot = prims.where(inside, pos, bins)  # the rest go to a spare bin, dropped below
    counts = prims.scatter_add(counts, 0, slot, prims.full((n,), 1, dtype=dt, device=dev))
    return prims.slice(counts, (0,), (bins,), (1,))
