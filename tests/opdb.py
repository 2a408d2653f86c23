"""The op database: one entry per torch-language op (``thunder.ops.ltorch``).

An entry names the ltorch symbol, the torch callable a user calls (run under ``thunder.jit``
and eagerly as the reference), the dtypes to try and a sample generator: a function of a
``Maker`` (which makes tensors of the dtype under test) returning ``S(args, kwargs)`` samples.
``aliases`` are the other torch callables mapped to the same op, tried on the first sample.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from thunder.ops import ltorch

T = torch.Tensor
f32, f64, bf16, i32, i64, b8 = (
    torch.float32,
    torch.float64,
    torch.bfloat16,
    torch.int32,
    torch.int64,
    torch.bool,
)
FLOAT = (f32, f64, bf16)
INT = (i64, i32)
NUM = FLOAT + INT
ALL = NUM + (b8,)


@dataclasses.dataclass(frozen=True)
class S:
    """One sample: positional and keyword arguments (tensors anywhere inside)."""

    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)


def s(*args, **kwargs) -> S:
    return S(args, kwargs)


class Maker:
    """Makes sample tensors of one dtype: ``m(3, 4)``, ``m(3, low=0.1)``, ``m(2, dtype=i64)``."""

    def __init__(self, dtype: torch.dtype, device: str = "cpu"):
        self.dtype = dtype
        self.device = device

    def __call__(self, *shape, low=None, high=None, dtype=None) -> torch.Tensor:
        dtype = dtype or self.dtype
        if dtype is torch.bool:
            return torch.rand(shape, device=self.device) > 0.5
        if dtype.is_floating_point:
            lo, hi = -3.0 if low is None else low, 3.0 if high is None else high
            return (torch.rand(shape, dtype=f64, device=self.device) * (hi - lo) + lo).to(dtype)
        lo, hi = -9 if low is None else math.ceil(low), 10 if high is None else math.ceil(high)
        lo = max(lo, 0) if dtype is torch.uint8 else lo
        return torch.randint(lo, hi, shape, dtype=dtype, device=self.device)

    def scalar(self):
        """A Python number of the dtype's kind."""
        return True if self.dtype is torch.bool else 2.5 if self.dtype.is_floating_point else 3

    def index(self, high: int, *shape) -> torch.Tensor:
        return torch.randint(0, high, shape, device=self.device)


@dataclasses.dataclass
class OpInfo:
    name: str  # the ltorch symbol
    op: Callable  # what user code calls (traced), and the eager reference unless ``ref``
    samples: Callable[[Maker], list[S]]
    dtypes: tuple = FLOAT
    aliases: tuple = ()
    ref: Callable | None = None
    values: bool = True  # False: random or uninitialised results; compare metadata only
    check: Callable | None = None  # (output, sample) -> bool, for ``values=False`` ops
    tol: dict | None = None  # {dtype: (atol, rtol)} overrides
    variant: str = ""
    cuda: bool = False  # needs a CUDA device
    noop: bool = False  # the samples change nothing, so the op records nothing
    # eager's gradient is wrong for these samples (it fails torch.autograd.gradcheck): the
    # gradients are checked against finite differences instead
    numerical_grad: bool = False
    # the gradient is what the op's VJP rule says, not what its prims differentiate to (a
    # write into ``y.detach()``: the values written, the gradient passing to ``y`` unchanged)
    rule_only_grad: bool = False

    @property
    def id(self) -> str:
        return f"{self.name}_{self.variant}" if self.variant else self.name


OPS: list[OpInfo] = []


def op(name, fn, samples, dtypes=FLOAT, *aliases, **kw) -> None:
    OPS.append(OpInfo(name, fn, samples, dtypes, aliases, **kw))


# -- sample generators ----------------------------------------------------------------------
def unary(low=None, high=None, **kw):
    return lambda m: [
        s(m(3, 4, low=low, high=high), **kw),
        s(m(low=low, high=high), **kw),
        s(m(2, 1, 3, low=low, high=high), **kw),
    ]


def binary(low=None, high=None, scalar=True, **kw):
    """Same shapes, broadcasting, and a Python number; ``low``/``high`` bound the second operand."""

    def gen(m):
        out = [
            s(m(3, 4), m(3, 4, low=low, high=high), **kw),
            s(m(2, 1, 4), m(3, 1, low=low, high=high), **kw),
        ]
        if scalar:
            sc = m.scalar() if low is None else max(m.scalar(), low)
            out.append(s(m(3, 4), sc, **kw))
        return out

    return gen


def one(*shape, **kw):
    """A single sample with one tensor of ``shape``."""
    return lambda m: [s(m(*shape), **kw)]


def calls(*fns):
    """Samples written out: each ``fn(m)`` returns one S."""
    return lambda m: [f(m) for f in fns]


POS = dict(low=0.1, high=5.0)
UNIT = dict(low=-0.95, high=0.95)
NAN = math.nan


def distinct(m: Maker, *shape) -> torch.Tensor:
    """Distinct values in random order (exact in every dtype): for ops whose index of a tie
    eager leaves unspecified (median, kthvalue)."""
    n = math.prod(shape)
    v = torch.randperm(n, device=m.device) - n // 2
    return (v * 0.5 if m.dtype.is_floating_point else v).to(m.dtype).reshape(shape)


def with_nans(m: Maker, *shape) -> torch.Tensor:
    """Random values with every third one NaN (a float dtype) or plain random values."""
    x = m(*shape)
    if m.dtype.is_floating_point:
        x.view(-1)[::3] = NAN
    return x


def pick(m: Maker, number, integer, boolean=True):
    """A Python scalar argument of the kind the dtype under test takes."""
    return boolean if m.dtype is b8 else number if m.dtype.is_floating_point else integer


def sorted_(x: torch.Tensor) -> torch.Tensor:
    return x.sort(-1).values


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

# -- shape ----------------------------------------------------------------------------------
op(
    "reshape",
    torch.reshape,
    lambda m: [s(m(3, 4), (4, 3)), s(m(3, 4), (-1,)), s(m(2, 3, 4), (6, -1)), s(m(3, 4), shape=(2, 6))],
    ALL,
    T.reshape,
)
op("reshape", T.reshape, lambda m: [s(m(3, 4), 2, 6), s(m(2, 3, 4), -1, 4)], ALL, variant="varargs")
op(
    "view",
    T.view,
    lambda m: [s(m(3, 4), 12), s(m(3, 4), 2, -1), s(m(3, 4), (4, 3)), s(m(3, 4), size=(2, 6))],
    ALL,
)
op(
    "view",
    T.view,
    lambda m: [
        s(m(3, 4), torch.int32),
        s(m(3, 4), torch.float16),
        s(m(3, 4), dtype=f32),
        s(m(3, 4), torch.uint8),
    ],
    (f32,),
    variant="dtype",
)
op(
    "as_strided",
    torch.as_strided,
    lambda m: [s(m(4, 4), (2, 2), (1, 2)), s(m(4, 4), (3, 2), (0, 5), 3), s(m(2, 3), (6,), (1,))],
    ALL,
    T.as_strided,
)
op(
    "view_as_real",
    torch.view_as_real,
    lambda m: [s(torch.randn(3, 4, dtype=m.dtype)), s(torch.randn((), dtype=m.dtype))],
    (torch.complex64, torch.complex128),
)
op("reshape_as", T.reshape_as, lambda m: [s(m(3, 4), m(2, 6))], ALL, T.view_as)
op(
    "flatten",
    torch.flatten,
    lambda m: [s(m(2, 3, 4)), s(m(2, 3, 4), 1), s(m(2, 3, 4, 5), 1, 2), s(m())],
    ALL,
    T.flatten,
)
op("unflatten", torch.unflatten, lambda m: [s(m(2, 12), 1, (3, 4)), s(m(6, 2), 0, (-1, 3))], ALL, T.unflatten)
op("permute", torch.permute, lambda m: [s(m(2, 3, 4), (2, 0, 1)), s(m(2, 3), dims=(1, 0))], ALL, T.permute)
op("permute", T.permute, lambda m: [s(m(2, 3, 4), 2, 0, 1)], ALL, variant="varargs")
op(
    "transpose",
    torch.transpose,
    lambda m: [s(m(2, 3, 4), 0, 2), s(m(2, 3), -1, -2)],
    ALL,
    T.transpose,
    torch.swapaxes,
)
op("t", torch.t, lambda m: [s(m(2, 3)), s(m(3))], ALL, T.t)
op("movedim", torch.movedim, lambda m: [s(m(2, 3, 4), 0, -1), s(m(2, 3, 4), (0, 1), (2, 0))], ALL, T.movedim)
op("unsqueeze", torch.unsqueeze, lambda m: [s(m(2, 3), 0), s(m(2, 3), -1), s(m(), 0)], ALL, T.unsqueeze)
op(
    "squeeze",
    torch.squeeze,
    lambda m: [s(m(2, 1, 3, 1)), s(m(2, 1, 3), 1), s(m(2, 1, 3), 0), s(m(1, 3, 1), (0, 2))],
    ALL,
    T.squeeze,
)
op(
    "expand",
    T.expand,
    lambda m: [s(m(3, 1), 3, 4), s(m(3, 1), (2, 3, 4)), s(m(1), -1), s(m(3, 1), size=(3, 2))],
    ALL,
)
op("expand_as", T.expand_as, lambda m: [s(m(3, 1), m(2, 3, 4))], ALL)
op("broadcast_to", torch.broadcast_to, lambda m: [s(m(3, 1), (2, 3, 4))], ALL, T.broadcast_to)
op("broadcast_to", T.broadcast_to, lambda m: [s(m(3, 1), 2, 3, 4), s(m(3), 2, -1)], ALL, variant="sizes")
op("contiguous", T.contiguous, unary(), ALL)
op("clone", torch.clone, unary(), ALL, T.clone)
op(
    "cat",
    torch.cat,
    lambda m: [s([m(2, 3), m(4, 3)]), s([m(2, 3), m(2, 1)], dim=1), s([m(2), m(0)])],
    ALL,
    torch.concat,
)
op("stack", torch.stack, lambda m: [s([m(2, 3), m(2, 3)]), s([m(2, 3), m(2, 3), m(2, 3)], dim=-1)], ALL)
op("split", torch.split, lambda m: [s(m(5, 3), 2), s(m(5, 3), [1, 2], dim=1)], ALL, T.split)
op("chunk", torch.chunk, lambda m: [s(m(5, 3), 2), s(m(5, 4), 2, 1)], ALL, T.chunk)
op("unbind", torch.unbind, lambda m: [s(m(3, 2)), s(m(3, 2), 1)], ALL, T.unbind)
op("narrow", torch.narrow, lambda m: [s(m(5, 3), 0, 1, 3), s(m(5, 3), -1, -2, 2)], ALL, T.narrow)
op(
    "narrow",
    torch.narrow,
    lambda m: [s(m(5, 3), 0, torch.tensor(1), 3), s(m(5, 3), 1, torch.tensor(-2), 2)],
    ALL,
    T.narrow,
    variant="tensor_start",
)
op("select", torch.select, lambda m: [s(m(3, 4), 0, 1), s(m(3, 4, 2), -1, -2), s(m(3), 0, 2)], ALL, T.select)
op("ravel", torch.ravel, lambda m: [s(m(3, 4)), s(m()), s(m(2, 3, 1))], ALL, T.ravel)
op(
    "tensor_split",
    torch.tensor_split,
    lambda m: [
        s(m(7, 3), 3),
        s(m(7, 3), [1, 4], 0),
        s(m(3, 7), (2, -1, 9), dim=1),
        s(m(4, 5), [3, 1], 1),
        s(m(5), sections=2),
    ],
    ALL,
    T.tensor_split,
)
op("hstack", torch.hstack, lambda m: [s([m(3), m(2)]), s([m(2, 3), m(2, 1)]), s((m(), m()))], ALL)
op(
    "vstack",
    torch.vstack,
    lambda m: [s([m(3), m(3)]), s([m(2, 3), m(1, 3)]), s([m(2, 3, 2), m(1, 3, 2)])],
    ALL,
    torch.row_stack,
)
op(
    "dstack",
    torch.dstack,
    lambda m: [s([m(3), m(3)]), s([m(2, 3), m(2, 3)]), s([m(2, 3, 2), m(2, 3, 1)])],
    ALL,
)
op(
    "meshgrid",
    torch.meshgrid,
    lambda m: [
        s(m(3), m(4), indexing="ij"),
        s(m(3), m(4), m(2), indexing="xy"),
        s([m(3), m()], indexing="ij"),
    ],
    ALL,
)
op(
    "broadcast_tensors",
    torch.broadcast_tensors,
    lambda m: [s(m(3, 1), m(4)), s(m(2, 1, 3), m(), m(4, 1))],
    ALL,
)
op(
    "diagonal",
    torch.diagonal,
    lambda m: [
        s(m(3, 4)),
        s(m(3, 4), 1),
        s(m(4, 3), -2),
        s(m(2, 3, 4), 0, 2, 0),
        s(m(3, 3), 5),
        s(m(2, 3, 4), offset=-1, dim1=-1, dim2=1),
    ],
    ALL,
    T.diagonal,
)
op(
    "diagonal_scatter",
    torch.diagonal_scatter,
    lambda m: [
        s(m(3, 4), m(3)),
        s(m(3, 4), m(2), 2),
        s(m(4, 3), m(2), -2),
        s(m(2, 3, 4), m(3, 2), 0, 2, 0),
        s(m(3, 3), m(0), 5),
        s(m(2, 3, 4), m(2, 3), offset=-1, dim1=-1, dim2=1),
    ],
    ALL,
    T.diagonal_scatter,
)
op("diag", torch.diag, lambda m: [s(m(3)), s(m(3), 2), s(m(3, 4), -1), s(m(4, 3))], ALL, T.diag)
op(
    "diag_embed",
    torch.diag_embed,
    lambda m: [s(m(3)), s(m(2, 3), 1), s(m(2, 3), -2, 0, 2), s(m(2, 3), dim1=2, dim2=0)],
    ALL,
    T.diag_embed,
)
op(
    "tril_indices",
    torch.tril_indices,
    lambda m: [s(3, 4), s(4, 3, 1), s(5, 5, -2, dtype=m.dtype), s(3, 3, -4), s(0, 3), s(3, 4, 9)],
    (i64, i32),
)
op(
    "triu_indices",
    torch.triu_indices,
    lambda m: [s(3, 4), s(4, 3, 1), s(5, 5, -2, dtype=m.dtype), s(3, 3, 4), s(3, 4, -9)],
    (i64, i32),
)
op(
    "flip",
    torch.flip,
    lambda m: [s(m(3, 4), (0,)), s(m(2, 3, 4), [0, -1]), s(m(3, 4), dims=(1,))],
    ALL,
    T.flip,
)
op("flip", T.flip, lambda m: [s(m(2, 3, 4), 0, 2)], ALL, variant="varargs")
op(
    "getitem",
    T.__getitem__,
    lambda m: [
        s(m(4, 5), 1),
        s(m(4, 5), (slice(1, 3), None, Ellipsis)),
        s(m(4, 5, 6), (Ellipsis, -1)),
        s(m(4, 5, 6), (slice(None, None, 2), 0, slice(1, None))),
        s(m(4, 5), m.index(4, 3)),
        s(m(4, 5, 6), (slice(None), m.index(5, 2, 2), 1)),
        s(m(4, 5), torch.tensor([-1, 0, -4])),
        s(m(3, 4, 5, 6), (slice(None), torch.tensor([0, -1]), torch.tensor([[1], [2]]))),
        s(m(3, 4, 5, 6), (torch.tensor([0, 2]), slice(1, 3), torch.tensor([[1], [4]]), None)),
        s(m(3, 4, 5, 6), (None, torch.tensor([0, 2]), 1, torch.tensor([1, 4]))),
        s(m(3, 4, 5), (m.index(3, 2, 1), m.index(4, 3), m.index(5, 1, 3))),
    ],
    ALL,
)
op(
    "getitem",
    T.__getitem__,
    lambda m: [
        s(m(3, 4, 5), (Ellipsis, [-2], slice(None))),  # Falcon's qkv[..., [-2], :]
        s(m(3, 4, 5), [2, 0, 2, 1]),
        s(m(3, 4, 5), ([[0, 1], [2, 0]],)),
        s(m(3, 4, 5), (slice(None), [True, False, True, True])),
        s(m(3, 4, 5), ([0, 2], slice(None), [1, 4])),
        s(m(3, 4, 5), ([[True, False, True, True], [False, False, True, False], [True] * 4],)),
    ],
    ALL,
    variant="lists",
)
op(
    "index_select",
    torch.index_select,
    lambda m: [s(m(4, 5), 1, m.index(5, 3)), s(m(4), 0, m.index(4, 6))],
    ALL,
    T.index_select,
)
op(
    "gather",
    torch.gather,
    lambda m: [s(m(4, 5), 1, m.index(5, 4, 2)), s(m(4, 5), 0, m.index(4, 2, 5))],
    ALL,
    T.gather,
)
op(
    "take_along_dim",
    torch.take_along_dim,
    lambda m: [
        s(m(4, 5), m.index(5, 4, 2), 1),
        s(m(4, 5), m.index(20, 3, 2)),
        s(m(4, 1, 5), m.index(4, 2, 3, 1), 0),
    ],
    ALL,
    T.take_along_dim,
)
op(
    "index_copy",
    torch.index_copy,
    lambda m: [s(m(5, 3), 0, torch.tensor([4, 0, 2]), m(3, 3)), s(m(5, 3), 1, torch.tensor([2, 0]), m(5, 2))],
    ALL,
    T.index_copy,
)
op(
    "index_add",
    torch.index_add,
    lambda m: [
        s(m(5, 3), 0, torch.tensor([4, 0, 4]), m(3, 3)),
        s(m(5, 3), 1, torch.tensor([2, 0]), m(5, 2), alpha=2),
    ],
    NUM,
    T.index_add,
)
op(
    "repeat",
    T.repeat,
    lambda m: [s(m(2, 3), 2, 1), s(m(2, 3), (1, 2, 3)), s(m(3), 1), s(m(), 2), s(m(2), repeats=(2, 2))],
    ALL,
)
op(
    "tile",
    torch.tile,
    lambda m: [s(m(2, 3), (2,)), s(m(2, 3), (2, 1, 2)), s(m(2, 3), dims=(1, 2))],
    ALL,
    T.tile,
)
op("tile", T.tile, lambda m: [s(m(2, 3), 2, 2)], ALL, variant="varargs")
op(
    "repeat_interleave",
    torch.repeat_interleave,
    lambda m: [s(m(2, 3), 2), s(m(2, 3), 3, 1), s(m(2, 3), 2, dim=-2)],
    ALL,
    T.repeat_interleave,
)
op("roll", torch.roll, lambda m: [s(m(4, 3), 1), s(m(4, 3), -1, 0), s(m(4, 3), (2, 5), (0, 1))], ALL, T.roll)
op("scatter_add", torch.scatter_add, lambda m: [s(m(3, 5), 1, m.index(5, 3, 4), m(3, 4))], NUM, T.scatter_add)
# a permutation per row: no index repeats, so which write wins is defined
_PERM = torch.tensor([[0, 3, 1, 4], [2, 0, 4, 1], [4, 2, 3, 0]])
op(
    "scatter",
    torch.scatter,
    lambda m: [
        s(m(3, 5), 1, _PERM, m(3, 4)),
        s(m(3, 5), 1, _PERM[:2, :3], m.scalar()),
        s(m(5, 3), 0, _PERM.T[:2], m(3, 3), reduce="add"),
        s(m(3, 5), 1, m.index(5, 3, 4), m(3, 4), reduce="multiply"),
    ],
    NUM,
    T.scatter,
)
op("scatter", torch.scatter, lambda m: [s(m(3, 5), 1, _PERM, value=1)], NUM, variant="value")
op(
    "scatter_reduce",
    torch.scatter_reduce,
    lambda m: [
        s(m(3, 5), 1, m.index(5, 3, 4), m(3, 4), r, include_self=i)
        for r in ("sum", "mean", "prod", "amax", "amin")
        for i in (True, False)
    ],
    NUM,
    T.scatter_reduce,
)
op(
    "index_put",
    torch.index_put,
    lambda m: [
        s(m(4, 3), (torch.tensor([0, 2, 0]), torch.tensor([1, 1, 2])), m(3)),
        s(m(4, 3), (torch.tensor([0, 2, 0]),), m(3, 3), True),
        s(m(4, 3), (torch.tensor([[1], [3]]), torch.tensor([0, 2])), m(), accumulate=True),
        s(m(4, 3), (m(4, 3, dtype=b8),), m()),
    ],
    NUM,
    T.index_put,
)
op(
    "index_fill",
    torch.index_fill,
    lambda m: [
        s(m(4, 3), 0, torch.tensor([0, -1, 0]), m.scalar()),
        s(m(4, 3), 1, torch.tensor(1), torch.tensor(2, dtype=m.dtype)),
        s(m(), 0, torch.tensor([0]), m.scalar()),
    ],
    ALL,
    T.index_fill,
)
op(
    "masked_scatter",
    torch.masked_scatter,
    lambda m: [
        s(m(3, 4), m(3, 4, dtype=b8), m(12)),
        s(m(3, 4), m(4, dtype=b8), m(4, 5)),
        s(m(3, 4), m(3, 4, dtype=b8) & False, m(0)),
    ],
    ALL,
    T.masked_scatter,
)

op(
    "take",
    torch.take,
    lambda m: [
        s(m(3, 4), m.index(12, 5)),
        s(m(3, 4), torch.tensor([[-1, 0], [5, -12]])),
        s(m(), torch.tensor([0, -1])),
        s(m(3), torch.tensor([], dtype=i64)),
        s(m(3, 4), torch.tensor(7)),
    ],
    ALL,
    T.take,
)
op(
    "hsplit",
    torch.hsplit,
    lambda m: [
        s(m(4, 6), 2),
        s(m(6), 3),
        s(m(2, 7), [1, 5, 10]),
        s(m(2, 7, 2), (3,)),
        s(m(2, 6), [4, 1]),
    ],
    ALL,
    T.hsplit,
)
op("vsplit", torch.vsplit, lambda m: [s(m(4, 3), 2), s(m(5, 2), [1, 3]), s(m(6, 2, 2), 3)], ALL, T.vsplit)
op("dsplit", torch.dsplit, lambda m: [s(m(2, 3, 4), 2), s(m(2, 3, 5), [1, -2])], ALL, T.dsplit)
op(
    "column_stack",
    torch.column_stack,
    lambda m: [
        s([m(3), m(3, 2), m(3)]),
        s([m(), m()]),
        s((m(2, 3, 4), m(2, 1, 4))),
        s([m(3, 2)]),
        s([m(3)]),
    ],
    ALL,
)
for _n in (1, 2, 3):
    op(
        f"atleast_{_n}d",
        getattr(torch, f"atleast_{_n}d"),
        lambda m: [
            s(m()),
            s(m(3)),
            s(m(2, 3)),
            s(m(2, 3, 4)),
            s(m(), m(3), m(2, 3)),
            s([m(4), m(2, 2)]),
            s((m(),)),
        ],
        ALL,
    )
op(
    "tensor_unfold",
    T.unfold,
    lambda m: [
        s(m(2, 6), 1, 2, 2),
        s(m(7), 0, 3, 1),
        s(m(3, 4, 5), -1, 2, 3),
        s(m(3, 4), 0, 3, 2),
        s(m(4, 3), 0, 4, 1),
        s(m(5), 0, 0, 2),
        s(m(), 0, 1, 1),
        s(m(), 0, 0, 1),
    ],
    ALL,
)
op(
    "channel_shuffle",
    F.channel_shuffle,
    lambda m: [s(m(2, 6, 3), 3), s(m(1, 4, 2, 2), 2), s(m(1, 4, 2, 2), 1), s(m(2, 6, 2, 1, 2), 2)],
    ALL,
    torch.native_channel_shuffle,
    lambda x, groups: torch.nn.ChannelShuffle(groups)(x),
)
op(
    "rot90",
    torch.rot90,
    lambda m: [
        s(m(2, 3)),
        s(m(2, 3, 4), 2, [1, 2]),
        s(m(2, 3, 4), -1, (2, 0)),
        s(m(2, 3), 3, [-1, -2]),
        s(m(2, 3), 4),
        s(m(0, 3), 1),
    ],
    ALL,
    T.rot90,
)
op(
    "cartesian_prod",
    torch.cartesian_prod,
    lambda m: [s(m(3), m(2)), s(m(2), m(3), m(2)), s(m(3), m(0)), s(m(4))],
    ALL,
)
op(
    "block_diag",
    torch.block_diag,
    lambda m: [
        s(m(2, 3), m(1, 2)),
        s(m(2), m(), m(2, 2)),
        s(m(3, 0), m(2, 1)),
        s(m(2, 2), m(2, dtype=f64)),
        s(m(3, 3)),
        s(),
    ],
    ALL,
)
# an empty 1-D input is an empty row: eager's gradient reads the rows below it one too high
op(
    "block_diag",
    torch.block_diag,
    lambda m: [s(m(0), m(2, 2)), s(m(2, 2), m(0), m(1, 2))],
    ALL,
    variant="empty_row",
    numerical_grad=True,
)
op("trace", torch.trace, lambda m: [s(m(3, 3)), s(m(3, 5)), s(m(4, 2)), s(m(0, 3)), s(m(1, 1))], NUM, T.trace)

# -- reductions -----------------------------------------------------------------------------
RED_TOL = {bf16: (2e-2, 2e-2)}


def reduce(*extra):
    """Full, one dim, several dims with keepdim, a 0-dim tensor, plus ``extra(m)`` samples."""
    return lambda m: (
        [s(m(3, 4, 5)), s(m(3, 4, 5), 1), s(m(3, 4, 5), (0, 2), True), s(m())] + [e(m) for e in extra]
    )


op("sum", torch.sum, reduce(lambda m: s(m(3, 4), dtype=f64)), ALL, T.sum, tol=RED_TOL)
op("nansum", torch.nansum, reduce(), (f32, f64, i64), T.nansum, tol=RED_TOL)
op(
    "prod",
    torch.prod,
    lambda m: [s(m(3, 4, low=-2, high=2)), s(m(3, 4), 1), s(m(3, 4), 0, True)],
    NUM,
    T.prod,
    tol=RED_TOL,
)
op("mean", torch.mean, reduce(lambda m: s(m(3, 4), dtype=f64)), FLOAT, T.mean, tol=RED_TOL)
op("mean", torch.mean, lambda m: [s(m(3, 4), 1, dtype=f32)], INT, variant="int_dtype")
op(
    "count_nonzero",
    torch.count_nonzero,
    lambda m: [s(m(3, 4)), s(m(3, 4), 1), s(m(3, 4), (0, 1))],
    ALL,
    T.count_nonzero,
)
op(
    "cumsum",
    torch.cumsum,
    lambda m: [s(m(3, 4), 1), s(m(3, 4), -2), s(m(), 0), s(m(3), 0, dtype=f64)],
    NUM,
    T.cumsum,
    tol=RED_TOL,
)
for _n in "amax amin".split():
    op(_n, getattr(torch, _n), reduce(), NUM, getattr(T, _n))
for _n in "argmax argmin".split():
    op(
        _n,
        getattr(torch, _n),
        lambda m: [s(m(3, 4, 5)), s(m(3, 4), 1), s(m(3, 4), -1, True), s(m(3, 4), keepdim=True), s(m())],
        (f32, f64),
        getattr(T, _n),
    )
for _n in "max min".split():
    _samples = lambda m: [s(m(3, 4)), s(m(3, 4), 1), s(m(3, 4, 2), -1, True), s(m(3, 4), m(4))]  # noqa: E731
    op(_n, getattr(torch, _n), _samples, (f32, f64), getattr(T, _n))
for _n in "all any".split():
    op(
        _n,
        getattr(torch, _n),
        lambda m: [s(m(3, 4)), s(m(3, 4), 1), s(m(3, 4), 0, True), s(m())],
        ALL + (torch.uint8,),
        getattr(T, _n),
    )
VAR = lambda m: [  # noqa: E731
    s(m(3, 4, 5)),
    s(m(3, 4, 5), 1),
    s(m(3, 4, 5), (0, 2), keepdim=True),
    s(m(3, 4), 1, correction=0),
    s(m(3, 4), False),
    s(m(3, 4), 0, True, True),
]
for _n in "var std".split():
    op(_n, getattr(torch, _n), VAR, FLOAT, getattr(T, _n), tol=RED_TOL)
for _n in "var_mean std_mean".split():
    op(_n, getattr(torch, _n), VAR, FLOAT, tol=RED_TOL)
op(
    "vector_norm",
    torch.linalg.vector_norm,
    lambda m: [
        s(m(3, 4)),
        s(m(3, 4), 1, 1),
        s(m(3, 4, 2), math.inf, (0, 1), True),
        s(m(3, 4), -math.inf, 0),
        s(m(3, 4), 3.0, -1),
        s(m(3, 4), 0),
    ],
    FLOAT,
    tol=RED_TOL,
)
op(
    "norm",
    torch.norm,
    lambda m: [s(m(3, 4)), s(m(3, 4), 1, 1), s(m(3, 4, 2), "fro", (1, 2), True)],
    FLOAT,
    T.norm,
    tol=RED_TOL,
)
SOFTMAX = lambda m: [s(m(3, 4), 1), s(m(3, 4, 2), -1), s(m(3, 4), 0, dtype=f64)]  # noqa: E731
op("softmax", torch.softmax, SOFTMAX, FLOAT, T.softmax, tol=RED_TOL)
op(
    "softmax",
    F.softmax,
    lambda m: [s(m(3, 4), dim=1), s(m(3, 4), 1, dtype=f64)],
    FLOAT,
    variant="F",
    tol=RED_TOL,
)
op("log_softmax", torch.log_softmax, SOFTMAX, FLOAT, T.log_softmax, tol=RED_TOL)
op("log_softmax", F.log_softmax, lambda m: [s(m(3, 4), dim=0)], FLOAT, variant="F", tol=RED_TOL)
op("softmin", F.softmin, lambda m: [s(m(3, 4), 1), s(m(3, 4), dim=0, dtype=f64)], FLOAT, tol=RED_TOL)
op(
    "topk",
    torch.topk,
    lambda m: [s(m(3, 8), 3), s(m(3, 8), 2, 0), s(m(3, 8), 4, largest=False), s(m(5), 5)],
    (f32, f64),
    T.topk,
)
op(
    "cumprod",
    torch.cumprod,
    lambda m: [
        s(m(3, 7, low=-2, high=2), 1),
        s(m(5, 3, low=-2, high=2), 0),
        s(m(), 0),
        s(m(4, 2), -2, dtype=f64),
    ],
    NUM,
    T.cumprod,
    tol=RED_TOL,
)
op(
    "cumprod",
    torch.cumprod,
    lambda m: [s(torch.tensor([[2.0, 0.0, 3.0, 4.0], [0.0, 0.0, 1.5, -1.0]], dtype=m.dtype), 1)],
    FLOAT,
    variant="zeros",
)
op(
    "logcumsumexp",
    torch.logcumsumexp,
    lambda m: [
        s(m(3, 9), 1),
        s(m(5, 3), 0),
        s(
            torch.tensor([-1000.0, 0.0, -math.inf, 5.0, -math.inf], dtype=m.dtype), 0
        ),  # a prefix far below the max
    ],
    FLOAT,
    T.logcumsumexp,
    tol=RED_TOL,
)
op(
    "histc",
    torch.histc,
    lambda m: [
        s(m(40)),
        s(m(3, 20), bins=7, min=-1, max=1),
        s(m.index(8, 50).to(m.dtype), bins=8, min=0, max=7),  # Mixtral's expert counts
        s(torch.full((6,), 2.0, dtype=m.dtype), bins=4),
    ],
    FLOAT,
    T.histc,
)
op(
    "logsumexp",
    torch.logsumexp,
    lambda m: [s(m(3, 4), 1), s(m(3, 4, 2), (0, 2), True)],
    NUM,
    T.logsumexp,
    tol=RED_TOL,
)
op(
    "aminmax",
    torch.aminmax,
    lambda m: [
        s(m(3, 4)),
        s(m(3, 4), dim=1),
        s(m(3, 4), dim=-2, keepdim=True),
        s(m(3, 4), keepdim=True),
        s(m()),
        s(m(), dim=0),
    ],
    ALL,
    T.aminmax,
)
op(
    "nanmean",
    torch.nanmean,
    lambda m: [
        s(with_nans(m, 3, 4)),
        s(with_nans(m, 3, 4), 1),
        s(with_nans(m, 3, 4, 2), (0, 2), True),
        s(m()),
        s(m(3, 4), dtype=f64),
    ],
    FLOAT,
    T.nanmean,
    tol=RED_TOL,
)
# a slice of NaNs only: NaN, as eager. (Its gradient is not compared: eager's is NaN there, the
# 0 * inf of its nansum backward, where the decomposition's ``where`` passes 0.)
op(
    "nanmean",
    torch.nanmean,
    lambda m: [s(torch.tensor([[NAN, NAN], [1.0, NAN]]).to(m.dtype), 1), s(torch.tensor(NAN).to(m.dtype))],
    (f32, bf16),
    variant="all_nan",
)


def _cum_extremum_samples(m):
    ties = [1, 3, 3, 2, 3, NAN, 5, NAN, 1] if m.dtype.is_floating_point else [1, 3, 3, 2, 3, 0, 0, 5, 5]
    return [
        s(m(3, 5), 1),
        s(m(4, 3), 0),
        s(m(2, 7), -1),
        s(m(), 0),
        s(m(3, 0), 1),
        s(torch.tensor([ties, ties[::-1]]).to(m.dtype), 1),
    ]


for _n in ("cummax", "cummin"):
    op(_n, getattr(torch, _n), _cum_extremum_samples, ALL, getattr(T, _n))


def _nan_rows(m):
    return torch.tensor([[1.0, NAN, 2.0, NAN], [3.0, 1.0, 2.0, 0.0], [NAN, 4.0, 0.0, 1.0]]).to(m.dtype)


op(
    "median",
    torch.median,
    lambda m: (
        [
            s(distinct(m, 3, 5)),
            s(distinct(m, 3, 5), 1),
            s(distinct(m, 4, 3), 0, True),
            s(distinct(m, 6)),
            s(distinct(m, 2, 6), -1),
            s(m(5, 4)),  # ties: the value is defined
            s(m(), 0),
        ]
        + (
            [
                s(m(0)),
                s(_nan_rows(m)),
                s(_nan_rows(m), 1),
                s(torch.tensor([[1.0, 2.0, 2.0], [3.0, 2.0, 0.0]]).to(m.dtype)),
            ]
            if m.dtype.is_floating_point
            else []
        )
    ),
    FLOAT + INT,
    T.median,
)
op(
    "kthvalue",
    torch.kthvalue,
    lambda m: (
        [
            s(distinct(m, 3, 5), 2),
            s(distinct(m, 3, 5), 1, 0),
            s(distinct(m, 4, 3), 3, 0, True),
            s(distinct(m, 6), 6),
            s(m(), 1),
        ]
        + ([s(_nan_rows(m), 3, 1), s(_nan_rows(m), 4, -1)] if m.dtype.is_floating_point else [])
    ),
    FLOAT + INT,
    T.kthvalue,
)


def _quantile_samples(m):
    q = torch.tensor([0.0, 0.125, 0.375, 0.5, 0.8, 1.0], dtype=m.dtype)
    out = [
        s(m(7), 0.3),
        s(m(3, 5), q, 1),
        s(m(3, 5), 0.5, 0, True),
        s(m(2, 3, 4), torch.tensor(0.25, dtype=m.dtype), -1),
        s(m(3, 4), q, keepdim=True),
        s(m(), 0.7, 0),
        s(with_nans(m, 3, 5), q, 1),
        s(_nan_rows(m), 0.4),
    ]
    return out + [s(m(3, 5), q, 1, interpolation=i) for i in ("lower", "higher", "midpoint", "nearest")]


op("quantile", torch.quantile, _quantile_samples, (f32, f64), T.quantile)
op(
    "nanquantile",
    torch.nanquantile,
    lambda m: (
        _quantile_samples(m) + [s(torch.tensor([[NAN, NAN, NAN], [1.0, NAN, 2.0]], dtype=m.dtype), 0.5, 1)]
    ),
    (f32, f64),
    T.nanquantile,
)
op(
    "isin",
    torch.isin,
    lambda m: (
        [
            (lambda x: s(x, x.flatten()[::3]))(m(3, 4)),
            s(m(3, 4), m(2, 2)),
            (lambda x: s(x, x[1:], invert=True))(m(5)),
            (lambda x: s(x[2].item(), x))(m(4)),
            s(m(5), m.scalar()),
            s(m(3, 4), m(0)),
            s(m(3, 4), m(5, dtype=f64)),
        ]
        + (
            [s(torch.tensor([NAN, 1.0, 0.0]).to(m.dtype), torch.tensor([NAN, 0.0]).to(m.dtype))]
            if m.dtype.is_floating_point
            else []
        )
    ),
    NUM,
)


def _search_samples(m):
    seq = sorted_(m(6))
    hits = m(7)
    return [
        s(seq, m(3, 4)),
        s(seq, m(3, 4), right=True),
        s(sorted_(hits), hits, side="right"),
        s(sorted_(hits), hits, side="left"),
        s(sorted_(m(3, 6)), m(3, 4)),
        s(seq, m.scalar()),
        s(seq, m(5), out_int32=True),
        (lambda x: s(x, m(5), sorter=x.argsort()))(m(6)),
        s(m(7), m(5)),  # not sorted: eager's binary search decides
        s(m(0), m(3)),
        s(m(1), m(2, 2)),
    ] + (
        [s(torch.tensor([1.0, 2.0, NAN]).to(m.dtype), torch.tensor([1.5, NAN, 3.0]).to(m.dtype))]
        if m.dtype.is_floating_point
        else []
    )


op("searchsorted", torch.searchsorted, _search_samples, NUM)
op(
    "bucketize",
    torch.bucketize,
    lambda m: [
        s(m(3, 4), sorted_(m(5))),
        (lambda x: s(x, sorted_(x.flatten()), right=True))(m(2, 3)),
        (lambda x: s(x, sorted_(x.flatten())))(m(2, 3)),
        s(m.scalar(), sorted_(m(5))),
        s(m(3, 4), sorted_(m(5)), out_int32=True),
        s(m(3), m(0)),
    ],
    NUM,
)
op(
    "linalg_norm",
    torch.linalg.norm,
    lambda m: [
        s(m(3, 4)),
        s(m(5)),
        s(m(2, 3, 4)),
        s(m(3, 4), 1),
        s(m(3, 4), -1),
        s(m(3, 4), math.inf),
        s(m(3, 4), -math.inf),
        s(m(3, 4), "fro"),
        s(m(2, 3, 4), "fro", (0, 2), True),
        s(m(2, 3, 4), 3, -1),
        s(m(2, 3, 4), math.inf, (2, 0)),
        s(m(2, 3, 4), -1, (1, 2), True),
        s(m(3, 4), dim=(1, 0)),
        s(m(5), 0),
        s(m(3, 4), dtype=f64),
        s(m(0, 4), math.inf),
    ],
    FLOAT,
    tol=RED_TOL,
)
op(
    "renorm",
    torch.renorm,
    lambda m: [
        s(m(3, 4), 2, 0, 1.0),
        s(m(3, 4, 2), 1, 1, 2.0),
        s(m(3, 4), 3, -1, 0.5),
        s(m(2, 3), math.inf, 0, 1.0),
        s(m(3, 4), 2, 0, 100.0),
        s(m(3, 4), 2, 1, 0.0),
    ],
    FLOAT,
    T.renorm,
    tol=RED_TOL,
)

# -- nn -------------------------------------------------------------------------------------
NN_TOL = {f32: (1e-4, 1e-4), bf16: (3e-2, 3e-2)}
op(
    "matmul",
    torch.matmul,
    lambda m: [
        s(m(3, 4), m(4, 5)),
        s(m(2, 3, 4), m(4)),
        s(m(4), m(2, 4, 5)),
        s(m(2, 1, 3, 4), m(5, 4, 2)),
        s(m(4), m(4)),
    ],
    FLOAT,
    T.matmul,
    T.__matmul__,
    tol=NN_TOL,
)
op("matmul", T.__rmatmul__, lambda m: [s(m(4, 5), m(3, 4))], FLOAT, variant="rmatmul", tol=NN_TOL)
op(
    "einsum",
    torch.einsum,
    lambda m: [
        s("i,j->ij", m(3), m(4)),
        s("bhqd,bhkd->bhqk", m(2, 3, 4, 5), m(2, 3, 6, 5)),
        s("ij,jk", m(3, 4), m(4, 5)),
        s("ij->", m(3, 4)),
        s("...ij,...jk->...ik", m(2, 3, 4), m(2, 4, 5)),
        s("bij,bjk,bkl->bil", [m(2, 3, 4), m(2, 4, 5), m(2, 5, 6)]),
        s("bn,anm,bm->ba", m(2, 3), m(5, 3, 4), m(2, 4)),
    ],
    FLOAT,
    tol=NN_TOL,
)
op("mm", torch.mm, lambda m: [s(m(3, 4), m(4, 5))], FLOAT, T.mm, tol=NN_TOL)
op("bmm", torch.bmm, lambda m: [s(m(2, 3, 4), m(2, 4, 5))], FLOAT, T.bmm, tol=NN_TOL)
# a mixture of experts' matmul: runs of rows (or of K) ended by ``offs``; sizes keep torch's
# CPU kernel's 16-byte strides
op(
    "grouped_mm",
    torch._grouped_mm,
    lambda m: [
        s(m(7, 8), m(3, 8, 8), offs=torch.tensor([2, 5, 7], dtype=torch.int32)),
        s(m(8, 16), m(4, 16, 8), offs=torch.tensor([0, 3, 3, 8], dtype=torch.int32)),  # empty runs
        s(m(8, 16), m(16, 8), offs=torch.tensor([4, 8, 16], dtype=torch.int32)),
        s(m(3, 5, 8), m(3, 8, 8)),
    ],
    (f32, bf16),
    tol=NN_TOL,
)
op("dot", torch.dot, lambda m: [s(m(4), m(4))], (f32, f64, i64), T.dot, tol=NN_TOL)
op(
    "inner",
    torch.inner,
    lambda m: [s(m(2, 4), m(3, 5, 4)), s(m(4), m(4)), s(m(3), m())],
    (f32, f64),
    T.inner,
    tol=NN_TOL,
)
op(
    "tensordot",
    torch.tensordot,
    lambda m: [
        s(m(2, 3, 4), m(3, 4, 5)),
        s(m(2, 3, 4), m(4, 5), 1),
        s(m(2, 3, 4), m(4, 2, 3), ([0, 2], [1, 0])),
        s(m(3), m(4), 0),
        s(m(2, 3), m(3, 2), dims=([1, 0], [0, 1])),
    ],
    FLOAT,
    tol=NN_TOL,
)
op(
    "cdist",
    torch.cdist,
    lambda m: [
        s(m(4, 3), m(5, 3)),
        s(m(2, 4, 3), m(1, 5, 3), 1.0),
        s(m(4, 3), m(5, 3), 0.0),
        s(m(4, 3), m(5, 3), math.inf),
        s(m(2, 4, 3), m(2, 5, 3), 3.0),
    ],
    (f32, f64),
    tol=NN_TOL,
)
op(
    "cdist",
    torch.cdist,
    lambda m: [(lambda x: s(x, x[[0, 2]].clone()))(m(4, 3))],
    (f32, f64),
    variant="zero_distance",
    tol=NN_TOL,
)
op("outer", torch.outer, lambda m: [s(m(3), m(4))], NUM, T.outer, torch.ger)
op("mv", torch.mv, lambda m: [s(m(3, 4), m(4)), s(m(0, 4), m(4)), s(m(3, 0), m(0))], NUM, T.mv, tol=NN_TOL)


def _nan_input(m, *shape):
    """What beta=0 ignores: NaN where the dtype has it."""
    return torch.full(shape, NAN, dtype=m.dtype) if m.dtype.is_floating_point else m(*shape)


op(
    "addmv",
    torch.addmv,
    lambda m: [
        s(m(3), m(3, 4), m(4)),
        s(m(1), m(3, 4), m(4), beta=pick(m, 0.5, 2), alpha=-2),
        s(m(), m(3, 4), m(4), alpha=3),
        s(_nan_input(m, 3), m(3, 4), m(4), beta=0),
    ],
    NUM,
    T.addmv,
    tol=NN_TOL,
)
op(
    "addr",
    torch.addr,
    lambda m: [
        s(m(3, 4), m(3), m(4)),
        s(m(4), m(3), m(4), beta=pick(m, 0.5, 2), alpha=pick(m, -2, -2, False)),
        s(_nan_input(m, 1, 1), m(3), m(4), beta=pick(m, 0, 0, False)),
        s(m(3, 0), m(3), m(0)),
        s(m(3, 4), m(3, dtype=i64), m(4)),
    ],
    ALL,
    T.addr,
    tol=NN_TOL,
)
op(
    "vdot",
    torch.vdot,
    lambda m: [s(m(4), m(4)), s(m(0), m(0)), s(m(1), m(1))],
    (f32, f64, i64),
    T.vdot,
    tol=NN_TOL,
)
op(
    "kron",
    torch.kron,
    lambda m: [
        s(m(2, 3), m(3, 2)),
        s(m(2, 1, 3), m(4)),
        s(m(3), m(2, 2)),
        s(m(), m(2, 3)),
        s(m(), m()),
        s(m(0, 2), m(2, 3)),
        s(m(2, 2), m(2, dtype=f64)),
    ],
    ALL,
    T.kron,
)
op(
    "addbmm",
    torch.addbmm,
    lambda m: [
        s(m(3, 5), m(2, 3, 4), m(2, 4, 5)),
        s(m(5), m(2, 3, 4), m(2, 4, 5), beta=pick(m, 0.5, 2), alpha=-1),
        s(m(3, 5), m(0, 3, 4), m(0, 4, 5)),
        s(_nan_input(m, 3, 5), m(1, 3, 4), m(1, 4, 5), beta=0),
    ],
    NUM,
    T.addbmm,
    tol={f32: (1e-4, 1e-4), bf16: (6e-2, 6e-2)},
)
op(
    "chain_matmul",
    torch.chain_matmul,
    lambda m: [
        s(m(3, 4), m(4, 5), m(5, 2)),
        s(m(2, 3)),
        s(m(3, 4), m(4, 2)),
        s(m(10, 2), m(2, 8), m(8, 3), m(3, 6)),
        s(m(2, 6), m(6, 3), m(3, 1)),
    ],
    NUM,
    tol=NN_TOL,
)
op(
    "multi_dot",
    torch.linalg.multi_dot,
    lambda m: [
        s([m(3, 4), m(4, 5), m(5, 2)]),
        s([m(4), m(4, 5), m(5)]),
        s([m(4), m(4)]),
        s([m(3, 4), m(4)]),
        s((m(2, 10), m(10, 3), m(3, 8), m(8))),
        s([m(5), m(5, 3), m(3, 2)]),
    ],
    NUM,
    tol=NN_TOL,
)
op(
    "cross",
    torch.cross,
    lambda m: [
        s(m(4, 3), m(4, 3), 1),
        s(m(3, 1, 2), m(3, 4, 2), 0),
        s(m(2, 3, 3), m(2, 3, 3)),  # eager's default: the first dim of size 3
        s(m(1, 3), m(4, 3), dim=-1),
        s(m(3, 3), m(3, 3)),
    ],
    NUM,
    T.cross,
)
op(
    "cross",
    torch.linalg.cross,
    lambda m: [s(m(3, 3), m(3, 3)), s(m(3, 2), m(3, 2), dim=0), s(m(2, 1, 3), m(2, 4, 3))],
    NUM,
    variant="linalg",
)
op(
    "addmm",
    torch.addmm,
    lambda m: [
        s(m(5), m(3, 4), m(4, 5)),
        s(m(3, 5), m(3, 4), m(4, 5), beta=0.5, alpha=2),
        s(m(3, 5), m(3, 4), m(4, 5), beta=0),
    ],
    FLOAT,
    T.addmm,
    tol=NN_TOL,
)
op(
    "baddbmm",
    torch.baddbmm,
    lambda m: [s(m(2, 3, 5), m(2, 3, 4), m(2, 4, 5), alpha=0.5)],
    FLOAT,
    T.baddbmm,
    tol=NN_TOL,
)
op(
    "linear",
    F.linear,
    lambda m: [s(m(2, 3, 4), m(5, 4), m(5)), s(m(2, 4), m(5, 4)), s(m(4), m(3, 4))],
    FLOAT,
    tol=NN_TOL,
)
op(
    "layer_norm",
    F.layer_norm,
    lambda m: [s(m(2, 3, 4), (4,), m(4), m(4)), s(m(2, 3, 4), [3, 4]), s(m(2, 3, 4), (4,), eps=1e-3)],
    FLOAT,
    tol=NN_TOL,
)
op(
    "rms_norm",
    F.rms_norm,
    lambda m: [s(m(2, 3, 4), (4,), m(4)), s(m(2, 3, 4), [3, 4], eps=1e-3)],
    FLOAT,
    tol=NN_TOL,
)
op(
    "group_norm",
    F.group_norm,
    lambda m: [s(m(2, 6, 5), 3, m(6), m(6)), s(m(2, 4, 3, 3), 2)],
    FLOAT,
    tol=NN_TOL,
)
op(
    "batch_norm",
    F.batch_norm,
    lambda m: [
        s(m(4, 3, 5), m(3), m(3, low=0.5, high=2), m(3), m(3)),
        s(m(4, 3), m(3), m(3, low=0.5, high=2)),
        s(m(4, 3, 5, 2), None, None, training=True),
    ],
    FLOAT,
    tol=NN_TOL,
)
op(
    "instance_norm",
    F.instance_norm,
    lambda m: [
        s(m(2, 3, 5)),
        s(m(2, 3, 4, 5), None, None, m(3), m(3), eps=1e-3),
        s(m(2, 3, 4, 5), m(3), m(3, low=0.5, high=2), momentum=0.2),  # running stats updated
        s(m(2, 3, 4), m(3), m(3, low=0.5, high=2), m(3), m(3), use_input_stats=False),
    ],
    FLOAT,
    tol=NN_TOL,
)
op(
    "weight_norm",
    torch._weight_norm,
    lambda m: [
        s(m(4, 3, 5), m(4, 1, 1)),
        s(m(4, 3, 5), m(1, 1, 5), 2),
        s(m(4, 3), m(), -1),
        s(m(4, 3, 5), m(1, 3, 1), 1),
    ],
    FLOAT,
    tol=NN_TOL,
)
op("normalize", F.normalize, lambda m: [s(m(3, 4)), s(m(3, 4, 5), p=1, dim=-1)], FLOAT, tol=NN_TOL)
op(
    "cosine_similarity",
    F.cosine_similarity,
    lambda m: [s(m(3, 4), m(1, 4)), s(m(3, 4), m(3, 4), 0)],
    FLOAT,
    torch.cosine_similarity,
    tol=NN_TOL,
)
op(
    "embedding",
    F.embedding,
    lambda m: [s(m.index(10, 2, 3), m(10, 4)), s(m.index(10, 5), m(10, 4), 0)],
    FLOAT,
)
op(
    "embedding_bag",
    F.embedding_bag,
    lambda m: [
        s(m.index(10, 4, 3), m(10, 3)),
        s(torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), m(10, 3), torch.tensor([0, 3, 3, 6]), mode="sum"),
        s(
            torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]),
            m(10, 3),
            torch.tensor([0, 3, 3, 8]),
            mode="max",
            include_last_offset=True,
        ),
        s(torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), m(10, 3), torch.tensor([0, 2, 5]), padding_idx=4),
        s(
            torch.tensor([1, 2, 4, 5, 4, 3]),
            m(10, 3),
            torch.tensor([0, 2]),
            mode="sum",
            per_sample_weights=m(6),
        ),
        s(m.index(10, 4, 3), m(10, 3), mode="max", padding_idx=-1),
    ],
    FLOAT,
    tol=NN_TOL,
)
op("one_hot", F.one_hot, lambda m: [s(m.index(5, 2, 3), 5), s(m.index(3, 4), num_classes=7)], (f32,))
op(
    "diff",
    torch.diff,
    lambda m: [s(m(5)), s(m(3, 6), 2, 0), s(m(2, 5), prepend=m(2, 1), append=m(2, 2)), s(m(4, 3), dim=-1)],
    ALL,
    T.diff,
)
op(
    "sort",
    torch.sort,
    lambda m: [s(m(3, 5)), s(m(4, 3), 0, True), s(m(6), descending=True, stable=True)],
    (f32, f64, i64),
    T.sort,
)
op("argsort", torch.argsort, lambda m: [s(m(3, 5)), s(m(4, 3), 0, True)], (f32, f64, i64), T.argsort)
op("pixel_shuffle", F.pixel_shuffle, lambda m: [s(m(1, 8, 3, 3), 2), s(m(2, 3, 9, 2, 2), 3)], ALL)
op("pixel_unshuffle", F.pixel_unshuffle, lambda m: [s(m(1, 2, 6, 4), 2), s(m(3, 9, 3), 3)], ALL)
op(
    "conv1d",
    F.conv1d,
    lambda m: [s(m(2, 4, 9), m(6, 4, 3)), s(m(2, 4, 9), m(6, 2, 3), m(6), stride=2, padding=1, groups=2)],
    (f32, f64),
)
op(
    "conv2d",
    F.conv2d,
    lambda m: [
        s(m(2, 3, 8, 8), m(4, 3, 3, 3), m(4)),
        s(m(1, 4, 7, 9), m(4, 1, 3, 3), None, (2, 1), 1, 2, 4),
        s(m(3, 6, 6), m(2, 3, 3, 3), padding="same"),
        s(m(1, 3, 6, 6), m(2, 3, 3, 3), padding="valid"),
    ],
    (f32, f64),
)
op(
    "conv3d",
    F.conv3d,
    lambda m: [s(m(1, 2, 4, 5, 6), m(3, 2, 2, 2, 2), m(3), stride=1, padding=1)],
    (f32, f64),
)
op(
    "max_pool1d",
    F.max_pool1d,
    lambda m: [s(m(2, 3, 9), 3), s(m(2, 3, 9), 2, 2, 1, ceil_mode=True)],
    (f32, f64),
)
op(
    "max_pool2d",
    F.max_pool2d,
    lambda m: [
        s(m(2, 3, 8, 8), 2),
        s(m(1, 2, 7, 9), (3, 2), (2, 1), 1, 2),
        s(m(2, 7, 7), 3, 2, ceil_mode=True),
    ],
    (f32, f64),
    torch.max_pool2d,
)
op("max_pool3d", F.max_pool3d, lambda m: [s(m(1, 2, 4, 6, 6), 2)], (f32, f64))
for _n in (1, 2, 3):
    _shape = (2, 3) + (7,) * _n
    op(
        f"max_pool{_n}d",
        getattr(F, f"max_pool{_n}d"),
        lambda m, sh=_shape: [
            s(m(*sh), 2, return_indices=True),
            s(m(*sh), 3, 2, 1, 2, True, True),  # stride, padding, dilation, ceil_mode
            s(m(*sh[1:]), 3, 1, 1, return_indices=True),
        ],
        (f32, f64),
        getattr(F, f"max_pool{_n}d_with_indices"),
        variant="indices",
    )
    op(
        f"adaptive_max_pool{_n}d",
        getattr(F, f"adaptive_max_pool{_n}d"),
        lambda m, sh=_shape: [s(m(*sh), 3), s(m(*sh), 4, True), s(m(*sh[1:]), 2, return_indices=True)],
        (f32, f64),
        getattr(F, f"adaptive_max_pool{_n}d_with_indices"),
    )
op(
    "max_pool2d",
    F.max_pool2d,
    lambda m: [s(torch.zeros(1, 1, 4, 4, dtype=m.dtype), 2, return_indices=True)],
    (f32,),
    variant="ties",
)
op(
    "avg_pool1d",
    F.avg_pool1d,
    lambda m: [s(m(2, 3, 9), 3), s(m(2, 3, 9), 2, 2, 1, count_include_pad=False)],
    (f32, f64),
)
op(
    "avg_pool2d",
    F.avg_pool2d,
    lambda m: [
        s(m(2, 3, 8, 8), 2),
        s(m(1, 2, 7, 9), 3, 2, 1, ceil_mode=True),
        s(m(1, 2, 6, 6), 2, divisor_override=3),
    ],
    (f32, f64),
)
op("avg_pool3d", F.avg_pool3d, lambda m: [s(m(1, 2, 4, 6, 6), 2)], (f32, f64))
op("adaptive_avg_pool1d", F.adaptive_avg_pool1d, lambda m: [s(m(2, 3, 9), 4)], (f32, f64))
op(
    "adaptive_avg_pool2d",
    F.adaptive_avg_pool2d,
    lambda m: [s(m(2, 3, 9, 7), (3, None)), s(m(3, 8, 8), 1)],
    (f32, f64),
)
op("adaptive_avg_pool3d", F.adaptive_avg_pool3d, lambda m: [s(m(1, 2, 4, 6, 6), (2, 3, 3))], (f32, f64))
for _n in (1, 2, 3):
    _shape = (2, 4) + (3,) * _n
    op(
        f"conv_transpose{_n}d",
        getattr(F, f"conv_transpose{_n}d"),
        lambda m, sh=_shape, n=_n: [
            s(m(*sh), m(4, 3, *(2,) * n), m(3)),
            s(
                m(*sh), m(4, 1, *(3,) * n), None, 2, 1, 1, 2, 2
            ),  # stride, padding, output_padding, groups, dilation
            s(m(*sh[1:]), m(4, 2, *(3,) * n), stride=3, padding=2),
        ],
        (f32, f64),
        tol=NN_TOL,
    )
op(
    "interpolate",
    F.interpolate,
    lambda m: [
        s(m(2, 3, 5), size=7),
        s(m(2, 3, 4, 5), scale_factor=2),
        s(m(1, 2, 5, 3), scale_factor=(1.7, 0.6)),
        s(m(1, 2, 3, 4, 2), size=(4, 2, 5)),
    ],
    FLOAT + (torch.uint8,),
    F.upsample,
)
op(
    "interpolate",
    F.interpolate,
    lambda m: [
        s(m(2, 3, 7), size=4, mode="nearest-exact"),
        s(m(1, 2, 3, 5), scale_factor=2.4, mode="nearest-exact"),
    ],
    FLOAT,
    variant="nearest_exact",
)
op(
    "interpolate",
    F.interpolate,
    lambda m: [
        s(m(2, 3, 5), size=8, mode="linear"),
        s(m(2, 3, 5), scale_factor=0.7, mode="linear", align_corners=True),
        s(m(1, 2, 4, 5), size=(7, 3), mode="bilinear"),
        s(m(1, 2, 4, 5), scale_factor=1.5, mode="bilinear", align_corners=True),
        s(m(1, 2, 3, 4, 2), scale_factor=(2, 1.5, 3), mode="trilinear"),
        s(m(1, 2, 3, 4, 2), size=4, mode="trilinear", align_corners=True, recompute_scale_factor=None),
    ],
    FLOAT,
    variant="linear",
    tol=NN_TOL,
)
op(
    "interpolate",
    F.interpolate,
    lambda m: [
        s(m(1, 2, 4, 5), size=(7, 3), mode="bicubic"),
        s(m(1, 2, 4, 5), scale_factor=1.5, mode="bicubic", align_corners=True),
    ],
    FLOAT,
    variant="bicubic",
    tol=NN_TOL,
)
op(
    "interpolate",
    F.interpolate,
    lambda m: [s(m(1, 2, 4, 5), scale_factor=1.1, mode="bicubic")],
    FLOAT,
    variant="bicubic_fractional_scale",
    tol=NN_TOL,
    numerical_grad=True,  # torch 2.x's CPU bicubic backward with this scale fails gradcheck
)
op(
    "interpolate",
    F.interpolate,
    lambda m: [s(m(2, 3, 7), size=3, mode="area"), s(m(1, 2, 6, 5), scale_factor=0.5, mode="area")],
    FLOAT,
    variant="area",
    tol=NN_TOL,
)


def _grid(m, *shape):
    """Sampling positions in [-1.3, 1.3]: some outside the input, as padding_mode handles."""
    return m(*shape, low=-1.3, high=1.3)


op(
    "grid_sample",
    F.grid_sample,
    lambda m: [
        s(m(2, 3, 5, 6), _grid(m, 2, 4, 7, 2), align_corners=False),
        s(m(2, 3, 5, 6), _grid(m, 2, 4, 7, 2), "bilinear", "border", True),
        s(m(2, 3, 5, 6), _grid(m, 2, 4, 7, 2), "nearest", "reflection", False),
        s(m(2, 3, 5, 6), _grid(m, 2, 4, 7, 2), "bicubic", "reflection", True),
        s(m(2, 3, 5, 6), _grid(m, 2, 4, 7, 2), "bicubic", "zeros", False),
        s(m(1, 2, 4, 5, 3), _grid(m, 1, 3, 2, 4, 3), "bilinear", "reflection", False),
        s(m(1, 2, 4, 5, 3), _grid(m, 1, 3, 2, 4, 3), "nearest", "border", True),
    ],
    # bfloat16: eager rounds every step of its arithmetic; the decomposition computes in
    # float32 and rounds once, which is closer to the exact value but not bitwise eager's
    (f32, f64),
    tol=NN_TOL,
)
op(
    "unfold",
    F.unfold,
    lambda m: [
        s(m(2, 3, 7, 8), 3, padding=1),
        s(m(2, 3, 7, 8), (2, 3), (2, 1), (1, 0), (2, 1)),
        s(m(3, 5, 5), 2),
    ],
    FLOAT,
)
op(
    "fold",
    F.fold,
    lambda m: [
        s(m(2, 27, 56), (7, 8), 3, padding=1),
        s(m(2, 18, 24), (7, 8), (2, 3), (2, 1), (1, 0), (2, 1)),
        s(m(12, 16), 5, 2),
    ],
    FLOAT,
    tol=NN_TOL,
)


def _rnn_params(
    m, gates: int, inp: int, hidden: int, layers: int, dirs: int, bias: bool = True, proj: int = 0
):
    """torch's flat parameter list: per layer and direction w_ih, w_hh, (b_ih, b_hh), (w_hr)."""
    out, h_out = [], proj or hidden
    for layer in range(layers):
        width = inp if layer == 0 else h_out * dirs
        for _ in range(dirs):
            out += [
                m(gates * hidden, width, low=-0.5, high=0.5),
                m(gates * hidden, h_out, low=-0.5, high=0.5),
            ]
            if bias:
                out += [m(gates * hidden, low=-0.5, high=0.5), m(gates * hidden, low=-0.5, high=0.5)]
            if proj:
                out.append(m(proj, hidden, low=-0.5, high=0.5))
    return out


RNN_TOL = {f32: (1e-4, 1e-4), bf16: (5e-2, 5e-2)}
op(
    "lstm",
    torch.lstm,
    lambda m: [
        s(
            m(3, 2, 4),
            (m(1, 2, 5), m(1, 2, 5)),
            _rnn_params(m, 4, 4, 5, 1, 1),
            True,
            1,
            0.0,
            False,
            False,
            False,
        ),
        # two layers, bidirectional, batch first, no biases
        s(
            m(2, 3, 4),
            (m(4, 2, 5), m(4, 2, 5)),
            _rnn_params(m, 4, 4, 5, 2, 2, False),
            False,
            2,
            0.0,
            False,
            True,
            True,
        ),
        # projections (proj_size=3)
        s(
            m(3, 2, 4),
            (m(2, 2, 3), m(2, 2, 5)),
            _rnn_params(m, 4, 4, 5, 1, 2, proj=3),
            True,
            1,
            0.0,
            False,
            True,
            False,
        ),
    ],
    FLOAT,
    tol=RNN_TOL,
)
for _name, _gates in (("gru", 3), ("rnn_tanh", 1), ("rnn_relu", 1)):
    op(
        _name,
        getattr(torch, _name),
        lambda m, g=_gates: [
            s(m(3, 2, 4), m(1, 2, 5), _rnn_params(m, g, 4, 5, 1, 1), True, 1, 0.0, False, False, False),
            s(m(2, 3, 4), m(4, 2, 5), _rnn_params(m, g, 4, 5, 2, 2), True, 2, 0.0, False, True, True),
        ],
        FLOAT,
        tol=RNN_TOL,
    )


def _sdpa(m):
    q, k, v = m(2, 4, 5, 8), m(2, 4, 6, 8), m(2, 4, 6, 8)
    mask = torch.rand(5, 6) > 0.3
    mask[2] = False  # a fully masked row gives zeros
    return [
        s(q, k, v),
        s(q, k, v, attn_mask=mask),
        s(q, k, v, attn_mask=m(2, 1, 5, 6), scale=0.3),
        s(q, k, v, is_causal=True),
        s(q, k[:, :2], v[:, :2], is_causal=True, enable_gqa=True),
    ]


op("scaled_dot_product_attention", F.scaled_dot_product_attention, _sdpa, FLOAT, tol=NN_TOL)


def _dropout_check(out, sample) -> bool:
    x, p = sample.args[0], sample.args[1] if len(sample.args) > 1 else 0.5
    kept = out != 0
    return bool(torch.allclose(out[kept].double(), x[kept].double() / (1 - p), rtol=1e-2, atol=1e-3))


op("dropout", F.dropout, lambda m: [s(m(3, 4), training=False), s(m(3, 4), 0.0), s(m(3, 4), 1.0)], FLOAT)
op(
    "dropout",
    F.dropout,
    lambda m: [s(m(30, 40), 0.3)],
    FLOAT,
    values=False,
    check=_dropout_check,
    variant="random",
)
op("dropout", torch.dropout, lambda m: [s(m(3, 4), 0.5, False)], FLOAT, variant="torch")


def _channels_check(batched: bool):
    """Channel-wise dropout: each channel all zeros or all scaled by 1/(1-p)."""

    def check(out, sample) -> bool:
        x, p = sample.args[0], sample.args[1]
        lead = 2 if batched else 1
        for o, i in zip(
            out.reshape(*out.shape[:lead], -1).flatten(0, lead - 1),
            x.reshape(*x.shape[:lead], -1).flatten(0, lead - 1),
        ):
            if not (
                bool((o == 0).all()) or torch.allclose(o.double(), i.double() / (1 - p), rtol=1e-2, atol=1e-3)
            ):
                return False
        return True

    return check


for _n in (1, 2, 3):
    _fn = getattr(F, f"dropout{_n}d")
    _shape = (2, 3) + (4,) * _n
    op(f"dropout{_n}d", _fn, lambda m, sh=_shape: [s(m(*sh), training=False), s(m(*sh), 0.0)], FLOAT)
    op(
        f"dropout{_n}d",
        _fn,
        lambda m, sh=_shape, n=_n: [s(m(*sh), 0.4)] + ([s(m(*sh[1:]), 0.4)] if n != 2 else []),
        FLOAT,
        values=False,
        check=_channels_check(True),
        variant="random",
    )
op(
    "dropout1d",
    F.dropout1d,
    lambda m: [s(m(6, 20), 0.5)],
    (f32,),
    values=False,
    check=_channels_check(False),
    variant="unbatched",
)
op(
    "feature_dropout",
    torch.feature_dropout,
    lambda m: [s(m(4, 5, 6), 0.3, True)],
    FLOAT,
    values=False,
    check=_channels_check(True),
)
op("feature_dropout", torch.feature_dropout, lambda m: [s(m(4, 5, 6), 0.3, False)], FLOAT, variant="eval")

_SELU_ALPHA_SCALE = 1.7580993408473766


def _alpha_check(channel: bool):
    """Alpha dropout: kept elements map to a * x + a * alpha * p, dropped ones to a * alpha * (p - 1)."""

    def check(out, sample) -> bool:
        x, p = sample.args[0], sample.args[1]
        a = 1.0 / math.sqrt((_SELU_ALPHA_SCALE**2 * p + 1) * (1 - p))
        kept = torch.isclose(out.double(), a * x.double() + a * _SELU_ALPHA_SCALE * p, rtol=2e-2, atol=2e-2)
        dropped = torch.isclose(
            out.double(),
            torch.tensor(a * _SELU_ALPHA_SCALE * (p - 1), dtype=torch.float64),
            rtol=2e-2,
            atol=2e-2,
        )
        if channel:  # a whole channel is kept or dropped
            kept, dropped = kept.flatten(2).all(-1), dropped.flatten(2).all(-1)
        return bool((kept | dropped).all()) and bool(kept.any()) and bool(dropped.any())

    return check


op(
    "alpha_dropout",
    F.alpha_dropout,
    lambda m: [s(m(3, 4), 0.3, False), s(m(3, 4)), s(m(3, 4), 0.0, True)],
    FLOAT,
    torch.alpha_dropout,
)
op(
    "alpha_dropout",
    F.alpha_dropout,
    lambda m: [s(m(30, 40), 0.3, True)],
    FLOAT,
    values=False,
    check=_alpha_check(False),
    variant="random",
)
op(
    "feature_alpha_dropout",
    F.feature_alpha_dropout,
    lambda m: [s(m(3, 4, 5), 0.5, False)],
    FLOAT,
    torch.feature_alpha_dropout,
)
op(
    "feature_alpha_dropout",
    F.feature_alpha_dropout,
    lambda m: [s(m(8, 6, 5), 0.4, True)],
    FLOAT,
    values=False,
    check=_alpha_check(True),
    variant="random",
)


def LOSS(m):
    return [s(m(3, 4), m(3, 4)), s(m(3, 4), m(3, 4), reduction="none"), s(m(3, 4), m(3, 4), reduction="sum")]


op(
    "mse_loss",
    F.mse_loss,
    lambda m: LOSS(m) + [s(m(3, 4), m(3, 4), weight=m(3, 4, low=0, high=1))],
    FLOAT,
    tol=NN_TOL,
)
op("l1_loss", F.l1_loss, lambda m: LOSS(m) + [s(m(3, 4), m(3, 4), size_average=False)], FLOAT, tol=NN_TOL)
op("smooth_l1_loss", F.smooth_l1_loss, lambda m: LOSS(m) + [s(m(3, 4), m(3, 4), beta=0.5)], FLOAT, tol=NN_TOL)
op("huber_loss", F.huber_loss, lambda m: LOSS(m) + [s(m(3, 4), m(3, 4), delta=0.7)], FLOAT, tol=NN_TOL)
PROB = dict(low=0.01, high=0.99)
op(
    "binary_cross_entropy",
    F.binary_cross_entropy,
    lambda m: [
        s(m(3, 4, **PROB), m(3, 4, **PROB)),
        s(m(3, 4, **PROB), m(3, 4, **PROB), m(4, **PROB), reduction="sum"),
    ],
    (f32, f64),
    tol=NN_TOL,
)
op(
    "binary_cross_entropy_with_logits",
    F.binary_cross_entropy_with_logits,
    lambda m: [
        s(m(3, 4), m(3, 4, **PROB)),
        s(m(3, 4), m(3, 4, **PROB), m(3, 4), reduction="sum", pos_weight=m(4, **PROB)),
    ],
    FLOAT,
    tol=NN_TOL,
)
op(
    "kl_div",
    F.kl_div,
    lambda m: [
        s(m(3, 4, low=-3, high=0), m(3, 4, **PROB), reduction="batchmean"),
        s(m(3, 4, low=-3, high=0), m(3, 4, low=-3, high=0), log_target=True, reduction="none"),
    ],
    FLOAT,
    tol=NN_TOL,
)


def _targets(m, n=4, c=7, *extra):
    t = m.index(c, n, *extra)
    t[1] = -100  # an ignored target
    return t


op(
    "nll_loss",
    F.nll_loss,
    lambda m: [
        s(m(4, 7), _targets(m)),
        s(m(4, 7), _targets(m), m(7, low=0.1, high=1), reduction="sum"),
        s(m(4, 7, 3), _targets(m, 4, 7, 3), m(7, low=0.1, high=1)),
        s(m(7), torch.tensor(2), reduction="none"),
    ],
    FLOAT,
    tol=NN_TOL,
)
op(
    "cross_entropy",
    F.cross_entropy,
    lambda m: [
        s(m(4, 7), _targets(m)),
        s(m(4, 7), _targets(m), reduction="none"),
        s(m(4, 7, 3), _targets(m, 4, 7, 3), m(7, low=0.1, high=1)),
        s(m(4, 7), _targets(m), label_smoothing=0.1),
        s(m(4, 7), _targets(m), m(7, low=0.1, high=1), label_smoothing=0.2),
        s(m(4, 7), _targets(m), reduction="sum", label_smoothing=0.2),
        s(m(4, 7), torch.softmax(m(4, 7, dtype=f32), 1).to(m.dtype)),
        s(
            m(4, 7),
            torch.softmax(m(4, 7, dtype=f32), 1).to(m.dtype),
            m(7),
            label_smoothing=0.1,
            reduction="none",
        ),
        s(m(7), torch.tensor(3)),
    ],
    FLOAT,
    tol=NN_TOL,
)
op(
    "pad",
    F.pad,
    lambda m: [
        s(m(2, 3, 4), (1, 2)),
        s(m(2, 3, 4), (1, 0, -1, 2), value=3.5),
        s(m(2, 3, 4), (2, 1, 1, 2), mode="replicate"),
        s(m(2, 3, 4), (2, 3), mode="reflect"),
        s(m(1, 3, 4), (2, 3, 1, 1), mode="circular"),
    ],
    FLOAT,
)
op(
    "prelu",
    F.prelu,
    lambda m: [s(m(2, 3, 4), m(3)), s(m(2, 3), m(1)), s(m(5), m(1)), s(m(2, 3, 4, 2), m(3))],
    FLOAT,
    torch.prelu,
)
op("glu", F.glu, lambda m: [s(m(3, 4)), s(m(4, 3), 0)], FLOAT, tol=NN_TOL)

# -- factories ------------------------------------------------------------------------------
EXACT = {f32: (1e-6, 1e-6)}
op(
    "arange",
    torch.arange,
    lambda m: [
        s(5),
        s(1, 10, 3),
        s(0, 1, 0.1),
        s(10, 0, -2.5),
        s(0, 0.3, 0.1),
        s(5, dtype=m.dtype),
        s(3, device="cpu"),
    ],
    (f32, i64),
    tol=EXACT,
)
op(
    "linspace",
    torch.linspace,
    lambda m: [
        s(0, 1, 7, dtype=m.dtype),
        s(-3, 5.5, 10, dtype=m.dtype),
        s(2, 3, 1),
        s(torch.tensor(-2.5), torch.tensor(4.0), 6, dtype=m.dtype),  # ends read in the program
        s(torch.tensor(1), 9.5, 5, dtype=m.dtype),
    ],
    (f32, f64, i64, i32),
)


def _SIZES(m):
    return [
        s(2, 3, dtype=m.dtype),
        s((2, 3), dtype=m.dtype),
        s([4]),
        s(torch.Size([2, 1]), dtype=m.dtype),
        s(size=(1, 2), dtype=m.dtype),
    ]


op("zeros", torch.zeros, _SIZES, ALL)
op("ones", torch.ones, _SIZES, ALL)
op("empty", torch.empty, _SIZES, ALL, values=False)
op("full", torch.full, lambda m: [s((2, 3), m.scalar()), s([2], 1.5, dtype=m.dtype), s((2,), True)], ALL)
op("zeros_like", torch.zeros_like, lambda m: [s(m(3, 4)), s(m(3, 4), dtype=f64)], ALL)
op("ones_like", torch.ones_like, lambda m: [s(m(3, 4)), s(m(3, 4), dtype=i32)], ALL)
op("empty_like", torch.empty_like, lambda m: [s(m(3, 4))], ALL, values=False)
op("full_like", torch.full_like, lambda m: [s(m(3, 4), m.scalar()), s(m(3, 4), 7, dtype=f64)], ALL)
op("new_zeros", T.new_zeros, lambda m: [s(m(3, 4), (2, 2)), s(m(3, 4), 2, 3, dtype=i32)], ALL)
op("new_ones", T.new_ones, lambda m: [s(m(3, 4), (2, 2)), s(m(3, 4), size=(3,))], ALL)
op("new_empty", T.new_empty, lambda m: [s(m(3, 4), (2, 2))], ALL, values=False)
op("new_full", T.new_full, lambda m: [s(m(3, 4), (2, 2), m.scalar())], ALL)
op("fill", torch.fill, lambda m: [s(m(3, 4), m.scalar()), s(m(3, 4), torch.tensor(1, dtype=m.dtype))], ALL)
op("eye", torch.eye, lambda m: [s(3, dtype=m.dtype), s(2, 4, dtype=m.dtype)], ALL)
op(
    "tensor",
    torch.tensor,
    lambda m: [
        s([[1, 2], [3, 4]]),
        s(2.5),
        s([1, 2.5, True]),
        s([True, False]),
        s([1, 2], dtype=m.dtype),
        s([]),
    ],
    (f32, i64),
)
op("as_tensor", torch.as_tensor, lambda m: [s([1, 2]), s(m(3, 4), dtype=f64), s(m(3, 4))], (f32, i64))
op(
    "new_tensor",
    T.new_tensor,
    lambda m: [
        s(m(2), [1, 2.5, -3.7]),
        s(m(2), [[1, 2], [3, 4]]),
        s(m(2), 2),
        s(m(2), [True, False]),
        s(m(2), [1.5, 2], dtype=i32),
        s(m(2), []),
    ],
    ALL,
)
op("tril", torch.tril, lambda m: [s(m(2, 4, 5)), s(m(3, 3), -1), s(m(3, 5), 2)], ALL, T.tril)
op("triu", torch.triu, lambda m: [s(m(2, 4, 5)), s(m(3, 3), 1), s(m(5, 3), -2)], ALL, T.triu)
op(
    "masked_fill",
    torch.masked_fill,
    lambda m: [
        s(m(3, 4), m(3, 4, dtype=b8), m.scalar()),
        s(m(3, 4), m(4, dtype=b8), 2.7),
        s(m(3, 4), m(3, 4, dtype=b8), torch.tensor(9.0)),
        # the mask broadcasts the input too (Falcon's ALiBi scores)
        s(m(2, 4, 1, 6), m(2, 1, 6, 6, dtype=b8), -1.5),
    ],
    ALL,
    T.masked_fill,
)
op(
    "masked_fill",
    T.masked_fill,
    lambda m: [s(m(3, 4), m(3, 4, dtype=b8), float("-inf"))],
    FLOAT,
    variant="inf",
)


def _rand_check(low, high):
    return lambda out, sample: bool(((out >= low) & (out < high)).all())


op(
    "rand",
    torch.rand,
    lambda m: [s(2, 3, dtype=m.dtype), s((40, 50)), s(size=(20, 3))],
    FLOAT,
    values=False,
    check=_rand_check(0, 1),
)
op(
    "randn",
    torch.randn,
    lambda m: [s(200, 50, dtype=m.dtype)],
    (f32, f64),
    values=False,
    check=lambda out, sample: (
        abs(out.double().mean().item()) < 0.05 and abs(out.double().std().item() - 1) < 0.05
    ),
)
op("rand_like", torch.rand_like, lambda m: [s(m(30, 40))], FLOAT, values=False, check=_rand_check(0, 1))
op("randn_like", torch.randn_like, lambda m: [s(m(30, 40)), s(m(2), dtype=f64)], FLOAT, values=False)
op(
    "randint",
    torch.randint,
    lambda m: [s(0, 5, (30, 40)), s(7, (3,), dtype=m.dtype)],
    (i64, i32),
    values=False,
    check=_rand_check(0, 7),
)

# -- out-of-place writes --------------------------------------------------------------------


def _setitem(a, key, value):
    a = a.clone()
    a[key] = value
    return a


def _copy(dst, src):
    return dst.clone().copy_(src)


def _copy_to(dst, src):
    # called directly (no torch function maps to it), so outside the acquisition mode's reach
    with torch._C.DisableTorchFunction():
        return ltorch.copy_to(dst, src)


op(
    "copy_to",
    _copy_to,
    lambda m: [s(m(3, 4), m(4, dtype=f64)), s(m(3, 4), m.scalar()), s(m(2), m(1, dtype=i32))],
    ALL,
    ref=_copy,
)
op("copy_to", _copy_to, lambda m: [s(m(3, 4), m(3, 4))], ALL, ref=_copy, variant="noop", noop=True)


def _write_through_detach(base, value):
    # called directly, as _copy_to (frontends record it for a write into ``y.detach()``)
    with torch._C.DisableTorchFunction():
        return ltorch.write_through_detach(base, value)


def _straight_through(base, value):
    """Eager's value and gradient for it: the values written, the gradient passing to ``base``."""
    return base + (value.expand_as(base) - base).detach()


op(
    "write_through_detach",
    _write_through_detach,
    lambda m: [s(m(3, 4), m(3, 4)), s(m(2, 3), m(3))],
    FLOAT,
    ref=_straight_through,
    rule_only_grad=True,
)
op(
    "setitem",
    _setitem,
    lambda m: [
        s(m(4, 5, 6), 0, m(5, 6)),
        s(m(4, 5, 6), -1, m.scalar()),
        s(m(4, 5, 6), (slice(1, 3),), m(2, 5, 6)),
        s(m(4, 5, 6), (slice(None), 2), m(6)),
        s(m(4, 5, 6), (Ellipsis, 1), m(4, 5)),
        s(m(4, 5, 6), (slice(None, None, 2), slice(1, 5, 3), 0), m(2, 2)),
        s(m(4, 5, 6), (None, 1), m(1, 5, 6)),
        s(m(4, 5, 6), Ellipsis, m(6)),
        s(m(4, 5, 6), (m.index(4, 3),), m(3, 5, 6)),
        s(m(4, 5, 6), (slice(None), torch.tensor([0, 3, -1])), m(4, 3, 6)),
        s(m(4, 5, 6), (1, slice(None), torch.tensor([[0, 1], [2, 3]])), m(5, 2, 2)),
        s(m(3, 4), m(3, 4, dtype=b8), m.scalar()),
        s(m(3, 4), m(3, dtype=b8), m(4)),
        s(m(4, 5, 6), 2, m(1, 1, 6, dtype=f64)),
        s(m(4, 5, 6), (torch.tensor([0, 2]), torch.tensor([1, -1])), m(2, 6)),
        s(m(4, 5, 6), (torch.tensor([0, 2]), slice(None), torch.tensor([[1], [5]])), m(2, 2, 5)),
        s(m(4, 5, 6), (slice(None), torch.tensor([0, -1]), torch.tensor([[1], [2]])), m.scalar()),
        s(m(4, 5, 6), (1, torch.tensor([0, 4]), torch.tensor([2, 3])), m(2)),
        s(m(4, 5, 6), (None, torch.tensor([0, 2]), slice(1, 3)), m(1, 2, 2, 6)),
        s(m(4, 5, 6), (Ellipsis, [-2], slice(None)), m(4, 1, 6)),
        s(m(4, 5, 6), ([0, 2], slice(None), [True, False, False, False, False, True]), m.scalar()),
    ],
    ALL,
)
op(
    "setitem",
    _setitem,
    lambda m: [s(m(4, 5, 6), (slice(2, 2),), m.scalar())],
    ALL,
    variant="noop",
    noop=True,
)

# -- backward ops (called by VJP rules only), against aten's backward kernels ---------------
A = torch.ops.aten


def _direct(sym):
    """Call a thunder op no torch callable maps to (as the grad pass does)."""

    def call(*args, **kwargs):
        with torch._C.DisableTorchFunction():
            return sym(*args, **kwargs)

    call.__name__ = sym.name
    return call


op(
    "threshold_backward",
    _direct(ltorch.threshold_backward),
    lambda m: [s(m(3, 4), m(3, 4), 0), s(m(3, 4), m(3, 4), 0.5)],
    ref=A.threshold_backward.default,
)
op(
    "gelu_backward",
    _direct(ltorch.gelu_backward),
    lambda m: [s(m(3, 4), m(3, 4)), s(m(3, 4), m(3, 4), approximate="tanh")],
    ref=A.gelu_backward.default,
    tol=NN_TOL,
)
op(
    "silu_backward",
    _direct(ltorch.silu_backward),
    lambda m: [s(m(3, 4), m(3, 4))],
    ref=A.silu_backward.default,
    tol=NN_TOL,
)

op(
    "hardsigmoid_backward",
    _direct(ltorch.hardsigmoid_backward),
    lambda m: [s(m(3, 4), m(3, 4, low=-5, high=5)), s(m(4), torch.tensor([-3, -1, 3, 4], dtype=m.dtype))],
    ref=A.hardsigmoid_backward.default,
)
op(
    "hardswish_backward",
    _direct(ltorch.hardswish_backward),
    lambda m: [s(m(3, 4), m(3, 4, low=-5, high=5)), s(m(4), torch.tensor([-3, -1, 3, 4], dtype=m.dtype))],
    ref=A.hardswish_backward.default,
    tol=NN_TOL,
)


def _softmax_like(fn):
    def gen(m):
        x = m(3, 4, 2)
        return [s(m(3, 4, 2), fn(x, 1), 1, m.dtype), s(m(3, 4), fn(m(3, 4), -1), -1, m.dtype)]

    return gen


op(
    "softmax_backward",
    _direct(ltorch.softmax_backward),
    _softmax_like(torch.softmax),
    ref=A._softmax_backward_data.default,
    tol=NN_TOL,
)
op(
    "log_softmax_backward",
    _direct(ltorch.log_softmax_backward),
    _softmax_like(torch.log_softmax),
    ref=A._log_softmax_backward_data.default,
    tol=NN_TOL,
)


def _layer_norm_backward(m):
    out = []
    for shape, ns in (((2, 3, 4), (4,)), ((2, 3, 4), (3, 4))):
        x, w, b = m(*shape), m(*ns), m(*ns)
        _, mean, rstd = A.native_layer_norm.default(x, list(ns), w, b, 1e-5)
        out.append(s(m(*shape), x, ns, mean, rstd, w, b, (True, True, True)))
    return out


op(
    "layer_norm_backward",
    _direct(ltorch.layer_norm_backward),
    _layer_norm_backward,
    (f32, f64),
    ref=A.native_layer_norm_backward.default,
    tol=NN_TOL,
)
op(
    "embedding_backward",
    _direct(ltorch.embedding_backward),
    lambda m: [
        s(m(2, 3, 4), m.index(10, 2, 3), 10, -1, False),
        s(m(5, 4), torch.tensor([1, 2, 1, 0, 1]), 10, 1, True),
    ],
    ref=A.embedding_dense_backward.default,
    tol=NN_TOL,
)
op(
    "slice_backward",
    _direct(ltorch.slice_backward),
    lambda m: [s(m(2, 3), (5, 3), 0, 1, 5, 2), s(m(4, 2), (4, 6), 1, 1, 3, 1)],
    ref=A.slice_backward.default,
)


def _batched_matmul(a, b):
    batch = math.prod(a.shape[:-2])
    return torch.matmul(a, b), a.reshape(batch, *a.shape[-2:]), b.reshape(batch, *b.shape[-2:])


op(
    "batched_matmul",
    _direct(ltorch.batched_matmul),
    lambda m: [
        s(m(2, 3, 4, 5), m(2, 3, 5, 6)),
        s(m(2, 5, 3, 4).transpose(1, 2), m(2, 3, 4, 6)),  # heads split off: batch dims that do not merge
        s(m(2, 1, 3, 4, 5), m(2, 1, 3, 5, 2).transpose(-2, -1).contiguous().transpose(-2, -1)),
    ],
    FLOAT,
    ref=_batched_matmul,
    tol=NN_TOL,
)
op(
    "native_layer_norm",
    _direct(ltorch.native_layer_norm),
    lambda m: [s(m(2, 3, 4), (4,), m(4), m(4), 1e-5), s(m(2, 3, 4), (3, 4), None, None, 1e-3)],
    (f32, f64),
    ref=A.native_layer_norm.default,
    tol=NN_TOL,
)

# -- more elementwise math and small compositions (thunder/ops/ltorch/special.py) -----------
op("deg2rad", torch.deg2rad, unary(), (f32, f64, i64), T.deg2rad)
op("rad2deg", torch.rad2deg, unary(), (f32, f64, i64), T.rad2deg)
op(
    "sinc",
    torch.sinc,
    lambda m: unary()(m) + [s(torch.tensor([0.0, 1.0, -2.0, 0.5], dtype=m.dtype))],
    (f32, f64),
    T.sinc,
)
op(
    "isposinf",
    torch.isposinf,
    lambda m: [s(torch.tensor([math.inf, -math.inf, NAN, 1.0], dtype=m.dtype)), s(m(3, 4))],
    (f32, f64),
    T.isposinf,
)
op(
    "isneginf",
    torch.isneginf,
    lambda m: [s(torch.tensor([math.inf, -math.inf, NAN, 1.0], dtype=m.dtype)), s(m(3, 4))],
    (f32, f64),
    T.isneginf,
)
op("isreal", torch.isreal, unary(), NUM, T.isreal)
op(
    "fmax",
    torch.fmax,
    lambda m: [s(with_nans(m, 3, 4), m(3, 4)), s(m(3, 4), with_nans(m, 4))],
    (f32, f64),
    T.fmax,
)
op(
    "fmin",
    torch.fmin,
    lambda m: [s(with_nans(m, 3, 4), m(3, 4)), s(m(3, 4), with_nans(m, 4))],
    (f32, f64),
    T.fmin,
)
# eager's gradient of ldexp is 0 where an integer exponent is negative (2 ** -1 taken as an integer)
op(
    "ldexp",
    torch.ldexp,
    lambda m: [s(m(3, 4), m(3, 4, dtype=i64, low=-3, high=3)), s(m(3, 4), m(4))],
    (f32, f64),
    numerical_grad=True,
)
op("angle", torch.angle, lambda m: [s(with_nans(m, 3, 4)), s(m(5))], (f32, f64), T.angle)
op(
    "polygamma",
    torch.polygamma,
    lambda m: [s(1, m(3, 4, **POS)), s(2, m(4, **POS))],
    (f32, f64),
    torch.special.polygamma,
)
op(
    "mvlgamma",
    torch.mvlgamma,
    lambda m: [s(m(3, 4, low=2.0, high=5.0), 1), s(m(3, 4, low=2.0, high=5.0), p=3)],
    (f32, f64),
    T.mvlgamma,
)
op(
    "special_entr",
    torch.special.entr,
    lambda m: [s(m(3, 4, **POS)), s(torch.tensor([0.0, -1.0, 2.0, NAN], dtype=m.dtype))],
    (f32, f64),
)
op(
    "special_xlog1py",
    torch.special.xlog1py,
    lambda m: [
        s(m(3, 4), m(3, 4, low=-0.9)),
        s(torch.tensor([0.0, 0.0, 1.5], dtype=m.dtype), torch.tensor([2.0, NAN, 1.0], dtype=m.dtype)),
    ],
    (f32, f64),
)
op("special_ndtr", torch.special.ndtr, unary(), (f32, f64))
op("special_log_ndtr", torch.special.log_ndtr, unary(), (f32, f64))
op(
    "bitwise_left_shift",
    torch.bitwise_left_shift,
    lambda m: [s(m(3, 4), m(3, 4, low=0, high=4)), s(m(3, 4), 2)],
    INT,
    T.__lshift__,
)
op(
    "bitwise_right_shift",
    torch.bitwise_right_shift,
    lambda m: [s(m(3, 4), m(3, 4, low=0, high=4)), s(m(3, 4), 1)],
    INT,
    T.__rshift__,
)
op(
    "bernoulli",
    torch.bernoulli,
    lambda m: [s(m(3, 4, low=0, high=1)), s(m(50), 0.3)],
    (f32, f64),
    values=False,
    check=lambda out, sample: bool(((out == 0) | (out == 1)).all()),
)
op("diagflat", torch.diagflat, lambda m: [s(m(2, 3)), s(m(4), 1), s(m(3), -2)], NUM, T.diagflat)
op(
    "dist",
    torch.dist,
    lambda m: [s(m(3, 4), m(3, 4)), s(m(3, 4), m(4), 3), s(m(5), m(5), 1)],
    (f32, f64),
    T.dist,
)
op(
    "trapezoid",
    torch.trapezoid,
    lambda m: [s(m(3, 4)), s(m(3, 4), dx=0.5, dim=0), s(m(3, 4), m(4)), s(m(3, 4), m(3, 4), dim=0)],
    (f32, f64),
)
op("trapz", torch.trapz, lambda m: [s(m(3, 4)), s(m(3, 4), m(4))], (f32, f64))
op(
    "cumulative_trapezoid",
    torch.cumulative_trapezoid,
    lambda m: [s(m(3, 4)), s(m(3, 4), dx=0.5, dim=0), s(m(3, 4), m(4))],
    (f32, f64),
)


# -- margin, ranking and distance losses (thunder/ops/ltorch/margins.py) ---------------------
def _signs(m: Maker, *shape) -> torch.Tensor:
    return (torch.randint(0, 2, shape, device=m.device) * 2 - 1).to(m.dtype)


op(
    "margin_ranking_loss",
    F.margin_ranking_loss,
    lambda m: [
        s(m(6), m(6), _signs(m, 6)),
        s(m(3, 4), m(3, 4), _signs(m, 3, 4), margin=0.5, reduction="none"),
    ],
)
op(
    "hinge_embedding_loss",
    F.hinge_embedding_loss,
    lambda m: [s(m(3, 4), _signs(m, 3, 4)), s(m(5), _signs(m, 5), margin=2.0, reduction="sum")],
)
op(
    "soft_margin_loss",
    F.soft_margin_loss,
    lambda m: [s(m(3, 4), _signs(m, 3, 4)), s(m(5), _signs(m, 5), reduction="none")],
)
op(
    "multilabel_soft_margin_loss",
    F.multilabel_soft_margin_loss,
    lambda m: [
        s(m(3, 4), m(3, 4, low=0, high=1)),
        s(m(3, 4), m(3, 4, low=0, high=1), weight=m(4), reduction="none"),
    ],
)
op(
    "multi_margin_loss",
    F.multi_margin_loss,
    lambda m: [
        s(m(4, 5), m.index(5, 4)),
        s(m(4, 5), m.index(5, 4), p=2, margin=0.5, weight=m(5, low=0.1, high=1), reduction="sum"),
        s(m(5), m.index(5, 1), reduction="none"),
        s(m(5), torch.tensor(3, device=m.device)),
    ],
    (f32, f64),
)
op(
    "multilabel_margin_loss",
    F.multilabel_margin_loss,
    lambda m: [
        s(m(3, 4), torch.tensor([[3, 0, -1, 1], [0, 1, 2, 3], [-1, 2, 0, 1]], device=m.device)),
        s(m(4), torch.tensor([1, 2, -1, 0], device=m.device), reduction="none"),
    ],
    (f32, f64),
)
op(
    "cosine_embedding_loss",
    F.cosine_embedding_loss,
    lambda m: [
        s(m(3, 4), m(3, 4), _signs(m, 3)),
        s(m(3, 4), m(3, 4), _signs(m, 3), margin=0.2, reduction="none"),
    ],
)
op(
    "pairwise_distance",
    F.pairwise_distance,
    lambda m: [s(m(3, 4), m(3, 4)), s(m(3, 4), m(4), 1.0, keepdim=True), s(m(2, 3), m(2, 3), 3)],
    FLOAT,
    torch.pairwise_distance,
)
op("pdist", F.pdist, lambda m: [s(m(4, 3)), s(m(5, 2), 1.0), s(m(3, 3), 3.0)], (f32, f64), torch.pdist)
op(
    "triplet_margin_loss",
    F.triplet_margin_loss,
    lambda m: [
        s(m(3, 4), m(3, 4), m(3, 4)),
        s(m(3, 4), m(3, 4), m(3, 4), margin=0.5, p=1, swap=True, reduction="none"),
    ],
)
op(
    "poisson_nll_loss",
    F.poisson_nll_loss,
    lambda m: [
        s(m(3, 4), m(3, 4, low=0, high=4)),
        s(m(3, 4, **POS), m(3, 4, low=0, high=4), log_input=False, full=True, reduction="sum"),
    ],
)
op(
    "gaussian_nll_loss",
    F.gaussian_nll_loss,
    lambda m: [
        s(m(3, 4), m(3, 4), m(3, 4, low=0.1, high=2)),
        s(m(3, 4), m(3, 4), m(3, low=0.1, high=2), full=True, reduction="sum"),
        s(m(3, 4), m(3, 4), m(3, 1, low=0.001, high=0.02), eps=0.01, reduction="none"),
    ],
)


# -- unpooling and more nn.functional layers (thunder/ops/ltorch/unpool.py, layers.py) -------
def _unpool_sample(m: Maker, n: int, shape, kernel, **kw):
    """A max pooling's output and indices (distinct values, so no index is written twice)."""
    x = distinct(m, *shape)
    pooled, idx = getattr(F, f"max_pool{n}d")(x.to(f64), kernel, return_indices=True, **kw)
    return s(pooled.to(m.dtype), idx, kernel, **kw)


op(
    "max_unpool1d",
    F.max_unpool1d,
    lambda m: [_unpool_sample(m, 1, (2, 3, 8), 2), _unpool_sample(m, 1, (3, 9), 3, stride=2, padding=1)],
)
op(
    "max_unpool2d",
    F.max_unpool2d,
    lambda m: [_unpool_sample(m, 2, (2, 3, 4, 6), 2), _unpool_sample(m, 2, (1, 5, 5), (2, 3), stride=1)],
)
op("max_unpool3d", F.max_unpool3d, lambda m: [_unpool_sample(m, 3, (1, 2, 4, 4, 4), 2)])
op(
    "bilinear",
    F.bilinear,
    lambda m: [s(m(3, 4), m(3, 5), m(2, 4, 5), m(2)), s(m(2, 3, 4), m(2, 3, 5), m(6, 4, 5))],
    FLOAT,
    torch.bilinear,
    tol={f32: (1e-4, 1e-4), bf16: (5e-2, 5e-2)},
)
op(
    "rrelu",
    F.rrelu,
    lambda m: [s(m(3, 4)), s(m(3, 4), 0.1, 0.3)],
    FLOAT,
    torch.rrelu,
)
op(
    "rrelu",
    F.rrelu,
    lambda m: [s(m(3, 4), training=True)],
    FLOAT,
    values=False,
    check=lambda out, sample: bool(
        (
            (out == sample.args[0])
            | ((out / sample.args[0] >= 1 / 8 - 1e-3) & (out / sample.args[0] <= 1 / 3 + 1e-3))
        ).all()
    ),
    variant="training",
)
op(
    "local_response_norm",
    F.local_response_norm,
    lambda m: [s(m(2, 5, 7), 3), s(m(2, 6, 3, 4), 2, alpha=0.1, beta=0.5, k=2.0), s(m(1, 4, 2, 2, 3), 4)],
    (f32, f64),
)


# -- the _foreach_* ops of optimizers (thunder/ops/ltorch/foreach.py) -------------------------
def _tensor_list(m: Maker, **kw) -> list:
    return [m(3, **kw), m(2, 4, **kw), m(**kw)]


for _n in "add sub mul div maximum minimum pow".split():
    op(
        f"foreach_{_n}",
        getattr(torch, f"_foreach_{_n}"),
        (
            lambda name: (
                lambda m: (
                    [
                        s(_tensor_list(m, **POS), _tensor_list(m, **POS)),
                        s(_tensor_list(m, **POS), 1.5),
                        s(_tensor_list(m, **POS), [0.5, 2.0, 1.5]),
                    ]
                    + ([s(_tensor_list(m), _tensor_list(m), alpha=2)] if name in ("add", "sub") else [])
                )
            )
        )(_n),
        (f32, f64),
    )
for _n in "clamp_min clamp_max".split():
    op(
        f"foreach_{_n}",
        getattr(torch, f"_foreach_{_n}"),
        lambda m: [s(_tensor_list(m), 0.5), s(_tensor_list(m), [0.1, -0.2, 0.3])],
        (f32, f64),
    )
for _n in "sqrt neg abs exp reciprocal sign".split():
    op(f"foreach_{_n}", getattr(torch, f"_foreach_{_n}"), lambda m: [s(_tensor_list(m, **POS))], (f32, f64))
op(
    "foreach_lerp",
    torch._foreach_lerp,
    lambda m: [
        s(_tensor_list(m), _tensor_list(m), 0.3),
        s(_tensor_list(m), _tensor_list(m), _tensor_list(m, low=0, high=1)),
    ],
    (f32, f64),
)


def _each(fn):
    """``fn`` over each tensor, the reference where eager's own foreach backward fails (its
    ``_foreach_addcdiv`` gradient of a 0-dim tensor raises an IndexError)."""

    def ref(a, b, c, value=1):
        values = value if isinstance(value, list) else [value] * len(a)
        return tuple(fn(x, y, z, value=v) for x, y, z, v in zip(a, b, c, values))

    return ref


for _n in "addcmul addcdiv".split():
    op(
        f"foreach_{_n}",
        getattr(torch, f"_foreach_{_n}"),
        lambda m: [
            s(_tensor_list(m), _tensor_list(m), _tensor_list(m, **POS)),
            s(_tensor_list(m), _tensor_list(m), _tensor_list(m, **POS), value=0.5),
            s(_tensor_list(m), _tensor_list(m), _tensor_list(m, **POS), [0.1, -0.2, 0.3]),
        ],
        (f32, f64),
        ref=_each(getattr(torch, _n)),
    )


# -- slice writes, logspace, covariance (thunder/ops/ltorch/statistics.py) --------------------
op(
    "select_scatter",
    torch.select_scatter,
    lambda m: [s(m(3, 4), m(4), 0, 1), s(m(2, 3, 4), m(2, 4), 1, -1)],
    NUM,
)
op(
    "slice_scatter",
    torch.slice_scatter,
    lambda m: [s(m(5, 4), m(2, 4), 0, 1, 3), s(m(3, 6), m(3, 3), 1, 0, None, 2), s(m(4, 3), m(4, 3))],
    NUM,
)
op(
    "logspace",
    lambda start, end, steps, **kw: torch.logspace(start, end, steps, **kw),
    lambda m: [
        s(0.0, 2.0, 5, dtype=m.dtype),
        s(-1.0, 1.5, 4, base=2.0, dtype=m.dtype),
        s(1.0, 2.0, 1, dtype=m.dtype),
    ],
    (f32, f64),
)
op(
    "cov",
    torch.cov,
    lambda m: [
        s(m(3, 5)),
        s(m(4), correction=0),
        s(m(2, 4), fweights=torch.tensor([1, 2, 1, 3], device=m.device)),
        s(m(2, 4), aweights=m(4, low=0.5, high=1.5), correction=0),
    ],
    (f32, f64),
    T.cov,
)
op("corrcoef", torch.corrcoef, lambda m: [s(m(3, 5)), s(m(6))], (f32, f64), T.corrcoef)


# -- put, index_reduce (thunder/ops/ltorch/indexed.py) --------------------------------------
op(
    "put",
    torch.put,
    lambda m: [
        s(m(3, 4), torch.tensor([0, 5, -1], device=m.device), m(3)),
        s(m(3, 4), torch.tensor([[1, 1], [2, -12]], device=m.device), m(2, 2), True),
    ],
    NUM,
    T.put,
)
op(
    "index_reduce",
    torch.index_reduce,
    lambda m: (
        [
            s(m(5, 3), 0, torch.tensor([0, 2, 0, 4], device=m.device), m(4, 3), r, include_self=inc)
            for r, inc in (("prod", True), ("mean", False), ("amax", True), ("amin", False))
        ]
        + [s(m(2, 6), 1, torch.tensor([5, 1], device=m.device), m(2, 2), "mean")]
    ),
    (f32, f64),
    T.index_reduce,
)
