"""Shape ops: view/reshape, permute/transpose, (un)squeeze, expand, cat/stack, split, narrow,
select, flip, as_strided, and the index arithmetic they share with indexing (``int_index``,
``wrap_index``). Indexing is ``thunder/ops/ltorch/indexing.py``; repeat, tile, roll, pixel
shuffles and diff are ``thunder/ops/ltorch/repetition.py``."""

from __future__ import annotations

import math

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import tensor_property, torchsymbol
from thunder.ops.meta import (
    IndexOutOfBounds,
    ShapeError,
    as_size,
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
    return tuple(as_size(s) for s in shape)


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


def view_dtype(args, kwargs) -> torch.dtype | None:
    """The dtype of ``Tensor.view(dtype)`` (its bytes read as another dtype), None for a shape."""
    if len(args) == 1 and isinstance(args[0], torch.dtype):
        return args[0]
    return kwargs.get("dtype")


# runs as reshape: thunder tracks values, not memory layout, so a view of a tensor that
# eager would have made contiguous first must still work; ``view(dtype)`` as ``prims.bitcast``
@torchsymbol(
    T.view,
    torch_impl="torch.Tensor.reshape",
    impl_check=lambda a, *args, **k: not k and view_dtype(args, k) is None,
    tags=(Tag.SHAPE, Tag.VIEW),
)
def view(a, *args, size=None, dtype=None):
    dtype = view_dtype(args, {"dtype": dtype})
    if dtype is not None:
        return prims.bitcast(a, dtype)  # (a new value outside the graph even of the same dtype, as eager's)
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
# writes through it reach its base and it sees writes into its base (frontend/torch_calls/inplace.py, frontend/torch_calls/views.py).
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
    # (a 1-D empty tensor is skipped, as eager's legacy rule; one tensor left is still copied:
    # eager's cat always makes a new tensor, in the layout its inputs suggest)
    tensors = [t for t in tensors if not (len(shape_of(t)) == 1 and shape_of(t)[0] == 0)] or list(tensors)[:1]
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
    if isinstance(split_size_or_sections, torch.SymInt) or (
        isinstance(split_size_or_sections, int) and isinstance(s[d], torch.SymInt)
    ):
        # a symbolic size: the number of pieces must be a number (``3*s0`` split by ``s0`` is
        # 3 for every s0; ``s0`` split by 4 records the relation its count rests on)
        n = split_size_or_sections
        count = int(-(-s[d] // n))
        sizes = [min(n, s[d] - i * n) for i in range(count)] or [0]
    elif isinstance(split_size_or_sections, int):
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


def strided_positions(a, size, stride, storage_offset, op: str):
    """The positions ``a.as_strided(size, stride, storage_offset)`` reads, as an int64 tensor of
    shape ``size``: of ``a``'s elements in row-major order, which are its memory where eager's
    ``a`` is contiguous and starts its storage (the frontend checks it). A position beyond
    ``a``'s elements is refused: thunder holds values, not the memory around them."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise ShapeError(f"{op}: size {size} and stride {stride} have different lengths")
    if any(n < 0 for n in size) or any(k < 0 for k in stride):
        raise ShapeError(f"{op}: size {size} and stride {stride} must not be negative")
    offset = storage_offset or 0
    n = math.prod(shape_of(a))
    last = offset + sum((m - 1) * k for m, k in zip(size, stride))
    if math.prod(size) and (offset < 0 or last >= n):
        raise ShapeError(
            f"{op}: size {size}, stride {stride} and storage_offset {offset} read element {last} of a tensor of "
            f"{n} elements; thunder reads a tensor's own elements, not the memory beyond them"
        )
    dev = device_of(a)
    positions = prims.full(size, offset, dtype=torch.int64, device=dev)
    for d, (m, k) in enumerate(zip(size, stride)):
        if m > 1 and k:
            steps = prims.iota(m, start=0, step=k, dtype=torch.int64, device=dev)
            positions = prims.add(positions, prims.broadcast_in_dim(steps, size, (d,)))
    return positions


# no torch implementation: eager's reads memory, and a value another executor made may be laid
# out otherwise than eager's; the decomposition gathers the positions from the values
@torchsymbol(torch.as_strided, T.as_strided, tags=(Tag.SHAPE, Tag.VIEW))
def as_strided(a, size, stride, storage_offset=None):
    """The elements of ``a`` at ``storage_offset + sum(i_k * stride_k)`` for each index ``i`` of
    ``size`` (``prims.take``, whose gradient adds the elements read twice back up, as eager's)."""
    positions = strided_positions(a, size, stride, storage_offset, "torch.as_strided")
    flat = prims.reshape(a, (math.prod(shape_of(a)),)) if len(shape_of(a)) != 1 else a
    return prims.take(flat, positions, 0)


# a copy here (eager's is a view: a write through it is refused); no torch implementation, as
# eager's needs a last dim of stride 1, which a value another executor made may not have
@torchsymbol(torch.view_as_real, tags=(Tag.SHAPE, Tag.VIEW))
def view_as_real(a):
    """A complex tensor's real and imaginary parts as a last dim of 2."""
    if not dtype_of(a).is_complex:
        raise ShapeError(f"torch.view_as_real: expected a complex tensor, got {dtype_of(a)}")
    return stack([prims.real(a), prims.imag(a)], -1)


def int_index(k, size: int, dim: int, op: str) -> int:
    """An integer index into a dimension of ``size``, wrapped and bounds-checked."""
    if isinstance(k, bool):
        raise ShapeError(f"{op}: a bool index is not supported")
    i = k + size if k < 0 else k
    if not 0 <= i < size:
        raise IndexOutOfBounds(f"{op}: index {k} is out of bounds for dimension {dim} of size {size}")
    return i


def wrap_index(idx, size: int):
    """Negative positions count from the end, as in torch indexing."""
    return prims.where(prims.lt(idx, 0), prims.add(idx, size), idx)
