"""Resampling: ``F.interpolate`` (nearest, nearest-exact, linear, bilinear, bicubic,
trilinear, area), ``F.grid_sample``, ``F.unfold`` and ``F.fold``, ``Tensor.unfold`` (sliding
windows along one dim) and ``F.channel_shuffle``.

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
from thunder.ops.meta import LOW_PRECISION_DTYPES, ShapeError, canonical_dim, device_of, dtype_of, shape_of

T = torch.Tensor
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
    return torch.float32 if dt in LOW_PRECISION_DTYPES or not dt.is_floating_point else dt


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


# -- F.grid_sample ----------------------------------------------------------------------------
def _unnormalize(coord, size: int, align_corners: bool):
    """[-1, 1] -> source position: the corner pixels' centres (align_corners) or edges."""
    if align_corners:
        return prims.mul(prims.div(prims.add(coord, 1.0), 2.0), size - 1)
    return prims.div(prims.sub(prims.mul(prims.add(coord, 1.0), size), 1.0), 2.0)


def _clip(coord, size: int):
    return prims.minimum(prims.maximum(coord, 0.0), float(size - 1))


def _reflect(coord, twice_low: int, twice_high: int):
    """``coord`` reflected off the bounds twice_low / 2 and twice_high / 2 until inside."""
    if twice_low == twice_high:
        return prims.mul(coord, 0.0)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = prims.abs(prims.sub(coord, low))
    extra = prims.fmod(c, span)
    flips = prims.floor(prims.div(c, span))
    even = prims.eq(prims.fmod(flips, 2.0), 0.0)
    return prims.where(even, prims.add(extra, low), prims.add(prims.sub(span, extra), low))


def _padded_coordinate(coord, size: int, padding_mode: str, align_corners: bool):
    if padding_mode == "border":
        return _clip(coord, size)
    if padding_mode == "reflection":
        twice = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        return _clip(_reflect(coord, *twice), size)
    return coord


def _gather_points(flat, positions, sizes, out_shape):
    """Values of ``flat`` (N, C, prod(sizes)) at integer ``positions`` (one (N, *out) tensor
    per spatial dim), zero where a position is outside; -> (N, C, *out)."""
    n, c = shape_of(flat)[:2]
    inside, linear = None, None
    for p, size in zip(positions, sizes):
        ok = prims.logical_and(prims.ge(p, 0), prims.lt(p, size))
        inside = ok if inside is None else prims.logical_and(inside, ok)
        p = prims.clamp(p, 0, size - 1)
        linear = p if linear is None else prims.add(prims.mul(linear, size), p)
    q = math.prod(out_shape)
    idx = prims.broadcast_in_dim(prims.reshape(linear, (n, q)), (n, c, q), (0, 2))
    vals = prims.reshape(prims.take_along_axis(flat, idx, 2), (n, c, *out_shape))
    mask = prims.broadcast_in_dim(inside, (n, c, *out_shape), (0, *range(2, 2 + len(out_shape))))
    return prims.where(mask, vals, 0.0)


def _per_channel(w, c: int):
    """A (N, *out) weight broadcast against (N, C, *out) values."""
    s = shape_of(w)
    return prims.broadcast_in_dim(w, (s[0], c, *s[1:]), (0, *range(2, len(s) + 1)))


@torchsymbol(F.grid_sample, torch_impl="torch.nn.functional.grid_sample", tags=(Tag.RESAMPLE,))
def grid_sample(
    input, grid, mode: str = "bilinear", padding_mode: str = "zeros", align_corners: bool | None = None
):
    """Values of ``input`` (N, C, *spatial) at the positions of ``grid`` (N, *out, n) in
    [-1, 1] (x first, indexing the last spatial dim), blended from the neighbouring elements
    (bilinear/trilinear, bicubic) or taken from the nearest; ``padding_mode`` decides what lies
    outside (zeros, the border, or a reflection)."""
    op = "F.grid_sample"
    s, sg = shape_of(input), shape_of(grid)
    n = len(s) - 2
    if n not in (2, 3) or len(sg) != n + 2 or sg[-1] != n or sg[0] != s[0]:
        raise ShapeError(
            f"{op}: expected input (N, C, H, W) with grid (N, H_out, W_out, 2), or 5-D with 3, got {s} and {sg}"
        )
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ShapeError(f"{op}: mode must be bilinear, nearest or bicubic, got {mode!r}")
    if mode == "bicubic" and n != 2:
        raise ShapeError(f"{op}: bicubic interpolation only supports 4-D input")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ShapeError(f"{op}: padding_mode must be zeros, border or reflection, got {padding_mode!r}")
    align = bool(align_corners)
    dt = dtype_of(input)
    compute = _compute_dtype(dt)
    x = input if dt is compute else prims.convert_element_type(input, compute)
    g = grid if dtype_of(grid) is compute else prims.convert_element_type(grid, compute)
    sizes, out_shape, c = s[2:], sg[1:-1], s[1]
    flat = prims.reshape(x, (s[0], c, math.prod(sizes)))
    # the grid's coordinate k indexes spatial dim n - 1 - k
    coords = []
    for d in range(n):
        k = n - 1 - d
        lo, hi = [0] * len(sg), list(sg)
        lo[-1], hi[-1] = k, k + 1
        coords.append(prims.squeeze(prims.slice(g, tuple(lo), tuple(hi), (1,) * len(sg)), (len(sg) - 1,)))
    if mode == "bicubic":
        out = _bicubic_sample(flat, coords, sizes, out_shape, c, padding_mode, align)
    else:
        pos = [
            _padded_coordinate(_unnormalize(cd, size, align), size, padding_mode, align)
            for cd, size in zip(coords, sizes)
        ]
        if mode == "nearest":
            idx = [prims.convert_element_type(prims.round(p), torch.int64) for p in pos]
            out = _gather_points(flat, idx, sizes, out_shape)
        else:
            floors = [prims.floor(p) for p in pos]
            out = None
            for corner in range(2**n):
                weight, idx = None, []
                for d in range(n):
                    high = (corner >> d) & 1
                    f = prims.add(floors[d], 1.0) if high else floors[d]
                    w = prims.sub(pos[d], floors[d]) if high else prims.sub(prims.add(floors[d], 1.0), pos[d])
                    weight = w if weight is None else prims.mul(weight, w)
                    idx.append(prims.convert_element_type(f, torch.int64))
                term = prims.mul(_gather_points(flat, idx, sizes, out_shape), _per_channel(weight, c))
                out = term if out is None else prims.add(out, term)
    return out if dt is compute else prims.convert_element_type(out, dt)


def _bicubic_sample(flat, coords, sizes, out_shape, c, padding_mode, align):
    """4 x 4 taps around each point, each tap's coordinate padded on its own, as torch does."""
    (iy_c, ix_c), (h, w) = coords, sizes
    ix, iy = _unnormalize(ix_c, w, align), _unnormalize(iy_c, h, align)
    x0, y0 = prims.floor(ix), prims.floor(iy)
    wx, wy = _cubic_weights(prims.sub(ix, x0)), _cubic_weights(prims.sub(iy, y0))
    out = None
    for j in range(4):
        row = None
        ty = _padded_coordinate(prims.add(y0, float(j - 1)), h, padding_mode, align)
        for i in range(4):
            tx = _padded_coordinate(prims.add(x0, float(i - 1)), w, padding_mode, align)
            # truncation toward zero, as the kernel casts the padded coordinate
            idx = [prims.convert_element_type(t, torch.int64) for t in (ty, tx)]
            term = prims.mul(_gather_points(flat, idx, sizes, out_shape), _per_channel(wx[i], c))
            row = term if row is None else prims.add(row, term)
        term = prims.mul(row, _per_channel(wy[j], c))
        out = term if out is None else prims.add(out, term)
    return out


# -- F.unfold / F.fold ------------------------------------------------------------------------
def _im2col_args(kernel_size, dilation, padding, stride, op: str):
    def pair(v, name):
        v = (v, v) if isinstance(v, int) else tuple(v)
        if len(v) != 2:
            raise ShapeError(f"{op}: {name} must be an int or a pair of ints, got {v}")
        return v

    return (
        pair(kernel_size, "kernel_size"),
        pair(dilation, "dilation"),
        pair(padding, "padding"),
        pair(stride, "stride"),
    )


def _block_positions(hp: int, wp: int, k, dil, stride, blocks, device):
    """(kh * kw, L) flat positions in the padded (hp, wp) plane of each block's elements."""
    (kh, kw), (oh, ow) = k, blocks
    ki = prims.iota(kh, start=0, step=dil[0] * wp, dtype=torch.int64, device=device)
    kj = prims.iota(kw, start=0, step=dil[1], dtype=torch.int64, device=device)
    oi = prims.iota(oh, start=0, step=stride[0] * wp, dtype=torch.int64, device=device)
    oj = prims.iota(ow, start=0, step=stride[1], dtype=torch.int64, device=device)
    shape = (kh, kw, oh, ow)
    pos = prims.broadcast_in_dim(ki, shape, (0,))
    for v, d in ((kj, 1), (oi, 2), (oj, 3)):
        pos = prims.add(pos, prims.broadcast_in_dim(v, shape, (d,)))
    return prims.reshape(pos, (kh * kw, oh * ow))


def _blocks(size: int, k: int, dil: int, pad: int, stride: int) -> int:
    return (size + 2 * pad - dil * (k - 1) - 1) // stride + 1


def _zero_pad(x, pad):
    """(N, C, H, W) with ``pad`` zero rows and columns on each side."""
    out = x
    for d, p in ((2, pad[0]), (3, pad[1])):
        if p:
            s = list(shape_of(out))
            s[d] = p
            z = prims.full(tuple(s), 0, dtype=dtype_of(x), device=device_of(x))
            out = prims.cat([z, out, z], d)
    return out


@torchsymbol(F.unfold, torch_impl="torch.nn.functional.unfold", tags=(Tag.RESAMPLE,))
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks as columns (im2col): (N, C, H, W) -> (N, C * kh * kw, L), gathered from
    the zero-padded input at each block's positions."""
    op = "F.unfold"
    s = shape_of(input)
    if len(s) not in (3, 4):
        raise ShapeError(f"{op}: expected a 3-D or 4-D input, got shape {s}")
    batched = len(s) == 4
    x = input if batched else prims.broadcast_in_dim(input, (1, *s), (1, 2, 3))
    k, dil, pad, st = _im2col_args(kernel_size, dilation, padding, stride, op)
    n, c, h, w = shape_of(x)
    blocks = tuple(_blocks(size, *args) for size, args in zip((h, w), zip(k, dil, pad, st)))
    if any(b <= 0 for b in blocks):
        raise ShapeError(f"{op}: kernel {k} with dilation {dil} does not fit the padded input {(h, w)}")
    hp, wp = h + 2 * pad[0], w + 2 * pad[1]
    flat = prims.reshape(_zero_pad(x, pad), (n, c, hp * wp))
    cols = prims.take(flat, _block_positions(hp, wp, k, dil, st, blocks, device_of(x)), 2)
    out = prims.reshape(cols, (n, c * k[0] * k[1], blocks[0] * blocks[1]))
    return out if batched else prims.squeeze(out, (0,))


@torchsymbol(F.fold, torch_impl="torch.nn.functional.fold", tags=(Tag.RESAMPLE,))
def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Columns summed back into an image (col2im), the inverse arrangement of ``unfold``:
    each column's elements are added at their block positions of the padded output, which is
    then cropped."""
    op = "F.fold"
    s = shape_of(input)
    if len(s) not in (2, 3):
        raise ShapeError(f"{op}: expected a 2-D or 3-D input, got shape {s}")
    batched = len(s) == 3
    x = input if batched else prims.broadcast_in_dim(input, (1, *s), (1, 2))
    k, dil, pad, st = _im2col_args(kernel_size, dilation, padding, stride, op)
    (h, w) = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    n, ck, length = shape_of(x)
    kk = k[0] * k[1]
    if ck % kk:
        raise ShapeError(f"{op}: input channels {ck} are not divisible by the kernel's {kk} elements")
    blocks = tuple(_blocks(size, *args) for size, args in zip((h, w), zip(k, dil, pad, st)))
    if blocks[0] * blocks[1] != length:
        raise ShapeError(
            f"{op}: {length} blocks do not fit output_size {(h, w)} ({blocks[0]} x {blocks[1]} expected)"
        )
    c = ck // kk
    hp, wp = h + 2 * pad[0], w + 2 * pad[1]
    pos = prims.reshape(_block_positions(hp, wp, k, dil, st, blocks, device_of(x)), (kk * length,))
    idx = prims.broadcast_in_dim(pos, (n, c, kk * length), (2,))
    src = prims.reshape(x, (n, c, kk * length))
    zeros = prims.full((n, c, hp * wp), 0, dtype=dtype_of(x), device=device_of(x))
    out = prims.reshape(prims.scatter_add(zeros, 2, idx, src), (n, c, hp, wp))
    if pad != (0, 0):
        out = prims.slice(out, (0, 0, pad[0], pad[1]), (n, c, pad[0] + h, pad[1] + w), (1, 1, 1, 1))
    return out if batched else prims.squeeze(out, (0,))


@torchsymbol(T.unfold, torch_impl="torch.Tensor.unfold", tags=(Tag.SHAPE, Tag.VIEW), name="tensor_unfold")
def tensor_unfold(a, dimension: int, size: int, step: int):
    """The windows of ``size`` elements every ``step`` along ``dimension``, as a new last dim
    (a strided view in eager; here the windows' positions are gathered with ``prims.take``,
    whose gradient adds overlapping windows back up)."""
    op = "Tensor.unfold"
    s = shape_of(a)
    d = canonical_dim(dimension, len(s), op)
    n = s[d] if s else 1
    if size < 0 or size > n:
        raise ShapeError(f"{op}: size={size} must be between 0 and {n}, the size of dimension {d}")
    if step <= 0:
        raise ShapeError(f"{op}: step={step} must be positive")
    dev = device_of(a)
    if not s:  # a 0-D tensor has one window of its element, or an empty one
        x = prims.reshape(a, (1,))
        return x if size else prims.slice(x, (0,), (0,), (1,))
    count = (n - size) // step + 1
    starts = prims.broadcast_in_dim(_iota(count, torch.int64, dev, step=step), (count, size), (0,))
    offsets = prims.broadcast_in_dim(_iota(size, torch.int64, dev), (count, size), (1,))
    windows = prims.take(a, prims.add(starts, offsets), d)  # (..., count, size, ...)
    order = [i for i in range(len(s) + 1) if i != d + 1] + [d + 1]
    return prims.transpose(windows, tuple(order)) if d + 1 != len(s) else windows


@torchsymbol(
    F.channel_shuffle, torch.native_channel_shuffle, torch_impl="torch.channel_shuffle", tags=(Tag.SHAPE,)
)
def channel_shuffle(input, groups: int):
    """(N, C, *) with the channels read group-major and written channel-major: channel
    ``g * (C // groups) + j`` goes to ``j * groups + g``."""
    op = "F.channel_shuffle"
    s = shape_of(input)
    if len(s) < 3:
        raise ShapeError(f"{op}: expected an input of more than 2 dimensions, got shape {s}")
    if groups <= 0:
        raise ShapeError(f"{op}: groups must be positive, got {groups}")
    nb, c, rest = s[0], s[1], s[2:]
    if c % groups:
        raise ShapeError(f"{op}: {c} channels are not divisible by groups={groups}")
    x = prims.reshape(input, (nb, groups, c // groups, *rest))
    x = prims.transpose(x, (0, 2, 1, *range(3, len(s) + 1)))
    return prims.reshape(x, s)
