"""Reductions, softmax and indexing aten operators."""

from __future__ import annotations

from thunder.core.tags import Tag
from thunder.ops import ltorch
from thunder.ops.aten.declare import A, aten
from thunder.ops.ltorch.reductions import _softmax_core
from thunder.ops.meta import ShapeError


# -- reductions -----------------------------------------------------------------------------
@aten(A.sum.default, tags=(Tag.REDUCTION,))
def sum_default(a, *, dtype=None):
    return ltorch.sum.decomposition(a, None, False, dtype=dtype)


@aten(A.sum.dim_IntList, tags=(Tag.REDUCTION,))
def sum_dim_IntList(a, dim, keepdim=False, *, dtype=None):
    return ltorch.sum.decomposition(a, dim, keepdim, dtype=dtype)


@aten(A.mean.default, tags=(Tag.REDUCTION,))
def mean_default(a, *, dtype=None):
    return ltorch.mean.decomposition(a, None, False, dtype=dtype)


@aten(A.mean.dim, tags=(Tag.REDUCTION,))
def mean_dim(a, dim, keepdim=False, *, dtype=None):
    return ltorch.mean.decomposition(a, dim, keepdim, dtype=dtype)


@aten(A.amax.default, tags=(Tag.REDUCTION,))
def amax_default(a, dim=(), keepdim=False):
    return ltorch.amax.decomposition(a, dim, keepdim)


@aten(A.amin.default, tags=(Tag.REDUCTION,))
def amin_default(a, dim=(), keepdim=False):
    return ltorch.amin.decomposition(a, dim, keepdim)


@aten(A.max.default, tags=(Tag.REDUCTION,))
def max_default(a):
    return ltorch.amax.decomposition(a, None, False)


@aten(A.min.default, tags=(Tag.REDUCTION,))
def min_default(a):
    return ltorch.amin.decomposition(a, None, False)


@aten(A.trace.default, tags=(Tag.REDUCTION,))
def trace_default(a):
    return ltorch.trace.decomposition(a)


def _softmax(log: bool):
    def op(a, dim, half_to_float):
        if half_to_float:
            raise ShapeError("aten._softmax: half_to_float=True (a CUDA-only fast path) is not supported")
        return _softmax_core(a, dim, None, "aten._softmax", log)

    return op


_softmax_default = aten(A._softmax.default, tags=(Tag.REDUCTION,))(_softmax(False))
_log_softmax_default = aten(A._log_softmax.default, tags=(Tag.REDUCTION,))(_softmax(True))


@aten(A.index_select.default, tags=(Tag.INDEXING,))
def index_select_default(a, dim, index):
    return ltorch.index_select.decomposition(a, dim, index)


# (how a backward writes a cotangent into a diagonal's place: ``diagonal_scatter``'s rule)
@aten(A.index_copy.default, tags=(Tag.INDEXING,))
def index_copy_default(a, dim, index, source):
    return ltorch.index_copy.decomposition(a, dim, index, source)


# ``x[idx]`` with index tensors (None for a dim taken whole); a bool mask selects a data-dependent
# number of elements and is refused, as for torch's indexing
@aten(A.index.Tensor, tags=(Tag.INDEXING,))
def index_Tensor(a, indices):
    return ltorch.getitem.decomposition(a, tuple(slice(None) if i is None else i for i in indices))


@aten(A.gather.default, tags=(Tag.INDEXING,))
def gather_default(a, dim, index, *, sparse_grad=False):
    return ltorch.gather.decomposition(a, dim, index)


@aten(A.scatter_add.default, tags=(Tag.INDEXING,))
def scatter_add_default(a, dim, index, src):
    return ltorch.scatter_add.decomposition(a, dim, index, src)


@aten(A.index_put.default, tags=(Tag.INDEXING,))
def index_put_default(a, indices, values, accumulate=False):
    return ltorch.index_put.decomposition(a, tuple(indices), values, accumulate)
