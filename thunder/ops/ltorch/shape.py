"""Shape ops: view/reshape, permute/transpose, (un)squeeze, expand, cat/stack, split, indexing."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import tensor_property, torchsymbol
from thunder.ops.meta import (
    ShapeError,
    broadcast_shapes,
    canonical_dim,
    device_of,
    dtype_of,
    is_tensor,
    shape_of,
)

T = torch.Tensor


def _shape_arg(shape) -> tuple[int, ...]:
    """``f(2, 3)`` and ``f((2, 3))`` both give ``(2, 3)``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def infer_shape(shape, numel: int, op: str) -> tuple[int, ...]:
    shape = list(shape)
    if shape.count(-1) > 1:
        raise ShapeError(f"{op}: only one dimension can be -1, got {tuple(shape)}")
    if -1 in shape:
        rest = math.prod(s for s in shape if s != -1)
        if rest == 0 or numel % rest:
            raise ShapeError(f"{op}: shape {tuple(shape)} is invalid for a tensor of {numel} elements")
        shape[shape.index(-1)] = numel // rest
    if math.prod(shape) != numel:
        raise ShapeError(f"{op}: shape {tuple(shape)} is invalid for a tensor of {numel} elements")
    return tuple(shape)


def _reshape(a, shape, op):
    s = infer_shape(shape, math.prod(shape_of(a)), op)
    if s == shape_of(a):
        return a
    return prims.reshape(a, s)


@torchsymbol(torch.reshape, T.reshape, torch_impl="torch.Tensor.reshape", tags=(Tag.SHAPE, Tag.VIEW))
def reshape(a, *args, shape=None):
    return _reshape(a, _shape_arg(args) if shape is None else tuple(shape), "torch.reshape")


# runs as reshape: thunder tracks values, not memory layout, so a view of a tensor that
# eager would have made contiguous first must still work
@torchsymbol(
    T.view, torch_impl="torch.Tensor.reshape", impl_check=lambda *a, **k: not k, tags=(Tag.SHAPE, Tag.VIEW)
)
def view(a, *args, size=None):
    if len(args) == 1 and isinstance(args[0], torch.dtype):
        raise ShapeError("Tensor.view(dtype) reinterprets memory and is not supported")
    return _reshape(a, _shape_arg(args) if size is None else tuple(size), "Tensor.view")


@torchsymbol(T.view_as, T.reshape_as, torch_impl="torch.Tensor.reshape_as", tags=(Tag.SHAPE, Tag.VIEW))
def reshape_as(a, other):
    return _reshape(a, shape_of(other), "Tensor.reshape_as")


@torchsymbol(torch.flatten, T.flatten, torch_impl="torch.flatten", tags=(Tag.SHAPE, Tag.VIEW))
def flatten(a, start_dim: int = 0, end_dim: int = -1):
    s = shape_of(a)
    if not s:
        return _reshape(a, (1,), "torch.flatten")
    lo, hi = (
        canonical_dim(start_dim, len(s), "torch.flatten"),
        canonical_dim(end_dim, len(s), "torch.flatten"),
    )
    return _reshape(a, s[:lo] + (math.prod(s[lo : hi + 1]),) + s[hi + 1 :], "torch.flatten")


@torchsymbol(torch.unflatten, T.unflatten, torch_impl="torch.unflatten", tags=(Tag.SHAPE, Tag.VIEW))
def unflatten(a, dim: int, sizes):
    s = shape_of(a)
    d = canonical_dim(dim, len(s), "torch.unflatten")
    sizes = infer_shape(sizes, s[d], "torch.unflatten")
    return _reshape(a, s[:d] + sizes + s[d + 1 :], "torch.unflatten")


@torchsymbol(torch.permute, T.permute, torch_impl="torch.Tensor.permute", tags=(Tag.SHAPE, Tag.VIEW))
def permute(a, *args, dims=None):
    dims = _shape_arg(args) if dims is None else tuple(dims)
    n = len(shape_of(a))
    perm = tuple(canonical_dim(d, n, "torch.permute") for d in dims)
    if perm == tuple(range(n)):
        return a
    return prims.transpose(a, perm)


@torchsymbol(
    torch.transpose,
    T.transpose,
    torch.swapaxes,
    T.swapaxes,
    torch.swapdims,
    T.swapdims,
    torch_impl="torch.transpose",
    tags=(Tag.SHAPE, Tag.VIEW),
)
def transpose(a, dim0: int, dim1: int):
    n = len(shape_of(a))
    if n == 0:
        return a
    d0, d1 = canonical_dim(dim0, n, "torch.transpose"), canonical_dim(dim1, n, "torch.transpose")
    if d0 == d1:
        return a
    perm = list(range(n))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return prims.transpose(a, tuple(perm))


@torchsymbol(torch.t, T.t, torch_impl="torch.t", tags=(Tag.SHAPE, Tag.VIEW))
def t(a):
    n = len(shape_of(a))
    if n > 2:
        raise ShapeError(f"torch.t: expected a tensor of at most 2 dimensions, got {n}")
    return transpose(a, 0, 1) if n == 2 else a


tensor_property("T")(lambda a: permute(a, tuple(reversed(range(len(shape_of(a)))))))
tensor_property("mT")(lambda a: transpose(a, -2, -1))


def _adjoint(a, prop: str, matrix_only: bool):
    """``x.H`` / ``x.mH``: the conjugate transpose, a transpose for real dtypes (thunder has no
    conjugate views: complex tensors are refused)."""
    if a.dtype.is_complex:
        raise ShapeError(f"Tensor.{prop}: the conjugate of a complex tensor is not supported")
    n = len(shape_of(a))
    if matrix_only and n != 2:
        raise ShapeError(f"Tensor.{prop}: expected a matrix (2 dimensions), got {n}")
    return transpose(a, -2, -1)


tensor_property("H")(lambda a: _adjoint(a, "H", True))
tensor_property("mH")(lambda a: _adjoint(a, "mH", False))
# The view op, its arguments and the torch callable each view-making property is (``x.T``: ``x.permute(...)``), so
# writes through it reach its base and it sees writes into its base (frontend/inplace.py, frontend/views.py).
PROPERTY_VIEWS = {
    "T": lambda a: (permute, (tuple(reversed(range(len(shape_of(a))))),), torch.permute),
    "mT": lambda a: (transpose, (-2, -1), torch.transpose),
    "H": lambda a: (transpose, (-2, -1), torch.transpose),
    "mH": lambda a: (transpose, (-2, -1), torch.transpose),
}


@torchsymbol(
    torch.movedim,
    T.movedim,
    torch.moveaxis,
    T.moveaxis,
    torch_impl="torch.movedim",
    tags=(Tag.SHAPE, Tag.VIEW),
)
def movedim(a, source, destination):
    n = len(shape_of(a))
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [canonical_dim(d, n, "torch.movedim") for d in src]
    dst = [canonical_dim(d, n, "torch.movedim") for d in dst]
    perm = [-1] * n
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(i for i in range(n) if i not in src)
    perm = [p if p != -1 else next(rest) for p in perm]
    return permute(a, perm)


@torchsymbol(torch.unsqueeze, T.unsqueeze, torch_impl="torch.unsqueeze", tags=(Tag.SHAPE, Tag.VIEW))
def unsqueeze(a, dim: int):
    s = shape_of(a)
    d = canonical_dim(dim, len(s) + 1, "torch.unsqueeze")
    out = s[:d] + (1,) + s[d:]
    return prims.broadcast_in_dim(a, out, tuple(i for i in range(len(out)) if i != d))


@torchsymbol(torch.squeeze, T.squeeze, torch_impl="torch.squeeze", tags=(Tag.SHAPE, Tag.VIEW))
def squeeze(a, dim=None):
    s = shape_of(a)
    if dim is None:
        dims = tuple(i for i, x in enumerate(s) if x == 1)
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(sorted({canonical_dim(d, len(s), "torch.squeeze") for d in dims if s and s[d] == 1}))
    if not dims:
        return a
    return prims.squeeze(a, dims)


@torchsymbol(T.expand, torch_impl="torch.Tensor.expand", tags=(Tag.SHAPE, Tag.VIEW))
def expand(a, *args, size=None):
    sizes = _shape_arg(args) if size is None else tuple(size)
    s = shape_of(a)
    if len(sizes) < len(s):
        raise ShapeError(f"Tensor.expand: {tuple(sizes)} has fewer dimensions than the tensor's {s}")
    lead = len(sizes) - len(s)
    out = tuple(s[i - lead] if (sz == -1 and i >= lead) else sz for i, sz in enumerate(sizes))
    for i, d in enumerate(s):
        if d != 1 and d != out[i + lead]:
            raise ShapeError(f"Tensor.expand: cannot expand shape {s} to {tuple(sizes)}")
    if out == s:
        return a
    return prims.broadcast_in_dim(a, out, tuple(range(lead, len(out))))


@torchsymbol(T.expand_as, torch_impl="torch.Tensor.expand_as", tags=(Tag.SHAPE, Tag.VIEW))
def expand_as(a, other):
    return expand(a, shape_of(other))


@torchsymbol(
    torch.broadcast_to, T.broadcast_to, torch_impl="torch.Tensor.broadcast_to", tags=(Tag.SHAPE, Tag.VIEW)
)
def broadcast_to(a, *shape):
    # ``x.broadcast_to(2, 3)`` and ``torch.broadcast_to(x, (2, 3))``
    return expand(a, _shape_arg(shape))


@torchsymbol(T.contiguous, torch_impl="torch.Tensor.contiguous", tags=(Tag.SHAPE,))
def contiguous(a, memory_format=torch.contiguous_format):
    return a


@torchsymbol(torch.clone, T.clone, torch_impl="torch.clone", tags=(Tag.SHAPE,))
def clone(a, *, memory_format=None):
    return prims.clone(a)


@torchsymbol(torch.cat, torch.concat, torch.concatenate, torch_impl="torch.cat", tags=(Tag.SHAPE,))
def cat(tensors, dim: int = 0):
    tensors = [t for t in tensors if not (len(shape_of(t)) == 1 and shape_of(t)[0] == 0)] or list(tensors)[:1]
    if len(tensors) == 1:
        return tensors[0]
    return prims.cat(list(tensors), dim)


@torchsymbol(torch.stack, torch_impl="torch.stack", tags=(Tag.SHAPE,))
def stack(tensors, dim: int = 0):
    if not tensors:
        raise ShapeError("torch.stack: expected a non-empty list of tensors")
    d = canonical_dim(dim, len(shape_of(tensors[0])) + 1, "torch.stack")
    return prims.cat([unsqueeze(t, d) for t in tensors], d)


def _slice_dim(a, dim: int, start: int, stop: int, step: int = 1):
    s = shape_of(a)
    if start == 0 and stop == s[dim] and step == 1:
        return a
    lo = [0] * len(s)
    hi = list(s)
    st = [1] * len(s)
    lo[dim], hi[dim], st[dim] = start, stop, step
    return prims.slice_prim(a, tuple(lo), tuple(hi), tuple(st))


@torchsymbol(torch.split, T.split, torch_impl="torch.split", tags=(Tag.SHAPE, Tag.VIEW))
def split(a, split_size_or_sections, dim: int = 0):
    s = shape_of(a)
    d = canonical_dim(dim, len(s), "torch.split")
    if isinstance(split_size_or_sections, int):
        n = split_size_or_sections
        sizes = [min(n, s[d] - i) for i in range(0, s[d], n)] or [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != s[d]:
            raise ShapeError(f"torch.split: sections {sizes} do not add up to {s[d]}")
    out, start = [], 0
    for size in sizes:
        out.append(_slice_dim(a, d, start, start + size) if size != s[d] else _whole(a))
        start += size
    return tuple(out)


def _whole(a):
    """A chunk that is the whole tensor is still a new value (eager's view with its own
    autograd history), never the input itself."""
    s = shape_of(a)
    return prims.slice_prim(a, (0,) * len(s), tuple(s), (1,) * len(s))


@torchsymbol(torch.chunk, T.chunk, torch_impl="torch.chunk", tags=(Tag.SHAPE, Tag.VIEW))
def chunk(a, chunks: int, dim: int = 0):
    s = shape_of(a)
    d = canonical_dim(dim, len(s), "torch.chunk")
    size = -(-s[d] // chunks)
    return split(a, size, d)


@torchsymbol(torch.unbind, T.unbind, torch_impl="torch.unbind", tags=(Tag.SHAPE, Tag.VIEW))
def unbind(a, dim: int = 0):
    s = shape_of(a)
    d = canonical_dim(dim, len(s), "torch.unbind")
    return tuple(prims.squeeze(_slice_dim(a, d, i, i + 1), (d,)) for i in range(s[d]))


@torchsymbol(torch.narrow, T.narrow, torch_impl="torch.narrow", tags=(Tag.SHAPE, Tag.VIEW))
def narrow(a, dim: int, start, length: int):
    """``length`` elements from ``start`` along ``dim``. A tensor ``start`` (a 0-dim integer
    tensor) moves the window with the data but not its size: the elements are gathered at
    ``start + arange(length)`` (out-of-range positions fail when the program runs)."""
    op = "torch.narrow"
    s = shape_of(a)
    d = canonical_dim(dim, len(s), op)
    if is_tensor(start):
        if shape_of(start) or dtype_of(start).is_floating_point or dtype_of(start) is torch.bool:
            raise ShapeError(
                f"{op}: a tensor start must be a 0-dim integer tensor, got {dtype_of(start)} {shape_of(start)}"
            )
        first = wrap_index(start, s[d])
        offsets = prims.iota(length, start=0, step=1, dtype=dtype_of(start), device=device_of(a))
        return prims.take(a, prims.add(offsets, first), d)
    if not -s[d] <= start <= s[d]:
        raise ShapeError(f"{op}: start {start} is out of range for dimension {d} of size {s[d]}")
    start = start + s[d] if start < 0 else start
    if length < 0 or start + length > s[d]:
        raise ShapeError(f"{op}: start ({start}) + length ({length}) exceeds dimension size ({s[d]})")
    return _slice_dim(a, d, start, start + length)


@torchsymbol(torch.select, T.select, torch_impl="torch.select", tags=(Tag.SHAPE, Tag.VIEW))
def select(a, dim: int, index: int):
    op = "torch.select"
    if is_tensor(index):
        raise ShapeError(
            f"{op}: a tensor index is data-dependent; use index_select or a[..., i] with a tensor"
        )
    s = shape_of(a)
    d = canonical_dim(dim, len(s), op)
    i = int_index(index, s[d], d, op)
    return prims.squeeze(_slice_dim(a, d, i, i + 1), (d,))


@torchsymbol(torch.ravel, T.ravel, torch_impl="torch.ravel", tags=(Tag.SHAPE, Tag.VIEW))
def ravel(a):
    return _reshape(a, (math.prod(shape_of(a)),), "torch.ravel")


@torchsymbol(torch.flip, T.flip, torch_impl="torch.Tensor.flip", tags=(Tag.SHAPE,))
def flip(a, *args, dims=None):
    n = len(shape_of(a))
    dims = _shape_arg(args) if dims is None else tuple(dims)  # x.flip(0, 1), torch.flip(x, (0, 1))
    return prims.flip(a, tuple(canonical_dim(d, n, "torch.flip") for d in dims))


# -- indexing -------------------------------------------------------------------------------
def _normalize_index(key, shape, op: str):
    """Basic indexing -> (per-dim slices, dims to squeeze, where new dims go, tensor index)."""
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


def int_index(k, size: int, dim: int, op: str) -> int:
    """An integer index into a dimension of ``size``, wrapped and bounds-checked."""
    if isinstance(k, bool):
        raise ShapeError(f"{op}: a bool index is not supported")
    i = k + size if k < 0 else k
    if not 0 <= i < size:
        raise ShapeError(f"{op}: index {k} is out of bounds for dimension {dim} of size {size}")
    return i


def wrap_index(idx, size: int):
    """Negative positions count from the end, as in torch indexing."""
    return prims.where(prims.lt(idx, 0), prims.add(idx, size), idx)


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
        if isinstance(k, int):
            i = int_index(k, size, dim, op)
            lo.append(i), hi.append(i + 1), st.append(1)
            squeeze_dims.append(dim)
        elif isinstance(k, slice):
            start, stop, step = k.indices(size)
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


# -- repetition and rotation ----------------------------------------------------------------
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
