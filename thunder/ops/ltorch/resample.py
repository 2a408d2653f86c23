"""Resampling: ``F.interpolate`` (nearest, nearest-exact, linear, bilinear, bicubic,
trilinear, area), ``F.grid_sample``, ``F.unfold`` and ``F.fold``.

Each is a composition of prims. Shapes are static, so the source positions and blending
weights are computed in the trace from iotas, the values are gathered with ``prims.take``
(``prims.take_along_axis`` where positions come from data, as in ``grid_sample``) and
blended with elementwise prims: gradients follow from those. Where a rounding decides which
element is taken (the nearest modes), the index arithmetic is done in the dtypes torch's
kernels use, because a last-bit difference there changes the answer, not just its last bit.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.meta import ShapeError, device_of, dtype_of, shape_of

_LOW_PRECISION = (torch.bfloat16, torch.float16)
# spatial dimensions each interpolating mode works on (the nearest modes and area take 1-3)
_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_MODES = ("nearest", "nearest-exact", "area", *_MODE_DIMS)
_CUBIC_A = -0.75  # torch's bicubic convolution constant


def _iota(n: int, dtype, device, start=0, step=1):
    return prims.iota(n, start=start, step=step, dtype=dtype, device=device)


def _along(v, shape, dim: int):
    """A 1-D ``v`` broadcast along dimension ``dim`` of ``shape``."""
    return prims.broadcast_in_dim(v, tuple(1 if i != dim else shape[i] for i in range(len(shape))), (dim,))


def _compute_dtype(dt: torch.dtype) -> torch.dtype:
    return torch.float32 if dt in _LOW_PRECISION or not dt.is_floating_point else dt


# -- F.interpolate --------------------------------------------------------------------------
def _output_sizes(s, n: int, size, scale_factor, mode: str, recompute_scale_factor, op: str):
    """(output sizes, the scale per dim torch's kernel is given or None) for F.interpolate."""
    spatial = s[2:]
    if size is not None and scale_factor is not None:
        raise ShapeError(f"{op}: only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ShapeError(f"{op}: recompute_scale_factor is not meaningful with an explicit size")
        sizes = tuple(size) if isinstance(size, (list, tuple)) else (size,) * n
        if len(sizes) != n:
            raise ShapeError(f"{op}: size {tuple(sizes)} does not match the {n} spatial dims of input {s}")
        out, scales = tuple(int(x) for x in sizes), (None,) * n
    elif scale_factor is not None:
        factors = tuple(scale_factor) if isinstance(scale_factor, (list, tuple)) else (scale_factor,) * n
        if len(factors) != n:
            raise ShapeError(
                f"{op}: scale_factor {tuple(factors)} does not match the {n} spatial dims of input {s}"
            )
        out = tuple(math.floor(float(d) * float(f)) for d, f in zip(spatial, factors))
        # torch's kernels use the given factor for source positions unless told to recompute
        # it from the sizes (always for area)
        recompute = recompute_scale_factor or mode == "area"
        scales = (None,) * n if recompute else tuple(float(f) for f in factors)
    else:
        raise ShapeError(f"{op}: either size or scale_factor should be defined")
    if any(o <= 0 for o in out) or any(d <= 0 for d in spatial):
        raise ShapeError(f"{op}: input {s} and output sizes {out} should be greater than 0")
    return out, scales


def _kernel_scale(in_size: int, out_size: int, scale: float | None) -> float:
    """torch's source step per output element: 1/scale_factor when one was given, else in/out."""
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _nearest_index(in_size: int, out_size: int, scale, exact: bool, device):
    """Source index per output position, as torch's nearest kernels compute it (in float32)."""
    if out_size == in_size and scale is None:
        return None
    if not exact and out_size == 2 * in_size and scale is None:
        return prims.floor_divide(_iota(out_size, torch.int64, device), 2)
    # the kernels hold the step as a float32
    step = torch.tensor(_kernel_scale(in_size, out_size, scale), dtype=torch.float32).item()
    if exact:
        # (i + 0.5) * step is computed in double, then rounded to float before the floor
        pos = prims.convert_element_type(
            prims.mul(_iota(out_size, torch.float64, device, 0.5), step), torch.float32
        )
    else:
        pos = prims.mul(_iota(out_size, torch.float32, device), step)
    idx = prims.convert_element_type(prims.floor(pos), torch.int64)
    return prims.minimum(idx, in_size - 1)


def _source_position(in_size, out_size, align_corners, scale, dtype, device, cubic: bool):
    """Real-valued source position per output position (torch's area_pixel_compute_source_index)."""
    i = _iota(out_size, dtype, device)
    if align_corners:
        step = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        return prims.mul(i, step)
    pos = prims.sub(prims.mul(prims.add(i, 0.5), _kernel_scale(in_size, out_size, scale)), 0.5)
    return pos if cubic else prims.maximum(pos, 0.0)


def _index_and_lambda(pos, in_size: int, dtype):
    """(floor of ``pos`` capped at the last index, the fraction past it clamped to [0, 1])."""
    idx = prims.minimum(prims.convert_element_type(prims.floor(pos), torch.int64), in_size - 1)
    lam = prims.clamp(prims.sub(pos, prims.convert_element_type(idx, dtype)), 0.0, 1.0)
    return idx, lam


def _blend(x, dim: int, taps):
    """sum_k take(x, index_k, dim) * weight_k for (index, weight) ``taps`` along ``dim``."""
    out = None
    for idx, w in taps:
        term = prims.take(x, idx, dim)
        term = prims.mul(term, _along(w, shape_of(term), dim))
        out = term if out is None else prims.add(out, term)
    return out


def _linear_dim(x, dim: int, out_size: int, align_corners: bool, scale, dtype):
    in_size = shape_of(x)[dim]
    pos = _source_position(in_size, out_size, align_corners, scale, dtype, device_of(x), cubic=False)
    i0, lam = _index_and_lambda(pos, in_size, dtype)
    i1 = prims.minimum(prims.add(i0, 1), in_size - 1)
    return _blend(x, dim, ((i0, prims.sub(1.0, lam)), (i1, lam)))


def _cubic_weights(t):
    """torch's cubic convolution coefficients (A = -0.75) for taps at -1, 0, 1, 2."""
    a = _CUBIC_A

    def near(v):  # |v| <= 1: ((a + 2) v - (a + 3)) v^2 + 1
        return prims.add(prims.mul(prims.mul(prims.sub(prims.mul(v, a + 2), a + 3), v), v), 1.0)

    def far(v):  # 1 < |v| < 2: ((a v - 5a) v + 8a) v - 4a
        return prims.sub(
            prims.mul(prims.add(prims.mul(prims.sub(prims.mul(v, a), 5 * a), v), 8 * a), v), 4 * a
        )

    u = prims.sub(1.0, t)
    return far(prims.add(t, 1.0)), near(t), near(u), far(prims.add(u, 1.0))


def _cubic_dim(x, dim: int, out_size: int, align_corners: bool, scale, dtype):
    in_size = shape_of(x)[dim]
    pos = _source_position(in_size, out_size, align_corners, scale, dtype, device_of(x), cubic=True)
    idx, t = _index_and_lambda(pos, in_size, dtype)
    taps = [prims.clamp(prims.add(idx, k - 1), 0, in_size - 1) for k in range(4)]
    return _blend(x, dim, zip(taps, _cubic_weights(t)))


@torchsymbol(F.interpolate, torch_impl="torch.nn.functional.interpolate", tags=(Tag.RESAMPLE,))
def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
):
    op = "F.interpolate"
    s = shape_of(input)
    n = len(s) - 2
    if mode not in _MODES:
        raise ShapeError(f"{op}: mode {mode!r} is not one of {', '.join(_MODES)}")
    if not 1 <= n <= 3:
        raise ShapeError(
            f"{op}: expected a 3-D, 4-D or 5-D input (batch, channels, spatial...), got shape {s}"
        )
    if mode in _MODE_DIMS and _MODE_DIMS[mode] != n:
        raise ShapeError(
            f"{op}: got a {n + 2}-D input, but mode {mode!r} needs a {_MODE_DIMS[mode] + 2}-D input"
        )
    if align_corners is not None and mode not in _MODE_DIMS:
        raise ShapeError(
            f"{op}: align_corners can only be set with the interpolating modes linear, bilinear, bicubic "
            f"and trilinear, not {mode!r}"
        )
    if antialias:
        raise ShapeError(f"{op}: antialias=True is not supported")
    out_sizes, scales = _output_sizes(s, n, size, scale_factor, mode, recompute_scale_factor, op)
    if mode == "area":
        return prims.adaptive_avg_pool(input, out_sizes)
    if mode in ("nearest", "nearest-exact"):
        x = input
        for j, (o, sc) in enumerate(zip(out_sizes, scales)):
            idx = _nearest_index(s[2 + j], o, sc, mode == "nearest-exact", device_of(input))
            if idx is not None:
                x = prims.take(x, idx, 2 + j)
        return x
    dt = dtype_of(input)
    compute = _compute_dtype(dt)
    x = input if dt is compute else prims.convert_element_type(input, compute)
    resample_dim = _cubic_dim if mode == "bicubic" else _linear_dim
    for j, (o, sc) in enumerate(zip(out_sizes, scales)):
        # the same size is the identity, except for bicubic with a given factor other than 1
        if o != s[2 + j] or (mode == "bicubic" and not align_corners and sc not in (None, 1.0)):
            x = resample_dim(x, 2 + j, o, bool(align_corners), sc, compute)
    return x if dt is compute else prims.convert_element_type(x, dt)
