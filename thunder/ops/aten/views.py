"""Views of aten operators beyond the shape section's: diagonals, sliding windows, views with
several outputs (``unbind``, ``split_with_sizes``), and the scatters that write a value where
a view reads (``select_scatter``, ``slice_scatter``, ``diagonal_scatter``), the copying twin of
each view (``diagonal_copy``: of those declared before it, in this section and the shape
section's); with how a write
into a view they made reaches its base (``VIEW_WRITES``, ``PIECE_WRITES``).

Each shares its torch-language op's decomposition (``torch.diagonal`` and
``aten.diagonal.default`` take the same arguments), and so its write into the base too.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from thunder.core.symbol import Symbol
from thunder.core.tags import Tag
from thunder.ops import ltorch, prims
from thunder.ops.aten.declare import ATEN, A, aten
from thunder.ops.aten.shape import split_Tensor
from thunder.ops.ltorch.inplace import PIECE_WRITES as TORCH_PIECE_WRITES
from thunder.ops.ltorch.inplace import VIEW_WRITES as TORCH_VIEW_WRITES
from thunder.ops.ltorch.resample import tensor_unfold
from thunder.ops.meta import ShapeError, canonical_dim, shape_of


@aten(A.diagonal.default, tags=(Tag.SHAPE, Tag.VIEW))
def diagonal_default(a, offset=0, dim1=0, dim2=1):
    return ltorch.diagonal.decomposition(a, offset, dim1, dim2)


@aten(A.unfold.default, tags=(Tag.SHAPE, Tag.VIEW))
def unfold_default(a, dimension, size, step):
    return tensor_unfold.decomposition(a, dimension, size, step)


# (thunder tracks values, not memory: the frontend checks an input's layout allows it)
@aten(A.view.dtype, tags=(Tag.SHAPE, Tag.VIEW))
def view_dtype(a, dtype):
    return ltorch.view.decomposition(a, dtype)


# no torch implementation: it reads memory (ltorch.as_strided); the frontend checks that the
# input's memory is its elements in order
@aten(A.as_strided.default, tags=(Tag.SHAPE, Tag.VIEW), torch_impl=None)
def as_strided_default(a, size, stride, storage_offset=None):
    return ltorch.as_strided.decomposition(a, size, stride, storage_offset)


# (a write through it, which would need a complex value made of real ones, is refused)
@aten(A.view_as_real.default, tags=(Tag.SHAPE, Tag.VIEW), torch_impl=None)
def view_as_real_default(a):
    return ltorch.view_as_real.decomposition(a)


# -- several outputs, each a view of the input ----------------------------------------------
@aten(A.unbind.int, tags=(Tag.SHAPE, Tag.VIEW))
def unbind_int(a, dim=0):
    return list(ltorch.unbind.decomposition(a, dim))


@aten(A.split_with_sizes.default, tags=(Tag.SHAPE, Tag.VIEW))
def split_with_sizes_default(a, split_sizes, dim=0):
    n = shape_of(a)[canonical_dim(dim, len(shape_of(a)), "aten.split_with_sizes")]
    if sum(split_sizes) != n or any(k < 0 for k in split_sizes):
        raise ShapeError(
            f"aten.split_with_sizes: split_sizes {list(split_sizes)} must be sizes adding up to {n}, the size of "
            f"dimension {dim}"
        )
    return list(ltorch.split.decomposition(a, list(split_sizes), dim))


# -- the inverses of views: the input with ``src`` written where the view reads -------------
@aten(A.select_scatter.default, tags=(Tag.INDEXING,))
def select_scatter_default(a, src, dim, index):
    return ltorch.select_scatter.decomposition(a, src, dim, index)


@aten(A.slice_scatter.default, tags=(Tag.INDEXING,))
def slice_scatter_default(a, src, dim=0, start=None, end=None, step=1):
    return ltorch.slice_scatter.decomposition(a, src, dim, start, end, step)


@aten(A.diagonal_scatter.default, tags=(Tag.INDEXING,))
def diagonal_scatter_default(a, src, offset=0, dim1=0, dim2=1):
    return ltorch.diagonal_scatter.decomposition(a, src, offset, dim1, dim2)


# -- the copying twins of the views (``aten.diagonal_copy.default``): the view's values in a
# tensor of their own; what a dispatch receives for torch.diag, functionalized programs, ...
def _copying(view: Symbol) -> Callable:
    def op(*args, **kwargs):
        out = view.decomposition(*args, **kwargs)
        return [prims.clone(o) for o in out] if isinstance(out, list) else prims.clone(out)

    return op


def _declare_copies() -> None:
    for overload, sym in list(ATEN.items()):
        packet = getattr(A, overload._schema.name.split("::", 1)[1] + "_copy", None)
        twin = getattr(packet, overload._overloadname, None) if packet is not None else None
        if Tag.VIEW in sym.tags and isinstance(twin, torch._ops.OpOverload) and twin not in ATEN:
            # (its decomposition runs: thunder's value may be laid out otherwise than eager's)
            aten(twin, tags=(Tag.COPY,), torch_impl=None)(_copying(sym))


_declare_copies()


# (narrow itself never reaches a dispatch: aten decomposes it into slice first)
@aten(A.narrow_copy.default, tags=(Tag.COPY,))
def narrow_copy_default(a, dim, start, length):
    return prims.clone(ltorch.narrow.decomposition(a, dim, start, length))


@aten(A.diag_embed.default, tags=(Tag.SHAPE,))
def diag_embed_default(a, offset=0, dim1=-2, dim2=-1):
    return ltorch.diag_embed.decomposition(a, offset, dim1, dim2)


VIEW_WRITES = {
    diagonal_default: TORCH_VIEW_WRITES[ltorch.diagonal],
    unfold_default: TORCH_VIEW_WRITES[tensor_unfold],  # (windows that overlap are refused)
    view_dtype: TORCH_VIEW_WRITES[ltorch.view],
    as_strided_default: TORCH_VIEW_WRITES[ltorch.as_strided],
}
# (called with the written output's ``index``; all of eager's multi-output views, whose writes
# eager refuses in grad mode: ``MULTI_OUTPUT_VIEWS``)
PIECE_WRITES = {
    unbind_int: TORCH_PIECE_WRITES[ltorch.unbind],
    split_Tensor: TORCH_PIECE_WRITES[ltorch.split],
    split_with_sizes_default: TORCH_PIECE_WRITES[ltorch.split],
}
MULTI_OUTPUT_VIEWS = frozenset(PIECE_WRITES)
# views that read their input's memory (not its values): supported where that memory is the
# input's elements in order, which the frontend checks
READS_MEMORY = frozenset({as_strided_default, ATEN[A.as_strided_copy.default]})
