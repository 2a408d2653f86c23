"""Windowed primitives (convolution and pooling) and their gradients, with ``sort``, the
gradient of a custom operator, and ``polygamma`` (digamma's derivatives)."""

from __future__ import annotations

import torch

from thunder.core.tags import Tag
from thunder.ops.meta import ShapeError, common_device, dtype_of, is_tensor, new_tensor, shape_of
from thunder.ops.prims.declare import _prim
from thunder.ops.prims.elementwise import Rule, _unary_meta


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
