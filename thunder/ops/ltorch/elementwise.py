"""Elementwise torch-language ops: math, comparisons, activations, ``where``, casts."""

from __future__ import annotations

import math
from numbers import Number

import torch
import torch.nn.functional as F

from thunder.core.symbol import Symbol
from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import alias, first_is_tensor, resolve_path, torchsymbol
from thunder.ops.meta import LOW_PRECISION_DTYPES, ShapeError, dtype_of, is_tensor, result_dtype
from thunder.ops.prims.elementwise import ELEMENTWISE

T = torch.Tensor


# -- unary: the op is the prim -------------------------------------------------------------
def _torch_unary(prim: Symbol, *more_torch_fns) -> Symbol:
    """``ltorch.<name>``: the prim of the same name, for the torch callable the prim declares
    (``torch.<name>``), and ``Tensor.<name>`` where there is one."""
    name, path = prim.name, ELEMENTWISE[prim].torch

    def op(a):
        return prim(a)

    op.__name__ = name
    op.__doc__ = path
    fns = [resolve_path(path)]
    if hasattr(T, name):
        fns.append(getattr(T, name))
    return torchsymbol(*fns, *more_torch_fns, torch_impl=path, tags=(Tag.ELEMENTWISE,))(op)


abs = _torch_unary(prims.abs, T.__abs__)
neg = _torch_unary(prims.neg, T.__neg__, torch.negative, T.negative)
exp = _torch_unary(prims.exp)
exp2 = _torch_unary(prims.exp2)
expm1 = _torch_unary(prims.expm1)
log = _torch_unary(prims.log)
log1p = _torch_unary(prims.log1p)
log2 = _torch_unary(prims.log2)
log10 = _torch_unary(prims.log10)
sin = _torch_unary(prims.sin)
cos = _torch_unary(prims.cos)
tan = _torch_unary(prims.tan)
asin = _torch_unary(prims.asin)
acos = _torch_unary(prims.acos)
atan = _torch_unary(prims.atan)
sinh = _torch_unary(prims.sinh)
cosh = _torch_unary(prims.cosh)
tanh = _torch_unary(prims.tanh, F.tanh)
asinh = _torch_unary(prims.asinh)
acosh = _torch_unary(prims.acosh)
atanh = _torch_unary(prims.atanh)
sqrt = _torch_unary(prims.sqrt)
rsqrt = _torch_unary(prims.rsqrt)
reciprocal = _torch_unary(prims.reciprocal)
sigmoid = _torch_unary(prims.sigmoid, torch.special.expit, F.sigmoid)
erf = _torch_unary(prims.erf)
erfc = _torch_unary(prims.erfc)
erfinv = _torch_unary(prims.erfinv)
lgamma = _torch_unary(prims.lgamma)
digamma = _torch_unary(prims.digamma)
floor = _torch_unary(prims.floor)
ceil = _torch_unary(prims.ceil)
trunc = _torch_unary(prims.trunc)
sign = _torch_unary(prims.sign)
signbit = _torch_unary(prims.signbit)
isnan = _torch_unary(prims.isnan)
isinf = _torch_unary(prims.isinf)
isfinite = _torch_unary(prims.isfinite)
bitwise_not = _torch_unary(prims.bitwise_not, T.__invert__)
logical_not = _torch_unary(prims.logical_not)


@torchsymbol(torch.round, T.round, torch_impl="torch.round", tags=(Tag.ELEMENTWISE,))
def round(a, *, decimals: int = 0):
    if decimals == 0:
        return prims.round(a)
    scale = 10.0**decimals
    return prims.div(prims.round(prims.mul(a, scale)), scale)


# -- binary ---------------------------------------------------------------------------------
def _binary(prim: Symbol, *more_torch_fns) -> Symbol:
    """``ltorch.<name>``: the prim of the same name, for ``torch.<name>`` and ``Tensor.<name>``."""
    name = prim.name

    def op(a, b):
        return prim(a, b)

    op.__name__ = name
    op.__doc__ = f"torch.{name}"
    fns = [getattr(torch, name)] + ([getattr(T, name)] if hasattr(T, name) else []) + list(more_torch_fns)
    return torchsymbol(
        *fns,
        torch_impl=f"torch.{name}",
        impl_check=first_is_tensor,
        tags=(Tag.ELEMENTWISE,),
        number_operands=(0, 1),
    )(op)


mul = _binary(prims.mul, torch.multiply, T.multiply, T.__mul__)
eq = _binary(prims.eq, T.__eq__)
ne = _binary(prims.ne, T.__ne__, torch.not_equal)
lt = _binary(prims.lt, T.__lt__, torch.less)
le = _binary(prims.le, T.__le__, torch.less_equal)
gt = _binary(prims.gt, T.__gt__, torch.greater)
ge = _binary(prims.ge, T.__ge__, torch.greater_equal)
maximum = _binary(prims.maximum)
minimum = _binary(prims.minimum)
atan2 = _binary(prims.atan2, torch.arctan2)
hypot = _binary(prims.hypot)
fmod = _binary(prims.fmod)
remainder = _binary(prims.remainder, T.__mod__)
copysign = _binary(prims.copysign)
bitwise_and = _binary(prims.bitwise_and, T.__and__)
bitwise_or = _binary(prims.bitwise_or, T.__or__)
bitwise_xor = _binary(prims.bitwise_xor, T.__xor__)
logical_and = _binary(prims.logical_and)
logical_or = _binary(prims.logical_or)
logical_xor = _binary(prims.logical_xor)
floor_divide = _binary(prims.floor_divide, T.__floordiv__)


@torchsymbol(
    torch.add,
    T.add,
    T.__add__,
    T.__radd__,
    torch_impl="torch.add",
    impl_check=first_is_tensor,
    tags=(Tag.ELEMENTWISE,),
    number_operands=(0, 1, "alpha"),
)
def add(a, b, *, alpha: Number | None = None):
    if alpha is not None and alpha != 1:
        b = prims.mul(b, alpha)
    return prims.add(a, b)


@torchsymbol(
    torch.sub,
    T.sub,
    T.__sub__,
    torch.subtract,
    torch_impl="torch.sub",
    impl_check=first_is_tensor,
    tags=(Tag.ELEMENTWISE,),
    number_operands=(0, 1, "alpha"),
)
def sub(a, b, *, alpha: Number | None = None):
    if alpha is not None and alpha != 1:
        b = prims.mul(b, alpha)
    return prims.sub(a, b)


@torchsymbol(torch.rsub, torch_impl="torch.rsub", tags=(Tag.ELEMENTWISE,), number_operands=(0, 1, "alpha"))
def rsub(a, b, *, alpha: Number | None = None):
    if alpha is not None and alpha != 1:
        a = prims.mul(a, alpha)
    return prims.sub(b, a)


alias(lambda a, b: rsub(a, b), T.__rsub__)


@torchsymbol(
    torch.div,
    T.div,
    T.__truediv__,
    torch.true_divide,
    T.true_divide,
    torch.divide,
    torch_impl="torch.div",
    impl_check=first_is_tensor,
    tags=(Tag.ELEMENTWISE,),
    number_operands=(0, 1),
)
def div(a, b, *, rounding_mode: str | None = None):
    if rounding_mode is None:
        return prims.div(a, b)
    if rounding_mode == "trunc":
        return prims.trunc(prims.div(a, b)) if _is_float(a, b) else _int_div_trunc(a, b)
    if rounding_mode == "floor":
        return prims.floor_divide(a, b)
    raise ValueError(f"torch.div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")


def _is_float(*xs) -> bool:
    return any((is_tensor(x) and dtype_of(x).is_floating_point) or isinstance(x, float) for x in xs)


def _int_div_trunc(a, b):
    q = prims.div(a, b)
    return prims.convert_element_type(prims.trunc(q), dtype_of(a) if is_tensor(a) else dtype_of(b))


alias(lambda a, b: div(b, a), T.__rtruediv__)
alias(lambda a, b: floor_divide(b, a), T.__rfloordiv__)
alias(lambda a, b: mul(b, a), T.__rmul__)
alias(lambda a, b: remainder(b, a), T.__rmod__)
alias(lambda a, b: bitwise_and(b, a), T.__rand__)
alias(lambda a, b: bitwise_or(b, a), T.__ror__)
alias(lambda a, b: bitwise_xor(b, a), T.__rxor__)


@torchsymbol(
    torch.pow, T.pow, T.__pow__, torch_impl="torch.pow", impl_check=first_is_tensor, tags=(Tag.ELEMENTWISE,)
)
def pow(a, b):
    return prims.pow(a, b)


alias(lambda a, b: pow(b, a), T.__rpow__)


@torchsymbol(torch.square, T.square, torch_impl="torch.square", tags=(Tag.ELEMENTWISE,))
def square(a):
    return prims.mul(a, a)


@torchsymbol(torch.clamp, T.clamp, torch.clip, T.clip, torch_impl="torch.clamp", tags=(Tag.ELEMENTWISE,))
def clamp(a, min=None, max=None):
    if min is None and max is None:
        raise ShapeError("torch.clamp: at least one of min and max must be given")
    if min is not None:
        a = prims.where(prims.lt(a, min), min, a) if is_tensor(min) else prims.maximum(a, min)
    if max is not None:
        a = prims.where(prims.gt(a, max), max, a) if is_tensor(max) else prims.minimum(a, max)
    return a


@torchsymbol(torch.clamp_min, T.clamp_min, torch_impl="torch.clamp_min", tags=(Tag.ELEMENTWISE,))
def clamp_min(a, min):
    return clamp(a, min, None)


@torchsymbol(torch.clamp_max, T.clamp_max, torch_impl="torch.clamp_max", tags=(Tag.ELEMENTWISE,))
def clamp_max(a, max):
    return clamp(a, None, max)


@torchsymbol(torch.where, torch_impl="torch.where", tags=(Tag.ELEMENTWISE,))
def where(condition, input=None, other=None):
    if input is None or other is None:
        raise ShapeError("torch.where(condition) returns data-dependent indices and cannot be traced")
    return prims.where(condition, input, other)


# ``x.where(condition, y)`` is ``torch.where(condition, x, y)``: the tensor is the input, not the condition
alias(lambda a, condition, other: where(condition, a, other), T.where)


@torchsymbol(torch.lerp, T.lerp, torch_impl="torch.lerp", tags=(Tag.ELEMENTWISE,))
def lerp(start, end, weight):
    return prims.add(start, prims.mul(weight, prims.sub(end, start)))


@torchsymbol(
    torch.addcmul, T.addcmul, torch_impl="torch.addcmul", tags=(Tag.ELEMENTWISE,), number_operands=("value",)
)
def addcmul(a, t1, t2, *, value=1):
    return prims.add(
        a, prims.mul(prims.mul(t1, t2), value) if is_tensor(value) or value != 1 else prims.mul(t1, t2)
    )


@torchsymbol(
    torch.addcdiv, T.addcdiv, torch_impl="torch.addcdiv", tags=(Tag.ELEMENTWISE,), number_operands=("value",)
)
def addcdiv(a, t1, t2, *, value=1):
    return prims.add(
        a, prims.mul(prims.div(t1, t2), value) if is_tensor(value) or value != 1 else prims.div(t1, t2)
    )


@torchsymbol(torch.isclose, T.isclose, torch_impl="torch.isclose", tags=(Tag.ELEMENTWISE,))
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    close = prims.le(prims.abs(prims.sub(a, b)), prims.add(prims.mul(prims.abs(b), rtol), atol))
    close = prims.logical_or(close, prims.eq(a, b))
    if equal_nan:
        close = prims.logical_or(close, prims.logical_and(prims.isnan(a), prims.isnan(b)))
    return close


# -- activations ----------------------------------------------------------------------------
@torchsymbol(torch.relu, T.relu, F.relu, torch_impl="torch.relu", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def relu(a, inplace: bool = False):
    return prims.where(prims.le(a, 0), 0, a)  # (NaN stays NaN, as in eager)


@torchsymbol(F.relu6, torch_impl="torch.nn.functional.relu6", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def relu6(a, inplace: bool = False):
    return prims.minimum(prims.maximum(a, 0), 6)


@torchsymbol(
    F.leaky_relu, torch_impl="torch.nn.functional.leaky_relu", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION)
)
def leaky_relu(a, negative_slope: float = 0.01, inplace: bool = False):
    return prims.where(prims.gt(a, 0), a, prims.mul(a, negative_slope))


@torchsymbol(F.gelu, torch_impl="torch.nn.functional.gelu", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def gelu(a, approximate: str = "none"):
    if approximate == "none":
        return prims.mul(prims.mul(a, 0.5), prims.add(prims.erf(prims.mul(a, 1 / math.sqrt(2))), 1))
    if approximate == "tanh":
        inner = prims.mul(
            prims.add(a, prims.mul(prims.mul(prims.mul(a, a), a), 0.044715)), math.sqrt(2 / math.pi)
        )
        return prims.mul(prims.mul(a, 0.5), prims.add(prims.tanh(inner), 1))
    raise ValueError(f"F.gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


@torchsymbol(F.silu, torch_impl="torch.nn.functional.silu", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def silu(a, inplace: bool = False):
    return prims.mul(a, prims.sigmoid(a))


@torchsymbol(F.mish, torch_impl="torch.nn.functional.mish", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def mish(a, inplace: bool = False):
    return prims.mul(a, prims.tanh(softplus(a)))


@torchsymbol(F.softplus, torch_impl="torch.nn.functional.softplus", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def softplus(a, beta: float = 1.0, threshold: float = 20.0):
    scaled = prims.mul(a, beta) if beta != 1 else a
    soft = prims.log1p(prims.exp(scaled))
    if beta != 1:
        soft = prims.div(soft, beta)
    return prims.where(prims.gt(scaled, threshold), a, soft)


@torchsymbol(F.elu, torch_impl="torch.nn.functional.elu", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def elu(a, alpha: float = 1.0, inplace: bool = False):
    return prims.where(prims.gt(a, 0), a, prims.mul(prims.expm1(a), alpha))


@torchsymbol(F.hardtanh, torch_impl="torch.nn.functional.hardtanh", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def hardtanh(a, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    return prims.minimum(prims.maximum(a, min_val), max_val)


@torchsymbol(
    F.logsigmoid, torch_impl="torch.nn.functional.logsigmoid", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION)
)
def logsigmoid(a):
    return prims.neg(softplus(prims.neg(a)))


# -- more activations and elementwise helpers ----------------------------------------------
@torchsymbol(
    F.hardsigmoid, torch_impl="torch.nn.functional.hardsigmoid", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION)
)
def hardsigmoid(a, inplace: bool = False):
    return prims.div(prims.minimum(prims.maximum(prims.add(a, 3), 0), 6), 6)


@torchsymbol(F.hardswish, torch_impl="torch.nn.functional.hardswish", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def hardswish(a, inplace: bool = False):
    return prims.mul(a, prims.div(prims.minimum(prims.maximum(prims.add(a, 3), 0), 6), 6))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@torchsymbol(F.selu, torch.selu, torch_impl="torch.selu", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def selu(a, inplace: bool = False):
    neg = prims.mul(prims.expm1(a), _SELU_ALPHA)
    return prims.mul(prims.where(prims.gt(a, 0), a, neg), _SELU_SCALE)


@torchsymbol(F.celu, torch.celu, torch_impl="torch.celu", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def celu(a, alpha: float = 1.0, inplace: bool = False):
    neg = prims.mul(prims.expm1(prims.div(a, alpha)), alpha)
    return prims.where(prims.gt(a, 0), a, neg)


@torchsymbol(F.softsign, torch_impl="torch.nn.functional.softsign", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def softsign(a):
    return prims.div(a, prims.add(prims.abs(a), 1))


@torchsymbol(
    F.tanhshrink, torch_impl="torch.nn.functional.tanhshrink", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION)
)
def tanhshrink(a):
    return prims.sub(a, prims.tanh(a))


@torchsymbol(
    F.hardshrink, torch.hardshrink, T.hardshrink, torch_impl="torch.hardshrink", tags=(Tag.ELEMENTWISE,)
)
def hardshrink(a, lambd: float = 0.5):
    # 0 where ``|a| <= lambd``: NaN compares false and stays NaN, as in eager
    return prims.where(prims.le(prims.abs(a), lambd), 0, a)


@torchsymbol(F.softshrink, torch_impl="torch.nn.functional.softshrink", tags=(Tag.ELEMENTWISE,))
def softshrink(a, lambd: float = 0.5):
    shrunk = prims.sub(a, prims.mul(prims.sign(a), lambd))
    return prims.where(prims.le(prims.abs(a), lambd), 0, shrunk)


@torchsymbol(
    F.threshold, torch.threshold, torch_impl="torch.threshold", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION)
)
def threshold(a, threshold: float, value: float, inplace: bool = False):
    # ``value`` where ``a <= threshold``: NaN compares false and stays NaN, as in eager
    return prims.where(prims.le(a, threshold), value, a)


@torchsymbol(torch.frac, T.frac, torch_impl="torch.frac", tags=(Tag.ELEMENTWISE,))
def frac(a):
    return prims.sub(a, prims.trunc(a))


@torchsymbol(torch.nan_to_num, T.nan_to_num, torch_impl="torch.nan_to_num", tags=(Tag.ELEMENTWISE,))
def nan_to_num(a, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None):
    dt = dtype_of(a)
    if not dt.is_floating_point:
        return prims.clone(a)
    info = torch.finfo(dt)
    a = prims.where(prims.isnan(a), nan, a)
    a = prims.where(prims.eq(a, math.inf), info.max if posinf is None else posinf, a)
    return prims.where(prims.eq(a, -math.inf), info.min if neginf is None else neginf, a)


@torchsymbol(torch.logit, T.logit, torch.special.logit, torch_impl="torch.logit", tags=(Tag.ELEMENTWISE,))
def logit(a, eps: float | None = None):
    if eps is not None:
        a = prims.minimum(prims.maximum(a, eps), 1 - eps)
    return prims.log(prims.div(a, prims.sub(1, a)))


@torchsymbol(
    torch.xlogy,
    T.xlogy,
    torch.special.xlogy,
    torch_impl="torch.xlogy",
    impl_check=first_is_tensor,
    tags=(Tag.ELEMENTWISE,),
)
def xlogy(a, b):
    """a * log(b), 0 where a is 0 (unless b is nan)."""
    if not is_tensor(a):
        raise ShapeError(f"torch.xlogy: the first argument must be a tensor here, got {type(a).__name__}")
    if not is_tensor(b):
        log_b = math.log(b) if b > 0 else -math.inf if b == 0 else math.nan
        return prims.where(prims.eq(a, 0), 0, prims.mul(a, log_b))
    out = prims.where(prims.eq(a, 0), 0, prims.mul(a, prims.log(b)))
    return prims.where(prims.isnan(b), b, out)


def logaddexp_core(a, b):
    """log(exp(a) + exp(b)) as max + log1p(exp(-|a - b|)); equal arguments (infinities
    included) give a + log(2) without forming inf - inf, so no nan reaches a gradient."""
    same = prims.eq(a, b)
    d = prims.where(same, 0.0, prims.sub(a, b))
    return prims.add(prims.maximum(a, b), prims.log1p(prims.exp(prims.neg(prims.abs(d)))))


def _log2addexp2_core(a, b):
    same = prims.eq(a, b)
    d = prims.where(same, 0.0, prims.sub(a, b))
    return prims.add(
        prims.maximum(a, b), prims.div(prims.log1p(prims.exp2(prims.neg(prims.abs(d)))), math.log(2))
    )


def _upcast_binary(core, a, b):
    """``core`` computed in float32 for bfloat16/float16 operands, rounded once."""
    dt = result_dtype(a, b)
    if dt in LOW_PRECISION_DTYPES:
        a, b = (prims.convert_element_type(x, torch.float32) if is_tensor(x) else x for x in (a, b))
        return prims.convert_element_type(core(a, b), dt)
    if not (dt.is_floating_point or dt.is_complex):
        a, b = (
            prims.convert_element_type(x, torch.get_default_dtype()) if is_tensor(x) else float(x)
            for x in (a, b)
        )
    return core(a, b)


@torchsymbol(torch.logaddexp, T.logaddexp, torch_impl="torch.logaddexp", tags=(Tag.ELEMENTWISE,))
def logaddexp(a, b):
    return _upcast_binary(logaddexp_core, a, b)


@torchsymbol(torch.logaddexp2, T.logaddexp2, torch_impl="torch.logaddexp2", tags=(Tag.ELEMENTWISE,))
def logaddexp2(a, b):
    return _upcast_binary(_log2addexp2_core, a, b)


# -- signs, steps, powers in float64 ----------------------------------------------------------
@torchsymbol(torch.sgn, T.sgn, torch_impl="torch.sgn", tags=(Tag.ELEMENTWISE,))
def sgn(a):
    """The sign of a real input (``x / |x|`` of a complex one is not supported)."""
    if is_tensor(a) and dtype_of(a).is_complex:
        raise ShapeError(f"torch.sgn: complex inputs are not supported, got {dtype_of(a)}")
    return prims.sign(a)


@torchsymbol(torch.heaviside, T.heaviside, torch_impl="torch.heaviside", tags=(Tag.ELEMENTWISE,))
def heaviside(input, values):
    """0 below zero, 1 above, ``values`` at zero (NaN gives 0, as torch's ``x > 0``)."""
    op = "torch.heaviside"
    if not is_tensor(values):
        raise ShapeError(f"{op}: values must be a tensor, got {type(values).__name__}")
    dt = dtype_of(input)
    if dtype_of(values) is not dt:
        raise ShapeError(
            f"{op}: input ({dt}) and values ({dtype_of(values)}) must have one dtype (as in torch)"
        )
    if dt.is_complex:
        raise ShapeError(f"{op}: complex inputs are not supported, got {dt}")
    return prims.where(prims.eq(input, 0), values, prims.convert_element_type(prims.gt(input, 0), dt))


@torchsymbol(torch.float_power, T.float_power, torch_impl="torch.float_power", tags=(Tag.ELEMENTWISE,))
def float_power(a, b):
    """``a ** b`` computed and returned in float64 (complex128 for a complex operand)."""
    cplx = any((is_tensor(x) and dtype_of(x).is_complex) or isinstance(x, complex) for x in (a, b))
    dt = torch.complex128 if cplx else torch.float64

    def cast(x):
        if is_tensor(x):
            return x if dtype_of(x) is dt else prims.convert_element_type(x, dt)
        return complex(x) if cplx else float(x)

    return prims.pow(cast(a), cast(b))


# -- greatest common divisor, least common multiple -------------------------------------------
def _euclid_steps(dt: torch.dtype) -> int:
    """Enough steps of Euclid's algorithm for any two values of ``dt``: consecutive Fibonacci
    numbers take the most (Lamé), one step per Fibonacci number up to the largest value; two
    more for the signed minimum, whose magnitude does not fit until its first remainder."""
    top, (x, y), steps = torch.iinfo(dt).max, (1, 2), 1
    while y <= top:
        x, y, steps = y, x + y, steps + 1
    return steps + 2


def _gcd(a, b):
    """torch's loop ``while a != 0: a, b = b % a, a`` on the magnitudes (``%`` truncating, as
    C's), unrolled to the bound for the dtype; a finished lane keeps ``b`` (b % 1 is 0)."""
    dt = result_dtype(a, b)
    a, b = (prims.abs(x if dtype_of(x) is dt else prims.convert_element_type(x, dt)) for x in (a, b))
    for _ in range(_euclid_steps(dt)):
        running = prims.ne(a, 0)
        a, b = prims.fmod(b, prims.where(running, a, 1)), prims.where(running, a, b)
    return b


def _check_integers(op: str, *tensors) -> None:
    for x in tensors:
        if not is_tensor(x):
            raise ShapeError(f"{op}: expected tensors, got {type(x).__name__}")
        dt = dtype_of(x)
        if dt is torch.bool or dt.is_floating_point or dt.is_complex:
            raise ShapeError(f"{op}: expected integer tensors, got {dt}")


@torchsymbol(torch.gcd, T.gcd, torch_impl="torch.gcd", tags=(Tag.ELEMENTWISE,))
def gcd(a, b):
    _check_integers("torch.gcd", a, b)
    return _gcd(a, b)


@torchsymbol(torch.lcm, T.lcm, torch_impl="torch.lcm", tags=(Tag.ELEMENTWISE,))
def lcm(a, b):
    """``|a / gcd * b|``, 0 where the gcd is 0; as in torch's kernel (C++), the product and its
    magnitude of a narrower type than int32 are taken in int32, then wrapped to the dtype."""
    _check_integers("torch.lcm", a, b)
    g = _gcd(a, b)
    dt = dtype_of(g)
    zero = prims.eq(g, 0)
    q = prims.floor_divide(a, prims.where(zero, 1, g))  # exact: g divides a
    if dt.itemsize < 4:
        q, b = prims.convert_element_type(q, torch.int32), prims.convert_element_type(b, torch.int32)
    out = prims.abs(prims.mul(q, b))
    return prims.where(zero, 0, out if dtype_of(out) is dt else prims.convert_element_type(out, dt))
