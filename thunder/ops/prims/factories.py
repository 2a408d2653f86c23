"""Factories (full, iota), random draws (uniform, bernoulli), and ``copy_``, the primitive
that writes one tensor into another."""

from __future__ import annotations

import torch

from thunder.core.tags import Tag
from thunder.ops.meta import broadcast_shapes, new_tensor, shape_of
from thunder.ops.prims.declare import _prim


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
