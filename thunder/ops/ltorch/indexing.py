"""Indexing: ``Tensor.__getitem__`` (basic indexing, integer index tensors and Python lists),
``index_select``, ``gather``, ``take_along_dim``, ``take``, and the index helpers the
in-place ops share (``static_index``, ``has_advanced_index``, ``advanced_layout``)."""

from __future__ import annotations

import math

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch.shape import _reshape, expand, int_index, permute, unsqueeze, wrap_index
from thunder.ops.meta import (
    ShapeError,
    broadcast_shapes,
    canonical_dim,
    device_of,
    dtype_of,
    is_tensor,
    shape_of,
    slice_bounds,
)

T = torch.Tensor


def _normalize_index(key, shape, op: str):
    """The index ``key`` as a list with one item per dimension of ``shape`` (``None`` items kept
    where they stand): the ellipsis, or the missing trailing dimensions, become full slices."""
    if not isinstance(key, tuple):
        key = (key,)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise ShapeError(f"{op}: an index can only have a single ellipsis")
    if n_real > len(shape):
        raise ShapeError(f"{op}: too many indices ({n_real}) for a tensor of {len(shape)} dimensions")
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded += [slice(None)] * (len(shape) - n_real)
        else:
            expanded.append(k)
    if Ellipsis not in key:
        expanded += [slice(None)] * (len(shape) - n_real)
    return expanded


def _index_tensor(values: list[int], shape: tuple[int, ...], device):
    """A constant int64 tensor: an iota when ``values`` step evenly, else concatenated fills."""
    n = len(values)
    step = values[1] - values[0] if n > 1 else 1
    if all(values[i] == values[0] + i * step for i in range(n)):
        flat = prims.iota(n, start=values[0] if n else 0, step=step, dtype=torch.int64, device=device)
    else:
        pieces = [prims.full((1,), v, dtype=torch.int64, device=device) for v in values]
        flat = prims.cat(pieces, 0)
    return flat if shape == (n,) else prims.reshape(flat, shape)


def _nested_shape(v) -> tuple[int, ...]:
    if not isinstance(v, (list, tuple)):
        return ()
    inner = {_nested_shape(x) for x in v}
    if len(inner) > 1:
        raise ShapeError(f"Tensor.__getitem__: the nested index list {v!r} is not rectangular")
    return (len(v),) + (inner.pop() if inner else ())


def _leaves(v):
    if isinstance(v, (list, tuple)):
        for x in v:
            yield from _leaves(x)
    else:
        yield v


def _list_index(v: list, device) -> list:
    """The index items a Python list stands for: one int64 tensor for a list of ints; for a
    (nested) list of bools, one per dimension it masks, holding the True positions (static,
    unlike a bool tensor's)."""
    shape = _nested_shape(v)
    flat = list(_leaves(v))
    if flat and all(isinstance(x, bool) for x in flat):
        hits = [i for i, x in enumerate(flat) if x]
        per_dim = []
        for d in range(len(shape)):
            inner = math.prod(shape[d + 1 :])
            per_dim.append([(h // inner) % shape[d] for h in hits])
        return [_index_tensor(p, (len(hits),), device) for p in per_dim]
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in flat):
        raise ShapeError(f"Tensor.__getitem__: a list index must hold ints or bools, got {v!r}")
    return [_index_tensor(flat, shape, device)]


def static_index(key, device):
    """``key`` with its Python lists made index tensors (``qkv[..., [-2], :]``, ``x[[0, 2]]``,
    ``x[[True, False, True]]``); a list holding lists, slices, None, Ellipsis or tensors is a
    tuple, as in torch's legacy reading."""
    if isinstance(key, list):
        # torch still reads a short list holding any of these as a tuple of indices
        if len(key) < 32 and any(
            k is None or k is Ellipsis or isinstance(k, (slice, list, tuple)) or is_tensor(k) for k in key
        ):
            key = tuple(key)
        else:
            return tuple(_list_index(key, device))
    if isinstance(key, tuple) and any(isinstance(k, list) for k in key):
        out = []
        for k in key:
            out.extend(_list_index(k, device) if isinstance(k, list) else [k])
        return tuple(out)
    return key


def has_advanced_index(key) -> bool:
    """Whether indexing with ``key`` gathers (tensors, lists): the result is a copy, not a view."""
    keys = key if isinstance(key, tuple) else (key,)
    return any(is_tensor(k) or isinstance(k, list) for k in keys)


def advanced_layout(items) -> tuple[tuple[int, ...], int, bool]:
    """Where torch puts the broadcast shape B of the integer index tensors among ``items``:
    (B, its position among the result's non-None dims, whether that is in place). Ints are
    applied first, so tensors separated only by ints are adjacent and B stays in place;
    otherwise B goes first."""
    ipos = [i for i, k in enumerate(items) if is_tensor(k)]
    shape = broadcast_shapes(*(shape_of(items[i]) for i in ipos), op="Tensor.__getitem__")
    between = items[ipos[0] : ipos[-1] + 1]
    adjacent = all(is_tensor(k) or (isinstance(k, int) and not isinstance(k, bool)) for k in between)
    # the tensor's position among the dims left after ints are applied (Nones excluded)
    at = sum(1 for k in items[: ipos[0]] if k is not None and not isinstance(k, int))
    return shape, (at if adjacent else 0), adjacent


@torchsymbol(T.__getitem__, torch_impl="torch.Tensor.__getitem__", tags=(Tag.SHAPE, Tag.INDEXING, Tag.VIEW))
def getitem(a, key):
    """Basic indexing (ints, slices, None, Ellipsis), integer index tensors and lists (advanced
    indexing); bool tensor masks select a data-dependent number of elements and are errors."""
    op = "Tensor.__getitem__"
    s = shape_of(a)
    items = _normalize_index(static_index(key, device_of(a)), s, op)
    if any(is_tensor(k) and k.meta_dtype is torch.bool for k in items):
        raise ShapeError(
            f"{op}: a boolean mask tensor selects a data-dependent number of elements (the count of True "
            "values is not known while tracing); use torch.where, or a Python list of bools"
        )
    lo, hi, st, squeeze_dims = [], [], [], []
    dim = 0
    for k in items:
        if k is None:
            continue
        size = s[dim]
        if isinstance(k, (int, torch.SymInt)):
            i = int_index(k, size, dim, op)
            lo.append(i), hi.append(i + 1), st.append(1)
            squeeze_dims.append(dim)
        elif isinstance(k, slice):
            start, stop, step = slice_bounds(k, size)
            if step < 1:
                raise ShapeError(f"{op}: a slice step must be positive")
            stop = max(stop, start)
            lo.append(start), hi.append(stop), st.append(step)
        elif is_tensor(k):
            if k.meta_dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
                raise ShapeError(f"{op}: an index tensor must have an integer dtype, got {k.meta_dtype}")
            lo.append(0), hi.append(size), st.append(1)
        else:
            raise ShapeError(f"{op}: unsupported index {k!r} of type {type(k).__name__}")
        dim += 1
    out = a
    if any(x != 0 for x in lo) or list(hi) != list(s) or any(x != 1 for x in st):
        out = prims.slice_prim(out, tuple(lo), tuple(hi), tuple(st))
    out = _squeeze_dims(out, squeeze_dims)
    seq = [k for k in items if k is not None and not isinstance(k, int)]  # one per dim of ``out``
    tpos = [i for i, k in enumerate(seq) if is_tensor(k)]
    block, at, in_place = 0, 0, True
    if tpos:
        sizes = [shape_of(out)[i] for i in tpos]
        idx = [wrap_index(seq[i], n) for i, n in zip(tpos, sizes)]
        bshape, at, in_place = advanced_layout(items)
        block = len(bshape)
        if len(idx) == 1:
            out = prims.take(out, idx[0], tpos[0])
        else:
            # the indexed dims, moved first and flattened, are taken with one linear index
            others = [i for i in range(len(seq)) if i not in tpos]
            out = permute(out, tpos + others)
            out = prims.reshape(out, (math.prod(sizes),) + tuple(shape_of(out)[len(tpos) :]))
            linear = idx[0]
            for j, n in zip(idx[1:], sizes[1:]):
                linear = prims.add(prims.mul(linear, n), j)
            out = prims.take(out, _expand_index(linear, bshape), 0)
            if at:
                n_out = len(shape_of(out))
                order = list(range(block, block + at)) + list(range(block)) + list(range(block + at, n_out))
                out = permute(out, order)
    # new axes (None), at their place among the result's dims
    new_axes, pos, seen_tensor = [], 0 if in_place else block, False
    for k in items:
        if k is None:
            new_axes.append(pos)
            pos += 1
        elif is_tensor(k):
            if in_place and not seen_tensor:
                pos += block
            seen_tensor = True
        elif not isinstance(k, int):
            pos += 1
    return _unsqueeze_many(out, new_axes)


def _expand_index(idx, shape):
    return idx if shape_of(idx) == tuple(shape) else expand(idx, shape)


def _squeeze_dims(a, dims):
    return prims.squeeze(a, tuple(dims)) if dims else a


def _unsqueeze_many(a, positions):
    for p in positions:
        a = unsqueeze(a, p)
    return a


@torchsymbol(torch.index_select, T.index_select, torch_impl="torch.index_select", tags=(Tag.INDEXING,))
def index_select(a, dim: int, index):
    if not shape_of(a):  # a 0-dim tensor: its one element (the index can only be 0)
        return prims.reshape(prims.take(prims.reshape(a, (1,)), prims.reshape(index, (1,)), 0), ())
    return prims.take(a, index, canonical_dim(dim, len(shape_of(a)), "torch.index_select"))


@torchsymbol(torch.gather, T.gather, torch_impl="torch.gather", tags=(Tag.INDEXING,))
def gather(a, dim: int, index):
    if dtype_of(index) is not torch.int64:  # torch takes int32 (and an empty uint8) index too
        index = prims.convert_element_type(index, torch.int64)
    if not shape_of(a):  # a 0-dim tensor: as the one-element vector it views
        one = prims.take_along_axis(prims.reshape(a, (1,)), prims.reshape(index, (1,)), 0)
        return prims.reshape(one, shape_of(index)) if shape_of(index) != (1,) else one
    return prims.take_along_axis(a, index, canonical_dim(dim, len(shape_of(a)), "torch.gather"))


@torchsymbol(torch.take_along_dim, T.take_along_dim, torch_impl="torch.take_along_dim", tags=(Tag.INDEXING,))
def take_along_dim(a, indices, dim: int | None = None):
    """``gather`` along ``dim`` after broadcasting ``a`` and ``indices`` in every other
    dimension; without ``dim``, along the flattened tensor."""
    op = "torch.take_along_dim"
    if dim is None:
        flat = _reshape(a, (math.prod(shape_of(a)),), op)
        return prims.take_along_axis(flat, _reshape(indices, (math.prod(shape_of(indices)),), op), 0)
    sa, si = shape_of(a), shape_of(indices)
    if len(sa) != len(si):
        raise ShapeError(f"{op}: input {sa} and indices {si} must have the same number of dimensions")
    d = canonical_dim(dim, len(sa), op)
    rest = broadcast_shapes(sa[:d] + sa[d + 1 :], si[:d] + si[d + 1 :], op=op)
    a = _expand_index(a, rest[:d] + (sa[d],) + rest[d:])
    indices = _expand_index(indices, rest[:d] + (si[d],) + rest[d:])
    return prims.take_along_axis(a, wrap_index(indices, sa[d]), d)  # negative: from the end


@torchsymbol(torch.take, T.take, torch_impl="torch.take", tags=(Tag.INDEXING,))
def take(a, index):
    """The elements of the flattened ``a`` at ``index`` (negative from the end), in its shape."""
    if not is_tensor(index) or dtype_of(index) is not torch.int64:
        raise ShapeError(f"torch.take: index must be an int64 tensor, got {getattr(index, 'dtype', index)!r}")
    n = math.prod(shape_of(a))
    flat = _reshape(a, (n,), "torch.take")
    return prims.take(flat, wrap_index(index, n), 0)
