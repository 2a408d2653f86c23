"""Other torch spellings of existing torch-language ops: the ``*_copy`` functions (the op,
then a copy), ``unsafe_split``/``unsafe_chunk``, ``split_with_sizes``, ``fliplr``/``flipud``,
``msort``, ``linalg.diagonal``/``linalg.vecdot``, ``constant_pad_nd``, ``sum_to_size``, the
integer casts, and the identities of real tensors (``positive``, ``conj``, ``resolve_conj``,
``resolve_neg``, ``real``), and the C spellings torch.compile's Dynamo records for a Python
function (``torch._C._nn.pad`` for ``F.pad``, ``torch.rms_norm`` for ``F.rms_norm``). Each is an
adapter mapped with ``alias``: its trace shows the ops it is made of.
"""

from __future__ import annotations

import torch

from thunder.ops.langs import alias
from thunder.ops.ltorch import casts, factories, matrix, nn, normalization, reductions, shape
from thunder.ops.ltorch import elementwise as ew
from thunder.ops.ltorch.resample import tensor_unfold
from thunder.ops.meta import ShapeError, dtype_of, shape_of

T = torch.Tensor


def _copied(view_op):
    """``torch.<view>_copy``: the view's values in a tensor of their own, contiguous as eager's
    (a clone keeping the view's strides gave ``permute_copy`` a permuted result)."""

    def op(*args, **kwargs):
        out = view_op(*args, **kwargs)
        if isinstance(out, (tuple, list)):
            return tuple(shape.clone(o, memory_format=torch.contiguous_format) for o in out)
        return shape.clone(out, memory_format=torch.contiguous_format)

    return op


alias(_copied(lambda a: a), torch.alias_copy)
alias(_copied(matrix.diagonal), torch.diagonal_copy)
alias(_copied(lambda a, size, *, implicit=False: shape.expand(a, size)), torch.expand_copy)
alias(_copied(shape.narrow), torch.narrow_copy, T.narrow_copy)
alias(_copied(lambda a, dims: shape.permute(a, dims)), torch.permute_copy)
alias(_copied(shape.squeeze), torch.squeeze_copy)
alias(_copied(shape.t), torch.t_copy)
alias(_copied(shape.transpose), torch.transpose_copy)
alias(_copied(shape.unbind), torch.unbind_copy)
alias(_copied(shape.unsqueeze), torch.unsqueeze_copy)
alias(_copied(lambda a, size: shape.view(a, size)), torch.view_copy)
alias(_copied(tensor_unfold), torch.unfold_copy)
alias(
    _copied(lambda a, split_sizes, dim=0: shape.split(a, list(split_sizes), dim)), torch.split_with_sizes_copy
)


alias(lambda a, split_size, dim=0: shape.split(a, split_size, dim), torch.unsafe_split, T.unsafe_split)
alias(lambda a, chunks, dim=0: shape.chunk(a, chunks, dim), torch.unsafe_chunk, T.unsafe_chunk)
alias(
    lambda a, split_sizes, dim=0: shape.split(a, list(split_sizes), dim),
    torch.split_with_sizes,
    T.split_with_sizes,
)


def _flip_dim(d: int, name: str, least: int):
    def op(a):
        if len(shape_of(a)) < least:
            raise ShapeError(
                f"torch.{name}: input must have at least {least} dimensions, got shape {shape_of(a)}"
            )
        return shape.flip(a, (d,))

    return op


alias(_flip_dim(1, "fliplr", 2), torch.fliplr, T.fliplr)
alias(_flip_dim(0, "flipud", 1), torch.flipud, T.flipud)
alias(lambda a: reductions.sort(a, 0)[0], torch.msort, T.msort)
alias(
    lambda A, *, offset=0, dim1=-2, dim2=-1: matrix.diagonal(A, offset, dim1, dim2),
    torch.linalg.diagonal,
)
alias(lambda x, y, *, dim=-1: reductions.sum(ew.mul(x, y), dim), torch.linalg.vecdot)
alias(lambda a, pad, value=0: nn.pad(a, pad, "constant", value), torch.constant_pad_nd)


def sum_to_size(a, *size):
    """``a`` summed down to ``size`` (each dimension ``a`` broadcast to, back to size 1)."""
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)) else size
    s = shape_of(a)
    lead = len(s) - len(size)
    if lead < 0 or any(n != 1 and n != s[lead + i] for i, n in enumerate(size)):
        raise ShapeError(f"Tensor.sum_to_size: size {list(size)} is not expandable to the tensor's shape {s}")
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(size) if n == 1 and s[lead + i] != 1)
    out = reductions.sum(a, dims, True) if dims else a
    return shape.reshape(out, size) if lead else out


alias(sum_to_size, T.sum_to_size)

alias(lambda a, memory_format=None: casts.to(a, casts.METHOD_DTYPES["byte"]), T.byte)
alias(lambda a, memory_format=None: casts.to(a, casts.METHOD_DTYPES["char"]), T.char)
alias(lambda a, memory_format=None: casts.to(a, casts.METHOD_DTYPES["short"]), T.short)


def _real_only(name: str, copy: bool = False):
    def op(a):
        if dtype_of(a).is_complex:
            raise ShapeError(f"torch.{name}: complex tensors are not supported, got {dtype_of(a)}")
        return shape.clone(a) if copy else a

    return op


alias(_real_only("positive"), torch.positive, T.positive)
alias(_real_only("conj"), torch.conj, T.conj)
alias(_real_only("resolve_conj"), torch.resolve_conj, T.resolve_conj)
alias(_real_only("resolve_neg"), torch.resolve_neg, T.resolve_neg)
alias(_real_only("real"), torch.real)
alias(_real_only("conj_physical", copy=True), torch.conj_physical, T.conj_physical)


def tensor_new(self, *args, device=None):
    """The legacy ``Tensor.new``: ``x.new(2, 3)`` or ``x.new(torch.Size(...))`` is
    ``x.new_empty(size)``, ``x.new([1, 2])`` is ``x.new_tensor([1, 2])``, ``x.new()`` an empty
    tensor; in ``x``'s dtype, and its device unless given."""
    if not args:
        return factories.new_empty(self, (0,), device=device)
    if all(isinstance(a, int) for a in args) or (len(args) == 1 and isinstance(args[0], torch.Size)):
        return factories.new_empty(
            self, tuple(args[0]) if isinstance(args[0], torch.Size) else args, device=device
        )
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return factories.new_tensor(self, args[0], device=device)
    raise ShapeError(f"Tensor.new: arguments {args!r} are not supported; pass sizes or a list of numbers")


alias(tensor_new, T.new)


alias(
    lambda s, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False: factories.full(
        (), s, dtype=dtype or torch.get_default_dtype(), device=device
    ),
    torch.scalar_tensor,
)


# what Dynamo records for F.pad and F.rms_norm (tests/dynamo/test_recorded_spellings.py walks
# the graphs Dynamo makes of the torch.nn.functional calls for any target without an op)
alias(lambda input, pad, mode="constant", value=None: nn.pad(input, pad, mode, value), torch._C._nn.pad)
alias(
    lambda input, normalized_shape, weight=None, eps=None: normalization.rms_norm(
        input, normalized_shape, weight, eps
    ),
    torch.rms_norm,
)
