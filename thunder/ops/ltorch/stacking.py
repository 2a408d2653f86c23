"""Joining and splitting: ``hstack``, ``vstack``, ``dstack``, ``column_stack``,
``atleast_1d``/``2d``/``3d``, ``tensor_split``, ``hsplit``, ``vsplit``, ``dsplit``,
``meshgrid``, ``cartesian_prod``, ``broadcast_tensors``; each a composition of ``cat``,
slices and broadcasts."""

from __future__ import annotations

import math

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch.shape import _slice_dim, expand
from thunder.ops.meta import ShapeError, broadcast_shapes, canonical_dim, dtype_of, is_tensor, shape_of

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


@torchsymbol(torch.column_stack, torch_impl="torch.column_stack", tags=(Tag.SHAPE,))
def column_stack(tensors):
    """Side by side as columns: 0-D and 1-D inputs become columns (n, 1), the rest join along dim 1."""
    op = "torch.column_stack"
    if not tensors:
        raise ShapeError(f"{op}: expected a non-empty sequence of tensors")
    cols = [t if len(shape_of(t)) > 1 else prims.reshape(t, (math.prod(shape_of(t)), 1)) for t in tensors]
    if len(cols) > 1:
        return prims.cat(cols, 1)
    return prims.clone(cols[0]) if cols[0] is tensors[0] else cols[0]  # a copy, as torch's


def _at_least_each(n: int):
    def fn(*tensors):
        """Each input viewed with at least ``n`` dims; several inputs (or one sequence) give a
        tuple. A single input that has them is returned as is, as torch returns it; among
        several, it is a same-shape view (the outputs of a recorded op are new proxies)."""
        if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)):
            return _at_least(tensors[0], n)
        if len(tensors) == 1:
            tensors = tensors[0]
        return tuple(
            _at_least(t, n) if len(shape_of(t)) < n else prims.reshape(t, shape_of(t)) for t in tensors
        )

    return fn


atleast_1d = torchsymbol(
    torch.atleast_1d, torch_impl="torch.atleast_1d", tags=(Tag.SHAPE, Tag.VIEW), name="atleast_1d"
)(_at_least_each(1))
atleast_2d = torchsymbol(
    torch.atleast_2d, torch_impl="torch.atleast_2d", tags=(Tag.SHAPE, Tag.VIEW), name="atleast_2d"
)(_at_least_each(2))
atleast_3d = torchsymbol(
    torch.atleast_3d, torch_impl="torch.atleast_3d", tags=(Tag.SHAPE, Tag.VIEW), name="atleast_3d"
)(_at_least_each(3))


def split_bounds(n: int, arg, op: str) -> list[tuple[int, int]]:
    """The (start, stop) of each piece ``tensor_split`` cuts from a dim of size ``n``: ``arg``
    sections (the first ``n % arg`` one longer) or the pieces between the given indices (read
    as Python slice bounds, so a piece between decreasing indices is empty)."""
    if is_tensor(arg):
        raise ShapeError(
            f"{op}: split points given as a tensor are data-dependent (they decide the output shapes); "
            "pass an int or a list of ints"
        )
    if isinstance(arg, int):
        if arg <= 0:
            raise ShapeError(f"{op}: the number of sections must be positive, got {arg}")
        q, r = divmod(n, arg)
        bounds = [i * q + min(i, r) for i in range(arg + 1)]
    else:
        bounds = [0, *(slice(int(i)).indices(n)[1] for i in arg), n]
    out = []
    for lo, hi in zip(bounds, bounds[1:]):
        lo = min(lo, n)
        out.append((lo, max(lo, min(hi, n))))
    return out


def _pieces(a, d: int, bounds):
    return tuple(_slice_dim(a, d, lo, hi) for lo, hi in bounds)


@torchsymbol(torch.tensor_split, T.tensor_split, torch_impl="torch.tensor_split", tags=(Tag.SHAPE, Tag.VIEW))
def tensor_split(
    a, indices_or_sections=None, dim: int = 0, *, sections=None, indices=None, tensor_indices_or_sections=None
):
    """``n`` sections (the first ``size % n`` one longer) or the pieces between split
    ``indices`` (read as Python slice bounds)."""
    layout = tensor_split_layout(
        a,
        indices_or_sections,
        dim,
        sections=sections,
        indices=indices,
        tensor_indices_or_sections=tensor_indices_or_sections,
    )
    return _pieces(a, *layout)


def tensor_split_layout(
    a, indices_or_sections=None, dim: int = 0, *, sections=None, indices=None, tensor_indices_or_sections=None
) -> tuple[int, list[tuple[int, int]]]:
    """(the dim ``tensor_split`` cuts, each piece's bounds), of its arguments."""
    op = "torch.tensor_split"
    arg = next(
        x for x in (indices_or_sections, sections, indices, tensor_indices_or_sections, 0) if x is not None
    )
    s = shape_of(a)
    d = canonical_dim(dim, len(s), op)
    return d, split_bounds(s[d], arg, op)


# hsplit, vsplit, dsplit: the fewest dims the input needs and the dim they cut
_EVEN_SPLITS = {
    "torch.hsplit": (1, lambda n: 1 if n > 1 else 0),
    "torch.vsplit": (2, lambda n: 0),
    "torch.dsplit": (3, lambda n: 2),
}


def even_split_layout(a, indices_or_sections, op: str) -> tuple[int, list[tuple[int, int]]]:
    """(the dim ``op`` cuts, each piece's bounds): ``tensor_split``'s pieces, a number of
    sections dividing the dim evenly."""
    min_ndim, dim_of = _EVEN_SPLITS[op]
    s = shape_of(a)
    if len(s) < min_ndim:
        raise ShapeError(f"{op}: expected a tensor with at least {min_ndim} dimensions, got shape {s}")
    d = dim_of(len(s))
    k = indices_or_sections
    if isinstance(k, int) and k > 0 and s[d] % k:
        raise ShapeError(f"{op}: dimension {d} of size {s[d]} cannot be split into {k} equal sections")
    return d, split_bounds(s[d], k, op)


@torchsymbol(torch.hsplit, T.hsplit, torch_impl="torch.hsplit", tags=(Tag.SHAPE, Tag.VIEW))
def hsplit(a, indices_or_sections):
    return _pieces(a, *even_split_layout(a, indices_or_sections, "torch.hsplit"))


@torchsymbol(torch.vsplit, T.vsplit, torch_impl="torch.vsplit", tags=(Tag.SHAPE, Tag.VIEW))
def vsplit(a, indices_or_sections):
    return _pieces(a, *even_split_layout(a, indices_or_sections, "torch.vsplit"))


@torchsymbol(torch.dsplit, T.dsplit, torch_impl="torch.dsplit", tags=(Tag.SHAPE, Tag.VIEW))
def dsplit(a, indices_or_sections):
    return _pieces(a, *even_split_layout(a, indices_or_sections, "torch.dsplit"))


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


@torchsymbol(torch.cartesian_prod, torch_impl="torch.cartesian_prod", tags=(Tag.SHAPE,))
def cartesian_prod(*tensors):
    """Every combination of the 1-D inputs' elements, one per row (the last input varying
    fastest); a single input is returned as is, as torch does."""
    op = "torch.cartesian_prod"
    if not tensors:
        raise ShapeError(f"{op}: expected at least one tensor")
    for i, t in enumerate(tensors):
        if len(shape_of(t)) != 1:
            raise ShapeError(f"{op}: expected 1-D tensors, input {i} has shape {shape_of(t)}")
        if dtype_of(t) is not dtype_of(tensors[0]):
            raise ShapeError(
                f"{op}: expected tensors of one dtype, got {dtype_of(tensors[0])} and {dtype_of(t)}"
            )
    if len(tensors) == 1:
        return tensors[0]
    shape = tuple(shape_of(t)[0] for t in tensors)
    rows = math.prod(shape)
    cols = [prims.reshape(prims.broadcast_in_dim(t, shape, (i,)), (rows, 1)) for i, t in enumerate(tensors)]
    return prims.cat(cols, 1)
