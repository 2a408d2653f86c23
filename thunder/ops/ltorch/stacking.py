"""Joining and splitting: ``hstack``, ``vstack``, ``dstack``, ``tensor_split``,
``meshgrid``, ``broadcast_tensors``; each a composition of ``cat``, slices and broadcasts."""

from __future__ import annotations

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch.shape import _slice_dim, expand
from thunder.ops.meta import ShapeError, broadcast_shapes, canonical_dim, is_tensor, shape_of

T = torch.Tensor


def _at_least(a, n: int):
    """``a`` with at least ``n`` dims, as torch.atleast_{n}d adds them (a 1-D (k,) becomes
    (1, k) for 2 dims and (1, k, 1) for 3; a 2-D one gets a trailing 1 for 3)."""
    s = shape_of(a)
    if len(s) >= n:
        return a
    if not s:
        shape = (1,) * n
    elif len(s) == 1:
        shape = (1, s[0]) if n == 2 else (1, s[0], 1)
    else:
        shape = s + (1,)
    dims = {0: (), 1: (1,), 2: (0, 1)}[len(s)]
    return prims.broadcast_in_dim(a, shape, dims)


def _stack_along(tensors, n: int, dim_of, op: str):
    if not tensors:
        raise ShapeError(f"{op}: expected a non-empty sequence of tensors")
    parts = [_at_least(t, n) for t in tensors]
    d = dim_of(parts)
    return prims.cat(parts, d) if len(parts) > 1 else parts[0]


@torchsymbol(torch.hstack, torch_impl="torch.hstack", tags=(Tag.SHAPE,))
def hstack(tensors):
    return _stack_along(list(tensors), 1, lambda ps: 0 if len(shape_of(ps[0])) == 1 else 1, "torch.hstack")


@torchsymbol(torch.vstack, torch.row_stack, torch_impl="torch.vstack", tags=(Tag.SHAPE,))
def vstack(tensors):
    return _stack_along(list(tensors), 2, lambda ps: 0, "torch.vstack")


@torchsymbol(torch.dstack, torch_impl="torch.dstack", tags=(Tag.SHAPE,))
def dstack(tensors):
    return _stack_along(list(tensors), 3, lambda ps: 2, "torch.dstack")


@torchsymbol(torch.tensor_split, T.tensor_split, torch_impl="torch.tensor_split", tags=(Tag.SHAPE, Tag.VIEW))
def tensor_split(
    a, indices_or_sections=None, dim: int = 0, *, sections=None, indices=None, tensor_indices_or_sections=None
):
    """``n`` sections (the first ``size % n`` one longer) or the pieces between split
    ``indices`` (read as Python slice bounds)."""
    op = "torch.tensor_split"
    arg = next(
        x for x in (indices_or_sections, sections, indices, tensor_indices_or_sections, 0) if x is not None
    )
    if is_tensor(arg):
        raise ShapeError(
            f"{op}: split points given as a tensor are data-dependent (they decide the output shapes); "
            "pass an int or a list of ints"
        )
    s = shape_of(a)
    d = canonical_dim(dim, len(s), op)
    n = s[d]
    if isinstance(arg, int):
        if arg <= 0:
            raise ShapeError(f"{op}: the number of sections must be positive, got {arg}")
        q, r = divmod(n, arg)
        bounds = [i * q + min(i, r) for i in range(arg + 1)]
    else:
        cuts = [slice(int(i)).indices(n)[1] for i in arg]
        bounds = [0, *cuts, n]
    out = []
    for lo, hi in zip(bounds, bounds[1:]):
        lo = min(lo, n)
        out.append(_slice_dim(a, d, lo, max(lo, min(hi, n))))
    return tuple(out)


@torchsymbol(torch.meshgrid, torch_impl="torch.meshgrid", tags=(Tag.SHAPE, Tag.VIEW))
def meshgrid(*tensors, indexing: str | None = None):
    """Each 1-D (or 0-D) input broadcast along its own dim of the grid; ``indexing="xy"``
    swaps the first two dims (torch's default, with a warning, is ``"ij"``)."""
    op = "torch.meshgrid"
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in (None, "ij", "xy"):
        raise ShapeError(f"{op}: indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in tensors:
        if len(shape_of(t)) > 1:
            raise ShapeError(f"{op}: expected 0-D or 1-D tensors, got shape {shape_of(t)}")
    sizes = [shape_of(t)[0] if shape_of(t) else 1 for t in tensors]
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        axes[0], axes[1] = 1, 0
    shape = [0] * len(tensors)
    for ax, n in zip(axes, sizes):
        shape[ax] = n
    out = []
    for t, ax in zip(tensors, axes):
        dims = (ax,) if shape_of(t) else ()
        out.append(prims.broadcast_in_dim(t, tuple(shape), dims))
    return tuple(out)


@torchsymbol(torch.broadcast_tensors, torch_impl="torch.broadcast_tensors", tags=(Tag.SHAPE, Tag.VIEW))
def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(shape_of(t) for t in tensors), op="torch.broadcast_tensors")
    return tuple(expand(t, shape) for t in tensors)
