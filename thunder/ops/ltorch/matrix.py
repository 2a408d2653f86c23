"""Diagonals, triangles and planes: ``diagonal`` and its inverse ``diagonal_scatter``, ``diag``,
``diag_embed``, ``trace``, ``block_diag``, ``tril_indices``, ``triu_indices`` (``tril``/``triu``
masks are in factories.py) and ``rot90``."""

from __future__ import annotations

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import alias, torchsymbol
from thunder.ops.ltorch import reductions as red
from thunder.ops.ltorch.factories import _cast_number, _check_layout, _device
from thunder.ops.meta import ShapeError, canonical_dim, device_of, dtype_of, result_dtype, shape_of

T = torch.Tensor


def _iota(n: int, device, start: int = 0):
    return prims.iota(n, start=start, step=1, dtype=torch.int64, device=device)


def _plane(a, offset: int, dim1: int, dim2: int, op: str):
    """Where the ``offset`` diagonal of the (dim1, dim2) planes lies: with the two dims moved
    last (``perm``) and flattened (``lead + (n * m,)``), it is ``length`` elements from
    ``start`` with step ``m + 1``."""
    s = shape_of(a)
    d1, d2 = canonical_dim(dim1, len(s), op), canonical_dim(dim2, len(s), op)
    if d1 == d2:
        raise ShapeError(f"{op}: dim1 and dim2 cannot be the same dimension ({dim1}, {dim2})")
    rest = [i for i in range(len(s)) if i not in (d1, d2)]
    n, m = s[d1], s[d2]
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    start = (offset if offset >= 0 else -offset * m) if length else 0
    return (*rest, d1, d2), tuple(s[i] for i in rest), n, m, length, start


def _planes_last(a, perm: tuple):
    return prims.transpose(a, perm) if perm != tuple(range(len(perm))) else a


@torchsymbol(torch.diagonal, T.diagonal, torch_impl="torch.diagonal", tags=(Tag.SHAPE, Tag.VIEW))
def diagonal(a, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """The ``offset`` diagonal of the (dim1, dim2) planes, as a last dim: with the two dims
    moved last and flattened, the diagonal is a strided slice (step columns + 1)."""
    perm, lead, n, m, length, start = _plane(a, offset, dim1, dim2, "torch.diagonal")
    x = prims.reshape(_planes_last(a, perm), lead + (n * m,))
    stop = start + (length - 1) * (m + 1) + 1 if length else 0
    lo, hi, st = (0,) * len(lead) + (start,), lead + (stop,), (1,) * len(lead) + (m + 1,)
    return prims.slice(x, lo, hi, st)


@torchsymbol(
    torch.diagonal_scatter, T.diagonal_scatter, torch_impl="torch.diagonal_scatter", tags=(Tag.INDEXING,)
)
def diagonal_scatter(a, src, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """``a`` with ``src`` written where ``diagonal(a, offset, dim1, dim2)`` reads (the way a
    write into a diagonal view reaches its base): ``index_copy`` into the flattened planes."""
    op = "torch.diagonal_scatter"
    perm, lead, n, m, length, start = _plane(a, offset, dim1, dim2, op)
    if shape_of(src) != lead + (length,):
        raise ShapeError(f"{op}: src has shape {shape_of(src)}, the diagonal has shape {lead + (length,)}")
    if dtype_of(src) is not dtype_of(a):
        src = prims.convert_element_type(src, dtype_of(a))
    x = prims.reshape(_planes_last(a, perm), lead + (n * m,))
    index = prims.iota(length, start=start, step=m + 1, dtype=torch.int64, device=device_of(a))
    x = prims.reshape(prims.index_copy(x, index, len(lead), src), lead + (n, m))
    inverse = tuple(sorted(range(len(perm)), key=lambda i: perm[i]))
    return _planes_last(x, inverse)


def _embed(a, offset: int, dim1: int, dim2: int, op: str):
    """``a``'s last dim laid on the ``offset`` diagonal of two new dims (dim1, dim2)."""
    s = shape_of(a)
    if not s:
        raise ShapeError(f"{op}: expected a tensor with at least one dimension")
    nd = len(s) + 1
    d1, d2 = canonical_dim(dim1, nd, op), canonical_dim(dim2, nd, op)
    if d1 == d2:
        raise ShapeError(f"{op}: dim1 and dim2 cannot be the same dimension ({dim1}, {dim2})")
    n = s[-1]
    size = n + abs(offset)
    batch = s[:-1]
    dt, dev = dtype_of(a), device_of(a)
    if size != n:  # the diagonal is shorter than the side: pad the values with zeros
        pad = prims.full(batch + (size - n,), _cast_number(0, dt), dtype=dt, device=dev)
        a = prims.cat([a, pad], len(s) - 1)
    grid = batch + (size, size)
    # a value sits at row i (offset >= 0: column i + offset) or column j (offset < 0)
    values = prims.broadcast_in_dim(a, grid, (*range(len(batch)), len(batch) + (0 if offset >= 0 else 1)))
    rows = prims.broadcast_in_dim(_iota(size, dev), (size, size), (0,))
    cols = prims.broadcast_in_dim(_iota(size, dev), (size, size), (1,))
    on = prims.broadcast_in_dim(prims.eq(prims.sub(cols, rows), offset), grid, (nd - 2, nd - 1))
    out = prims.where(on, values, _cast_number(0, dt))
    perm, rest = [0] * nd, iter(range(nd - 2))
    for k in range(nd):
        perm[k] = nd - 2 if k == d1 else nd - 1 if k == d2 else next(rest)
    return prims.transpose(out, tuple(perm)) if perm != list(range(nd)) else out


_diagonal = diagonal  # ``diag``'s argument has the same name


@torchsymbol(torch.diag_embed, T.diag_embed, torch_impl="torch.diag_embed", tags=(Tag.SHAPE,))
def diag_embed(a, offset: int = 0, dim1: int = -2, dim2: int = -1):
    return _embed(a, offset, dim1, dim2, "torch.diag_embed")


@torchsymbol(torch.diag, T.diag, torch_impl="torch.diag", tags=(Tag.SHAPE,))
def diag(a, diagonal: int = 0):
    """A 1-D input laid on a diagonal of a square matrix; a 2-D input's diagonal (a copy)."""
    n = len(shape_of(a))
    if n == 1:
        return _embed(a, diagonal, 0, 1, "torch.diag")
    if n == 2:
        return _diagonal(a, diagonal)
    raise ShapeError(f"torch.diag: expected a 1-D or 2-D tensor, got shape {shape_of(a)}")


def _triangle_indices(row: int, col: int, offset: int, lower: bool, dtype, device, layout, op: str):
    """(2, N) coordinates of the triangle, row by row. Each selected position's rank among the
    selected ones (a running count) is where its flat position is scattered to."""
    _check_layout(op, layout)
    if row < 0 or col < 0:
        raise ShapeError(f"{op}: row and col must be non-negative, got {row} and {col}")
    dtype = dtype or torch.int64
    if dtype not in (torch.int64, torch.int32):
        raise ShapeError(f"{op}: dtype must be torch.long or torch.int, got {dtype}")
    dev = _device(device)
    if lower:
        count = sum(min(max(r + offset + 1, 0), col) for r in range(row))
    else:
        count = sum(min(max(col - max(r + offset, 0), 0), col) for r in range(row))
    if count == 0:
        return prims.full((2, 0), 0, dtype=dtype, device=dev)
    rows = prims.broadcast_in_dim(_iota(row, dev), (row, col), (0,))
    cols = prims.broadcast_in_dim(_iota(col, dev), (row, col), (1,))
    diff = prims.sub(cols, rows)
    keep = prims.reshape(prims.le(diff, offset) if lower else prims.ge(diff, offset), (row * col,))
    rank = prims.sub(prims.cumsum(prims.convert_element_type(keep, torch.int64), 0), 1)
    slot = prims.where(keep, rank, count)  # the rest go to one spare slot, dropped below
    zeros = prims.full((count + 1,), 0, dtype=torch.int64, device=dev)
    flat = prims.scatter_add(zeros, 0, slot, prims.where(keep, _iota(row * col, dev), 0))
    flat = prims.slice(flat, (0,), (count,), (1,))
    out = prims.cat(
        [
            prims.broadcast_in_dim(p, (1, count), (1,))
            for p in (prims.floor_divide(flat, col), prims.remainder(flat, col))
        ],
        0,
    )
    return out if dtype is torch.int64 else prims.convert_element_type(out, dtype)


@torchsymbol(torch.tril_indices, torch_impl="torch.tril_indices", tags=(Tag.FACTORY,))
def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None):
    return _triangle_indices(row, col, offset, True, dtype, device, layout, "torch.tril_indices")


@torchsymbol(torch.triu_indices, torch_impl="torch.triu_indices", tags=(Tag.FACTORY,))
def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None):
    return _triangle_indices(row, col, offset, False, dtype, device, layout, "torch.triu_indices")


@torchsymbol(torch.trace, T.trace, torch_impl="torch.trace", tags=(Tag.REDUCTION,))
def trace(a):
    """The sum of a matrix's main diagonal (integers sum as int64, as torch.sum)."""
    op = "torch.trace"
    if len(shape_of(a)) != 2:
        raise ShapeError(f"{op}: expected a matrix, got shape {shape_of(a)}")
    if dtype_of(a) is torch.bool:
        raise ShapeError(f"{op}: bool inputs are not supported (as in torch)")
    return red.sum(_diagonal(a))


@torchsymbol(torch.block_diag, torch_impl="torch.block_diag", tags=(Tag.SHAPE,))
def block_diag(*tensors):
    """The inputs (0-D as 1 x 1, 1-D as one row) laid along the diagonal of a zero matrix, in
    their promoted dtype. Without inputs, torch's (1, 0) matrix."""
    op = "torch.block_diag"
    blocks = []
    for i, t in enumerate(tensors):
        s = shape_of(t)
        if len(s) > 2:
            raise ShapeError(f"{op}: inputs must have 2 or fewer dimensions, input {i} has shape {s}")
        blocks.append(t if len(s) == 2 else prims.reshape(t, (1, s[0]) if s else (1, 1)))
    if not blocks:
        return prims.full((1, 0), 0.0, dtype=torch.get_default_dtype(), device=torch.device("cpu"))
    dt, dev = result_dtype(*tensors), device_of(tensors[0])
    width = sum(shape_of(b)[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = shape_of(b)
        block = b if dtype_of(b) is dt else prims.convert_element_type(b, dt)
        before, after = left, width - left - c
        parts = [prims.full((r, before), _cast_number(0, dt), dtype=dt, device=dev)] if before else []
        parts.append(block)
        if after:
            parts.append(prims.full((r, after), _cast_number(0, dt), dtype=dt, device=dev))
        rows.append(prims.cat(parts, 1) if len(parts) > 1 else block)
        left += c
    return prims.cat(rows, 0) if len(rows) > 1 else rows[0]


# what torch.block_diag calls when no argument is a tensor (there is none to dispatch on)
alias(lambda tensors: block_diag(*tensors), torch._C._VariableFunctions.block_diag)


@torchsymbol(torch.rot90, T.rot90, torch_impl="torch.rot90", tags=(Tag.SHAPE,))
def rot90(a, k: int = 1, dims=(0, 1)):
    """A rotation by ``k`` quarter turns in the plane ``dims``, from the first towards the
    second: flips and a transpose (``k % 4 == 0`` is a copy)."""
    op = "torch.rot90"
    s = shape_of(a)
    if len(dims) != 2:
        raise ShapeError(f"{op}: expected two rotation dims, got dims={dims!r}")
    if len(s) < 2:
        raise ShapeError(f"{op}: expected a tensor of at least 2 dimensions, got shape {s}")
    d0, d1 = (canonical_dim(d, len(s), op) for d in dims)
    if d0 == d1:
        raise ShapeError(f"{op}: the rotation dims must differ, got dims={dims!r}")
    perm = list(range(len(s)))
    perm[d0], perm[d1] = d1, d0
    k %= 4
    if k == 1:
        return prims.transpose(prims.flip(a, (d1,)), tuple(perm))
    if k == 2:
        return prims.flip(a, (d0, d1))
    if k == 3:
        return prims.transpose(prims.flip(a, (d0,)), tuple(perm))
    return prims.clone(a)
