"""Order statistics and searches: ``median``, ``kthvalue``, ``quantile``/``nanquantile``,
``searchsorted``, ``bucketize`` and ``isin``.

The order statistics read a stable ``prims.sort`` (NaN sorts last, ties keep their order):
the k-th value's index is the one the sort puts at rank k, and the value is gathered at that
index, so the gradient goes where the index points, as torch's. (For tied values torch does
not define which index it returns; a stable sort returns the first.) The searches are torch's
binary search itself, one step per bit of the sequence's length: each step gathers the
middle elements and halves the interval with a comparison, which gives torch's answer even
for NaN and for a sequence that is not sorted. ``isin`` is such a search in the sorted test
elements.
"""

from __future__ import annotations

import math
from numbers import Number

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import result_type, torchsymbol
from thunder.ops.ltorch.reductions import keep_dims
from thunder.ops.ltorch.shape import _slice_dim
from thunder.ops.meta import ShapeError, canonical_dim, device_of, dtype_of, is_tensor, shape_of

T = torch.Tensor

median_result = result_type("median", ["values", "indices"])
kthvalue_result = result_type("kthvalue", ["values", "indices"])


def _rank_index(a, d: int, k: int):
    """The index of the element of rank ``k`` (0-based, ascending, NaN last) along ``d``,
    which is kept with size 1."""
    return _slice_dim(prims.sort(a, d, False, True)[1], d, k, k + 1)


def _gathered(a, index, d: int, keepdim: bool):
    values = prims.take_along_axis(a, index, d)
    if keepdim:
        return values, index
    return prims.squeeze(values, (d,)), prims.squeeze(index, (d,))


def _first_nan_wins(a, index, d: int):
    """``index`` where the row has no NaN, else the first NaN's (torch.median returns it)."""
    if not dtype_of(a).is_floating_point:
        return index
    nan = prims.convert_element_type(prims.isnan(a), torch.int32)
    has_nan = keep_dims(prims.amax(nan, (d,)), shape_of(a), (d,))
    first = keep_dims(prims.argmax(nan, (d,)), shape_of(a), (d,))
    return prims.where(prims.ne(has_nan, 0), first, index)


def _check_orderable(a, op: str) -> None:
    if dtype_of(a) is torch.bool or dtype_of(a).is_complex:
        raise ShapeError(f"{op}: {dtype_of(a)} inputs are not supported (as in torch)")


def _scalar_result(a):
    return prims.clone(a), prims.full((), 0, dtype=torch.int64, device=device_of(a))


def _median_of_all(flat, n: int):
    """The median of a 1-D tensor. Its gradient, as torch's for a median without ``dim``, is
    spread evenly over the elements equal to it (the NaNs, for NaN): the mean of those
    elements, shifted by a constant (computed without gradient) to the exact median (the two
    are so close that the shift is exact). An infinite or NaN median is that mean itself."""
    index = _first_nan_wins(flat, _rank_index(flat, 0, (n - 1) // 2), 0)
    if not dtype_of(flat).is_floating_point:
        return prims.reshape(prims.take_along_axis(flat, index, 0), ())
    with torch.no_grad():
        value = prims.reshape(prims.take_along_axis(flat, index, 0), ())
    tie = prims.where(prims.isnan(value), prims.isnan(flat), prims.eq(flat, value))
    count = prims.sum(prims.convert_element_type(tie, torch.int64), (0,))
    mean = prims.sum(prims.div(prims.where(tie, flat, 0), count), (0,))  # (each part: no overflow)
    with torch.no_grad():
        shift = prims.sub(value, prims.clone(mean))
    return prims.where(prims.isfinite(value), prims.add(mean, shift), mean)


@torchsymbol(torch.median, T.median, torch_impl="torch.median", tags=(Tag.REDUCTION,))
def median(a, dim: int | None = None, keepdim: bool = False):
    """The lower of the two middle values (rank ``(n - 1) // 2``); NaN if there is one. With
    ``dim``, also its index (a NaN's: the first)."""
    op = "torch.median"
    _check_orderable(a, op)
    s = shape_of(a)
    if dim is None:
        n = math.prod(s)
        if n == 0:
            if not dtype_of(a).is_floating_point:
                raise ShapeError(f"{op}: the median of an empty {dtype_of(a)} tensor has no value")
            return prims.add(prims.sum(prims.reshape(a, (0,)), (0,)), math.nan)  # NaN, in a's graph
        flat = prims.reshape(a, (n,)) if s != (n,) else a
        return _median_of_all(flat, n)
    d = canonical_dim(dim, len(s), op)
    if not s:
        return median_result(*_scalar_result(a))
    if s[d] == 0:
        raise ShapeError(f"{op}: cannot reduce over dimension {d} of size zero (shape {s})")
    index = _first_nan_wins(a, _rank_index(a, d, (s[d] - 1) // 2), d)
    return median_result(*_gathered(a, index, d, keepdim))


@torchsymbol(torch.kthvalue, T.kthvalue, torch_impl="torch.kthvalue", tags=(Tag.REDUCTION,))
def kthvalue(a, k: int, dim: int = -1, keepdim: bool = False):
    """The ``k``-th smallest value (1-based, NaN larger than every number) and its index."""
    op = "torch.kthvalue"
    _check_orderable(a, op)
    s = shape_of(a)
    d = canonical_dim(dim, len(s), op)
    n = s[d] if s else 1
    if not 1 <= k <= n:
        raise ShapeError(f"{op}: k={k} is out of range for dimension {d} of size {n}")
    if not s:
        return kthvalue_result(*_scalar_result(a))
    return kthvalue_result(*_gathered(a, _rank_index(a, d, k - 1), d, keepdim))


# -- quantiles ------------------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _lerp(start, end, weight):
    """torch.lerp's formula (from the nearer end), so the interpolated values match bit for bit."""
    diff = prims.sub(end, start)
    near_start = prims.add(start, prims.mul(weight, diff))
    near_end = prims.sub(end, prims.mul(diff, prims.sub(1, weight)))
    return prims.where(prims.lt(prims.abs(weight), 0.5), near_start, near_end)


def _quantile(a, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool, op: str):
    """As torch: the sorted values at rank ``q * (n - 1)`` (n: the number of non-NaN values
    for nanquantile; a NaN makes quantile's rank the last, a NaN), interpolated between the
    neighbouring ranks, in the input's dtype. A ``q`` tensor's values are not checked to lie
    in [0, 1] (torch checks them on the CPU only)."""
    dt, s = dtype_of(a), shape_of(a)
    if dt not in (torch.float32, torch.float64):
        raise ShapeError(f"{op}: the input must be float32 or float64, got {dt}")
    if interpolation not in _INTERPOLATIONS:
        raise ShapeError(
            f"{op}: interpolation must be one of {', '.join(_INTERPOLATIONS)}, got {interpolation!r}"
        )
    dev = device_of(a)
    if is_tensor(q):
        if len(shape_of(q)) > 1:
            raise ShapeError(f"{op}: q must be a number or a 0-D or 1-D tensor, got shape {shape_of(q)}")
        if dtype_of(q) is not dt:
            raise ShapeError(f"{op}: q ({dtype_of(q)}) must have the input's dtype ({dt})")
        qs = shape_of(q)
    elif isinstance(q, Number) and not isinstance(q, bool):
        if not 0 <= q <= 1:
            raise ShapeError(f"{op}: q must be in the range [0, 1], got {q}")
        qs, q = (), prims.full((), float(q), dtype=dt, device=dev)
    else:
        raise ShapeError(f"{op}: q must be a number or a tensor, got {type(q).__name__}")
    if math.prod(s) == 0:
        raise ShapeError(f"{op}: the input must be non-empty, got shape {s}")
    if dim is None:
        x, kept = prims.reshape(a, (math.prod(s),)), (1,) * len(s) if keepdim else ()
    else:
        d = canonical_dim(dim, len(s), op)
        rest = [i for i in range(len(s)) if i != d]
        x = prims.transpose(a, (*rest, d)) if s and d != len(s) - 1 else a
        x = x if s else prims.reshape(a, (1,))
        kept = tuple(1 if i == d else n for i, n in enumerate(s)) if keepdim else tuple(s[i] for i in rest)
    lead, n = shape_of(x)[:-1], shape_of(x)[-1]
    last = len(lead)
    values = prims.sort(x, last, False, True)[0]
    qv = prims.broadcast_in_dim(q, lead + (qs[0] if qs else 1,), (last,) if qs else ())
    nan = prims.isnan(values)
    if ignore_nan:
        count = keep_dims(prims.sum(prims.logical_not(nan), (last,)), shape_of(values), (last,))
        ranks = prims.mul(qv, prims.sub(count, 1))
        ranks = prims.where(prims.lt(ranks, 0), 0.0, ranks)
    else:
        has_nan = keep_dims(prims.amax(nan, (last,)), shape_of(values), (last,))
        ranks = prims.where(has_nan, float(n - 1), prims.mul(qv, n - 1))
    if interpolation == "lower":
        ranks = prims.floor(ranks)
    elif interpolation == "higher":
        ranks = prims.ceil(ranks)
    elif interpolation == "nearest":
        ranks = prims.round(ranks)  # half to even, as torch.round
    below = prims.convert_element_type(ranks, torch.int64)
    out = prims.take_along_axis(values, below, last)
    if interpolation in ("linear", "midpoint"):
        above = prims.take_along_axis(
            values, prims.convert_element_type(prims.ceil(ranks), torch.int64), last
        )
        if interpolation == "midpoint":
            weight = prims.full(shape_of(ranks), 0.5, dtype=dt, device=dev)
        else:
            weight = prims.sub(ranks, below)
        out = _lerp(out, above, weight)
    if qs:  # the quantiles first
        out = prims.transpose(out, (last, *range(last)))
    return prims.reshape(out, qs + kept) if shape_of(out) != qs + kept else out


@torchsymbol(torch.quantile, T.quantile, torch_impl="torch.quantile", tags=(Tag.REDUCTION,))
def quantile(a, q, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"):
    return _quantile(a, q, dim, keepdim, interpolation, False, "torch.quantile")


@torchsymbol(torch.nanquantile, T.nanquantile, torch_impl="torch.nanquantile", tags=(Tag.REDUCTION,))
def nanquantile(a, q, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"):
    return _quantile(a, q, dim, keepdim, interpolation, True, "torch.nanquantile")


# -- sorted search and membership -----------------------------------------------------------
def _binary_search(sequence, values, goes_right):
    """For each value, where the binary search over the last dim of ``sequence`` ends: an
    interval halved per step while ``goes_right(middle, value)`` says the answer lies above
    the middle element (torch's loop, one step per bit of the length; finished lanes wait)."""
    ss = shape_of(sequence)
    sv = shape_of(values) if is_tensor(values) else ()
    n, dev = ss[-1], device_of(sequence)
    lo = prims.full(sv, 0, dtype=torch.int64, device=dev)
    hi = prims.full(sv, n, dtype=torch.int64, device=dev)
    for _ in range(n.bit_length()):
        active = prims.lt(lo, hi)
        mid = prims.add(lo, prims.floor_divide(prims.sub(hi, lo), 2))
        at = prims.minimum(mid, n - 1)  # (lanes already done may point past the end)
        middle = (
            prims.take(sequence, at, 0) if len(ss) == 1 else prims.take_along_axis(sequence, at, len(ss) - 1)
        )
        up = goes_right(middle, values)
        lo = prims.where(prims.logical_and(active, up), prims.add(mid, 1), lo)
        hi = prims.where(prims.logical_and(active, prims.logical_not(up)), mid, hi)
    return lo


def _search(sequence, values, right: bool, out_int32: bool, sorter, op: str):
    """torch's binary search for each value: the first index whose element is not below the
    value (``right``: not at or below), as ``!(mid >= v)`` / ``!(mid > v)`` decide it."""
    ss = shape_of(sequence)
    if not ss:
        raise ShapeError(f"{op}: the sorted sequence must have at least one dimension, got a 0-D tensor")
    if is_tensor(values):
        sv = shape_of(values)
        if len(ss) > 1 and (len(sv) != len(ss) or sv[:-1] != ss[:-1]):
            raise ShapeError(
                f"{op}: the sequence's leading dims {ss[:-1]} must equal the values' {sv[:-1]} (shapes {ss} and {sv})"
            )
        common = torch.promote_types(dtype_of(sequence), dtype_of(values))
        if dtype_of(values) is not common:
            values = prims.convert_element_type(values, common)
        if dtype_of(sequence) is not common:
            sequence = prims.convert_element_type(sequence, common)
    elif isinstance(values, Number) and not isinstance(values, bool):
        if len(ss) > 1:
            raise ShapeError(
                f"{op}: a number is searched in a 1-D sequence only, got a sequence of shape {ss}"
            )
    else:
        raise ShapeError(f"{op}: expected a tensor or a number to search for, got {type(values).__name__}")
    for x in (sequence, values):
        if is_tensor(x) and (dtype_of(x) is torch.bool or dtype_of(x).is_complex):
            raise ShapeError(f"{op}: {dtype_of(x)} inputs are not supported (as in torch)")
    if sorter is not None:
        if shape_of(sorter) != ss or dtype_of(sorter) is not torch.int64:
            raise ShapeError(f"{op}: sorter must be an int64 tensor of the sequence's shape {ss}")
        sequence = prims.take_along_axis(sequence, sorter, len(ss) - 1)
    above = prims.gt if right else prims.ge
    index = _binary_search(sequence, values, lambda middle, v: prims.logical_not(above(middle, v)))
    return prims.convert_element_type(index, torch.int32) if out_int32 else index


@torchsymbol(torch.isin, torch_impl="torch.isin", tags=(Tag.ELEMENTWISE,))
def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """Whether each element equals one of ``test_elements`` (compared in their promoted
    dtype): the test elements sorted (NaN last), each element's first position not below it
    found by binary search, and the element found there compared."""
    op = "torch.isin"
    if not (is_tensor(elements) or is_tensor(test_elements)):
        raise ShapeError(f"{op}: expected at least one tensor, got {elements!r} and {test_elements!r}")
    for x in (elements, test_elements):
        if is_tensor(x) and (dtype_of(x) is torch.bool or dtype_of(x).is_complex):
            raise ShapeError(f"{op}: {dtype_of(x)} inputs are not supported (as in torch)")
    if not is_tensor(test_elements):
        found = prims.eq(elements, test_elements)
    else:
        m = math.prod(shape_of(test_elements))
        tests = prims.reshape(test_elements, (m,)) if shape_of(test_elements) != (m,) else test_elements
        if is_tensor(elements):
            common = torch.promote_types(dtype_of(elements), dtype_of(tests))
            elements = (
                elements if dtype_of(elements) is common else prims.convert_element_type(elements, common)
            )
            tests = tests if dtype_of(tests) is common else prims.convert_element_type(tests, common)
        se = shape_of(elements) if is_tensor(elements) else ()
        if m == 0:
            found = prims.full(se, False, dtype=torch.bool, device=device_of(tests))
        else:
            tests = prims.sort(tests, 0, False, False)[0]
            at = prims.minimum(_binary_search(tests, elements, prims.lt), m - 1)  # (x < NaN is false)
            found = prims.eq(prims.take(tests, at, 0), elements)
    return prims.logical_not(found) if invert else found


@torchsymbol(torch.searchsorted, torch_impl="torch.searchsorted", tags=(Tag.INDEXING,))
def searchsorted(
    sorted_sequence, input, *, out_int32: bool = False, right: bool = False, side=None, sorter=None
):
    op = "torch.searchsorted"
    if side not in (None, "left", "right"):
        raise ShapeError(f"{op}: side must be 'left' or 'right', got {side!r}")
    if side == "left" and right:
        raise ShapeError(f"{op}: side='left' contradicts right=True")
    return _search(sorted_sequence, input, right or side == "right", out_int32, sorter, op)


@torchsymbol(torch.bucketize, torch_impl="torch.bucketize", tags=(Tag.INDEXING,))
def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):
    op = "torch.bucketize"
    if not is_tensor(boundaries) or len(shape_of(boundaries)) != 1:
        raise ShapeError(f"{op}: boundaries must be a 1-D tensor, got shape {shape_of(boundaries)}")
    return _search(boundaries, input, right, out_int32, None, op)
