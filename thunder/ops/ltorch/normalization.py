"""Normalisation ops: ``layer_norm``, ``rms_norm``, ``group_norm``, ``batch_norm`` (which
writes its running statistics when training), ``instance_norm``, ``weight_norm``,
``normalize``, ``cosine_similarity``. Low-precision inputs are normalised in float32, as
torch does."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch import reductions as red
from thunder.ops.ltorch.nn import _cast, _channel_view, _compute_dtype, _expand_to
from thunder.ops.meta import ShapeError, broadcast_shapes, canonical_dim, dtype_of, shape_of


def _normalized_dims(a, normalized_shape, op: str) -> tuple[int, ...]:
    s = shape_of(a)
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(s[len(s) - len(ns) :]) != ns or len(ns) > len(s):
        raise ShapeError(f"{op}: normalized_shape {ns} does not match the end of the input shape {s}")
    return tuple(range(len(s) - len(ns), len(s)))


def _affine(x, weight, bias, compute):
    if weight is not None:
        x = prims.mul(x, _cast(weight, compute))
    if bias is not None:
        x = prims.add(x, _cast(bias, compute))
    return x


def _moments(x, dims):
    """(mean, biased variance) over ``dims``, reduced."""
    mean = prims.div(prims.sum(x, dims), math.prod(shape_of(x)[d] for d in dims))
    return mean, prims.var(x, dims, correction=0)


def _normalize(x, dims, eps, moments=None):
    """(x - mean) / sqrt(var + eps) over ``dims`` (biased variance)."""
    shape = shape_of(x)
    mean, var = moments or _moments(x, dims)
    mean, var = red.keep_dims(mean, shape, dims), red.keep_dims(var, shape, dims)
    return prims.mul(prims.sub(x, mean), prims.rsqrt(prims.add(var, eps)))


def _channel_affine(out, weight, bias, compute, dt):
    """``out`` scaled by ``weight`` and shifted by ``bias``, both per channel (dim 1), cast back
    to ``dt``."""
    n = len(shape_of(out))
    w = None if weight is None else _channel_view(weight, n)
    b = None if bias is None else _channel_view(bias, n)
    return _cast(_affine(out, w, b, compute), dt)


def _by_running_stats(x, running_mean, running_var, eps, compute):
    """``x`` normalised per channel by the running statistics."""
    n = len(shape_of(x))
    mean = _channel_view(_cast(running_mean, compute), n)
    var = _channel_view(_cast(running_var, compute), n)
    return prims.mul(prims.sub(x, mean), prims.rsqrt(prims.add(var, eps)))


def _update_running(running_mean, running_var, mean, unbiased_var, momentum, reduce=None):
    """The running statistics moved ``momentum`` of the way towards the batch's, written in
    place (``prims.copy_``); ``reduce`` first turns a batch statistic into the running one's
    shape (instance norm: the mean over samples)."""
    for run, stat in ((running_mean, mean), (running_var, unbiased_var)):
        if reduce is not None:
            stat = reduce(stat)
        new = prims.add(prims.mul(run, 1 - momentum), prims.mul(_cast(stat, dtype_of(run)), momentum))
        prims.copy_(new, run)


@torchsymbol(F.layer_norm, torch_impl="torch.nn.functional.layer_norm", tags=(Tag.NORM,))
def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    dims = _normalized_dims(input, normalized_shape, "F.layer_norm")
    dt = dtype_of(input)
    compute = _compute_dtype(dt)
    out = _affine(_normalize(_cast(input, compute), dims, eps), weight, bias, compute)
    return _cast(out, dt)


@torchsymbol(F.rms_norm, torch_impl="torch.nn.functional.rms_norm", tags=(Tag.NORM,))
def rms_norm(input, normalized_shape, weight=None, eps: float | None = None):
    dims = _normalized_dims(input, normalized_shape, "F.rms_norm")
    dt = dtype_of(input)
    if eps is None:
        eps = torch.finfo(dt).eps
    compute = _compute_dtype(dt)
    x = _cast(input, compute)
    ms = prims.div(prims.sum(prims.mul(x, x), dims), math.prod(shape_of(x)[d] for d in dims))
    out = prims.mul(x, red.keep_dims(prims.rsqrt(prims.add(ms, eps)), shape_of(x), dims))
    return _cast(_affine(out, weight, None, compute), dt)


@torchsymbol(F.group_norm, torch_impl="torch.nn.functional.group_norm", tags=(Tag.NORM,))
def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    s = shape_of(input)
    if len(s) < 2 or s[1] % num_groups:
        raise ShapeError(f"F.group_norm: {num_groups} groups do not divide the channels of shape {s}")
    dt = dtype_of(input)
    compute = _compute_dtype(dt)
    grouped = prims.reshape(_cast(input, compute), (s[0], num_groups, math.prod(s[1:]) // num_groups))
    out = prims.reshape(_normalize(grouped, (2,), eps), s)
    return _channel_affine(out, weight, bias, compute, dt)


@torchsymbol(F.batch_norm, torch_impl="torch.nn.functional.batch_norm", tags=(Tag.NORM,))
def batch_norm(
    input, running_mean, running_var, weight=None, bias=None, training: bool = False, momentum=0.1, eps=1e-5
):
    """Inference uses the running statistics; training normalises by the batch statistics and
    writes the updated running statistics into ``running_mean``/``running_var`` (``prims.copy_``)."""
    s = shape_of(input)
    if len(s) < 2:
        raise ShapeError(f"F.batch_norm: expected an input of at least 2 dimensions, got shape {s}")
    dt = dtype_of(input)
    compute = _compute_dtype(dt)
    x = _cast(input, compute)
    dims = (0, *range(2, len(s)))
    if training or running_mean is None:
        batch_mean, batch_var = _moments(x, dims)
        out = _normalize(x, dims, eps, (batch_mean, batch_var))
        if training and running_mean is not None:
            n = math.prod(s[d] for d in dims)
            unbiased = prims.mul(batch_var, n / max(n - 1, 1))  # the running variance is unbiased
            _update_running(running_mean, running_var, batch_mean, unbiased, momentum)
    else:
        out = _by_running_stats(x, running_mean, running_var, eps, compute)
    return _channel_affine(out, weight, bias, compute, dt)


@torchsymbol(F.instance_norm, torch_impl="torch.nn.functional.instance_norm", tags=(Tag.NORM,))
def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
):
    """Each (sample, channel) normalised over its own spatial dims. With running statistics,
    they move towards the batch mean of the per-instance statistics (unbiased variance), as
    torch's instance norm (a batch norm over samples * channels) updates them; without
    ``use_input_stats`` the running statistics normalise instead."""
    op = "F.instance_norm"
    s = shape_of(input)
    if len(s) < 3:
        raise ShapeError(f"{op}: expected an input of at least 3 dimensions (N, C, ...), got shape {s}")
    dt = dtype_of(input)
    compute = _compute_dtype(dt)
    x = _cast(input, compute)
    spatial = tuple(range(2, len(s)))
    if use_input_stats:
        n = math.prod(s[2:])
        if n <= 1:
            raise ShapeError(f"{op}: expected more than 1 spatial element when training, got input shape {s}")
        mean, var = _moments(x, spatial)  # (N, C)
        out = _normalize(x, spatial, eps, (mean, var))
        if running_mean is not None:
            batch = s[0]
            unbiased = prims.mul(var, n / (n - 1))
            _update_running(
                running_mean,
                running_var,
                mean,
                unbiased,
                momentum,
                lambda stat: prims.div(prims.sum(stat, (0,)), batch),
            )
    else:
        if running_mean is None or running_var is None:
            raise ShapeError(f"{op}: use_input_stats=False needs running_mean and running_var")
        out = _by_running_stats(x, running_mean, running_var, eps, compute)
    return _channel_affine(out, weight, bias, compute, dt)


@torchsymbol(torch._weight_norm, torch_impl="torch._weight_norm", tags=(Tag.NORM,))
def weight_norm(v, g, dim: int = 0):
    """``v * (g / ||v||)``, the norm taken over every dim but ``dim`` (over all of them for
    ``dim=-1``, as torch's weight norm reads it)."""
    op = "torch._weight_norm"
    s = shape_of(v)
    dims = (
        tuple(range(len(s)))
        if dim == -1
        else tuple(i for i in range(len(s)) if i != canonical_dim(dim, len(s), op))
    )
    dt = dtype_of(v)
    compute = _compute_dtype(dt)
    x = _cast(v, compute)
    norm = prims.sqrt(prims.sum(prims.mul(x, x), dims)) if dims else prims.abs(x)
    norm = red.keep_dims(norm, s, dims)
    scale = prims.div(_cast(g, compute), norm)
    return _cast(prims.mul(x, scale), dt)


@torchsymbol(F.normalize, torch_impl="torch.nn.functional.normalize", tags=(Tag.NORM,))
def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12):
    norm = red.vector_norm(input, p, dim, True)
    return prims.div(input, _expand_to(prims.maximum(norm, eps), shape_of(input)))


@torchsymbol(
    F.cosine_similarity, torch.cosine_similarity, torch_impl="torch.cosine_similarity", tags=(Tag.NORM,)
)
def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    shape = broadcast_shapes(shape_of(x1), shape_of(x2), op="F.cosine_similarity")
    x1, x2 = _expand_to(x1, shape), _expand_to(x2, shape)
    n1 = prims.maximum(red.vector_norm(x1, 2, dim, True), eps)
    n2 = prims.maximum(red.vector_norm(x2, 2, dim, True), eps)
    prod = prims.mul(prims.div(x1, n1), prims.div(x2, n2))
    return red.sum(prod, dim)
