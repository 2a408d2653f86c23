"""Elementwise ops: unary, binary, with more operands, activations, and casts
(``thunder/ops/ltorch/elementwise.py``, ``casts.py``)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .entries import ALL, FLOAT, INT, NAN, NUM, POS, UNIT, T, b8, binary, f32, f64, i32, i64, op, s, unary

# -- elementwise unary ----------------------------------------------------------------------
for _n in "abs neg sign floor ceil trunc".split():
    op(_n, getattr(torch, _n), unary(), NUM, getattr(T, _n))
for _n in "exp exp2 expm1 sin cos tan atan sinh cosh tanh asinh sigmoid erf erfc".split():
    op(_n, getattr(torch, _n), unary(), FLOAT + (i64,), getattr(T, _n))
for _n in "log log2 log10 sqrt rsqrt lgamma digamma".split():
    op(_n, getattr(torch, _n), unary(**POS), FLOAT, getattr(T, _n))
for _n in "asin acos atanh erfinv".split():
    op(_n, getattr(torch, _n), unary(**UNIT), FLOAT, getattr(T, _n))
op("log1p", torch.log1p, unary(low=-0.9), FLOAT, T.log1p)
op("acosh", torch.acosh, unary(low=1.1, high=5.0), FLOAT, T.acosh)
op("reciprocal", torch.reciprocal, unary(low=0.5), FLOAT + (i64,), T.reciprocal)
op("signbit", torch.signbit, unary(), (f32, f64, i64), T.signbit)
for _n in "isnan isinf isfinite logical_not".split():
    op(_n, getattr(torch, _n), unary(), ALL, getattr(T, _n))
op("bitwise_not", torch.bitwise_not, unary(), INT + (b8,), T.bitwise_not, T.__invert__)
op("round", torch.round, lambda m: unary()(m) + [s(m(3, 4), decimals=2)], (f32, f64), T.round)

# -- elementwise binary ---------------------------------------------------------------------
for _n, _al in {
    "mul": (T.mul, T.__mul__, torch.multiply),
    "eq": (T.eq, T.__eq__),
    "ne": (T.ne, T.__ne__, torch.not_equal),
    "lt": (T.lt, T.__lt__, torch.less),
    "le": (T.le, T.__le__),
    "gt": (T.gt, T.__gt__, torch.greater),
    "ge": (T.ge, T.__ge__),
    "maximum": (T.maximum,),
    "minimum": (T.minimum,),
}.items():
    op(_n, getattr(torch, _n), binary(scalar=_n not in ("maximum", "minimum")), NUM, *_al)
for _n in "atan2 hypot copysign".split():
    op(_n, getattr(torch, _n), binary(scalar=_n == "copysign"), (f32, f64), getattr(T, _n))
for _n in "fmod remainder floor_divide".split():
    op(_n, getattr(torch, _n), binary(low=1, high=5), (f32, f64, i64, i32), getattr(T, _n))
for _n in "bitwise_and bitwise_or bitwise_xor".split():
    op(_n, getattr(torch, _n), binary(), INT + (b8,), getattr(T, _n))
for _n in "logical_and logical_or logical_xor".split():
    op(_n, getattr(torch, _n), binary(scalar=False), ALL, getattr(T, _n))
op("add", torch.add, lambda m: binary()(m) + [s(m(3, 4), m(4), alpha=2)], NUM, T.add, T.__add__)
op("sub", torch.sub, lambda m: binary()(m) + [s(m(3, 4), m(4), alpha=2)], NUM, T.sub, T.__sub__)
op("rsub", torch.rsub, lambda m: [s(m(3, 4), m(3, 4)), s(m(3, 4), m(4), alpha=3)], NUM)
op("rsub", T.__rsub__, lambda m: [s(m(3, 4), m.scalar())], NUM, variant="operator")
op(
    "div",
    torch.div,
    lambda m: binary(low=1)(m) + [s(m(3, 4), m(4, low=1), rounding_mode=r) for r in ("trunc", "floor")],
    (f32, f64, i64),
    T.div,
    T.__truediv__,
    torch.true_divide,
)
op("pow", torch.pow, binary(low=0, high=3), (f32, f64, i64), T.pow, T.__pow__)
op("square", torch.square, unary(), NUM, T.square)

# -- elementwise with more operands, activations --------------------------------------------
op(
    "clamp",
    torch.clamp,
    lambda m: [s(m(3, 4), -1, 1), s(m(3, 4), min=0), s(m(3, 4), max=1), s(m(3, 4), m(3, 4), m(4, low=3))],
    (f32, f64, i64),
    T.clamp,
    torch.clip,
)
op("clamp_min", torch.clamp_min, lambda m: [s(m(3, 4), 0)], (f32, i64), T.clamp_min)
op("clamp_max", torch.clamp_max, lambda m: [s(m(3, 4), 1)], (f32, i64), T.clamp_max)
op(
    "where",
    torch.where,
    lambda m: [s(m(3, 4, dtype=b8), m(3, 4), m(4)), s(m(3, 1, dtype=b8), m(3, 4), m.scalar())],
    ALL,
)
op(
    "where",
    T.where,
    lambda m: [s(m(3, 4), m(3, 4, dtype=b8), m(4)), s(m(3, 4), m(4, dtype=b8), m.scalar())],
    ALL,
    variant="method",
)
op(
    "lerp",
    torch.lerp,
    lambda m: [s(m(3, 4), m(3, 4), 0.3), s(m(3, 4), m(4), m(3, 4, low=0, high=1))],
    (f32, f64),
)
op("addcmul", torch.addcmul, lambda m: [s(m(3, 4), m(3, 4), m(4)), s(m(3, 4), m(3, 4), m(3, 4), value=0.5)])
op(
    "addcdiv",
    torch.addcdiv,
    lambda m: [s(m(3, 4), m(3, 4), m(4, low=1)), s(m(3, 4), m(3, 4), m(4, low=1), value=2)],
)
op(
    "isclose",
    torch.isclose,
    lambda m: [s(m(3, 4), m(3, 4)), s(m(3, 4), m(3, 4), rtol=0.5, atol=1.0)],
    (f32, f64),
)
op("relu", torch.relu, unary(), NUM, F.relu, T.relu)
op("relu6", F.relu6, unary(low=-8, high=8))
op("leaky_relu", F.leaky_relu, lambda m: unary()(m) + [s(m(3, 4), 0.2)])
op("gelu", F.gelu, lambda m: unary()(m) + [s(m(3, 4), approximate="tanh")])
op("silu", F.silu, unary())
op("mish", F.mish, unary())
op("softplus", F.softplus, lambda m: unary()(m) + [s(m(3, 4, low=-10, high=10), beta=2, threshold=5)])
op("elu", F.elu, lambda m: unary()(m) + [s(m(3, 4), alpha=0.5)])
op("hardtanh", F.hardtanh, lambda m: unary()(m) + [s(m(3, 4), -0.5, 2.0)])
op("logsigmoid", F.logsigmoid, unary(), (f32, f64))
for _n in "hardsigmoid hardswish selu celu softsign tanhshrink hardshrink softshrink".split():
    op(_n, getattr(F, _n), unary(low=-5, high=5))
op("celu", F.celu, lambda m: [s(m(3, 4), alpha=0.5)], variant="alpha")
op("softshrink", F.softshrink, lambda m: [s(m(3, 4), 1.5)], variant="lambd")
op("threshold", F.threshold, lambda m: [s(m(3, 4), 0.5, -2.0)], FLOAT, torch.threshold)
op(
    "logaddexp",
    torch.logaddexp,
    lambda m: [
        s(m(3, 4), m(3, 4)),
        s(m(3, 4), m(4)),
        s(
            torch.tensor([math.inf, -math.inf, 1.0, -math.inf], dtype=m.dtype),
            torch.tensor([math.inf, -math.inf, 1.0, 2.0], dtype=m.dtype),
        ),
    ],
    FLOAT,
    T.logaddexp,
)
op("logaddexp2", torch.logaddexp2, lambda m: [s(m(3, 4), m(3, 4)), s(m(3, 4), m(4))], FLOAT, T.logaddexp2)
op("frac", torch.frac, unary(), FLOAT, T.frac)
op(
    "nan_to_num",
    torch.nan_to_num,
    lambda m: [
        s(torch.tensor([1.0, math.nan, math.inf, -math.inf]).to(m.dtype)),
        s(m(3), nan=1.0, posinf=2.0, neginf=-2.0),
    ],
    FLOAT,
    T.nan_to_num,
)
op("nan_to_num", torch.nan_to_num, unary(), INT, variant="int")
op(
    "logit",
    torch.logit,
    lambda m: [s(m(3, 4, low=0.01, high=0.99)), s(m(3, 4, low=0, high=1), eps=0.1)],
    FLOAT,
    T.logit,
)
op(
    "xlogy",
    torch.xlogy,
    lambda m: [
        s(m(3, 4), m(3, 4, low=0.1)),
        s(torch.tensor([0.0, 0.0, 1.0]).to(m.dtype), torch.tensor([0.0, math.nan, 2.0])),
        s(m(3), 2.0),
    ],
    (f32, f64),
    T.xlogy,
)

op("sgn", torch.sgn, lambda m: unary()(m) + [s(torch.tensor([0, 1, 0, 1]).to(m.dtype))], ALL, T.sgn)
op(
    "heaviside",
    torch.heaviside,
    lambda m: [
        s(m(3, 4), m(3, 4)),
        s(torch.tensor([-2, 0, 3, 0]).to(m.dtype), m(4)),
        s(m(2, 1, 4), m(3, 1)),
        s(torch.tensor([0, 1, -1, NAN if m.dtype.is_floating_point else 0]).to(m.dtype), m()),
    ],
    ALL,
    T.heaviside,
)
op(
    "float_power",
    torch.float_power,
    lambda m: [
        s(m(3, 4, low=0.1, high=3), m(3, 4)),
        s(m(3, 4), 2),
        s(m(3, 4), 0.5),
        s(2.5, m(3, 4)),
        s(m(2, 1, 4), m(3, 1, dtype=i64)),
    ],
    ALL,
    T.float_power,
)


def _fibonacci(dtype: torch.dtype) -> tuple[int, int]:
    """The two largest consecutive Fibonacci numbers of the dtype: Euclid's longest case."""
    x, y = 1, 2
    while x + y <= torch.iinfo(dtype).max:
        x, y = y, x + y
    return x, y


def _gcd_edges(m):
    """Euclid's longest case, zeros, signs, the extremes (products that overflow for lcm)."""
    lo, hi = torch.iinfo(m.dtype).min, torch.iinfo(m.dtype).max
    x, y = _fibonacci(m.dtype)
    if lo == 0:
        return s(
            torch.tensor([x, y, 0, 0, hi, hi], dtype=m.dtype),
            torch.tensor([y, x, 0, 5, hi - 1, 6], dtype=m.dtype),
        )
    edge = torch.tensor([x, y, 0, 0, -12, 12, lo, lo, lo, hi, -hi], dtype=m.dtype)
    other = torch.tensor([y, x, 0, -5, 18, -18, 0, 6, lo, hi - 1, hi - 2], dtype=m.dtype)
    return s(edge, other)


GCD = (i64, i32, torch.int8, torch.uint8)
op(
    "gcd",
    torch.gcd,
    lambda m: [s(m(3, 4), m(3, 4)), s(m(2, 1, 4), m(3, 1)), _gcd_edges(m), s(m(3, 4), m(4, dtype=i32))],
    GCD,
    T.gcd,
)
op("lcm", torch.lcm, lambda m: [s(m(3, 4), m(3, 4)), s(m(2, 1, 4), m(3, 1)), _gcd_edges(m)], GCD, T.lcm)

# -- casts ----------------------------------------------------------------------------------
for _n in "float double half bfloat16 int long bool".split():
    op(_n, getattr(T, _n), unary(), ALL)
op("type_as", T.type_as, lambda m: [s(m(3, 4), m(2, dtype=f64)), s(m(3), m(2, dtype=i32))], ALL)
op(
    "to",
    T.to,
    lambda m: [
        s(m(3, 4), f64),
        s(m(3, 4), "cpu"),
        s(m(3, 4), dtype=i32),
        s(m(3, 4), m(2, dtype=f32)),
        s(m(2), copy=True),
    ],
    ALL,
)
op("cpu", T.cpu, unary(), (f32,))
op("cuda", T.cuda, unary(), (f32,), cuda=True)
op("detach", T.detach, unary(), (f32,), torch.detach)
