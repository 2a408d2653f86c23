"""Shape and view aten operators, copies and fills, and how a write into a view they made
reaches its base (``VIEW_WRITES``)."""

from __future__ import annotations

import torch

from thunder.core.tags import Tag
from thunder.ops import ltorch, prims
from thunder.ops.aten.declare import A, aten
from thunder.ops.ltorch.factories import _check_layout
from thunder.ops.ltorch.inplace import VIEW_WRITES as TORCH_VIEW_WRITES
from thunder.ops.ltorch.shape import _reshape, _slice_dim, int_index
from thunder.ops.meta import ShapeError, canonical_dim, device_of, dtype_of, shape_of


# -- shapes and views -----------------------------------------------------------------------
# view and _unsafe_view run as reshape: thunder tracks values, not memory layout, so a view
# of a tensor that another executor laid out differently must still work (as ltorch.view)
@aten(A.view.default, tags=(Tag.SHAPE, Tag.VIEW), torch_impl="torch.Tensor.reshape")
def view_default(a, size):
    return _reshape(a, tuple(size), "aten.view")


@aten(A._unsafe_view.default, tags=(Tag.SHAPE,), torch_impl="torch.Tensor.reshape")
def _unsafe_view_default(a, size):
    return _reshape(a, tuple(size), "aten._unsafe_view")


@aten(A.t.default, tags=(Tag.SHAPE, Tag.VIEW))
def t_default(a):
    n = len(shape_of(a))
    if n > 2:
        raise ShapeError(f"aten.t: expected a tensor of at most 2 dimensions, got {n}")
    return ltorch.transpose.decomposition(a, 0, 1) if n == 2 else a


@aten(A.transpose.int, tags=(Tag.SHAPE, Tag.VIEW))
def transpose_int(a, dim0, dim1):
    return ltorch.transpose.decomposition(a, dim0, dim1)


@aten(A.permute.default, tags=(Tag.SHAPE, Tag.VIEW))
def permute_default(a, dims):
    return ltorch.permute.decomposition(a, dims=tuple(dims))


@aten(A.expand.default, tags=(Tag.SHAPE, Tag.VIEW))
def expand_default(a, size, *, implicit=False):
    return ltorch.expand.decomposition(a, size=tuple(size))


@aten(A.unsqueeze.default, tags=(Tag.SHAPE, Tag.VIEW))
def unsqueeze_default(a, dim):
    return ltorch.unsqueeze.decomposition(a, dim)


@aten(A.squeeze.default, tags=(Tag.SHAPE, Tag.VIEW))
def squeeze_default(a):
    return ltorch.squeeze.decomposition(a)


@aten(A.squeeze.dim, tags=(Tag.SHAPE, Tag.VIEW))
def squeeze_dim(a, dim):
    return ltorch.squeeze.decomposition(a, dim)


@aten(A.squeeze.dims, tags=(Tag.SHAPE, Tag.VIEW))
def squeeze_dims(a, dim):
    return ltorch.squeeze.decomposition(a, tuple(dim))


@aten(A.select.int, tags=(Tag.SHAPE, Tag.VIEW))
def select_int(a, dim, index):
    s = shape_of(a)
    d = canonical_dim(dim, len(s), "aten.select")
    i = int_index(index, s[d], d, "aten.select")
    return prims.squeeze(_slice_dim(a, d, i, i + 1), (d,))


@aten(A.slice.Tensor, tags=(Tag.SHAPE, Tag.VIEW))
def slice_Tensor(a, dim=0, start=None, end=None, step=1):
    s = shape_of(a)
    d = canonical_dim(dim, len(s), "aten.slice")
    if step < 1:
        raise ShapeError(f"aten.slice: step must be positive, got {step}")
    # as Python slicing: None is the whole range, negative counts from the end, clamped
    lo, hi, _ = slice(start, end).indices(s[d])
    return _slice_dim(a, d, lo, max(lo, hi), step)


@aten(A.split.Tensor, tags=(Tag.SHAPE, Tag.VIEW))
def split_Tensor(a, split_size, dim=0):
    return list(ltorch.split.decomposition(a, split_size, dim))


@aten(A.cat.default, tags=(Tag.SHAPE,))
def cat_default(tensors, dim=0):
    return ltorch.cat.decomposition(list(tensors), dim)


@aten(A.constant_pad_nd.default, tags=(Tag.SHAPE,))
def constant_pad_nd_default(a, pad, value=0):
    return ltorch.pad.decomposition(a, tuple(pad), "constant", value)


@aten(A.stack.default, tags=(Tag.SHAPE,))
def stack_default(tensors, dim=0):
    return ltorch.stack.decomposition(list(tensors), dim)


@aten(A.flip.default, tags=(Tag.SHAPE,))
def flip_default(a, dims):
    return ltorch.flip.decomposition(a, dims=tuple(dims))


@aten(A.repeat.default, tags=(Tag.SHAPE,))
def repeat_default(a, repeats):
    return ltorch.repeat.decomposition(a, repeats=tuple(repeats))


@aten(A.roll.default, tags=(Tag.SHAPE,))
def roll_default(a, shifts, dims=()):
    return ltorch.roll.decomposition(a, tuple(shifts), tuple(dims) or None)


@aten(A.clone.default, tags=(Tag.COPY,))
def clone_default(a, *, memory_format=None):
    return prims.clone(a)


# detach and alias give the same value (thunder traces values, and the flat program they
# belong to has no autograd of its own): they record nothing
@aten(A.detach.default)
def detach_default(a):
    return a


@aten(A.alias.default, tags=(Tag.VIEW,))
def alias_default(a):
    return a


@aten(A._to_copy.default, tags=(Tag.CAST,))
def _to_copy_default(
    a, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None
):
    _check_layout("aten._to_copy", layout)
    out = a
    if dtype is not None and dtype is not dtype_of(a):
        out = prims.convert_element_type(out, dtype)
    if device is not None and torch.device(device) != device_of(a):
        out = prims.device_put(out, torch.device(device))
    return prims.clone(a) if out is a else out


# ``x.to(dtype)`` in a dispatch: ``x`` itself where nothing changes (an alias, as eager's),
# else ``_to_copy``'s value
@aten(A.to.dtype, tags=(Tag.CAST,))
def to_dtype(a, dtype, non_blocking=False, copy=False, memory_format=None):
    if dtype is dtype_of(a) and not copy:
        return a
    return _to_copy_default.decomposition(a, dtype=dtype)


@aten(A.to.dtype_layout, tags=(Tag.CAST,))
def to_dtype_layout(
    a,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    non_blocking=False,
    copy=False,
    memory_format=None,
):
    _check_layout("aten.to", layout)
    same = (dtype is None or dtype is dtype_of(a)) and (
        device is None or torch.device(device) == device_of(a)
    )
    if same and not copy:
        return a
    return _to_copy_default.decomposition(a, dtype=dtype, device=device)


# ``dst.copy_(src)`` as a value: what ``dst`` holds afterwards (the caller rebinds ``dst``);
# no torch_impl, since torch's copy_ would write into its argument
@aten(A.copy_.default, tags=(Tag.COPY,), torch_impl=None)
def copy__default(a, src, non_blocking=False):
    return ltorch.copy_to.decomposition(a, src)


def _like(value):
    def op(a, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
        return ltorch.full_like.decomposition(a, value, dtype=dtype, layout=layout, device=device)

    return op


@aten(A.full_like.default, tags=(Tag.FACTORY,))
def full_like_default(
    a, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    return ltorch.full_like.decomposition(a, fill_value, dtype=dtype, layout=layout, device=device)


zeros_like_default = aten(A.zeros_like.default, tags=(Tag.FACTORY,))(_like(0))
ones_like_default = aten(A.ones_like.default, tags=(Tag.FACTORY,))(_like(1))
# (uninitialised memory has no defined value: zeros are a faithful one, as ltorch.empty_like's)
empty_like_default = aten(A.empty_like.default, tags=(Tag.FACTORY,))(_like(0))


def _new(value):
    def op(a, size, *, dtype=None, layout=None, device=None, pin_memory=None):
        return ltorch.new_full.decomposition(a, tuple(size), value, dtype=dtype, layout=layout, device=device)

    return op


new_zeros_default = aten(A.new_zeros.default, tags=(Tag.FACTORY,))(_new(0))
new_ones_default = aten(A.new_ones.default, tags=(Tag.FACTORY,))(_new(1))
new_empty_default = aten(A.new_empty.default, tags=(Tag.FACTORY,))(_new(0))


@aten(A.new_full.default, tags=(Tag.FACTORY,))
def new_full_default(a, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    return ltorch.new_full.decomposition(
        a, tuple(size), fill_value, dtype=dtype, layout=layout, device=device
    )


# the values ``fill_`` and ``zero_`` write (``aten.fill_.Tensor`` is how ``x[0] = 5.0`` reaches a
# subclass's dispatch: torch wraps the number into a 0-dim tensor); in the input's autograd
# graph with a zero gradient, as torch's
@aten(A.fill.Scalar, tags=(Tag.FACTORY,))
def fill_Scalar(a, value):
    return ltorch.fill.decomposition(a, value)


@aten(A.fill.Tensor, tags=(Tag.FACTORY,))
def fill_Tensor(a, value):
    return ltorch.fill.decomposition(a, value)


@aten(A.zero.default, tags=(Tag.FACTORY,))
def zero_default(a):
    return ltorch.fill.decomposition(a, 0)


def _slice_back(base, dim=0, start=None, end=None, step=1, *, value):
    d = canonical_dim(dim, len(shape_of(base)), "aten.slice")
    return ltorch.setitem(base, (slice(None),) * d + (slice(start, end, step),), value)


# How a value written into a view an aten op made reaches its base (as ``VIEW_WRITES`` of the
# torch language, whose writes these share where the arguments agree): a write inside a
# subclass's dispatch into a view of an inner tensor (``x[0] = v`` reaches a TwoTensor as
# ``select`` then ``copy_``). expand, which may repeat elements, is not here: a write into a
# view it made is refused. (split's, one output of several: ``PIECE_WRITES`` in frontend/torch_calls/views.py.)
VIEW_WRITES = {
    view_default: TORCH_VIEW_WRITES[ltorch.view],
    t_default: lambda base, *, value: ltorch.t(value) if len(shape_of(base)) == 2 else value,
    transpose_int: TORCH_VIEW_WRITES[ltorch.transpose],
    permute_default: lambda base, dims, *, value: TORCH_VIEW_WRITES[ltorch.permute](
        base, value=value, dims=dims
    ),
    unsqueeze_default: TORCH_VIEW_WRITES[ltorch.unsqueeze],
    squeeze_default: TORCH_VIEW_WRITES[ltorch.squeeze],
    squeeze_dim: TORCH_VIEW_WRITES[ltorch.squeeze],
    squeeze_dims: TORCH_VIEW_WRITES[ltorch.squeeze],
    select_int: TORCH_VIEW_WRITES[ltorch.select],
    slice_Tensor: _slice_back,
    alias_default: lambda base, *, value: value,
}
