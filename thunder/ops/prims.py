"""Primitives: the smallest operations, each with a meta function (shape, dtype, device).

Torch-language ops decompose into these; executors must be able to run every one of them
(the torch executor's table gives each its implementation). Elementwise primitives
broadcast and promote like torch, so a decomposition needs no explicit casts.
"""

from __future__ import annotations

import builtins
import enum
import math

import torch

from thunder.core.proxies import TensorProxy
from thunder.core.symbol import Symbol, register
from thunder.core.tags import Tag
from thunder.ops.meta import (
    ShapeError,
    broadcast_shapes,
    canonical_dim,
    canonical_dims,
    common_device,
    dtype_of,
    is_number,
    is_tensor,
    new_tensor,
    result_dtype,
    shape_of,
)


def _prim(name: str, meta, *tags: Tag) -> Symbol:
    return register(Symbol(name, "prims", meta=meta, tags=(Tag.PRIM, *tags), module_path=__name__))


class Rule(enum.Enum):
    """The result dtype of an elementwise prim."""

    SAME = "same"  # the (promoted) input dtype
    FLOAT = "float"  # integers and bools compute in the default float dtype
    BOOL = "bool"  # a predicate
    REAL = "real"  # the real part's dtype of a complex input


# -- elementwise unary --------------------------------------------------------------------
def _unary_meta(name: str, rule: Rule):
    def meta(a):
        if not is_tensor(a):
            raise ShapeError(f"prims.{name}: expected a tensor, got {type(a).__name__}")
        dt = dtype_of(a)
        if rule is Rule.BOOL:
            dt = torch.bool
        elif rule is Rule.FLOAT and not (dt.is_floating_point or dt.is_complex):
            dt = torch.get_default_dtype()
        elif rule is Rule.REAL and dt.is_complex:
            dt = torch.float32 if dt is torch.complex64 else torch.float64
        return new_tensor(shape_of(a), dt, a.meta_device if isinstance(a, TensorProxy) else a.device, a)

    meta.__name__ = f"{name}_meta"
    return meta


def elementwise_unary(name: str, rule: Rule) -> Symbol:
    # The FLOAT functions (exp, erf, roots, ...) cost far more per element than arithmetic:
    # tagged TRANSCENDENTAL, they are not recomputed in a backward to save memory (remat.py).
    costly = (Tag.TRANSCENDENTAL,) if rule is Rule.FLOAT else ()
    return _prim(name, _unary_meta(name, rule), Tag.ELEMENTWISE, Tag.UNARY, *costly)


abs = elementwise_unary("abs", Rule.SAME)
neg = elementwise_unary("neg", Rule.SAME)
sign = elementwise_unary("sign", Rule.SAME)
floor = elementwise_unary("floor", Rule.SAME)
ceil = elementwise_unary("ceil", Rule.SAME)
round = elementwise_unary("round", Rule.SAME)
trunc = elementwise_unary("trunc", Rule.SAME)
bitwise_not = elementwise_unary("bitwise_not", Rule.SAME)
clone = elementwise_unary("clone", Rule.SAME)
exp = elementwise_unary("exp", Rule.FLOAT)
exp2 = elementwise_unary("exp2", Rule.FLOAT)
expm1 = elementwise_unary("expm1", Rule.FLOAT)
log = elementwise_unary("log", Rule.FLOAT)
log1p = elementwise_unary("log1p", Rule.FLOAT)
log2 = elementwise_unary("log2", Rule.FLOAT)
log10 = elementwise_unary("log10", Rule.FLOAT)
sin = elementwise_unary("sin", Rule.FLOAT)
cos = elementwise_unary("cos", Rule.FLOAT)
tan = elementwise_unary("tan", Rule.FLOAT)
asin = elementwise_unary("asin", Rule.FLOAT)
acos = elementwise_unary("acos", Rule.FLOAT)
atan = elementwise_unary("atan", Rule.FLOAT)
sinh = elementwise_unary("sinh", Rule.FLOAT)
cosh = elementwise_unary("cosh", Rule.FLOAT)
tanh = elementwise_unary("tanh", Rule.FLOAT)
asinh = elementwise_unary("asinh", Rule.FLOAT)
acosh = elementwise_unary("acosh", Rule.FLOAT)
atanh = elementwise_unary("atanh", Rule.FLOAT)
sqrt = elementwise_unary("sqrt", Rule.FLOAT)
rsqrt = elementwise_unary("rsqrt", Rule.FLOAT)
reciprocal = elementwise_unary("reciprocal", Rule.FLOAT)
sigmoid = elementwise_unary("sigmoid", Rule.FLOAT)
erf = elementwise_unary("erf", Rule.FLOAT)
erfc = elementwise_unary("erfc", Rule.FLOAT)
erfinv = elementwise_unary("erfinv", Rule.FLOAT)
lgamma = elementwise_unary("lgamma", Rule.FLOAT)
digamma = elementwise_unary("digamma", Rule.FLOAT)
isnan = elementwise_unary("isnan", Rule.BOOL)
isinf = elementwise_unary("isinf", Rule.BOOL)
isfinite = elementwise_unary("isfinite", Rule.BOOL)
signbit = elementwise_unary("signbit", Rule.BOOL)
logical_not = elementwise_unary("logical_not", Rule.BOOL)
real = elementwise_unary("real", Rule.REAL)
imag = elementwise_unary("imag", Rule.REAL)


# -- elementwise binary -------------------------------------------------------------------
def _binary_meta(name: str, rule: Rule):
    op = f"prims.{name}"

    def meta(a, b):
        ta, tb = is_tensor(a), is_tensor(b)
        if not (ta or tb):
            raise ShapeError(f"{op}: expected at least one tensor")
        for x, t in ((a, ta), (b, tb)):
            if not (t or is_number(x)):
                raise ShapeError(f"{op}: expected a tensor or a number, got {type(x).__name__}")
        if ta and tb:
            sa, sb = shape_of(a), shape_of(b)
            shape = sa if sa == sb else broadcast_shapes(sa, sb, op=op)
        else:
            shape = shape_of(a if ta else b)
        dt = result_dtype(a, b)
        if rule is Rule.BOOL:
            dt = torch.bool
        elif rule is Rule.FLOAT and not (dt.is_floating_point or dt.is_complex):
            dt = torch.get_default_dtype()
        return new_tensor(shape, dt, common_device(op, a, b), a, b)

    meta.__name__ = f"{name}_meta"
    return meta


def elementwise_binary(name: str, rule: Rule) -> Symbol:
    return _prim(name, _binary_meta(name, rule), Tag.ELEMENTWISE, Tag.BINARY)


add = elementwise_binary("add", Rule.SAME)
sub = elementwise_binary("sub", Rule.SAME)
mul = elementwise_binary("mul", Rule.SAME)
floor_divide = elementwise_binary("floor_divide", Rule.SAME)
remainder = elementwise_binary("remainder", Rule.SAME)
fmod = elementwise_binary("fmod", Rule.SAME)
pow = elementwise_binary("pow", Rule.SAME)
maximum = elementwise_binary("maximum", Rule.SAME)
minimum = elementwise_binary("minimum", Rule.SAME)
bitwise_and = elementwise_binary("bitwise_and", Rule.SAME)
bitwise_or = elementwise_binary("bitwise_or", Rule.SAME)
bitwise_xor = elementwise_binary("bitwise_xor", Rule.SAME)
bitwise_left_shift = elementwise_binary("bitwise_left_shift", Rule.SAME)
bitwise_right_shift = elementwise_binary("bitwise_right_shift", Rule.SAME)
copysign = elementwise_binary("copysign", Rule.SAME)
div = elementwise_binary("div", Rule.FLOAT)
atan2 = elementwise_binary("atan2", Rule.FLOAT)
hypot = elementwise_binary("hypot", Rule.FLOAT)
eq = elementwise_binary("eq", Rule.BOOL)
ne = elementwise_binary("ne", Rule.BOOL)
lt = elementwise_binary("lt", Rule.BOOL)
le = elementwise_binary("le", Rule.BOOL)
gt = elementwise_binary("gt", Rule.BOOL)
ge = elementwise_binary("ge", Rule.BOOL)
logical_and = elementwise_binary("logical_and", Rule.BOOL)
logical_or = elementwise_binary("logical_or", Rule.BOOL)
logical_xor = elementwise_binary("logical_xor", Rule.BOOL)


def _where_meta(cond, a, b):
    shapes = [shape_of(x) for x in (cond, a, b) if is_tensor(x)]
    shape = broadcast_shapes(*shapes, op="prims.where")
    return new_tensor(shape, result_dtype(a, b), common_device("prims.where", cond, a, b), a, b)


where = _prim("where", _where_meta, Tag.ELEMENTWISE)


def _clamp_meta(a, lo, hi):
    return new_tensor(shape_of(a), dtype_of(a), a.meta_device, a, lo, hi)


clamp = _prim("clamp", _clamp_meta, Tag.ELEMENTWISE)


# -- dtype and device ---------------------------------------------------------------------
def _convert_meta(a, dtype):
    return new_tensor(shape_of(a), dtype, a.meta_device, a)


convert_element_type = _prim("convert_element_type", _convert_meta, Tag.ELEMENTWISE)


def _device_put_meta(a, device):
    return new_tensor(shape_of(a), dtype_of(a), torch.device(device), a)


device_put = _prim("device_put", _device_put_meta)


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


# bound as ``slice`` at the end of this file (``prims.slice`` in printed traces)
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


# -- factories and randomness -------------------------------------------------------------
def _full_meta(shape, fill_value, *, dtype, device):
    return new_tensor(tuple(shape), dtype, torch.device(device))


full = _prim("full", _full_meta, Tag.FACTORY)


def _iota_meta(length, *, start, step, dtype, device):
    return new_tensor((length,), dtype, torch.device(device))


iota = _prim("iota", _iota_meta, Tag.FACTORY)


def _uniform_meta(shape, minval, maxval, *, dtype, device):
    return new_tensor(tuple(shape), dtype, torch.device(device))


uniform = _prim("uniform", _uniform_meta, Tag.FACTORY, Tag.RANDOM)


def _bernoulli_meta(shape, p, *, dtype, device):
    return new_tensor(tuple(shape), dtype, torch.device(device))


# ones with probability ``p``, else zeros: eager dropout's noise (``empty(...).bernoulli_(p)``,
# the same draws from the generator)
bernoulli = _prim("bernoulli", _bernoulli_meta, Tag.FACTORY, Tag.RANDOM)


# -- writes -------------------------------------------------------------------------------
def _copy_meta(src, dst):
    if shape_of(src) != shape_of(dst):
        broadcast_shapes(shape_of(dst), shape_of(src), op="prims.copy_")
    return None


copy_ = _prim("copy_", _copy_meta, Tag.INPLACE)


# -- convolution and pooling ----------------------------------------------------------------
def _window_out(
    size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool = False
) -> int:
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1  # the last window must start inside the input or its left padding
    return out


def _convolution_meta(a, weight, bias, stride, padding, dilation, groups):
    sa, sw = shape_of(a), shape_of(weight)
    n = len(sw) - 2
    if len(sa) != n + 2 or sa[1] != sw[1] * groups or sw[0] % groups:
        raise ShapeError(
            f"prims.convolution: input {sa} does not fit weight {sw} with groups={groups} "
            f"(expected input channels {sw[1] * groups})"
        )
    spatial = tuple(_window_out(sa[2 + i], sw[2 + i], stride[i], padding[i], dilation[i]) for i in range(n))
    if any(o <= 0 for o in spatial):
        raise ShapeError(f"prims.convolution: the kernel {sw[2:]} is larger than the padded input {sa[2:]}")
    inputs = (a, weight) + ((bias,) if is_tensor(bias) else ())
    return new_tensor(
        (sa[0], sw[0]) + spatial, dtype_of(a), common_device("prims.convolution", *inputs), *inputs
    )


convolution = _prim("convolution", _convolution_meta)


def _pool_meta(name: str):
    def meta(a, kernel_size, stride, padding, dilation, ceil_mode):
        s = shape_of(a)
        n = len(kernel_size)
        spatial = tuple(
            _window_out(s[-n + i], kernel_size[i], stride[i], padding[i], dilation[i], ceil_mode)
            for i in range(n)
        )
        if any(o <= 0 for o in spatial):
            raise ShapeError(
                f"prims.{name}: the window {kernel_size} is larger than the padded input {s[-n:]}"
            )
        return new_tensor(s[:-n] + spatial, dtype_of(a), a.meta_device, a)

    meta.__name__ = f"{name}_meta"
    return meta


max_pool = _prim("max_pool", _pool_meta("max_pool"))
_avg_window = _pool_meta("avg_pool")


def _avg_pool_meta(a, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return _avg_window(a, kernel_size, stride, padding, (1,) * len(kernel_size), ceil_mode)


avg_pool = _prim("avg_pool", _avg_pool_meta)


def _adaptive_avg_pool_meta(a, output_size):
    s = shape_of(a)
    return new_tensor(s[: len(s) - len(output_size)] + tuple(output_size), dtype_of(a), a.meta_device, a)


adaptive_avg_pool = _prim("adaptive_avg_pool", _adaptive_avg_pool_meta)


def _sort_meta(a, dim, descending, stable):
    return (
        new_tensor(shape_of(a), dtype_of(a), a.meta_device, a),
        new_tensor(shape_of(a), torch.int64, a.meta_device),
    )


sort = _prim("sort", _sort_meta)


# -- gradients of the windowed ops -----------------------------------------------------------
# A convolution or pooling window has no useful decomposition into elementwise prims, so its
# gradient is a prim too (the rules in ``thunder/ops/vjp/linalg.py`` use them).
def _convolution_backward_meta(grad, a, weight, bias, stride, padding, dilation, groups):
    """(grad input, grad weight) and, when ``bias`` (a bool) says there is one, grad bias."""
    out = (
        new_tensor(shape_of(a), dtype_of(a), a.meta_device),
        new_tensor(shape_of(weight), dtype_of(weight), weight.meta_device),
    )
    return out + (new_tensor((shape_of(weight)[0],), dtype_of(grad), grad.meta_device),) if bias else out


convolution_backward = _prim("convolution_backward", _convolution_backward_meta)


def _pool_backward_meta(grad, a, *params):
    return new_tensor(shape_of(a), dtype_of(a), a.meta_device)


max_pool_backward = _prim("max_pool_backward", _pool_backward_meta)
avg_pool_backward = _prim("avg_pool_backward", _pool_backward_meta)
adaptive_avg_pool_backward = _prim("adaptive_avg_pool_backward", _pool_backward_meta)


def _custom_op_backward_meta(path: str, grads, args, kwargs, wanted):
    """One gradient per argument position in ``wanted``, shaped like that argument."""
    return tuple(new_tensor(shape_of(args[i]), dtype_of(args[i]), args[i].meta_device) for i in wanted)


# the gradient of a custom operator (``thunder/ops/custom.py``) with respect to its arguments
# at positions ``wanted``: torch's autograd of the operator itself (its registered formula)
custom_op_backward = _prim("custom_op_backward", _custom_op_backward_meta)


def _polygamma_meta(n, a):
    return _unary_meta("polygamma", Rule.FLOAT)(a)


# the n-th derivative of digamma: the gradient of digamma (and of itself)
polygamma = _prim("polygamma", _polygamma_meta, Tag.ELEMENTWISE, Tag.TRANSCENDENTAL)


# ``prims.slice`` must resolve by its printed name; bound last so nothing above sees the
# builtin ``slice`` shadowed.
slice = slice_prim

# The collectives of torch.distributed and the Python-level prims of prologues and epilogues
# print as ``prims.*`` too.
from thunder.ops.collectives import *  # noqa: E402, F403
from thunder.ops.python import *  # noqa: E402, F403
