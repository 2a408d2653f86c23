"""Primitives: the smallest operations, each with a meta function (shape, dtype, device).

Torch-language ops decompose into these; executors must be able to run every one of them
(the torch executor's table gives each its implementation). Elementwise primitives
broadcast and promote like torch, so a decomposition needs no explicit casts.
"""

from __future__ import annotations

import builtins
import math
from numbers import Number

import torch

from thunder.core.proxies import TensorProxy
from thunder.core.symbol import Symbol, register
from thunder.ops.meta import (
    ShapeError,
    broadcast_shapes,
    canonical_dim,
    canonical_dims,
    common_device,
    dtype_of,
    is_tensor,
    new_tensor,
    result_dtype,
    shape_of,
)


def _prim(name: str, meta, *tags: str) -> Symbol:
    return register(Symbol(name, "prims", meta=meta, tags=("prim", *tags)))


# -- elementwise unary --------------------------------------------------------------------
def _unary_meta(name: str, rule: str):
    def meta(a):
        if not is_tensor(a):
            raise ShapeError(f"prims.{name}: expected a tensor, got {type(a).__name__}")
        dt = dtype_of(a)
        if rule == "bool":
            dt = torch.bool
        elif rule == "float" and not (dt.is_floating_point or dt.is_complex):
            dt = torch.get_default_dtype()
        elif rule == "real" and dt.is_complex:
            dt = torch.float32 if dt is torch.complex64 else torch.float64
        return new_tensor(shape_of(a), dt, a.meta_device if isinstance(a, TensorProxy) else a.device, a)

    meta.__name__ = f"{name}_meta"
    return meta


_UNARY = {
    "same": "abs neg sign floor ceil round trunc bitwise_not clone",
    "float": (
        "exp exp2 expm1 log log1p log2 log10 sin cos tan asin acos atan sinh cosh tanh asinh acosh "
        "atanh sqrt rsqrt reciprocal sigmoid erf erfc erfinv lgamma digamma"
    ),
    "bool": "isnan isinf isfinite signbit logical_not",
    "real": "real imag",
}
# The "float" functions (exp, erf, roots, ...) cost far more per element than arithmetic:
# tagged "transcendental", they are not recomputed in a backward to save memory (remat.py).
for _rule, _names in _UNARY.items():
    for _n in _names.split():
        _costly = ("transcendental",) if _rule == "float" else ()
        globals()[_n] = _prim(_n, _unary_meta(_n, _rule), "elementwise", "unary", *_costly)


# -- elementwise binary -------------------------------------------------------------------
def _binary_meta(name: str, rule: str):
    def meta(a, b):
        if not (is_tensor(a) or is_tensor(b)):
            raise ShapeError(f"prims.{name}: expected at least one tensor")
        for x in (a, b):
            if not (is_tensor(x) or isinstance(x, Number)):
                raise ShapeError(f"prims.{name}: expected a tensor or a number, got {type(x).__name__}")
        shape = broadcast_shapes(*(shape_of(x) for x in (a, b) if is_tensor(x)), op=f"prims.{name}")
        dt = result_dtype(a, b)
        if rule == "bool":
            dt = torch.bool
        elif rule == "float" and not (dt.is_floating_point or dt.is_complex):
            dt = torch.get_default_dtype()
        return new_tensor(shape, dt, common_device(f"prims.{name}", a, b), a, b)

    meta.__name__ = f"{name}_meta"
    return meta


_BINARY = {
    "same": (
        "add sub mul floor_divide remainder fmod pow maximum minimum bitwise_and bitwise_or "
        "bitwise_xor bitwise_left_shift bitwise_right_shift copysign"
    ),
    "float": "div atan2 hypot",
    "bool": "eq ne lt le gt ge logical_and logical_or logical_xor",
}
for _rule, _names in _BINARY.items():
    for _n in _names.split():
        globals()[_n] = _prim(_n, _binary_meta(_n, _rule), "elementwise", "binary")


def _where_meta(cond, a, b):
    shapes = [shape_of(x) for x in (cond, a, b) if is_tensor(x)]
    shape = broadcast_shapes(*shapes, op="prims.where")
    return new_tensor(shape, result_dtype(a, b), common_device("prims.where", cond, a, b), a, b)


where = _prim("where", _where_meta, "elementwise")


def _clamp_meta(a, lo, hi):
    return new_tensor(shape_of(a), dtype_of(a), a.meta_device, a, lo, hi)


clamp = _prim("clamp", _clamp_meta, "elementwise")


# -- dtype and device ---------------------------------------------------------------------
def _convert_meta(a, dtype):
    return new_tensor(shape_of(a), dtype, a.meta_device, a)


convert_element_type = _prim("convert_element_type", _convert_meta, "elementwise")


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


broadcast_in_dim = _prim("broadcast_in_dim", _broadcast_in_dim_meta, "shape")


def _reshape_meta(a, shape):
    n = math.prod(shape_of(a))
    if math.prod(shape) != n:
        raise ShapeError(f"prims.reshape: shape {tuple(shape)} is invalid for a tensor of {n} elements")
    return new_tensor(tuple(shape), dtype_of(a), a.meta_device, a)


reshape = _prim("reshape", _reshape_meta, "shape")


def _transpose_meta(a, permutation):
    s = shape_of(a)
    if sorted(permutation) != list(range(len(s))):
        raise ShapeError(f"prims.transpose: {permutation} is not a permutation of {len(s)} dims")
    return new_tensor(tuple(s[p] for p in permutation), dtype_of(a), a.meta_device, a)


transpose = _prim("transpose", _transpose_meta, "shape")


def _slice_meta(a, start_indices, end_indices, strides=None):
    s = shape_of(a)
    strides = strides or (1,) * len(s)
    out = []
    for lo, hi, st, d in zip(start_indices, end_indices, strides, s):
        if not (0 <= lo <= hi <= d) or st < 1:
            raise ShapeError(f"prims.slice: bad slice [{lo}:{hi}:{st}] of a dimension of length {d}")
        out.append((hi - lo + st - 1) // st)
    return new_tensor(tuple(out), dtype_of(a), a.meta_device, a)


slice_prim = register(Symbol("slice", "prims", meta=_slice_meta, tags=("prim", "shape")))


def _squeeze_meta(a, dims):
    s = shape_of(a)
    for d in dims:
        if s[d] != 1:
            raise ShapeError(f"prims.squeeze: dimension {d} has length {s[d]}, not 1")
    return new_tensor(tuple(x for i, x in enumerate(s) if i not in dims), dtype_of(a), a.meta_device, a)


squeeze = _prim("squeeze", _squeeze_meta, "shape")


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


cat = _prim("cat", _cat_meta, "shape")


def _flip_meta(a, dims):
    return new_tensor(shape_of(a), dtype_of(a), a.meta_device, a)


flip = _prim("flip", _flip_meta, "shape")


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


sum = _prim("sum", _reduction_meta("sum", "sum"), "reduction")
prod = _prim("prod", _reduction_meta("prod", "sum"), "reduction")
amax = _prim("amax", _reduction_meta("amax", "same"), "reduction")
amin = _prim("amin", _reduction_meta("amin", "same"), "reduction")
argmax = _prim("argmax", _reduction_meta("argmax", "index"), "reduction")
argmin = _prim("argmin", _reduction_meta("argmin", "index"), "reduction")


def _var_meta(a, dims, *, correction):
    s = shape_of(a)
    dims = canonical_dims(dims, len(s), "prims.var")
    dt = dtype_of(a)
    if dt.is_complex:
        dt = torch.float32 if dt is torch.complex64 else torch.float64
    return new_tensor(tuple(x for i, x in enumerate(s) if i not in dims), dt, a.meta_device, a)


var = _prim("var", _var_meta, "reduction")


def _cumsum_meta(a, dim, *, dtype=None):
    dt = dtype or dtype_of(a)
    if dtype is None and not (dt.is_floating_point or dt.is_complex):
        dt = torch.int64
    return new_tensor(shape_of(a), dt, a.meta_device, a)


cumsum = _prim("cumsum", _cumsum_meta, "reduction")


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


def _scatter_add_meta(a, dim, index, src):
    return new_tensor(shape_of(a), dtype_of(a), a.meta_device, a, src)


scatter_add = _prim("scatter_add", _scatter_add_meta)


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


full = _prim("full", _full_meta, "factory")


def _iota_meta(length, *, start, step, dtype, device):
    return new_tensor((length,), dtype, torch.device(device))


iota = _prim("iota", _iota_meta, "factory")


def _uniform_meta(shape, minval, maxval, *, dtype, device):
    return new_tensor(tuple(shape), dtype, torch.device(device))


uniform = _prim("uniform", _uniform_meta, "factory", "random")


# -- writes -------------------------------------------------------------------------------
def _copy_meta(src, dst):
    if shape_of(src) != shape_of(dst):
        broadcast_shapes(shape_of(dst), shape_of(src), op="prims.copy_")
    return None


copy_ = _prim("copy_", _copy_meta, "inplace")


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
# gradient is a prim too (``thunder/ops/vjp.py`` uses them).
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


def _polygamma_meta(n, a):
    return _unary_meta("polygamma", "float")(a)


# the n-th derivative of digamma: the gradient of digamma (and of itself)
polygamma = _prim("polygamma", _polygamma_meta, "elementwise", "transcendental")


# ``prims.slice`` must resolve by its printed name; bound last so nothing above sees the
# builtin ``slice`` shadowed.
globals()["slice"] = slice_prim
