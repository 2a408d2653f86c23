"""Repetition and rotation: ``repeat``, ``tile``, ``repeat_interleave``, ``roll``,
``pixel_shuffle``, ``pixel_unshuffle``, and ``diff``; each a composition of broadcasts,
reshapes, slices and concatenations."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch.shape import _reshape, _shape_arg, _slice_dim, cat
from thunder.ops.meta import ShapeError, canonical_dim, shape_of

T = torch.Tensor


def _interleave(a, reps, op: str):
    """Each dim i of ``a`` (leading 1s added to match ``reps``) becomes ``reps[i] * size``,
    the tensor repeated whole (``Tensor.repeat``)."""
    s = shape_of(a)
    if len(reps) < len(s):
        raise ShapeError(f"{op}: {len(reps)} repeats for a tensor of {len(s)} dimensions")
    s = (1,) * (len(reps) - len(s)) + s
    if all(r == 1 for r in reps):
        return _reshape(a, s, op)
    wide = tuple(x for r, d in zip(reps, s) for x in (r, d))
    a = prims.broadcast_in_dim(a, wide, tuple(range(2 * len(reps) - 2 * len(shape_of(a)) + 1, len(wide), 2)))
    return prims.reshape(a, tuple(r * d for r, d in zip(reps, s)))


@torchsymbol(T.repeat, torch_impl="torch.Tensor.repeat", tags=(Tag.SHAPE,))
def repeat(a, *args, repeats=None):
    return _interleave(a, _shape_arg(args) if repeats is None else tuple(repeats), "Tensor.repeat")


@torchsymbol(torch.tile, T.tile, torch_impl="torch.Tensor.tile", tags=(Tag.SHAPE,))
def tile(a, *args, dims=None):
    dims = _shape_arg(args) if dims is None else tuple(dims)
    n = len(shape_of(a))
    return _interleave(a, (1,) * (n - len(dims)) + dims, "torch.tile")


@torchsymbol(
    torch.repeat_interleave, T.repeat_interleave, torch_impl="torch.repeat_interleave", tags=(Tag.SHAPE,)
)
def repeat_interleave(a, repeats, dim: int | None = None, *, output_size: int | None = None):
    """Integer ``repeats`` only: a tensor of repeats makes a data-dependent shape."""
    if not isinstance(repeats, int):
        raise ShapeError("torch.repeat_interleave: only an integer number of repeats is supported")
    if dim is None:
        a, dim = _reshape(a, (math.prod(shape_of(a)),), "torch.repeat_interleave"), 0
    s = shape_of(a)
    d = canonical_dim(dim, len(s), "torch.repeat_interleave")
    if not s:
        return _reshape(prims.broadcast_in_dim(a, (repeats,), ()), (repeats,), "torch.repeat_interleave")
    wide = s[: d + 1] + (repeats,) + s[d + 1 :]
    dims = tuple(i if i <= d else i + 1 for i in range(len(s)))
    return prims.reshape(prims.broadcast_in_dim(a, wide, dims), s[:d] + (s[d] * repeats,) + s[d + 1 :])


@torchsymbol(torch.roll, T.roll, torch_impl="torch.roll", tags=(Tag.SHAPE,))
def roll(a, shifts, dims=None):
    if dims is None:
        s = shape_of(a)
        return _reshape(roll(_reshape(a, (math.prod(s),), "torch.roll"), shifts, 0), s, "torch.roll")
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise ShapeError(f"torch.roll: {len(shifts)} shifts for {len(dims)} dims")
    for shift, dim in zip(shifts, dims):
        d = canonical_dim(dim, len(shape_of(a)), "torch.roll")
        n = shape_of(a)[d]
        k = shift % n if n else 0
        if k:
            a = prims.cat([_slice_dim(a, d, n - k, n), _slice_dim(a, d, 0, n - k)], d)
    return a


@torchsymbol(torch.pixel_shuffle, F.pixel_shuffle, torch_impl="torch.pixel_shuffle", tags=(Tag.SHAPE,))
def pixel_shuffle(a, upscale_factor: int):
    *lead, c, h, w = shape_of(a)
    r = upscale_factor
    if c % (r * r):
        raise ShapeError(f"F.pixel_shuffle: {c} channels are not divisible by upscale_factor**2 = {r * r}")
    n = len(lead)
    x = prims.reshape(a, (*lead, c // (r * r), r, r, h, w))
    x = prims.transpose(x, (*range(n), n, n + 3, n + 1, n + 4, n + 2))
    return prims.reshape(x, (*lead, c // (r * r), h * r, w * r))


@torchsymbol(torch.pixel_unshuffle, F.pixel_unshuffle, torch_impl="torch.pixel_unshuffle", tags=(Tag.SHAPE,))
def pixel_unshuffle(a, downscale_factor: int):
    *lead, c, h, w = shape_of(a)
    r = downscale_factor
    if h % r or w % r:
        raise ShapeError(f"F.pixel_unshuffle: height {h} and width {w} must be divisible by {r}")
    n = len(lead)
    x = prims.reshape(a, (*lead, c, h // r, r, w // r, r))
    x = prims.transpose(x, (*range(n), n, n + 2, n + 4, n + 1, n + 3))
    return prims.reshape(x, (*lead, c * r * r, h // r, w // r))


@torchsymbol(torch.diff, T.diff, torch_impl="torch.diff", tags=(Tag.SHAPE,))
def diff(a, n: int = 1, dim: int = -1, prepend=None, append=None):
    d = canonical_dim(dim, len(shape_of(a)), "torch.diff")
    if n == 0:  # as eager: the input, prepend and append ignored
        return a
    parts = [p for p in (prepend, a, append) if p is not None]
    x = cat(parts, d) if len(parts) > 1 else a
    for _ in range(n):
        size = shape_of(x)[d]
        if size == 0:  # differences of nothing: still nothing
            break
        hi, lo = _slice_dim(x, d, 1, size), _slice_dim(x, d, 0, max(size - 1, 0))
        x = prims.ne(hi, lo) if x.meta_dtype is torch.bool else prims.sub(hi, lo)
    return x
