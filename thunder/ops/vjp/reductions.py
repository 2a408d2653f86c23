"""VJP rules of the reductions: the prims ``sum``, ``amax``/``amin``, ``prod``, ``var`` and
``cumsum``, and the torch-language ``logsumexp`` and ``vector_norm``, whose rules follow
torch's formulas where the decompositions' would be unstable or give ``0/0``.
"""

from __future__ import annotations

import math

from thunder.ops import ltorch, prims
from thunder.ops.meta import LOW_PRECISION_DTYPES, canonical_dims, dtype_of, shape_of
from thunder.ops.vjp.table import expand_back, kept_dims, rule_for


@rule_for(prims.sum)
def _sum(g, out, a, dims, *, dtype=None):
    return expand_back(g, shape_of(a), kept_dims(shape_of(a), dims)), None


@rule_for(prims.amax, prims.amin)
def _amax(g, out, a, dims):
    """The gradient is shared evenly by the elements equal to the extremum, as eager's
    ``(g / count) * hit`` (a row whose extremum is NaN has no element equal to it: NaN
    throughout, as eager's)."""
    shape, kept = shape_of(a), kept_dims(shape_of(a), dims)
    hit = prims.convert_element_type(prims.eq(a, expand_back(out, shape, kept)), dtype_of(g))
    count = prims.sum(hit, dims)
    return prims.mul(expand_back(prims.div(g, count), shape, kept), hit), None


@rule_for(prims.prod)
def _prod(g, out, a, dims, *, dtype=None):
    """g * prod(others): out / a without zeros; with one zero in a slice, the product of the
    rest at that zero; with more, 0."""
    shape, kept = shape_of(a), kept_dims(shape_of(a), dims)
    zero = prims.eq(a, 0)
    n_zero = expand_back(prims.sum(prims.convert_element_type(zero, dtype_of(a)), dims), shape, kept)
    rest = expand_back(prims.prod(prims.where(zero, 1, a), dims), shape, kept)
    gx = expand_back(g, shape, kept)
    no_zero = prims.mul(gx, prims.div(expand_back(out, shape, kept), a))
    one_zero = prims.where(prims.logical_and(zero, prims.eq(n_zero, 1)), prims.mul(gx, rest), 0)
    return prims.where(prims.eq(n_zero, 0), no_zero, one_zero), None


@rule_for(prims.var)
def _var(g, out, a, dims, *, correction):
    shape, kept = shape_of(a), kept_dims(shape_of(a), dims)
    n = math.prod(shape[d] for d in dims)
    mean = expand_back(prims.div(prims.sum(a, dims), n), shape, kept)
    d = prims.div(prims.mul(prims.sub(a, mean), 2), n - correction)
    return prims.mul(expand_back(g, shape, kept), d), None


@rule_for(prims.cumsum)
def _cumsum(g, out, a, dim, *, dtype=None):
    return prims.flip(prims.cumsum(prims.flip(g, (dim,)), dim), (dim,)), None


# -- torch-language ops with rules of their own ---------------------------------------------
@rule_for(ltorch.logsumexp)
def _logsumexp(g, out, a, dim, keepdim=False):
    """``g * exp(a - out)``, from the input and the result, as torch's (which saves both)."""
    s = shape_of(a)
    if not dtype_of(a).is_floating_point or dtype_of(a) in LOW_PRECISION_DTYPES or not s:
        return NotImplemented
    dims = canonical_dims(dim, len(s), "torch.logsumexp")
    kept = kept_dims(s, dims)
    reduced = tuple(s[i] for i in kept)

    def back(t):
        return expand_back(prims.reshape(t, reduced) if shape_of(t) != reduced else t, s, kept)

    return prims.mul(back(g), prims.exp(prims.sub(a, back(out)))), None, None


@rule_for(ltorch.vector_norm)
def _vector_norm(g, out, a, ord=2, dim=None, keepdim=False, *, dtype=None):
    """As torch: where the norm is 0 the gradient is 0 (a subgradient), not the ``0/0`` of
    the decomposition's ``sqrt`` or ``pow`` (orders 0, 1 and the infinities, whose
    decompositions give torch's gradient already, use them)."""
    if ord in (0, 1, math.inf, -math.inf) or not dtype_of(a).is_floating_point:
        return NotImplemented
    s = shape_of(a)
    dims = (
        tuple(range(len(s))) if dim is None or dim in ((), []) else canonical_dims(dim, len(s), "vector_norm")
    )
    kept = kept_dims(s, dims) if s else ()

    def back(t):
        if not keepdim and s:
            t = prims.reshape(t, tuple(s[i] for i in kept)) if shape_of(t) != tuple(s[i] for i in kept) else t
            return expand_back(t, s, kept)
        return prims.broadcast_in_dim(t, s, tuple(range(len(s)))) if shape_of(t) != s else t

    x = a if dtype_of(a) is dtype_of(g) else prims.convert_element_type(a, dtype_of(g))
    norm = back(out if dtype_of(out) is dtype_of(g) else prims.convert_element_type(out, dtype_of(g)))
    gb = back(g)
    zero = prims.eq(norm, 0)
    if ord == 2:
        scaled = x
        scale = prims.div(gb, norm)
    else:
        mag = prims.abs(x)
        scaled = prims.mul(prims.sign(x), prims.pow(mag, ord - 1))
        if ord < 1:  # |x|^(p-1) is infinite at x = 0, where torch takes 0
            scaled = prims.where(prims.eq(x, 0), 0, scaled)
        scale = prims.div(gb, prims.pow(norm, ord - 1))
    return prims.mul(scaled, prims.where(zero, 0, scale)), None, None, None
