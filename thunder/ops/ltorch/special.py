"""More elementwise math and small compositions: angle conversions, ``sinc``, the infinity and
reality tests, ``fmax``/``fmin`` (NaN-ignoring extrema), ``ldexp``, ``angle``, ``polygamma``,
``mvlgamma``, ``special.entr``/``xlog1py``/``ndtr``/``log_ndtr``, the bit shifts,
``bernoulli``, ``diagflat``, ``dist`` and the trapezoid rules.

Each is a composition of prims and other torch-language ops, so its gradient comes from
theirs; where a formula has a removable singularity (``sinc`` at 0) the operand is made safe
first, so the unused branch of a ``where`` carries no NaN into the gradient.
"""

from __future__ import annotations

import math

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import alias, torchsymbol
from thunder.ops.ltorch import elementwise as ew
from thunder.ops.ltorch import factories, matrix, reductions, shape
from thunder.ops.meta import ShapeError, canonical_dim, device_of, dtype_of, is_tensor, shape_of

T = torch.Tensor
_EW = (Tag.ELEMENTWISE,)


def _float(a):
    """``a`` as a floating tensor (integers and bools promote to the default float dtype)."""
    dt = dtype_of(a)
    if dt.is_floating_point or dt.is_complex:
        return a
    return prims.convert_element_type(a, torch.get_default_dtype())


def _methods(*names):
    return tuple(getattr(T, n) for n in names if hasattr(T, n))


@torchsymbol(torch.deg2rad, *_methods("deg2rad"), torch_impl="torch.deg2rad", tags=_EW)
def deg2rad(a):
    return prims.mul(_float(a), math.pi / 180)


@torchsymbol(torch.rad2deg, *_methods("rad2deg"), torch_impl="torch.rad2deg", tags=_EW)
def rad2deg(a):
    return prims.mul(_float(a), 180 / math.pi)


@torchsymbol(torch.sinc, torch.special.sinc, *_methods("sinc"), torch_impl="torch.sinc", tags=_EW)
def sinc(a):
    """``sin(pi a) / (pi a)``, 1 at 0 (the division made on a safe operand there)."""
    a = _float(a)
    zero = prims.eq(a, 0)
    x = prims.mul(prims.where(zero, 1, a), math.pi)
    return prims.where(zero, 1, prims.div(prims.sin(x), x))


def _inf_test(sign: int, name: str):
    def op(a):
        if not dtype_of(a).is_floating_point:
            return prims.full(shape_of(a), False, dtype=torch.bool, device=device_of(a))
        return prims.logical_and(prims.isinf(a), (prims.gt if sign > 0 else prims.lt)(a, 0))

    op.__name__ = name
    return torchsymbol(getattr(torch, name), *_methods(name), torch_impl=f"torch.{name}", tags=_EW)(op)


isposinf = _inf_test(1, "isposinf")
isneginf = _inf_test(-1, "isneginf")


@torchsymbol(torch.isreal, *_methods("isreal"), torch_impl="torch.isreal", tags=_EW)
def isreal(a):
    if dtype_of(a).is_complex:
        raise ShapeError(f"torch.isreal: complex tensors are not supported, got {dtype_of(a)}")
    return prims.full(shape_of(a), True, dtype=torch.bool, device=device_of(a))


def _nan_ignoring(prim, name: str):
    def op(a, b):
        m = ew.maximum(a, b) if prim is prims.maximum else ew.minimum(a, b)
        if not dtype_of(m).is_floating_point:
            return m
        return ew.where(ew.isnan(b), a, ew.where(ew.isnan(a), b, m))

    op.__name__ = name
    op.__doc__ = (
        f"torch.{name}: the {'larger' if prim is prims.maximum else 'smaller'} value, NaN only where both are"
    )
    return torchsymbol(getattr(torch, name), *_methods(name), torch_impl=f"torch.{name}", tags=_EW)(op)


fmax = _nan_ignoring(prims.maximum, "fmax")
fmin = _nan_ignoring(prims.minimum, "fmin")


@torchsymbol(torch.ldexp, *_methods("ldexp"), torch_impl="torch.ldexp", tags=_EW)
def ldexp(a, other):
    """``a * 2 ** other``."""
    return ew.mul(a, ew.exp2(_float(other) if is_tensor(other) else float(other)))


@torchsymbol(torch.angle, *_methods("angle"), torch_impl="torch.angle", tags=_EW)
def angle(a):
    """Of a real tensor: pi where negative, 0 elsewhere, NaN where NaN."""
    if dtype_of(a).is_complex:
        raise ShapeError(f"torch.angle: complex tensors are not supported, got {dtype_of(a)}")
    a = _float(a)
    # zeros from ``a`` (its result requires grad, as eager's, with a zero gradient everywhere), but
    # not ``a * 0``: that is NaN at +-inf, where eager gives 0 and pi
    zeros = prims.mul(prims.where(prims.isinf(a), 0, a), 0)
    return prims.where(prims.isnan(a), math.nan, prims.where(prims.lt(a, 0), math.pi, zeros))


@torchsymbol(torch.polygamma, torch.special.polygamma, torch_impl="torch.polygamma", tags=_EW)
def polygamma(n: int, a):
    if not isinstance(n, int) or n < 0:
        raise ShapeError(f"torch.polygamma: n must be a non-negative int, got {n!r}")
    return prims.polygamma(n, _float(a))


alias(lambda a, n: polygamma(n, a), T.polygamma)  # the tensor first


@torchsymbol(torch.mvlgamma, torch.special.multigammaln, T.mvlgamma, torch_impl="torch.mvlgamma", tags=_EW)
def mvlgamma(a, p: int):
    """The multivariate log-gamma: ``sum_i lgamma(a - i/2) + p(p-1)/4 log(pi)``."""
    if p < 1:
        raise ShapeError(f"torch.mvlgamma: p must be at least 1, got {p}")
    a = _float(a)
    out = prims.lgamma(a)
    for i in range(1, p):
        out = prims.add(out, prims.lgamma(prims.sub(a, i / 2)))
    return prims.add(out, p * (p - 1) / 4 * math.log(math.pi))


@torchsymbol(torch.special.entr, torch_impl="torch.special.entr", tags=_EW)
def special_entr(a):
    """``-a log a``: 0 at 0, -inf below (the log taken of a safe operand there)."""
    a = _float(a)
    pos = prims.gt(a, 0)
    v = prims.neg(prims.mul(a, prims.log(prims.where(pos, a, 1))))
    return prims.where(
        pos, v, prims.where(prims.eq(a, 0), prims.mul(a, 0), prims.where(prims.isnan(a), a, -math.inf))
    )


@torchsymbol(torch.special.xlog1py, torch_impl="torch.special.xlog1py", tags=_EW)
def special_xlog1py(a, b):
    """``a * log1p(b)``, 0 where ``a`` is 0 (unless ``b`` is NaN)."""
    a = _float(a) if is_tensor(a) else float(a)
    b = _float(b) if is_tensor(b) else float(b)
    prod = ew.mul(a, ew.log1p(b) if is_tensor(b) else math.log1p(b))
    if not is_tensor(a) and a != 0:
        return prod
    return ew.where(ew.logical_and(ew.eq(a, 0), ew.logical_not(ew.isnan(b))), 0.0, prod)


@torchsymbol(torch.special.ndtr, torch_impl="torch.special.ndtr", tags=_EW)
def special_ndtr(a):
    """The standard normal CDF: ``erfc(-a / sqrt 2) / 2``."""
    return prims.mul(prims.erfc(prims.mul(_float(a), -1 / math.sqrt(2))), 0.5)


@torchsymbol(torch.special.log_ndtr, torch_impl="torch.special.log_ndtr", tags=_EW)
def special_log_ndtr(a):
    return prims.log(special_ndtr(a))


def _shift(prim, name: str, dunder: str):
    def op(a, b):
        if not is_tensor(a):
            raise ShapeError(f"torch.{name}: the first operand must be a tensor, got {a!r}")
        return prim(a, b if is_tensor(b) else prims.full((), b, dtype=dtype_of(a), device=device_of(a)))

    op.__name__ = name
    return torchsymbol(
        getattr(torch, name), getattr(T, name), getattr(T, dunder), torch_impl=f"torch.{name}", tags=_EW
    )(op)


bitwise_left_shift = _shift(prims.bitwise_left_shift, "bitwise_left_shift", "__lshift__")
bitwise_right_shift = _shift(prims.bitwise_right_shift, "bitwise_right_shift", "__rshift__")


@torchsymbol(torch.bernoulli, T.bernoulli, torch_impl="torch.bernoulli", tags=(Tag.RANDOM,))
def bernoulli(a, p=None, *, generator=None):
    """1 with probability ``p`` (a number or a tensor; ``a`` itself when not given), else 0,
    in ``a``'s dtype: a uniform draw below the probability. ``x.bernoulli_(p)`` (stochastic
    depth) is this written back into ``x``."""
    if generator is not None:
        raise ShapeError("torch.bernoulli: an explicit generator is not supported")
    probs = a if p is None else p
    draw = factories.rand_like(a, dtype=torch.float64 if dtype_of(a) is torch.float64 else torch.float32)
    out = prims.convert_element_type(ew.lt(draw, probs), dtype_of(a))
    # as torch's: in the input's graph with a zero gradient
    return factories.in_graph_of(out, a) if dtype_of(a).is_floating_point else out


@torchsymbol(torch.diagflat, T.diagflat, torch_impl="torch.diagflat", tags=(Tag.SHAPE,))
def diagflat(a, offset: int = 0):
    return matrix.diag(shape.flatten(a), offset)


@torchsymbol(torch.dist, T.dist, torch_impl="torch.dist", tags=(Tag.REDUCTION,))
def dist(a, b, p=2):
    return reductions.vector_norm(ew.sub(a, b), p)


def _trapezoid_parts(y, x, dx, dim: int, op: str):
    """(the pairwise mean of neighbours along ``dim``, the spacing: a number or a tensor)."""
    s = shape_of(y)
    d = canonical_dim(dim, len(s), op)
    n = s[d]
    lo = shape.narrow(y, d, 0, max(n - 1, 0))
    hi = shape.narrow(y, d, min(1, n), max(n - 1, 0))
    avg = ew.mul(ew.add(lo, hi), 0.5)
    if x is None:
        return avg, 1 if dx is None else dx, d
    if not is_tensor(x):
        raise ShapeError(f"{op}: x must be a tensor, got {x!r}")
    xs = shape_of(x)
    if len(xs) == 1:
        spacing = ew.sub(
            shape.narrow(x, 0, min(1, xs[0]), max(xs[0] - 1, 0)), shape.narrow(x, 0, 0, max(xs[0] - 1, 0))
        )
        view = [1] * len(s)
        view[d] = max(xs[0] - 1, 0)
        return avg, shape.reshape(spacing, tuple(view)), d
    xd = canonical_dim(dim, len(xs), op) if len(xs) == len(s) else d - (len(s) - len(xs))
    m = xs[xd]
    spacing = ew.sub(shape.narrow(x, xd, min(1, m), max(m - 1, 0)), shape.narrow(x, xd, 0, max(m - 1, 0)))
    return avg, spacing, d


@torchsymbol(torch.trapezoid, torch_impl="torch.trapezoid", tags=(Tag.REDUCTION,))
def trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The trapezoid rule along ``dim``: spacing ``dx`` (default 1) or the differences of
    ``x``."""
    if is_tensor(x) is False and x is not None and dx is None:  # trapezoid(y, dx) positionally
        x, dx = None, x
    avg, spacing, d = _trapezoid_parts(y, x, dx, dim, "torch.trapezoid")
    return reductions.sum(ew.mul(avg, spacing), d)


@torchsymbol(torch.trapz, torch_impl="torch.trapz", tags=(Tag.REDUCTION,))
def trapz(y, x=None, *, dx=None, dim: int = -1):
    return trapezoid(y, x, dx=dx, dim=dim)


@torchsymbol(torch.cumulative_trapezoid, torch_impl="torch.cumulative_trapezoid", tags=(Tag.REDUCTION,))
def cumulative_trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The running trapezoid rule: the cumulative sum of the areas between neighbours."""
    if is_tensor(x) is False and x is not None and dx is None:
        x, dx = None, x
    avg, spacing, d = _trapezoid_parts(y, x, dx, dim, "torch.cumulative_trapezoid")
    return reductions.cumsum(ew.mul(avg, spacing), d) if shape_of(avg)[d] else ew.mul(avg, spacing)
