"""VJP rules of the elementwise ops: the unary prims (most from their local derivative, with
``_unary_vjp``), ``real`` and ``imag``, the binary prims, and the torch-language elementwise
ops whose decomposition's gradient differs from torch's at the edges (``logaddexp``,
``xlogy``, ``special_entr``, ``special_xlog1py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from thunder.core.symbol import Symbol
from thunder.ops import ltorch, prims
from thunder.ops.meta import dtype_of, is_tensor
from thunder.ops.vjp.table import VJPS, rule_for, zeros_like


def _square(a):
    return prims.mul(a, a)


# -- elementwise unary ----------------------------------------------------------------------
def _unary_vjp(*syms: Symbol):
    """A rule ``g * d(out, a)`` from the local derivative ``d``."""

    def deco(d: Callable) -> Callable:
        def rule(g, out, a):
            return (prims.mul(g, d(out, a)),)

        rule.__name__ = d.__name__
        return rule_for(*syms)(rule)

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


@rule_for(prims.polygamma)
def _polygamma(g, out, n, a):
    return None, prims.mul(g, prims.polygamma(n + 1, a))


@rule_for(prims.neg)
def _neg(g, out, a):
    return (prims.neg(g),)


@rule_for(prims.clone, prims.convert_element_type, prims.device_put)
def _identity(g, out, a, *args):
    # the grad pass casts and moves the gradient back to the argument's dtype and device
    return (g,)


@rule_for(prims.sign, prims.floor, prims.ceil, prims.round, prims.trunc)
def _zero(g, out, a):
    # piecewise constant: a zero gradient (not none: the input is still in the graph)
    return (zeros_like(g),)


@rule_for(prims.real)
def _real(g, out, a):
    return (prims.convert_element_type(g, dtype_of(a)),)


@rule_for(prims.imag)
def _imag(g, out, a):
    """As torch: the gradient of the imaginary part is ``g * 1j``."""
    return (prims.mul(prims.convert_element_type(g, dtype_of(a)), 1j),)


# -- elementwise binary ---------------------------------------------------------------------
def _tensor(x) -> bool:
    return is_tensor(x)


@rule_for(prims.add)
def _add(g, out, a, b):
    return g, g


@rule_for(prims.sub)
def _sub(g, out, a, b):
    return g, prims.neg(g) if _tensor(b) else None


@rule_for(prims.mul)
def _mul(g, out, a, b):
    return (prims.mul(g, b) if _tensor(a) else None), (prims.mul(g, a) if _tensor(b) else None)


@rule_for(prims.div)
def _div(g, out, a, b):
    ga = prims.div(g, b) if _tensor(a) else None
    gb = None
    if _tensor(b):
        # from the inputs, as torch's (which saves them, not the result), when ``a`` is a tensor
        gb = prims.neg(
            prims.div(prims.mul(g, a), _square(b)) if _tensor(a) else prims.div(prims.mul(g, out), b)
        )
    return ga, gb


@rule_for(prims.pow)
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


def _extremum(loses):
    """maximum/minimum, as eager's formula: the gradient goes to each argument unless it lost
    (``loses(a, b)``), halved on ties; a NaN loses to nothing, so both arguments get it whole."""

    def rule(g, out, a, b):
        half = prims.where(prims.eq(a, b), prims.div(g, 2), g)
        ga = prims.where(loses(a, b), 0, half) if _tensor(a) else None
        gb = prims.where(loses(b, a), 0, half) if _tensor(b) else None
        return ga, gb

    return rule


VJPS[prims.maximum] = _extremum(prims.lt)
VJPS[prims.minimum] = _extremum(prims.gt)


@rule_for(prims.atan2)
def _atan2(g, out, a, b):
    denom = prims.add(_square(a), _square(b))
    return prims.div(prims.mul(g, b), denom), prims.div(prims.mul(prims.neg(g), a), denom)


@rule_for(prims.hypot)
def _hypot(g, out, a, b):
    return prims.mul(g, prims.div(a, out)), prims.mul(g, prims.div(b, out))


@rule_for(prims.fmod)
def _fmod(g, out, a, b):
    gb = prims.mul(prims.neg(g), prims.trunc(prims.div(a, b))) if _tensor(b) else None
    return g, gb


@rule_for(prims.remainder)
def _remainder(g, out, a, b):
    gb = prims.mul(prims.neg(g), prims.floor(prims.div(a, b))) if _tensor(b) else None
    return (g if _tensor(a) else None), gb


@rule_for(prims.copysign)
def _copysign(g, out, a, b):
    ga = prims.mul(g, prims.where(prims.eq(a, 0), 0, prims.div(out, a)))
    return ga, (zeros_like(g) if _tensor(b) else None)


@rule_for(prims.floor_divide)
def _floor_divide(g, out, a, b):
    return (zeros_like(g) if _tensor(a) else None), (zeros_like(g) if _tensor(b) else None)


@rule_for(prims.where)
def _where(g, out, cond, a, b):
    ga = prims.where(cond, g, 0) if _tensor(a) else None
    gb = prims.where(cond, 0, g) if _tensor(b) else None
    return None, ga, gb


@rule_for(prims.clamp)
def _clamp(g, out, a, lo, hi):
    inside = None
    for bound, cmp in ((lo, prims.ge), (hi, prims.le)):
        if bound is not None:
            c = cmp(a, bound)
            inside = c if inside is None else prims.logical_and(inside, c)
    return prims.where(inside, g, 0) if inside is not None else g, None, None


# -- torch-language ops with rules of their own ---------------------------------------------
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


@rule_for(ltorch.xlogy)
def _xlogy(g, out, a, b):
    """As torch: d/da is log(b), 0 where a is 0 (nan where b is nan), without the 0 * -inf
    the decomposition's where would give at a = b = 0."""
    if not is_tensor(b):
        return NotImplemented
    d = prims.where(prims.isnan(b), b, prims.where(prims.eq(a, 0), 0, prims.log(b)))
    return prims.mul(g, d), prims.div(prims.mul(g, a), b)


@rule_for(ltorch.special_entr)
def _special_entr(g, out, a):
    """As torch: ``-(1 + log a)`` everywhere (inf at 0, NaN below), where the decomposition's
    ``where`` would give 0 outside the positive values."""
    return (prims.mul(g, prims.neg(prims.add(prims.log(a), 1))),)


@rule_for(ltorch.special_xlog1py)
def _special_xlog1py(g, out, a, b):
    """As torch: ``log1p(b)`` for ``a`` (also where ``a`` is 0, where the decomposition's
    ``where`` gives 0) and ``a / (b + 1)`` for ``b``."""
    if not (is_tensor(a) and is_tensor(b)):
        return NotImplemented
    return prims.mul(g, prims.log1p(b)), prims.div(prims.mul(g, a), prims.add(b, 1))
