"""VJP rules of the indexing ops: ``take``, ``take_along_axis``, ``index_copy``, the scatters,
``index_put``, ``topk`` and ``sort`` (a gradient goes back to the positions its values came
from, or is read from those they were written to), and the torch-language ``embedding``.
"""

from __future__ import annotations

import math

from thunder.ops import ltorch, prims
from thunder.ops.meta import device_of, dtype_of, shape_of
from thunder.ops.vjp.table import rule_for


def _zeros(shape, like):
    return prims.full(tuple(shape), 0, dtype=dtype_of(like), device=device_of(like))


@rule_for(prims.take)
def _take(g, out, a, index, dim):
    """Rows taken are added back where they came from (``index_add`` of the flattened index)."""
    sa = shape_of(a)
    n = math.prod(shape_of(index))
    rows = prims.reshape(g, sa[:dim] + (n,) + sa[dim + 1 :])
    return ltorch.index_add(_zeros(sa, g), dim, prims.reshape(index, (n,)), rows), None, None


@rule_for(prims.take_along_axis)
def _take_along_axis(g, out, a, index, dim):
    return prims.scatter_add(_zeros(shape_of(a), g), dim, index, g), None, None


@rule_for(prims.index_copy)
def _index_copy(g, out, a, index, dim, src):
    ga = prims.index_copy(g, index, dim, _zeros(shape_of(src), g))
    return ga, None, None, prims.take(g, index, dim)


@rule_for(prims.scatter_add)
def _scatter_add(g, out, a, dim, index, src):
    return g, None, None, _gather(g, index, dim)


@rule_for(prims.scatter)
def _scatter(g, out, a, dim, index, src):
    """As torch: the written positions get no gradient in ``a``; every ``src`` element gets
    the gradient of the position it was written to (also where a repeated index lost)."""
    ga = prims.scatter(g, dim, index, _zeros(shape_of(src), g))
    return ga, None, None, _gather(g, index, dim)


@rule_for(prims.scatter_reduce)
def _scatter_reduce(g, out, a, dim, index, src, reduce, include_self):
    """amax/amin: the gradient shared evenly among the values equal to the result (the
    input's own only with ``include_self``; a position nothing was scattered to keeps its
    value and its gradient). prod: the product of the other values at that position, exact
    where values are zero (a count of zeros, not a division by them)."""
    scattered = prims.scatter_add(
        _zeros(shape_of(a), g),
        dim,
        index,
        prims.full(shape_of(src), 1, dtype=dtype_of(g), device=device_of(g)),
    )
    hit = prims.gt(scattered, 0)
    if reduce in ("amax", "amin"):
        at_src = _gather(out, index, dim)
        src_wins = prims.convert_element_type(prims.eq(src, at_src), dtype_of(g))
        self_wins = prims.convert_element_type(prims.eq(a, out), dtype_of(g))
        if not include_self:
            self_wins = prims.where(hit, 0, self_wins)
        count = prims.scatter_add(self_wins, dim, index, src_wins)
        share = prims.div(g, prims.where(prims.eq(count, 0), 1, count))
        ga = prims.mul(share, self_wins)
        return ga, None, None, prims.mul(_gather(share, index, dim), src_wins), None, None
    # prod
    one = prims.full(shape_of(src), 1, dtype=dtype_of(src), device=device_of(src))
    src_zero, a_zero = prims.eq(src, 0), prims.eq(a, 0)
    src_nz = prims.where(src_zero, one, src)
    a_nz = prims.where(a_zero, 1, a)
    if not include_self:
        a_nz = prims.where(hit, 1, a_nz)
        a_zero = prims.where(hit, False, a_zero)
    nonzero_prod = prims.scatter_reduce(a_nz, dim, index, src_nz, "prod", True)
    zeros = prims.scatter_add(
        prims.convert_element_type(a_zero, dtype_of(g)),
        dim,
        index,
        prims.convert_element_type(src_zero, dtype_of(g)),
    )

    def others(value, value_nz, is_zero, n_zeros, prod_nz):
        # the product of the other values: prod/value without zeros, the nonzero product for
        # the one zero, 0 when another zero remains
        return prims.where(
            prims.eq(n_zeros, 0),
            prims.div(prod_nz, value_nz),
            prims.where(prims.logical_and(is_zero, prims.eq(n_zeros, 1)), prod_nz, 0),
        )

    ga = prims.mul(g, others(a, a_nz, a_zero, zeros, nonzero_prod))
    if not include_self:
        ga = prims.where(hit, 0, g)
    gsrc = prims.mul(
        _gather(g, index, dim),
        others(
            src,
            src_nz,
            src_zero,
            _gather(zeros, index, dim),
            _gather(nonzero_prod, index, dim),
        ),
    )
    return ga, None, None, gsrc, None, None


@rule_for(prims.index_put)
def _index_put(g, out, a, indices, values, accumulate):
    ga = g if accumulate else prims.index_put(g, indices, _zeros(shape_of(values), g), False)
    return ga, None, ltorch.getitem(g, tuple(indices)), None


def _scatter_back(g_values, a, dim, indices):
    """Each selected value's gradient back where it was taken from (topk, sort)."""
    return prims.scatter_add(_zeros(shape_of(a), g_values), dim, indices, g_values)


@rule_for(prims.topk)
def _topk(g, out, a, k, dim, largest, sorted):
    return _scatter_back(g[0], a, dim, out[1]), None, None, None, None


@rule_for(prims.sort)
def _sort(g, out, a, dim, descending, stable):
    return _scatter_back(g[0], a, dim, out[1]), None, None, None


def _gather(t, index, dim):
    """``t`` (shaped like a scatter's input) at ``index`` along ``dim``, as torch.gather: an
    index smaller than ``t`` in the other dimensions reads their leading part."""
    st, si = shape_of(t), shape_of(index)
    hi = tuple(si[i] if i != dim else n for i, n in enumerate(st))
    if hi != st:
        t = prims.slice_prim(t, (0,) * len(st), hi, (1,) * len(st))
    return prims.take_along_axis(t, index, dim)


# -- torch-language ops with rules of their own ---------------------------------------------
@rule_for(ltorch.embedding)
def _embedding(
    g,
    out,
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    n = shape_of(weight)[0]
    pad = -1 if padding_idx is None else padding_idx % n
    return None, ltorch.embedding_backward(g, input, n, pad, scale_grad_by_freq)
