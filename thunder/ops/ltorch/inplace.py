"""Out-of-place forms of writes, for the frontend's functionalisation of in-place calls.

The frontend turns ``dst.copy_(src)`` into ``dst = ltorch.copy_to(dst, src)`` and
``a[key] = value`` into ``a = ltorch.setitem(a, key, value)``; nothing here mutates a tensor
or maps an in-place torch callable.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch.casts import detach
from thunder.ops.ltorch.factories import _cast_number, in_graph_of
from thunder.ops.ltorch.indexing import (
    _normalize_index,
    advanced_layout,
    getitem,
    has_advanced_index,
    static_index,
)
from thunder.ops.ltorch.matrix import diagonal, diagonal_scatter
from thunder.ops.ltorch.resample import tensor_unfold
from thunder.ops.ltorch.shape import (
    _shape_arg,
    as_strided,
    broadcast_to,
    chunk,
    expand,
    expand_as,
    flatten,
    int_index,
    movedim,
    narrow,
    permute,
    ravel,
    reshape,
    reshape_as,
    select,
    split,
    squeeze,
    strided_positions,
    t,
    transpose,
    unbind,
    unflatten,
    unsqueeze,
    view,
    view_dtype,
    wrap_index,
)
from thunder.ops.ltorch.stacking import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    dsplit,
    even_split_layout,
    hsplit,
    tensor_split,
    tensor_split_layout,
    vsplit,
)
from thunder.ops.meta import (
    ShapeError,
    broadcast_shapes,
    canonical_dim,
    device_of,
    dtype_of,
    is_tensor,
    requires_grad_of,
    shape_of,
    slice_bounds,
)


def _as_value(value, shape, dtype, device, op: str):
    """``value`` (number or tensor) cast to ``dtype``/``device`` and broadcast to ``shape``."""
    shape = tuple(shape)
    if not is_tensor(value):
        return prims.full(shape, _cast_number(value, dtype), dtype=dtype, device=device)
    if device_of(value) != device:
        value = prims.device_put(value, device)
    if dtype_of(value) is not dtype:
        value = prims.convert_element_type(value, dtype)
    vs = shape_of(value)
    while len(vs) > len(shape) and vs[0] == 1:  # torch drops leading 1s of the value
        value = prims.squeeze(value, (0,))
        vs = vs[1:]
    if vs == shape:
        return value
    if len(vs) > len(shape) or broadcast_shapes(vs, shape, op=op) != shape:
        raise ShapeError(f"{op}: a value of shape {vs} cannot be written into a region of shape {shape}")
    return prims.broadcast_in_dim(value, shape, tuple(range(len(shape) - len(vs), len(shape))))


@torchsymbol(tags=(Tag.COPY,), name="copy_to")
def copy_to(dst, src):
    """What ``dst`` holds after ``dst.copy_(src)``: ``src`` cast and broadcast to ``dst`` (in
    ``dst``'s autograd graph too, as torch's copy_ keeps a tensor that requires grad in it)."""
    value = _as_value(src, shape_of(dst), dtype_of(dst), device_of(dst), "Tensor.copy_")
    if value is src:  # a value of its own: later writes into src must not reach dst, nor back
        value = prims.clone(src)
    if requires_grad_of(dst) and not requires_grad_of(value) and torch.is_grad_enabled():
        return in_graph_of(value, dst)
    return value


def _bool_mask_setitem(a, mask, value, accumulate: bool, op: str):
    s, ms = shape_of(a), shape_of(mask)
    if s[: len(ms)] != ms:
        raise ShapeError(f"{op}: a mask of shape {ms} does not match the tensor's shape {s}")
    full_mask = prims.broadcast_in_dim(mask, s, tuple(range(len(ms)))) if ms != s else mask
    # the value fills every selected element (the number selected is data-dependent): it
    # must broadcast to the trailing dims
    v = _as_value(value, s[len(ms) :], dtype_of(a), device_of(a), op)
    if len(ms):
        v = prims.broadcast_in_dim(v, s, tuple(range(len(ms), len(s))))
    return prims.where(full_mask, prims.add(a, v) if accumulate else v, a)


@torchsymbol(tags=(Tag.INDEXING,), name="setitem")
def setitem(a, key, value):
    """``a`` with ``a[key] = value`` applied: ``key`` as in indexing (ints, slices, None,
    Ellipsis, integer index tensors, lists) or a single bool mask; ``value`` broadcasts to
    ``a[key]``."""
    return write_indexed(a, key, value, False, "Tensor.__setitem__")


@dataclasses.dataclass(frozen=True)
class _At:
    """A dimension indexed by an int."""

    index: int


@dataclasses.dataclass(frozen=True)
class _Range:
    """A dimension indexed by a slice: ``n`` positions from ``start`` by ``step`` (``whole``: all
    of it, in order), the ``pos``-th dimension of the indexed region."""

    start: int
    step: int
    n: int
    whole: bool
    pos: int


@dataclasses.dataclass(frozen=True)
class _Gather:
    """A dimension indexed by a tensor of indices."""

    index: object


def write_indexed(a, key, value, accumulate: bool, op: str):
    """``a[key] = value`` (``accumulate``: ``a[key] += value``, repeated indices adding up)."""
    key = static_index(key, device_of(a))
    keys = key if isinstance(key, tuple) else (key,)
    if len(keys) == 1 and is_tensor(keys[0]) and dtype_of(keys[0]) is torch.bool:
        return _bool_mask_setitem(a, keys[0], value, accumulate, op)
    s = shape_of(a)
    items = _normalize_index(key, s, op)
    if any(is_tensor(k) and dtype_of(k) is torch.bool for k in items):
        raise ShapeError(f"{op}: a bool mask is only supported as the whole index (a[mask] = value)")
    dt, dev = dtype_of(a), device_of(a)
    has_tensors = any(is_tensor(k) for k in items)
    bshape, at, in_place = advanced_layout(items) if has_tensors else ((), 0, True)
    # the indexed region a[key] (with None's new axes: ``region``; without: ``flat``), and per
    # dimension of ``a`` how it is indexed
    region, flat, parts = ([] if in_place else list(bshape)), ([] if in_place else list(bshape)), []
    b_pos, dim = at, 0
    for k in items:
        if k is None:
            region.append(1)
            continue
        size = s[dim]
        if isinstance(k, (int, torch.SymInt)):
            parts.append(_At(int_index(k, size, dim, op)))
        elif isinstance(k, slice):
            start, stop, step = slice_bounds(k, size)
            if step < 1:
                raise ShapeError(f"{op}: a slice step must be positive, got {step}")
            n = len(range(start, stop, step))
            parts.append(_Range(start, step, n, n == size and step == 1, len(flat)))
            region.append(n)
            flat.append(n)
        elif is_tensor(k):
            if in_place and not any(isinstance(p, _Gather) for p in parts):
                b_pos = len(flat)
                region.extend(bshape)
                flat.extend(bshape)
            parts.append(_Gather(wrap_index(k, size)))
        else:
            raise ShapeError(f"{op}: unsupported index {k!r} of type {type(k).__name__}")
        dim += 1
    region, flat = tuple(region), tuple(flat)
    if 0 in region:
        return a  # an empty region: nothing is written
    v = _as_value(value, region, dt, dev, op)
    if all(isinstance(p, _Range) and p.whole for p in parts):  # a[:] = v, a[..., None] = v
        v = prims.reshape(v, s) if shape_of(v) != s else v
        return prims.add(a, v) if accumulate else v
    if shape_of(v) != flat:
        v = prims.reshape(v, flat)
    # prims.index_put indexes the leading dims; trailing whole-dimension slices stay implicit
    while parts and isinstance(parts[-1], _Range) and parts[-1].whole:
        parts.pop()
    explicit = len(flat) - (dim - len(parts))
    indices = []
    for part in parts:
        if isinstance(part, _At):
            indices.append(prims.full((1,) * explicit, part.index, dtype=torch.int64, device=dev))
        elif isinstance(part, _Range):
            n, pos = part.n, part.pos
            it = prims.iota(n, start=part.start, step=part.step, dtype=torch.int64, device=dev)
            indices.append(
                prims.broadcast_in_dim(it, tuple(n if i == pos else 1 for i in range(explicit)), (pos,))
            )
        else:
            info = part.index
            ks = shape_of(info)
            lo = b_pos + len(bshape) - len(ks)  # aligned on the right within B
            shape = tuple(
                bshape[i - b_pos] if b_pos <= i < b_pos + len(bshape) else 1 for i in range(explicit)
            )
            indices.append(prims.broadcast_in_dim(info, shape, tuple(range(lo, lo + len(ks)))))
    return prims.index_put(a, indices, v, accumulate)


def _permute_back(base, *args, value, dims=None):
    dims = _shape_arg(args) if dims is None else tuple(dims)
    n = len(shape_of(base))
    perm = [canonical_dim(d, n, "torch.permute") for d in dims]
    inverse = [0] * n
    for i, d in enumerate(perm):
        inverse[d] = i
    return permute(value, inverse)


def _movedim_back(base, source, destination, *, value):
    return movedim(value, destination, source)


def _reshape_back(base, *args, value, **kwargs):
    return reshape(value, shape_of(base))


def _view_back(base, *args, value, **kwargs):
    """A write into ``base.view(shape)`` reaches ``base`` as a reshape; into ``base.view(dtype)``
    as the bytes read back as ``base``'s dtype, ``base``'s autograd history kept (eager's view
    of another dtype is outside the graph: a write through it is one through ``detach()``)."""
    if view_dtype(args, kwargs) is None:
        return _reshape_back(base, value=value)
    return write_through_detach(base, prims.bitcast(value, dtype_of(base)))


def _dim_key(base, dim, index, op):
    d = canonical_dim(dim, len(shape_of(base)), op)
    return (slice(None),) * d + (index,)


def _select_back(base, dim, index, *, value):
    return setitem(base, _dim_key(base, dim, index, "torch.select"), value)


def _narrow_back(base, dim, start, length, *, value):
    if is_tensor(start):
        raise ShapeError("torch.narrow: a write into a narrow with a tensor start is not supported")
    start = (
        start + shape_of(base)[canonical_dim(dim, len(shape_of(base)), "torch.narrow")]
        if start < 0
        else start
    )
    return setitem(base, _dim_key(base, dim, slice(start, start + length), "torch.narrow"), value)


def _piece_key(base, dim, index, sizes):
    d = canonical_dim(dim, len(shape_of(base)), "torch.split")
    start = sum(sizes[:index])
    return (slice(None),) * d + (slice(start, start + sizes[index]),)


def _split_sizes(n: int, split_size_or_sections) -> list[int]:
    if isinstance(split_size_or_sections, int):
        k = split_size_or_sections
        return [min(k, n - i) for i in range(0, n, k)] or [0]
    return list(split_size_or_sections)


def _split_back(base, split_size_or_sections, dim=0, *, value, index):
    n = shape_of(base)[canonical_dim(dim, len(shape_of(base)), "torch.split")]
    return setitem(base, _piece_key(base, dim, index, _split_sizes(n, split_size_or_sections)), value)


def _chunk_back(base, chunks, dim=0, *, value, index):
    n = shape_of(base)[canonical_dim(dim, len(shape_of(base)), "torch.chunk")]
    return _split_back(base, -(-n // chunks), dim, value=value, index=index)


def _unbind_back(base, dim=0, *, value, index):
    return setitem(base, _dim_key(base, dim, index, "torch.unbind"), value)


def _diagonal_back(base, offset=0, dim1=0, dim2=1, *, value):
    return diagonal_scatter(base, value, offset, dim1, dim2)


def _even_split_back(op: str):
    def back(base, indices_or_sections, *, value, index):
        d, bounds = even_split_layout(base, indices_or_sections, op)
        lo, hi = bounds[index]
        return setitem(base, (slice(None),) * d + (slice(lo, hi),), value)

    return back


def _tensor_split_back(base, *args, value, index, **kwargs):
    d, bounds = tensor_split_layout(base, *args, **kwargs)
    lo, hi = bounds[index]
    return setitem(base, (slice(None),) * d + (slice(lo, hi),), value)


def _atleast_back(op: str):
    def back(base, *others, value, index):
        if index:  # a view of another argument than the base the frontend recorded
            raise ShapeError(
                f"{op}: an in-place write into result {index} of several tensors is not supported (only into "
                "the first); write into the tensor itself"
            )
        return reshape(value, shape_of(base))

    return back


def _unfold_back(base, dimension, size, step, *, value):
    """Window element ``j`` of window ``w`` is element ``w * step + j`` of the dim; windows that
    overlap (an element in several) are refused."""
    op = "Tensor.unfold"
    s = shape_of(base)
    if not s:
        return reshape(value, ()) if size else base
    d = canonical_dim(dimension, len(s), op)
    count = (s[d] - size) // step + 1
    if step < size and count > 1:
        raise ShapeError(
            f"{op}: a write into overlapping windows (size={size} > step={step}) is not supported: an element "
            "of the base is in several windows"
        )
    dev = device_of(base)
    starts = prims.broadcast_in_dim(
        prims.iota(count, start=0, step=step, dtype=torch.int64, device=dev), (count, size), (0,)
    )
    offsets = prims.broadcast_in_dim(
        prims.iota(size, start=0, step=1, dtype=torch.int64, device=dev), (count, size), (1,)
    )
    positions = prims.reshape(prims.add(starts, offsets), (count * size,))
    rows = movedim(value, -1, d + 1)  # (..., count, size, ...)
    rows = prims.reshape(rows, s[:d] + (count * size,) + s[d + 1 :])
    return prims.index_copy(base, positions, d, rows)


def _as_strided_back(base, size, stride, storage_offset=None, *, value):
    """The view's elements put back at the positions they were read from; a view reading one
    position twice (a stride 0, strides that interleave) is refused: eager writes it once per
    element, in an order its kernel chooses."""
    op = "torch.as_strided"
    span = 0
    for k, m in sorted((k, m) for m, k in zip(size, stride) if m > 1):
        if k <= span:
            raise ShapeError(
                f"{op}: a write into a view of size {tuple(size)} and stride {tuple(stride)} is not supported: "
                "it reads an element of the base more than once"
            )
        span += (m - 1) * k
    positions = strided_positions(base, size, stride, storage_offset, op)
    n, count = math.prod(shape_of(base)), math.prod(shape_of(value))
    flat = prims.reshape(base, (n,))
    written = prims.index_copy(flat, prims.reshape(positions, (count,)), 0, prims.reshape(value, (count,)))
    return prims.reshape(written, shape_of(base))


# How a value written into one output of a view op with several outputs reaches the base.
PIECE_WRITES = {
    split: _split_back,
    chunk: _chunk_back,
    unbind: _unbind_back,
    hsplit: _even_split_back("torch.hsplit"),
    vsplit: _even_split_back("torch.vsplit"),
    dsplit: _even_split_back("torch.dsplit"),
    tensor_split: _tensor_split_back,
    atleast_1d: _atleast_back("torch.atleast_1d"),
    atleast_2d: _atleast_back("torch.atleast_2d"),
    atleast_3d: _atleast_back("torch.atleast_3d"),
}
# View ops whose result is a view or a copy depending on the memory layout (eager's rule,
# replayed on meta tensors by the frontend): a copy is not tracked as a view.
LAYOUT_VIEWS = frozenset({reshape, flatten, ravel, reshape_as})
# View ops that can repeat their base's elements (eager's stride 0: several elements of the
# view are one memory location). A write into such a view that has more elements than its
# base is refused (eager refuses add_, copy_, ... on it); one without repeats (only new dims
# of size 1) reaches the base as a reshape.
BROADCASTING_VIEWS = frozenset({expand, expand_as, broadcast_to})
# View ops eager's autograd marks as returning several views (split, chunk, unbind; not
# tensor_split and the like, whose pieces are slices of their own): a write into one of them,
# or into a view of one, that requires grad while grad mode is on is refused, as eager refuses it.
MULTI_OUTPUT_VIEWS = frozenset({split, chunk, unbind})


@torchsymbol(name="write_through_detach")
def write_through_detach(base, value):
    """What ``base`` holds after a write into ``base.detach()`` (or ``base.data``): the
    values written, with ``base``'s autograd history kept as it was (eager's write leaves
    it alone, so the gradient passes to the old value unchanged: the VJP rule in
    thunder/ops/vjp/shape.py)."""
    everywhere = prims.full(shape_of(base), True, dtype=torch.bool, device=device_of(base))
    return prims.where(everywhere, value, base)


# How a value written into a view reaches its base, per view op: the base with the value put
# where the view reads it (``x[key] = value`` for indexing, the inverse permutation for
# ``x.T``, ``x.mT``, ``transpose``, ``permute``; ``reshape`` and ``flatten`` where eager
# made a view, see LAYOUT_VIEWS; ``diagonal_scatter`` for ``diagonal``). A write into a view
# made by another op is refused.
VIEW_WRITES = {
    getitem: lambda base, key, *, value: setitem(base, key, value),
    permute: _permute_back,
    transpose: lambda base, d0, d1, *, value: transpose(value, d0, d1),
    t: lambda base, *, value: t(value),
    movedim: _movedim_back,
    view: _view_back,
    reshape: _reshape_back,
    reshape_as: _reshape_back,
    flatten: _reshape_back,
    ravel: _reshape_back,
    unflatten: _reshape_back,
    unsqueeze: _reshape_back,
    squeeze: _reshape_back,
    select: _select_back,
    narrow: _narrow_back,
    diagonal: _diagonal_back,
    tensor_unfold: _unfold_back,
    as_strided: _as_strided_back,
    expand: _reshape_back,
    expand_as: _reshape_back,
    broadcast_to: _reshape_back,
    detach: lambda base, *, value: write_through_detach(base, value),
}
# Calls of view ops whose result is a copy in eager (indexing with tensors or lists gathers):
# writes into them stay in them, and writes into their base do not reach them.
COPYING_CALLS = {getitem: lambda a, key: has_advanced_index(key)}
