"""VJP rules: how to differentiate each op, in one table keyed by the Symbol (``VJPS``).

Why this file is under ``thunder/ops/`` and not next to the grad pass: a rule is knowledge
about one op, and the project keeps everything that names a particular op under
``thunder/ops/`` (no pass names an op); the grad pass (``thunder/transforms/grad.py``) only
looks rules up in this table.

Every differentiable prim has a rule. A torch-language op is differentiated through its
decomposition (its BoundSymbol's subsymbols) unless it has a rule of its own, which it gets
where the decomposition would be slow or unstable (softmax, layer_norm, attention, ...).

A rule is ``rule(g, out, *args, **kwargs)``: ``g`` is the cotangent of the output (a tuple,
with ``None`` where an output has none, when the op returns several values), ``out`` the
output, ``args``/``kwargs`` the op's arguments (a torch-language op's bound to its
signature, so every parameter before ``*`` is positional). It returns one gradient per
positional argument (``None`` for none, a list for a list argument), each of the broadcast
shape and the computation dtype it finds natural: the grad pass sums broadcast dimensions
away and casts to the argument's dtype. Returning ``NotImplemented`` falls back to the
decomposition. Rules call thunder ops, so the backward is a trace like any other.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from thunder.core.symbol import Symbol, SymbolTable
from thunder.ops import fsdp, ltorch, prims
from thunder.ops.ltorch import nn as lnn
from thunder.ops.meta import LOW_PRECISION_DTYPES, canonical_dims, device_of, dtype_of, is_tensor, shape_of

VJPS = SymbolTable(
    "the VJP rules",
    hint="add a rule to thunder/ops/vjp.py, or declare the prim in NON_DIFFERENTIABLE there",
)


def _rule(*syms: Symbol):
    def deco(fn: Callable) -> Callable:
        for s in syms:
            VJPS[s] = fn
        return fn

    return deco


def zeros_like(a, dtype: torch.dtype | None = None):
    return prims.full(shape_of(a), 0, dtype=dtype or dtype_of(a), device=device_of(a))


def _expand(g, shape, kept_dims):
    """``g`` (the reduction of a tensor of ``shape`` over every dim not in ``kept_dims``)
    broadcast back to ``shape``."""
    if shape_of(g) == tuple(shape):
        return g
    return prims.broadcast_in_dim(g, tuple(shape), tuple(kept_dims))


def _kept(shape, dims) -> tuple[int, ...]:
    return tuple(i for i in range(len(shape)) if i not in dims)


def _square(a):
    return prims.mul(a, a)


# -- elementwise unary ----------------------------------------------------------------------
def _unary_vjp(*syms: Symbol):
    """A rule ``g * d(out, a)`` from the local derivative ``d``."""

    def deco(d: Callable) -> Callable:
        def rule(g, out, a):
            return (prims.mul(g, d(out, a)),)

        rule.__name__ = d.__name__
        return _rule(*syms)(rule)

    return deco


@_unary_vjp(prims.exp)
def _exp(out, a):
    return out


@_unary_vjp(prims.exp2)
def _exp2(out, a):
    return prims.mul(out, math.log(2))


@_unary_vjp(prims.expm1)
def _expm1(out, a):
    return prims.add(out, 1)


@_unary_vjp(prims.log)
def _log(out, a):
    return prims.reciprocal(a)


@_unary_vjp(prims.log1p)
def _log1p(out, a):
    return prims.reciprocal(prims.add(a, 1))


@_unary_vjp(prims.log2)
def _log2(out, a):
    return prims.reciprocal(prims.mul(a, math.log(2)))


@_unary_vjp(prims.log10)
def _log10(out, a):
    return prims.reciprocal(prims.mul(a, math.log(10)))


@_unary_vjp(prims.sin)
def _sin(out, a):
    return prims.cos(a)


@_unary_vjp(prims.cos)
def _cos(out, a):
    return prims.neg(prims.sin(a))


@_unary_vjp(prims.tan)
def _tan(out, a):
    return prims.add(_square(out), 1)


@_unary_vjp(prims.asin)
def _asin(out, a):
    return prims.rsqrt(prims.sub(1, _square(a)))


@_unary_vjp(prims.acos)
def _acos(out, a):
    return prims.neg(prims.rsqrt(prims.sub(1, _square(a))))


@_unary_vjp(prims.atan)
def _atan(out, a):
    return prims.reciprocal(prims.add(_square(a), 1))


@_unary_vjp(prims.sinh)
def _sinh(out, a):
    return prims.cosh(a)


@_unary_vjp(prims.cosh)
def _cosh(out, a):
    return prims.sinh(a)


@_unary_vjp(prims.tanh)
def _tanh(out, a):
    return prims.sub(1, _square(out))


@_unary_vjp(prims.asinh)
def _asinh(out, a):
    return prims.rsqrt(prims.add(_square(a), 1))


@_unary_vjp(prims.acosh)
def _acosh(out, a):
    return prims.rsqrt(prims.sub(_square(a), 1))


@_unary_vjp(prims.atanh)
def _atanh(out, a):
    return prims.reciprocal(prims.sub(1, _square(a)))


@_unary_vjp(prims.sqrt)
def _sqrt(out, a):
    return prims.div(0.5, out)


@_unary_vjp(prims.rsqrt)
def _rsqrt(out, a):
    return prims.mul(prims.mul(_square(out), out), -0.5)


@_unary_vjp(prims.reciprocal)
def _reciprocal(out, a):
    return prims.neg(_square(out))


@_unary_vjp(prims.sigmoid)
def _sigmoid(out, a):
    return prims.mul(out, prims.sub(1, out))


@_unary_vjp(prims.erf)
def _erf(out, a):
    return prims.mul(prims.exp(prims.neg(_square(a))), 2 / math.sqrt(math.pi))


@_unary_vjp(prims.erfc)
def _erfc(out, a):
    return prims.mul(prims.exp(prims.neg(_square(a))), -2 / math.sqrt(math.pi))


@_unary_vjp(prims.erfinv)
def _erfinv(out, a):
    # from the input, as torch's (which saves the input, not the result)
    return prims.mul(prims.exp(_square(prims.erfinv(a))), math.sqrt(math.pi) / 2)


@_unary_vjp(prims.lgamma)
def _lgamma(out, a):
    return prims.digamma(a)


@_unary_vjp(prims.digamma)
def _digamma(out, a):
    return prims.polygamma(1, a)


@_unary_vjp(prims.abs)
def _abs(out, a):
    return prims.sign(a)


@_rule(prims.polygamma)
def _polygamma(g, out, n, a):
    return None, prims.mul(g, prims.polygamma(n + 1, a))


@_rule(prims.neg)
def _neg(g, out, a):
    return (prims.neg(g),)


@_rule(prims.clone, prims.convert_element_type, prims.device_put)
def _identity(g, out, a, *args):
    # the grad pass casts and moves the gradient back to the argument's dtype and device
    return (g,)


@_rule(prims.sign, prims.floor, prims.ceil, prims.round, prims.trunc)
def _zero(g, out, a):
    # piecewise constant: a zero gradient (not none: the input is still in the graph)
    return (zeros_like(g),)


# -- elementwise binary ---------------------------------------------------------------------
def _tensor(x) -> bool:
    return is_tensor(x)


@_rule(prims.add)
def _add(g, out, a, b):
    return g, g


@_rule(prims.sub)
def _sub(g, out, a, b):
    return g, prims.neg(g) if _tensor(b) else None


@_rule(prims.mul)
def _mul(g, out, a, b):
    return (prims.mul(g, b) if _tensor(a) else None), (prims.mul(g, a) if _tensor(b) else None)


@_rule(prims.div)
def _div(g, out, a, b):
    ga = prims.div(g, b) if _tensor(a) else None
    gb = None
    if _tensor(b):
        # from the inputs, as torch's (which saves them, not the result), when ``a`` is a tensor
        gb = prims.neg(
            prims.div(prims.mul(g, a), _square(b)) if _tensor(a) else prims.div(prims.mul(g, out), b)
        )
    return ga, gb


@_rule(prims.pow)
def _pow(g, out, a, b):
    ga = gb = None
    if _tensor(a):
        if not _tensor(b) and b == 0:
            ga = zeros_like(g)
        else:
            ga = prims.mul(g, prims.mul(b, prims.pow(a, prims.sub(b, 1) if _tensor(b) else b - 1)))
            if _tensor(b):  # as torch: no gradient where the exponent is 0 (0 ** -1 is inf)
                ga = prims.where(prims.eq(b, 0), 0, ga)
    if _tensor(b):
        log_a = prims.log(a) if _tensor(a) else math.log(a) if a > 0 else (-math.inf if a == 0 else math.nan)
        d = prims.mul(out, log_a)
        if _tensor(a):  # 0 ** b has no slope in b for b >= 0 (log 0 would give nan)
            d = prims.where(prims.logical_and(prims.eq(a, 0), prims.ge(b, 0)), 0, d)
        elif a == 0:
            d = prims.where(prims.ge(b, 0), 0, d)
        gb = prims.mul(g, d)
    return ga, gb


def _extremum(take_a):
    """maximum/minimum: the gradient goes to the chosen argument, split evenly on ties."""

    def rule(g, out, a, b):
        half = prims.where(prims.eq(a, b), prims.div(g, 2), g)
        ga = prims.where(take_a(a, b), half, 0) if _tensor(a) else None
        gb = prims.where(take_a(b, a), half, 0) if _tensor(b) else None
        return ga, gb

    return rule


VJPS[prims.maximum] = _extremum(prims.ge)
VJPS[prims.minimum] = _extremum(prims.le)


@_rule(prims.atan2)
def _atan2(g, out, a, b):
    denom = prims.add(_square(a), _square(b))
    return prims.div(prims.mul(g, b), denom), prims.div(prims.mul(prims.neg(g), a), denom)


@_rule(prims.hypot)
def _hypot(g, out, a, b):
    return prims.mul(g, prims.div(a, out)), prims.mul(g, prims.div(b, out))


@_rule(prims.fmod)
def _fmod(g, out, a, b):
    gb = prims.mul(prims.neg(g), prims.trunc(prims.div(a, b))) if _tensor(b) else None
    return g, gb


@_rule(prims.remainder)
def _remainder(g, out, a, b):
    gb = prims.mul(prims.neg(g), prims.floor(prims.div(a, b))) if _tensor(b) else None
    return (g if _tensor(a) else None), gb


@_rule(prims.copysign)
def _copysign(g, out, a, b):
    ga = prims.mul(g, prims.where(prims.eq(a, 0), 0, prims.div(out, a)))
    return ga, (zeros_like(g) if _tensor(b) else None)


@_rule(prims.floor_divide)
def _floor_divide(g, out, a, b):
    return (zeros_like(g) if _tensor(a) else None), (zeros_like(g) if _tensor(b) else None)


@_rule(prims.where)
def _where(g, out, cond, a, b):
    ga = prims.where(cond, g, 0) if _tensor(a) else None
    gb = prims.where(cond, 0, g) if _tensor(b) else None
    return None, ga, gb


@_rule(prims.clamp)
def _clamp(g, out, a, lo, hi):
    inside = None
    for bound, cmp in ((lo, prims.ge), (hi, prims.le)):
        if bound is not None:
            c = cmp(a, bound)
            inside = c if inside is None else prims.logical_and(inside, c)
    return prims.where(inside, g, 0) if inside is not None else g, None, None


# -- reductions -----------------------------------------------------------------------------
@_rule(prims.sum)
def _sum(g, out, a, dims, *, dtype=None):
    return _expand(g, shape_of(a), _kept(shape_of(a), dims)), None


@_rule(prims.amax, prims.amin)
def _amax(g, out, a, dims):
    """The gradient is shared evenly by the elements equal to the extremum (as torch)."""
    shape, kept = shape_of(a), _kept(shape_of(a), dims)
    hit = prims.eq(a, _expand(out, shape, kept))
    count = prims.sum(prims.convert_element_type(hit, dtype_of(g)), dims)
    return prims.where(hit, _expand(prims.div(g, count), shape, kept), 0), None


@_rule(prims.prod)
def _prod(g, out, a, dims, *, dtype=None):
    """g * prod(others): out / a without zeros; with one zero in a slice, the product of the
    rest at that zero; with more, 0."""
    shape, kept = shape_of(a), _kept(shape_of(a), dims)
    zero = prims.eq(a, 0)
    n_zero = _expand(prims.sum(prims.convert_element_type(zero, dtype_of(a)), dims), shape, kept)
    rest = _expand(prims.prod(prims.where(zero, 1, a), dims), shape, kept)
    gx = _expand(g, shape, kept)
    no_zero = prims.mul(gx, prims.div(_expand(out, shape, kept), a))
    one_zero = prims.where(prims.logical_and(zero, prims.eq(n_zero, 1)), prims.mul(gx, rest), 0)
    return prims.where(prims.eq(n_zero, 0), no_zero, one_zero), None


@_rule(prims.var)
def _var(g, out, a, dims, *, correction):
    shape, kept = shape_of(a), _kept(shape_of(a), dims)
    n = math.prod(shape[d] for d in dims)
    mean = _expand(prims.div(prims.sum(a, dims), n), shape, kept)
    d = prims.div(prims.mul(prims.sub(a, mean), 2), n - correction)
    return prims.mul(_expand(g, shape, kept), d), None


@_rule(prims.cumsum)
def _cumsum(g, out, a, dim, *, dtype=None):
    return prims.flip(prims.cumsum(prims.flip(g, (dim,)), dim), (dim,)), None


# -- shape ----------------------------------------------------------------------------------
@_rule(prims.broadcast_in_dim)
def _broadcast_in_dim(g, out, a, shape, broadcast_dims):
    sa = shape_of(a)
    summed = {i for i in range(len(shape)) if i not in broadcast_dims}
    summed |= {bd for d, bd in zip(sa, broadcast_dims) if d == 1 and shape[bd] != 1}
    r = prims.sum(g, tuple(sorted(summed))) if summed else g
    # the dims left are a's, in output order: put them back in a's order
    left = [list(broadcast_dims).index(k) for k in range(len(shape)) if k not in summed]
    if left != sorted(left):
        r = prims.transpose(r, tuple(sorted(range(len(left)), key=lambda i: left[i])))
    return (prims.reshape(r, sa) if shape_of(r) != sa else r), None, None


@_rule(prims.reshape, prims.squeeze)
def _reshape(g, out, a, shape):
    return prims.reshape(g, shape_of(a)), None


@_rule(prims.transpose)
def _transpose(g, out, a, permutation):
    inverse = tuple(sorted(range(len(permutation)), key=lambda i: permutation[i]))
    return prims.transpose(g, inverse), None


@_rule(prims.flip)
def _flip(g, out, a, dims):
    return prims.flip(g, dims), None


@_rule(prims.slice_prim)
def _slice(g, out, a, start_indices, end_indices, strides=None):
    sa = shape_of(a)
    strides = strides or (1,) * len(sa)
    cur = list(shape_of(g))
    for d, (lo, hi, st) in enumerate(zip(start_indices, end_indices, strides)):
        if cur[d] != sa[d]:
            cur[d] = sa[d]
            g = ltorch.slice_backward(g, tuple(cur), d, lo, hi, st)
    return g, None, None, None


@_rule(prims.cat)
def _cat(g, out, tensors, dim):
    s = shape_of(g)
    d = dim % len(s)
    grads, start = [], 0
    for t in tensors:
        n = shape_of(t)[d]
        lo, hi = [0] * len(s), list(s)
        lo[d], hi[d] = start, start + n
        grads.append(prims.slice_prim(g, tuple(lo), tuple(hi), (1,) * len(s)))
        start += n
    return grads, None


# -- indexing -------------------------------------------------------------------------------
def _zeros(shape, like):
    return prims.full(tuple(shape), 0, dtype=dtype_of(like), device=device_of(like))


@_rule(prims.take)
def _take(g, out, a, index, dim):
    """Rows taken are added back where they came from (``index_add`` of the flattened index)."""
    sa = shape_of(a)
    n = math.prod(shape_of(index))
    rows = prims.reshape(g, sa[:dim] + (n,) + sa[dim + 1 :])
    return ltorch.index_add(_zeros(sa, g), dim, prims.reshape(index, (n,)), rows), None, None


@_rule(prims.take_along_axis)
def _take_along_axis(g, out, a, index, dim):
    return prims.scatter_add(_zeros(shape_of(a), g), dim, index, g), None, None


@_rule(prims.index_copy)
def _index_copy(g, out, a, index, dim, src):
    ga = prims.index_copy(g, index, dim, _zeros(shape_of(src), g))
    return ga, None, None, prims.take(g, index, dim)


@_rule(prims.scatter_add)
def _scatter_add(g, out, a, dim, index, src):
    return g, None, None, _gather(g, index, dim)


@_rule(prims.real)
def _real(g, out, a):
    return (prims.convert_element_type(g, dtype_of(a)),)


@_rule(prims.imag)
def _imag(g, out, a):
    """As torch: the gradient of the imaginary part is ``g * 1j``."""
    return (prims.mul(prims.convert_element_type(g, dtype_of(a)), 1j),)


@_rule(prims.scatter)
def _scatter(g, out, a, dim, index, src):
    """As torch: the written positions get no gradient in ``a``; every ``src`` element gets
    the gradient of the position it was written to (also where a repeated index lost)."""
    ga = prims.scatter(g, dim, index, _zeros(shape_of(src), g))
    return ga, None, None, _gather(g, index, dim)


@_rule(prims.scatter_reduce)
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


@_rule(prims.index_put)
def _index_put(g, out, a, indices, values, accumulate):
    ga = g if accumulate else prims.index_put(g, indices, _zeros(shape_of(values), g), False)
    return ga, None, ltorch.getitem(g, tuple(indices)), None


def _scatter_back(g_values, a, dim, indices):
    """Each selected value's gradient back where it was taken from (topk, sort)."""
    return prims.scatter_add(_zeros(shape_of(a), g_values), dim, indices, g_values)


@_rule(prims.topk)
def _topk(g, out, a, k, dim, largest, sorted):
    return _scatter_back(g[0], a, dim, out[1]), None, None, None, None


@_rule(prims.sort)
def _sort(g, out, a, dim, descending, stable):
    return _scatter_back(g[0], a, dim, out[1]), None, None, None


# -- linear algebra -------------------------------------------------------------------------
def _swap_last(a):
    n = len(shape_of(a))
    perm = list(range(n))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return prims.transpose(a, tuple(perm))


def _unsqueeze(a, dim: int):
    s = shape_of(a)
    d = dim % (len(s) + 1)
    out = s[:d] + (1,) + s[d:]
    return prims.broadcast_in_dim(a, out, tuple(i for i in range(len(out)) if i != d))


@_rule(prims.matmul)
def _matmul(g, out, a, b):
    """As torch's matmul: a 1-d argument is a row (left) or a column (right) that is dropped
    from the result; batch dims broadcast (the grad pass sums them back)."""
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) == 1 and len(sb) == 1:
        return prims.mul(g, b), prims.mul(g, a)
    a2 = _unsqueeze(a, 0) if len(sa) == 1 else a
    b2 = _unsqueeze(b, -1) if len(sb) == 1 else b
    g2 = _unsqueeze(g, -2) if len(sa) == 1 else g
    g2 = _unsqueeze(g2, -1) if len(sb) == 1 else g2
    ga = prims.matmul(g2, _swap_last(b2))
    gb = prims.matmul(_swap_last(a2), g2)
    if len(sa) == 1:
        ga = prims.reshape(ga, shape_of(ga)[:-2] + shape_of(ga)[-1:])
    if len(sb) == 1:
        gb = prims.reshape(gb, shape_of(gb)[:-1])
    return ga, gb


@_rule(prims.linear)
def _linear(g, out, a, w, bias):
    """out = a @ w.T + bias over the last dim; the weight's gradient sums every leading dim."""
    sa, sw = shape_of(a), shape_of(w)
    gb = g if is_tensor(bias) else None
    if len(sw) == 1:  # a weight vector: out has a's leading dims
        ge = _unsqueeze(g, -1)
        return prims.mul(ge, w), prims.mul(ge, a), gb
    ga = prims.matmul(g, w)
    if len(sa) == 1:
        gw = prims.mul(_unsqueeze(g, -1), _unsqueeze(a, 0))
    else:
        lead = math.prod(sa[:-1])
        g2 = prims.reshape(g, (lead, sw[0])) if len(sa) != 2 else g
        a2 = prims.reshape(a, (lead, sa[-1])) if len(sa) != 2 else a
        gw = prims.matmul(_swap_last(g2), a2)
    return ga, gw, gb


# -- convolution and pooling ------------------------------------------------------------------
@_rule(prims.convolution)
def _convolution(g, out, a, weight, bias, stride, padding, dilation, groups):
    grads = prims.convolution_backward(g, a, weight, is_tensor(bias), stride, padding, dilation, groups)
    gb = grads[2] if is_tensor(bias) else None
    return grads[0], grads[1], gb, None, None, None, None


@_rule(prims.max_pool)
def _max_pool(g, out, a, *params):
    return (prims.max_pool_backward(g, a, *params),) + (None,) * len(params)


@_rule(prims.avg_pool)
def _avg_pool(g, out, a, *params):
    return (prims.avg_pool_backward(g, a, *params),) + (None,) * len(params)


@_rule(prims.adaptive_avg_pool)
def _adaptive_avg_pool(g, out, a, output_size):
    return prims.adaptive_avg_pool_backward(g, a, output_size), None


# -- torch-language ops with rules of their own ---------------------------------------------
# (every other torch-language op is differentiated through its decomposition)
@_rule(ltorch.relu)
def _relu(g, out, a, inplace=False):
    # from the output, as torch does: one kernel, and the output is what the next op saves
    return ltorch.threshold_backward(g, out, 0), None


@_rule(ltorch.gelu)
def _gelu(g, out, a, approximate="none"):
    return ltorch.gelu_backward(g, a, approximate=approximate), None


@_rule(ltorch.silu)
def _silu(g, out, a, inplace=False):
    return ltorch.silu_backward(g, a), None


@_rule(ltorch.hardsigmoid)
def _hardsigmoid(g, out, a, inplace=False):
    return ltorch.hardsigmoid_backward(g, a), None


@_rule(ltorch.hardswish)
def _hardswish(g, out, a, inplace=False):
    return ltorch.hardswish_backward(g, a), None


def _softmax_rule(backward):
    def rule(g, out, a, dim=None, _stacklevel=3, dtype=None):
        if not shape_of(a):
            return NotImplemented
        d = dim % len(shape_of(a))
        return backward(g, out, d, dtype_of(out)), None, None, None

    return rule


VJPS[ltorch.softmax] = _softmax_rule(ltorch.softmax_backward)
VJPS[ltorch.log_softmax] = _softmax_rule(ltorch.log_softmax_backward)


@_rule(ltorch.softmin)
def _softmin(g, out, a, dim=None, _stacklevel=3, dtype=None):
    """softmax's gradient of ``-a``: from the result, as torch's (softmax(-a), saving it)."""
    if dim is None:
        return NotImplemented
    grads = VJPS[ltorch.softmax](g, out, a, dim, _stacklevel, dtype)
    return grads if grads is NotImplemented else (prims.neg(grads[0]), *grads[1:])


@_rule(ltorch.logsumexp)
def _logsumexp(g, out, a, dim, keepdim=False):
    """``g * exp(a - out)``, from the input and the result, as torch's (which saves both)."""
    s = shape_of(a)
    if not dtype_of(a).is_floating_point or dtype_of(a) in LOW_PRECISION_DTYPES or not s:
        return NotImplemented
    dims = canonical_dims(dim, len(s), "torch.logsumexp")
    kept = _kept(s, dims)
    reduced = tuple(s[i] for i in kept)

    def back(t):
        return _expand(prims.reshape(t, reduced) if shape_of(t) != reduced else t, s, kept)

    return prims.mul(back(g), prims.exp(prims.sub(a, back(out)))), None, None


@_rule(ltorch.layer_norm)
def _layer_norm(g, out, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """The kernel's gradient, with the mean and 1/std recomputed from the input (where the
    forward is not ``native_layer_norm``, see ``AUGMENTED``)."""
    if weight is None or bias is None or dtype_of(input) in LOW_PRECISION_DTYPES:
        return NotImplemented
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    _, mean, rstd = ltorch.native_layer_norm(input, ns, None, None, eps)
    gi, gw, gb = ltorch.layer_norm_backward(g, input, ns, mean, rstd, weight, bias, (True, True, True))
    return gi, None, gw, gb, None


@_rule(ltorch.native_layer_norm)
def _native_layer_norm(g, out, input, normalized_shape, weight, bias, eps):
    """The kernel's gradient from the mean and 1/std the forward kept (eager's way)."""
    if weight is None or bias is None or dtype_of(input) in LOW_PRECISION_DTYPES:
        return NotImplemented
    g_out = g[0]
    if g_out is None:  # (the statistics are not differentiable)
        return None, None, None, None, None
    _, mean, rstd = out
    ns = tuple(normalized_shape)
    gi, gw, gb = ltorch.layer_norm_backward(g_out, input, ns, mean, rstd, weight, bias, (True, True, True))
    return gi, None, gw, gb, None


@_rule(ltorch.write_through_detach)
def _write_through_detach(g, out, base, value):
    return g, None


# Forwards that also compute what their backward needs, used by the grad pass in place of the
# op where a gradient flows through it: ``make(*args, **kwargs)`` records one op whose first
# output is the original op's (or returns None to keep the op). ``F.layer_norm`` becomes
# ``native_layer_norm``, which keeps the mean and 1/std as eager's autograd does, instead of
# a backward that normalises the input again to get them.
AUGMENTED = SymbolTable("the forwards that keep what their backward needs")


def _layer_norm_keeping_statistics(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if weight is None or bias is None or dtype_of(input) in LOW_PRECISION_DTYPES:
        return None
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    return ltorch.native_layer_norm(input, ns, weight, bias, eps)


AUGMENTED[ltorch.layer_norm] = _layer_norm_keeping_statistics


@_rule(ltorch.embedding)
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


def _split_rule(g, out, a, *args):
    """split/chunk: the pieces' gradients side by side (zeros for a piece without one)."""
    dim = args[-1] % len(shape_of(a))
    pieces = [gi if gi is not None else zeros_like(o) for gi, o in zip(g, out)]
    return (prims.cat(pieces, dim) if len(pieces) > 1 else pieces[0],) + (None,) * len(args)


VJPS[ltorch.split] = _split_rule
VJPS[ltorch.chunk] = _split_rule


def _unrepeat_heads(g, n_rep: int):
    """The gradient of ``_repeat_heads``: each group of n_rep heads summed back into one."""
    s = shape_of(g)
    grouped = prims.reshape(g, s[:-3] + (s[-3] // n_rep, n_rep) + s[-2:])
    return prims.sum(grouped, (len(s) - 2,))


@_rule(ltorch.scaled_dot_product_attention)
def _sdpa(
    g, out, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """Recompute the probabilities P as the forward does, then dV = P^T dO, dP = dO V^T,
    dS = P * (dP - rowsum(dP * P)), dQ = dS K * scale, dK = dS^T Q * scale (a float mask gets
    dS). With dropout the mask is random: the decomposition saves it instead."""
    if dropout_p > 0:
        return NotImplemented
    sq, sk = shape_of(query), shape_of(key)
    compute = torch.float32 if dtype_of(query) in LOW_PRECISION_DTYPES else dtype_of(query)
    q, k, v = (lnn._cast(t, compute) for t in (query, key, value))
    n_rep = sq[-3] // sk[-3] if enable_gqa and len(sq) >= 3 and sq[-3] != sk[-3] else 1
    k, v = lnn._repeat_heads(k, n_rep), lnn._repeat_heads(v, n_rep)
    scale = 1.0 / math.sqrt(sq[-1]) if scale is None else scale
    scores = prims.mul(prims.matmul(q, _swap_last(k)), scale)
    mask = lnn._tril_mask(sq[-2], sk[-2], device_of(query)) if is_causal else attn_mask
    if mask is not None:
        if dtype_of(mask) is torch.bool:
            scores = prims.where(mask, scores, -math.inf)
        else:
            scores = prims.add(scores, lnn._cast(mask, compute))
    d = len(shape_of(scores)) - 1
    m = ltorch.amax(scores, d, True)
    m = prims.where(prims.eq(m, -math.inf), 0, m)
    e = prims.exp(prims.sub(scores, m))
    s = ltorch.sum(e, d, True)
    p = prims.div(e, prims.where(prims.eq(s, 0), 1, s))
    go = lnn._cast(g, compute)
    gv = prims.matmul(_swap_last(p), go)
    gp = prims.matmul(go, _swap_last(v))
    gs = prims.mul(p, prims.sub(gp, ltorch.sum(prims.mul(gp, p), d, True)))
    gq = prims.mul(prims.matmul(gs, k), scale)
    gk = prims.mul(prims.matmul(_swap_last(gs), q), scale)
    if n_rep > 1:
        gk, gv = _unrepeat_heads(gk, n_rep), _unrepeat_heads(gv, n_rep)
    gmask = gs if attn_mask is not None and dtype_of(attn_mask) is not torch.bool else None
    return gq, gk, gv, gmask, None, None, None, None


def _runs(offs, n: int, dtype):
    """(G, n): 1 where index i of the ragged dimension is in run g (``offs``: the runs' ends),
    and (n,): whether i is in any run."""
    g = shape_of(offs)[0]
    dev = device_of(offs)
    ends = prims.broadcast_in_dim(offs, (n, g), (1,))
    idx = prims.broadcast_in_dim(
        prims.iota(n, start=0, step=1, dtype=dtype_of(offs), device=dev), (n, g), (0,)
    )
    run = prims.sum(prims.convert_element_type(prims.le(ends, idx), torch.int64), (1,))  # runs ended before i
    groups = prims.iota(g, start=0, step=1, dtype=torch.int64, device=dev)
    mask = prims.eq(prims.broadcast_in_dim(groups, (g, n), (0,)), prims.broadcast_in_dim(run, (g, n), (1,)))
    return prims.convert_element_type(mask, dtype), prims.lt(run, g)


@_rule(prims.grouped_mm)
def _grouped_mm(g, out, a, b, offs):
    """(M, K) x (G, K, N): dA = dO B[g]^T per run (zero after the last run), dB[g] = A_g^T dO_g,
    both grouped matmuls. (M, K) x (K, N) with runs along K: each run's share of dO B^T and
    A^T dO, selected by a mask of the runs."""
    sa, sb = shape_of(a), shape_of(b)
    if len(sb) == 3:
        _, valid = _runs(offs, sa[0], dtype_of(a))
        ga = prims.where(prims.broadcast_in_dim(valid, sa, (0,)), prims.grouped_mm(g, _swap_last(b), offs), 0)
        return ga, prims.grouped_mm(_swap_last(a), g, offs), None
    groups = shape_of(offs)[0]
    mask, _ = _runs(offs, sa[1], dtype_of(a))  # (G, K)
    ga = prims.mul(
        prims.matmul(g, _swap_last(b)), prims.broadcast_in_dim(mask, (groups, sa[0], sa[1]), (0, 2))
    )
    gb = prims.mul(
        prims.matmul(_swap_last(a), g), prims.broadcast_in_dim(mask, (groups, sb[0], sb[1]), (0, 1))
    )
    return prims.sum(ga, (0,)), prims.sum(gb, (0,)), None


def _logaddexp_rule(exp: Callable):
    """As torch: ``g / (1 + exp(b - a))`` for ``a`` (nan where both are the same infinity,
    where the decomposition's safe form would give 1/2)."""

    def rule(g, out, a, b):
        if not (is_tensor(a) and is_tensor(b)):
            return NotImplemented
        ga = prims.div(g, prims.add(exp(prims.sub(b, a)), 1))
        gb = prims.div(g, prims.add(exp(prims.sub(a, b)), 1))
        return ga, gb

    return rule


VJPS[ltorch.logaddexp] = _logaddexp_rule(prims.exp)
VJPS[ltorch.logaddexp2] = _logaddexp_rule(prims.exp2)


@_rule(ltorch.xlogy)
def _xlogy(g, out, a, b):
    """As torch: d/da is log(b), 0 where a is 0 (nan where b is nan), without the 0 * -inf
    the decomposition's where would give at a = b = 0."""
    if not is_tensor(b):
        return NotImplemented
    d = prims.where(prims.isnan(b), b, prims.where(prims.eq(a, 0), 0, prims.log(b)))
    return prims.mul(g, d), prims.div(prims.mul(g, a), b)


# Prims whose outputs never carry a gradient: comparisons, bit operations, indices, values
# made from nothing or at random, the write of a value into an input (the grad pass moves
# write-backs out of the forward; the caller copies with autograd on), and the windowed ops'
# backward kernels (a backward of a backward: double backward is refused). The tests check
# that every other prim has a rule.
NON_DIFFERENTIABLE = frozenset(
    {
        prims.bitwise_not, prims.isnan, prims.isinf, prims.isfinite, prims.signbit,
        prims.logical_not, prims.bitwise_and, prims.bitwise_or, prims.bitwise_xor,
        prims.bitwise_left_shift, prims.bitwise_right_shift, prims.eq, prims.ne, prims.lt,
        prims.le, prims.gt, prims.ge, prims.logical_and, prims.logical_or, prims.logical_xor,
        prims.argmax, prims.argmin, prims.full, prims.iota, prims.uniform, prims.copy_, prims.bernoulli,
        prims.convolution_backward, prims.max_pool_backward, prims.avg_pool_backward,
        prims.adaptive_avg_pool_backward, prims.custom_op_backward,
    }
)  # fmt: skip


# Collectives whose gradient torch does not define either (all_reduce, broadcast: which rank's
# loss a value reaches is the program's business): a gradient reaching one is a NoVJPError that
# names it and the user's line, as in eager, which has no autograd formula for them.
NO_TORCH_GRADIENT = frozenset({prims.all_reduce, prims.broadcast})


# The collectives with torch's own gradients (torch.distributed._functional_collectives):
# all_gather and reduce_scatter are each other's transpose, all_to_all_single its own with the
# splits swapped. A start's gradient is a start and its wait: a wait passes the gradient on.
@_rule(prims.all_gather)
def _all_gather(g, out, a, group):
    return (prims.wait(prims.reduce_scatter(g, "sum", group)), None)


@_rule(prims.reduce_scatter)
def _reduce_scatter(g, out, a, op, group):
    if op not in ("sum", "avg"):
        return NotImplemented
    ga = prims.wait(prims.all_gather(g, group))
    if op == "avg":
        ga = prims.div(ga, float(shape_of(a)[0] // shape_of(out)[0]))
    return (ga, None, None)


@_rule(prims.all_to_all_single)
def _all_to_all_single(g, out, a, output_split_sizes, input_split_sizes, group):
    return (
        prims.wait(prims.all_to_all_single(g, input_split_sizes, output_split_sizes, group)),
        None,
        None,
        None,
    )


@_rule(prims.wait)
def _wait(g, out, a):
    return (g,)


@_rule(fsdp.unshard)
def _unshard(g, out, shards, shapes, group):
    """FSDP's gradient of its parameters' shards: reduce-scattered, averaged over the ranks."""
    g = g if isinstance(g, tuple) else (g,)
    return (fsdp.reduce_scatter_grads(list(g), shards, shapes, group), None, None)


def custom_op_rule(path: str) -> Callable:
    """The rule of the custom operator ``path`` (``thunder/ops/custom.py``): its floating-point
    tensor arguments get the gradients of the operator's own autograd formula, which the
    backward runs on the saved arguments (``prims.custom_op_backward``)."""

    def rule(g, out, *args, **kwargs):
        grads = g if isinstance(g, tuple) else (g,)
        wanted = tuple(i for i, a in enumerate(args) if is_tensor(a) and dtype_of(a).is_floating_point)
        got = prims.custom_op_backward(path, grads, args, kwargs, wanted)
        by_position = dict(zip(wanted, got))
        return tuple(by_position.get(i) for i in range(len(args)))

    return rule


@_rule(ltorch.vector_norm)
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
    kept = _kept(s, dims) if s else ()

    def back(t):
        if not keepdim and s:
            t = prims.reshape(t, tuple(s[i] for i in kept)) if shape_of(t) != tuple(s[i] for i in kept) else t
            return _expand(t, s, kept)
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


def _gather(t, index, dim):
    """``t`` (shaped like a scatter's input) at ``index`` along ``dim``, as torch.gather: an
    index smaller than ``t`` in the other dimensions reads their leading part."""
    st, si = shape_of(t), shape_of(index)
    hi = tuple(si[i] if i != dim else n for i, n in enumerate(st))
    if hi != st:
        t = prims.slice_prim(t, (0,) * len(st), hi, (1,) * len(st))
    return prims.take_along_axis(t, index, dim)


@_rule(ltorch.special_entr)
def _special_entr(g, out, a):
    """As torch: ``-(1 + log a)`` everywhere (inf at 0, NaN below), where the decomposition's
    ``where`` would give 0 outside the positive values."""
    return (prims.mul(g, prims.neg(prims.add(prims.log(a), 1))),)


@_rule(ltorch.special_xlog1py)
def _special_xlog1py(g, out, a, b):
    """As torch: ``log1p(b)`` for ``a`` (also where ``a`` is 0, where the decomposition's
    ``where`` gives 0) and ``a / (b + 1)`` for ``b``."""
    if not (is_tensor(a) and is_tensor(b)):
        return NotImplemented
    return prims.mul(g, prims.log1p(b)), prims.div(prims.mul(g, a), prims.add(b, 1))
