"""Backward ops: the gradient kernels that VJP rules call where a decomposition would be slow
(and ``native_layer_norm`` and ``native_group_norm``, whose statistics the norms' backward
kernels take; the attention pair is in ``flash_attention.py``).

Each mirrors a ``torch.ops.aten`` backward kernel argument for argument, so the torch
executor runs it as that one kernel (``torch_impl``), while its decomposition into prims is
what fusion executors see and what the op database checks against the kernel. No user code
calls these: only the VJP rules in ``thunder/ops/vjp/`` do, so none is mapped to a torch
callable.
"""

from __future__ import annotations

import math

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch.reductions import keep_dims
from thunder.ops.meta import LOW_PRECISION_DTYPES, ShapeError, device_of, dtype_of, shape_of


def _up(a):
    """``a`` in float32 when it is bfloat16/float16 (as torch's kernels compute)."""
    return prims.convert_element_type(a, torch.float32) if dtype_of(a) in LOW_PRECISION_DTYPES else a


def _as(a, dtype):
    return a if dtype_of(a) is dtype else prims.convert_element_type(a, dtype)


def _stats_dtype(input, *params) -> torch.dtype:
    """The dtype of a norm kernel's mean and 1/std: float32 for a bfloat16/float16 input with
    float32 parameters (the CPU kernels' mixed type), else the input's."""
    given = [p for p in params if p is not None]
    if dtype_of(input) in LOW_PRECISION_DTYPES and given and all(dtype_of(p) is torch.float32 for p in given):
        return torch.float32
    return dtype_of(input)


def _sum_keep(a, dims):
    return keep_dims(prims.sum(a, dims), shape_of(a), dims)


@torchsymbol(torch_impl="torch.ops.aten.threshold_backward.default", tags=(Tag.ELEMENTWISE, Tag.BACKWARD_OP))
def threshold_backward(grad_output, self, threshold):
    """0 where ``self <= threshold``, else ``grad_output`` (relu's gradient, from its output); a
    NaN ``self`` compares false and passes the gradient, as eager's kernel does."""
    return prims.where(prims.le(self, threshold), 0, grad_output)


@torchsymbol(torch_impl="torch.ops.aten.gelu_backward.default", tags=(Tag.ELEMENTWISE, Tag.BACKWARD_OP))
def gelu_backward(grad_output, self, *, approximate: str = "none"):
    g, x = _up(grad_output), _up(self)
    if approximate == "none":
        cdf = prims.mul(prims.add(prims.erf(prims.mul(x, 1 / math.sqrt(2))), 1), 0.5)
        pdf = prims.mul(prims.exp(prims.mul(prims.mul(x, x), -0.5)), 1 / math.sqrt(2 * math.pi))
        d = prims.add(cdf, prims.mul(x, pdf))
    elif approximate == "tanh":
        k, c = math.sqrt(2 / math.pi), 0.044715
        x2 = prims.mul(x, x)
        t = prims.tanh(prims.mul(prims.add(x, prims.mul(prims.mul(x2, x), c)), k))
        left = prims.mul(prims.add(t, 1), 0.5)
        inner_d = prims.mul(prims.add(prims.mul(x2, 3 * c), 1), k)
        right = prims.mul(prims.mul(prims.mul(x, 0.5), prims.sub(1, prims.mul(t, t))), inner_d)
        d = prims.add(left, right)
    else:
        raise ShapeError(f"gelu_backward: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _as(prims.mul(g, d), dtype_of(grad_output))


@torchsymbol(torch_impl="torch.ops.aten.silu_backward.default", tags=(Tag.ELEMENTWISE, Tag.BACKWARD_OP))
def silu_backward(grad_output, self):
    g, x = _up(grad_output), _up(self)
    s = prims.sigmoid(x)
    d = prims.mul(s, prims.add(prims.mul(x, prims.sub(1, s)), 1))
    return _as(prims.mul(g, d), dtype_of(grad_output))


# eager's hardsigmoid_backward kernels (CPU and CUDA, every dtype) multiply by ``1.0f / 6.0f``:
# one sixth rounded to float32 (0.16666667163372040), 3e-8 from the float64 one sixth
_ONE_SIXTH_F32 = float(torch.tensor(1 / 6, dtype=torch.float32))


@torchsymbol(
    torch_impl="torch.ops.aten.hardsigmoid_backward.default", tags=(Tag.ELEMENTWISE, Tag.BACKWARD_OP)
)
def hardsigmoid_backward(grad_output, self):
    """``grad_output`` times eager's one sixth where ``-3 < self < 3``, else 0: eager's values
    in every dtype, float64 included (differentiating ``min(max(x + 3, 0), 6) / 6`` divides by
    the exact 6 instead, 3e-8 relative from eager, and halves the gradient at -3 and 3)."""
    g, x = _up(grad_output), _up(self)
    inside = prims.logical_and(prims.gt(x, -3), prims.lt(x, 3))
    return _as(prims.where(inside, prims.mul(g, _ONE_SIXTH_F32), 0), dtype_of(grad_output))


@torchsymbol(torch_impl="torch.ops.aten.hardswish_backward.default", tags=(Tag.ELEMENTWISE, Tag.BACKWARD_OP))
def hardswish_backward(grad_output, self):
    """0 where ``self <= -3``, ``grad_output * (self / 3 + 0.5)`` below 3, else
    ``grad_output``: eager's formula and its values at -3 and 3."""
    g, x = _up(grad_output), _up(self)
    mid = prims.where(prims.lt(x, 3), prims.mul(g, prims.add(prims.div(x, 3), 0.5)), g)
    return _as(prims.where(prims.le(x, -3), 0, mid), dtype_of(grad_output))


@torchsymbol(torch_impl="torch.ops.aten._softmax_backward_data.default", tags=(Tag.BACKWARD_OP,))
def softmax_backward(grad_output, output, dim: int, input_dtype: torch.dtype):
    """output * (grad - sum(grad * output)) along ``dim``, in ``input_dtype``."""
    g, y = _up(grad_output), _up(output)
    d = dim % max(len(shape_of(y)), 1)
    return _as(prims.mul(y, prims.sub(g, _sum_keep(prims.mul(g, y), (d,)))), input_dtype)


@torchsymbol(torch_impl="torch.ops.aten._log_softmax_backward_data.default", tags=(Tag.BACKWARD_OP,))
def log_softmax_backward(grad_output, output, dim: int, input_dtype: torch.dtype):
    """grad - exp(output) * sum(grad) along ``dim``, in ``input_dtype``."""
    g, y = _up(grad_output), _up(output)
    d = dim % max(len(shape_of(y)), 1)
    return _as(prims.sub(g, prims.mul(prims.exp(y), _sum_keep(g, (d,)))), input_dtype)


def _wanted(output_mask, params, op: str) -> tuple[bool, ...]:
    """``output_mask`` checked against the parameters it asks gradients of (aten's kernels
    return no tensor for an output not asked for, and cannot give one of a missing parameter)."""
    mask = tuple(bool(m) for m in output_mask)
    if len(mask) != 3 or not mask[0] or any(m and p is None for m, p in zip(mask[1:], params)):
        raise ShapeError(
            f"{op}: output_mask {output_mask} must ask for the input's gradient, and for a "
            f"parameter's only where it is given (weight, bias: {[p is not None for p in params]})"
        )
    return mask


@torchsymbol(torch_impl="torch.ops.aten.native_layer_norm_backward.default", tags=(Tag.BACKWARD_OP,))
def layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask):
    """The gradients ``output_mask`` asks for, of (input, weight, bias), of ``F.layer_norm``;
    ``mean``/``rstd`` have the input's shape with the normalized dims kept as 1. Only the
    gradients asked for are returned (aten's kernel returns None for the others; the torch
    executor leaves them out), the input's always."""
    mask = _wanted(output_mask, (weight, bias), "layer_norm_backward")
    s = shape_of(input)
    k = len(tuple(normalized_shape))
    axes = tuple(range(len(s) - k, len(s)))
    lead = tuple(range(len(s) - k))
    n = math.prod(s[len(s) - k :])
    dt = dtype_of(input)
    g, x = _up(grad_out), _up(input)
    xhat = prims.mul(prims.sub(x, mean), rstd)
    gxhat = g if weight is None else prims.mul(g, _up(weight))
    a = prims.mul(gxhat, n)
    b = _sum_keep(gxhat, axes)
    c = prims.mul(xhat, _sum_keep(prims.mul(gxhat, xhat), axes))
    out = [_as(prims.mul(prims.div(rstd, n), prims.sub(prims.sub(a, b), c)), dt)]
    if mask[1]:
        gw = prims.sum(prims.mul(g, xhat), lead) if lead else prims.mul(g, xhat)
        out.append(_as(gw, dtype_of(weight)))
    if mask[2]:
        gb = prims.sum(g, lead) if lead else prims.clone(g)
        out.append(_as(gb, dtype_of(bias)))
    return tuple(out)


@torchsymbol(torch_impl="torch.ops.aten.embedding_dense_backward.default", tags=(Tag.BACKWARD_OP,))
def embedding_backward(grad_output, indices, num_weights: int, padding_idx: int, scale_grad_by_freq: bool):
    """The weight's gradient of ``F.embedding``: rows summed by index; the ``padding_idx`` row
    (``-1``: none) gets none; with ``scale_grad_by_freq`` each row is divided by its count."""
    d = shape_of(grad_output)[-1]
    n = math.prod(shape_of(indices))
    dev = device_of(grad_output)
    idx = prims.reshape(indices, (n,))
    g = prims.reshape(grad_output, (n, d))
    if scale_grad_by_freq:
        ones = prims.full((n,), 1, dtype=dtype_of(g), device=dev)
        counts = prims.scatter_add(prims.full((num_weights,), 0, dtype=dtype_of(g), device=dev), 0, idx, ones)
        g = prims.div(g, prims.broadcast_in_dim(prims.take(counts, idx, 0), (n, d), (0,)))
    if padding_idx >= 0:
        g = prims.where(prims.broadcast_in_dim(prims.eq(idx, padding_idx), (n, d), (0,)), 0, g)
    zeros = prims.full((num_weights, d), 0, dtype=dtype_of(g), device=dev)
    return prims.scatter_add(zeros, 0, prims.broadcast_in_dim(idx, (n, d), (0,)), g)


@torchsymbol(torch_impl="torch.ops.aten.slice_backward.default", tags=(Tag.BACKWARD_OP,))
def slice_backward(grad_output, input_sizes, dim: int, start: int, end: int, step: int):
    """Zeros of ``input_sizes`` with ``grad_output`` in ``[start:end:step]`` along ``dim``."""
    s = shape_of(grad_output)
    idx = prims.iota(s[dim], start=start, step=step, dtype=torch.int64, device=device_of(grad_output))
    zeros = prims.full(tuple(input_sizes), 0, dtype=dtype_of(grad_output), device=device_of(grad_output))
    return prims.scatter_add(zeros, dim, prims.broadcast_in_dim(idx, s, (dim,)), grad_output)


@torchsymbol(torch_impl="torch.ops.aten.native_layer_norm.default", tags=(Tag.BACKWARD_OP,))
def native_layer_norm(input, normalized_shape, weight, bias, eps: float):
    """(``F.layer_norm``'s result, mean, 1/std), the statistics with the normalized dims kept
    as 1: what ``layer_norm_backward`` takes (one kernel, where var_mean is several times slower)."""
    s = shape_of(input)
    k = len(tuple(normalized_shape))
    axes = tuple(range(len(s) - k, len(s)))
    n = math.prod(s[len(s) - k :])
    x = _up(input)
    mean = prims.div(_sum_keep(x, axes), n)
    var = keep_dims(prims.var(x, axes, correction=0), shape_of(x), axes)
    rstd = prims.rsqrt(prims.add(var, eps))
    out = prims.mul(prims.sub(x, mean), rstd)
    if weight is not None:
        out = prims.mul(out, _up(weight))
    if bias is not None:
        out = prims.add(out, _up(bias))
    with torch.no_grad():  # as aten's: the statistics are not differentiable outputs
        stats = _stats_dtype(input, weight, bias)
        mean, rstd = prims.clone(_as(mean, stats)), prims.clone(_as(rstd, stats))
    return _as(out, dtype_of(input)), mean, rstd


def _per_channel(p, shape):
    """A (C,) parameter as (1, G, C // G, 1) against ``shape`` (N, G, C // G, HxW)."""
    return prims.broadcast_in_dim(prims.reshape(_up(p), tuple(shape[1:3])), (1, *shape[1:3], 1), (1, 2))


@torchsymbol(torch_impl="torch.ops.aten.native_group_norm.default", tags=(Tag.BACKWARD_OP,))
def native_group_norm(input, weight, bias, N: int, C: int, HxW: int, group: int, eps: float):
    """(``F.group_norm``'s result, mean, 1/std), the statistics of shape (N, group): what
    ``group_norm_backward`` takes (eager's autograd keeps them the same way)."""
    grouped = (N, group, C // group, HxW)
    x = prims.reshape(_up(input), grouped)
    axes = (2, 3)
    mean = prims.div(prims.sum(x, axes), (C // group) * HxW)
    rstd = prims.rsqrt(prims.add(prims.var(x, axes, correction=0), eps))
    out = prims.mul(prims.sub(x, keep_dims(mean, grouped, axes)), keep_dims(rstd, grouped, axes))
    if weight is not None:
        out = prims.mul(out, _per_channel(weight, grouped))
    if bias is not None:
        out = prims.add(out, _per_channel(bias, grouped))
    stats = _stats_dtype(input, weight, bias)
    with torch.no_grad():  # as aten's: the statistics are not differentiable outputs
        mean, rstd = prims.clone(_as(mean, stats)), prims.clone(_as(rstd, stats))
    return _as(prims.reshape(out, shape_of(input)), dtype_of(input)), mean, rstd


@torchsymbol(torch_impl="torch.ops.aten.native_group_norm_backward.default", tags=(Tag.BACKWARD_OP,))
def group_norm_backward(
    grad_out, input, mean, rstd, weight, N: int, C: int, HxW: int, group: int, output_mask
):
    """The gradients ``output_mask`` asks for, of (input, weight, bias), of ``F.group_norm``
    from the statistics ``native_group_norm`` kept; only those are returned (aten's kernel
    returns None for the others). The kernel needs the weight for either parameter's."""
    mask = _wanted(output_mask, (weight, weight), "group_norm_backward")
    grouped = (N, group, C // group, HxW)
    axes = (2, 3)
    n = (C // group) * HxW
    g, x = prims.reshape(_up(grad_out), grouped), prims.reshape(_up(input), grouped)
    mean, rstd = keep_dims(_up(mean), grouped, axes), keep_dims(_up(rstd), grouped, axes)
    xhat = prims.mul(prims.sub(x, mean), rstd)
    gxhat = g if weight is None else prims.mul(g, _per_channel(weight, grouped))
    a = prims.mul(gxhat, n)
    b = _sum_keep(gxhat, axes)
    c = prims.mul(xhat, _sum_keep(prims.mul(gxhat, xhat), axes))
    gi = prims.mul(prims.div(rstd, n), prims.sub(prims.sub(a, b), c))
    out = [_as(prims.reshape(gi, shape_of(input)), dtype_of(input))]
    if mask[1]:
        out.append(_as(prims.reshape(prims.sum(prims.mul(g, xhat), (0, 3)), (C,)), dtype_of(weight)))
    if mask[2]:
        out.append(_as(prims.reshape(prims.sum(g, (0, 3)), (C,)), dtype_of(weight)))
    return tuple(out)
