"""Elementwise primitives: unary and binary ops (which broadcast and promote like torch, so
a decomposition needs no explicit casts), ``where``, ``clamp``, and the conversions of dtype
and device."""

from __future__ import annotations

import dataclasses
import enum

import torch

from thunder.core.proxies import TensorProxy
from thunder.core.symbol import Symbol, SymbolTable
from thunder.core.tags import Tag
from thunder.ops.meta import (
    ShapeError,
    broadcast_shapes,
    common_device,
    dtype_of,
    is_number,
    is_tensor,
    new_tensor,
    result_dtype,
    shape_of,
)
from thunder.ops.prims.declare import _prim


class Rule(enum.Enum):
    """The result dtype of an elementwise prim."""

    SAME = "same"  # the (promoted) input dtype
    FLOAT = "float"  # integers and bools compute in the default float dtype
    BOOL = "bool"  # a predicate
    REAL = "real"  # the real part's dtype of a complex input


@dataclasses.dataclass(frozen=True)
class Elementwise:
    """What the executors that run an elementwise prim need to know of it, declared with it
    (``ELEMENTWISE``), so that none of them lists the prims again or assumes a name:

    - ``torch``: the torch callable computing it, by its path (``torch.<name>`` by default);
    - ``nvfuser``: nvFuser's op (its own name by default: ``clone`` is nvFuser's ``set``);
    - ``number_second``: (binary) the torch callable takes a Python number as its second
      operand (``torch.add(t, 2)``); else it takes tensors only (``torch.maximum``);
    - ``keeps_integers``: integer inputs come back unchanged (``floor`` of an int tensor);
    - ``on_truth_values``: it computes on its operands' truth values (``logical_and``).
    """

    rule: Rule
    torch: str
    nvfuser: str
    number_second: bool = True
    keeps_integers: bool = False
    on_truth_values: bool = False


ELEMENTWISE = SymbolTable(
    "elementwise prims' declarations", hint="declare it in thunder/ops/prims/elementwise.py"
)


def _declare(sym: Symbol, rule: Rule, torch_path: str | None, nvfuser: str | None, **facts) -> Symbol:
    ELEMENTWISE[sym] = Elementwise(rule, torch_path or f"torch.{sym.name}", nvfuser or sym.name, **facts)
    return sym


# -- elementwise unary --------------------------------------------------------------------
def _unary_meta(name: str, rule: Rule):
    def meta(a):
        if not is_tensor(a):
            raise ShapeError(f"prims.{name}: expected a tensor, got {type(a).__name__}")
        dt = dtype_of(a)
        if rule is Rule.BOOL:
            dt = torch.bool
        elif rule is Rule.FLOAT and not (dt.is_floating_point or dt.is_complex):
            dt = torch.get_default_dtype()
        elif rule is Rule.REAL and dt.is_complex:
            dt = torch.float32 if dt is torch.complex64 else torch.float64
        return new_tensor(shape_of(a), dt, a.meta_device if isinstance(a, TensorProxy) else a.device, a)

    meta.__name__ = f"{name}_meta"
    return meta


def elementwise_unary(
    name: str, rule: Rule, *, torch: str | None = None, nvfuser: str | None = None, **facts
) -> Symbol:
    # The FLOAT functions (exp, erf, roots, ...) cost far more per element than arithmetic:
    # tagged TRANSCENDENTAL, they are not recomputed in a backward to save memory (remat.py).
    costly = (Tag.TRANSCENDENTAL,) if rule is Rule.FLOAT else ()
    sym = _prim(name, _unary_meta(name, rule), Tag.ELEMENTWISE, Tag.UNARY, *costly)
    return _declare(sym, rule, torch, nvfuser, **facts)


abs = elementwise_unary("abs", Rule.SAME)
neg = elementwise_unary("neg", Rule.SAME)
sign = elementwise_unary("sign", Rule.SAME)
floor = elementwise_unary("floor", Rule.SAME, keeps_integers=True)
ceil = elementwise_unary("ceil", Rule.SAME, keeps_integers=True)
round = elementwise_unary("round", Rule.SAME, keeps_integers=True)
trunc = elementwise_unary("trunc", Rule.SAME, keeps_integers=True)
bitwise_not = elementwise_unary("bitwise_not", Rule.SAME)
clone = elementwise_unary("clone", Rule.SAME, nvfuser="set")
exp = elementwise_unary("exp", Rule.FLOAT)
exp2 = elementwise_unary("exp2", Rule.FLOAT)
expm1 = elementwise_unary("expm1", Rule.FLOAT)
log = elementwise_unary("log", Rule.FLOAT)
log1p = elementwise_unary("log1p", Rule.FLOAT)
log2 = elementwise_unary("log2", Rule.FLOAT)
log10 = elementwise_unary("log10", Rule.FLOAT)
sin = elementwise_unary("sin", Rule.FLOAT)
cos = elementwise_unary("cos", Rule.FLOAT)
tan = elementwise_unary("tan", Rule.FLOAT)
asin = elementwise_unary("asin", Rule.FLOAT)
acos = elementwise_unary("acos", Rule.FLOAT)
atan = elementwise_unary("atan", Rule.FLOAT)
sinh = elementwise_unary("sinh", Rule.FLOAT)
cosh = elementwise_unary("cosh", Rule.FLOAT)
tanh = elementwise_unary("tanh", Rule.FLOAT)
asinh = elementwise_unary("asinh", Rule.FLOAT)
acosh = elementwise_unary("acosh", Rule.FLOAT)
atanh = elementwise_unary("atanh", Rule.FLOAT)
sqrt = elementwise_unary("sqrt", Rule.FLOAT)
rsqrt = elementwise_unary("rsqrt", Rule.FLOAT)
reciprocal = elementwise_unary("reciprocal", Rule.FLOAT)
sigmoid = elementwise_unary("sigmoid", Rule.FLOAT)
erf = elementwise_unary("erf", Rule.FLOAT)
erfc = elementwise_unary("erfc", Rule.FLOAT)
erfinv = elementwise_unary("erfinv", Rule.FLOAT)
lgamma = elementwise_unary("lgamma", Rule.FLOAT)
digamma = elementwise_unary("digamma", Rule.FLOAT)
isnan = elementwise_unary("isnan", Rule.BOOL)
isinf = elementwise_unary("isinf", Rule.BOOL)
isfinite = elementwise_unary("isfinite", Rule.BOOL)
signbit = elementwise_unary("signbit", Rule.BOOL)
logical_not = elementwise_unary("logical_not", Rule.BOOL, on_truth_values=True)
real = elementwise_unary("real", Rule.REAL)
imag = elementwise_unary("imag", Rule.REAL)


# -- elementwise binary -------------------------------------------------------------------
def _binary_meta(name: str, rule: Rule):
    op = f"prims.{name}"

    def meta(a, b):
        ta, tb = is_tensor(a), is_tensor(b)
        if not (ta or tb):
            raise ShapeError(f"{op}: expected at least one tensor")
        for x, t in ((a, ta), (b, tb)):
            if not (t or is_number(x)):
                raise ShapeError(f"{op}: expected a tensor or a number, got {type(x).__name__}")
        if ta and tb:
            sa, sb = shape_of(a), shape_of(b)
            shape = sa if sa == sb else broadcast_shapes(sa, sb, op=op)
        else:
            shape = shape_of(a if ta else b)
        dt = result_dtype(a, b)
        if rule is Rule.BOOL:
            dt = torch.bool
        elif rule is Rule.FLOAT and not (dt.is_floating_point or dt.is_complex):
            dt = torch.get_default_dtype()
        return new_tensor(shape, dt, common_device(op, a, b), a, b)

    meta.__name__ = f"{name}_meta"
    return meta


def elementwise_binary(
    name: str, rule: Rule, *, torch: str | None = None, nvfuser: str | None = None, **facts
) -> Symbol:
    sym = _prim(name, _binary_meta(name, rule), Tag.ELEMENTWISE, Tag.BINARY)
    return _declare(sym, rule, torch, nvfuser, **facts)


add = elementwise_binary("add", Rule.SAME)
sub = elementwise_binary("sub", Rule.SAME)
mul = elementwise_binary("mul", Rule.SAME)
floor_divide = elementwise_binary("floor_divide", Rule.SAME)
remainder = elementwise_binary("remainder", Rule.SAME)
fmod = elementwise_binary("fmod", Rule.SAME)
pow = elementwise_binary("pow", Rule.SAME)
maximum = elementwise_binary("maximum", Rule.SAME, number_second=False)
minimum = elementwise_binary("minimum", Rule.SAME, number_second=False)
bitwise_and = elementwise_binary("bitwise_and", Rule.SAME)
bitwise_or = elementwise_binary("bitwise_or", Rule.SAME)
bitwise_xor = elementwise_binary("bitwise_xor", Rule.SAME)
bitwise_left_shift = elementwise_binary("bitwise_left_shift", Rule.SAME)
bitwise_right_shift = elementwise_binary("bitwise_right_shift", Rule.SAME)
copysign = elementwise_binary("copysign", Rule.SAME)
div = elementwise_binary("div", Rule.FLOAT)
atan2 = elementwise_binary("atan2", Rule.FLOAT, number_second=False)
hypot = elementwise_binary("hypot", Rule.FLOAT, number_second=False)
eq = elementwise_binary("eq", Rule.BOOL)
ne = elementwise_binary("ne", Rule.BOOL)
lt = elementwise_binary("lt", Rule.BOOL)
le = elementwise_binary("le", Rule.BOOL)
gt = elementwise_binary("gt", Rule.BOOL)
ge = elementwise_binary("ge", Rule.BOOL)
logical_and = elementwise_binary("logical_and", Rule.BOOL, number_second=False, on_truth_values=True)
logical_or = elementwise_binary("logical_or", Rule.BOOL, number_second=False, on_truth_values=True)
# (nvFuser has no logical_xor; on truth values it is "not equal")
logical_xor = elementwise_binary(
    "logical_xor", Rule.BOOL, nvfuser="ne", number_second=False, on_truth_values=True
)


def _where_meta(cond, a, b):
    shapes = [shape_of(x) for x in (cond, a, b) if is_tensor(x)]
    shape = broadcast_shapes(*shapes, op="prims.where")
    return new_tensor(shape, result_dtype(a, b), common_device("prims.where", cond, a, b), a, b)


where = _prim("where", _where_meta, Tag.ELEMENTWISE)


def _clamp_meta(a, lo, hi):
    return new_tensor(shape_of(a), dtype_of(a), a.meta_device, a, lo, hi)


clamp = _prim("clamp", _clamp_meta, Tag.ELEMENTWISE)


# -- dtype and device ---------------------------------------------------------------------
def _convert_meta(a, dtype):
    return new_tensor(shape_of(a), dtype, a.meta_device, a)


convert_element_type = _prim("convert_element_type", _convert_meta, Tag.ELEMENTWISE)


def _device_put_meta(a, device):
    return new_tensor(shape_of(a), dtype_of(a), torch.device(device), a)


device_put = _prim("device_put", _device_put_meta)
