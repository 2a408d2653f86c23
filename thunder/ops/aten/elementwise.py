"""Elementwise aten operators and matrix products, each over prims (or sharing a
torch-language op's decomposition)."""

from __future__ import annotations

import torch

from thunder.core.symbol import Symbol
from thunder.core.tags import Tag
from thunder.ops import ltorch, prims
from thunder.ops.aten.declare import A, _alpha, aten
from thunder.ops.meta import ShapeError, dtype_of, shape_of


# -- elementwise ----------------------------------------------------------------------------
def _aten_unary(overload, prim: Symbol) -> Symbol:
    def op(a):
        return prim(a)

    op.__name__ = f"{overload._schema.name.split('::')[1]}_{overload._overloadname}"
    return aten(overload, tags=(Tag.ELEMENTWISE,))(op)


def _aten_binary(overload, prim: Symbol) -> Symbol:
    def op(a, b):
        return prim(a, b)

    op.__name__ = f"{overload._schema.name.split('::')[1]}_{overload._overloadname}"
    return aten(overload, tags=(Tag.ELEMENTWISE,))(op)


@aten(A.add.Tensor, tags=(Tag.ELEMENTWISE,))
def add_Tensor(a, b, *, alpha=1):
    return prims.add(a, _alpha(b, alpha))


@aten(A.add.Scalar, tags=(Tag.ELEMENTWISE,))
def add_Scalar(a, b, alpha=1):
    return prims.add(a, _alpha(b, alpha))


@aten(A.sub.Tensor, tags=(Tag.ELEMENTWISE,))
def sub_Tensor(a, b, *, alpha=1):
    return prims.sub(a, _alpha(b, alpha))


@aten(A.sub.Scalar, tags=(Tag.ELEMENTWISE,))
def sub_Scalar(a, b, alpha=1):
    return prims.sub(a, _alpha(b, alpha))


@aten(A.rsub.Tensor, tags=(Tag.ELEMENTWISE,))
def rsub_Tensor(a, b, *, alpha=1):
    return prims.sub(b, _alpha(a, alpha))


@aten(A.rsub.Scalar, tags=(Tag.ELEMENTWISE,))
def rsub_Scalar(a, b, alpha=1):
    return prims.sub(b, _alpha(a, alpha))


mul_Tensor = _aten_binary(A.mul.Tensor, prims.mul)
mul_Scalar = _aten_binary(A.mul.Scalar, prims.mul)
div_Tensor = _aten_binary(A.div.Tensor, prims.div)
div_Scalar = _aten_binary(A.div.Scalar, prims.div)


@aten(A.div.Tensor_mode, tags=(Tag.ELEMENTWISE,))
def div_Tensor_mode(a, b, *, rounding_mode=None):
    return ltorch.div.decomposition(a, b, rounding_mode=rounding_mode)


pow_Tensor_Scalar = _aten_binary(A.pow.Tensor_Scalar, prims.pow)
pow_Tensor_Tensor = _aten_binary(A.pow.Tensor_Tensor, prims.pow)
maximum_default = _aten_binary(A.maximum.default, prims.maximum)
minimum_default = _aten_binary(A.minimum.default, prims.minimum)
neg_default = _aten_unary(A.neg.default, prims.neg)
abs_default = _aten_unary(A.abs.default, prims.abs)
exp_default = _aten_unary(A.exp.default, prims.exp)
log_default = _aten_unary(A.log.default, prims.log)
sin_default = _aten_unary(A.sin.default, prims.sin)
cos_default = _aten_unary(A.cos.default, prims.cos)
tanh_default = _aten_unary(A.tanh.default, prims.tanh)
sigmoid_default = _aten_unary(A.sigmoid.default, prims.sigmoid)
sqrt_default = _aten_unary(A.sqrt.default, prims.sqrt)
rsqrt_default = _aten_unary(A.rsqrt.default, prims.rsqrt)
reciprocal_default = _aten_unary(A.reciprocal.default, prims.reciprocal)
# (the backward of remainder and floor division takes floor of a subclass value)
floor_default = _aten_unary(A.floor.default, prims.floor)
ceil_default = _aten_unary(A.ceil.default, prims.ceil)
trunc_default = _aten_unary(A.trunc.default, prims.trunc)
sign_default = _aten_unary(A.sign.default, prims.sign)
# the rest of the elementwise prims (gelu's backward takes erf of a subclass value)
erf_default = _aten_unary(A.erf.default, prims.erf)
erfc_default = _aten_unary(A.erfc.default, prims.erfc)
erfinv_default = _aten_unary(A.erfinv.default, prims.erfinv)
exp2_default = _aten_unary(A.exp2.default, prims.exp2)
expm1_default = _aten_unary(A.expm1.default, prims.expm1)
log1p_default = _aten_unary(A.log1p.default, prims.log1p)
log2_default = _aten_unary(A.log2.default, prims.log2)
log10_default = _aten_unary(A.log10.default, prims.log10)
tan_default = _aten_unary(A.tan.default, prims.tan)
asin_default = _aten_unary(A.asin.default, prims.asin)
acos_default = _aten_unary(A.acos.default, prims.acos)
atan_default = _aten_unary(A.atan.default, prims.atan)
sinh_default = _aten_unary(A.sinh.default, prims.sinh)
cosh_default = _aten_unary(A.cosh.default, prims.cosh)
asinh_default = _aten_unary(A.asinh.default, prims.asinh)
acosh_default = _aten_unary(A.acosh.default, prims.acosh)
atanh_default = _aten_unary(A.atanh.default, prims.atanh)
lgamma_default = _aten_unary(A.lgamma.default, prims.lgamma)
digamma_default = _aten_unary(A.digamma.default, prims.digamma)
round_default = _aten_unary(A.round.default, prims.round)
bitwise_not_default = _aten_unary(A.bitwise_not.default, prims.bitwise_not)
logical_not_default = _aten_unary(A.logical_not.default, prims.logical_not)
isnan_default = _aten_unary(A.isnan.default, prims.isnan)
isinf_default = _aten_unary(A.isinf.default, prims.isinf)
isfinite_default = _aten_unary(A.isfinite.default, prims.isfinite)
signbit_default = _aten_unary(A.signbit.default, prims.signbit)


# the bit operations (NF4's dispatch unpacks two 4-bit codes from a byte with them), their
# dunder spellings and shifts: the torch-language op's decomposition (its promotion and its
# shift by a number)
def _aten_as(overload, op: Symbol) -> Symbol:
    def fn(a, b):
        return op.decomposition(a, b)

    fn.__name__ = f"{overload._schema.name.split('::')[1]}_{overload._overloadname}"
    return aten(overload, tags=(Tag.ELEMENTWISE,))(fn)


for _name, _op in (
    ("bitwise_and", ltorch.bitwise_and),
    ("bitwise_or", ltorch.bitwise_or),
    ("bitwise_xor", ltorch.bitwise_xor),
    ("__and__", ltorch.bitwise_and),
    ("__or__", ltorch.bitwise_or),
    ("__xor__", ltorch.bitwise_xor),
):
    for _overload in ("Tensor", "Scalar"):
        _aten_as(getattr(getattr(A, _name), _overload), _op)
for _name, _op in (("__rshift__", ltorch.bitwise_right_shift), ("__lshift__", ltorch.bitwise_left_shift)):
    for _overload in ("Tensor", "Scalar"):
        _aten_as(getattr(getattr(A, _name), _overload), _op)
for _name, _op in (
    ("bitwise_right_shift", ltorch.bitwise_right_shift),
    ("bitwise_left_shift", ltorch.bitwise_left_shift),
):
    for _overload in ("Tensor", "Tensor_Scalar"):
        _aten_as(getattr(getattr(A, _name), _overload), _op)


# (digamma's backward takes polygamma of a subclass value; the order n first, as aten's)
@aten(A.polygamma.default, tags=(Tag.ELEMENTWISE,))
def polygamma_default(n, a):
    return ltorch.polygamma.decomposition(n, a)


eq_Tensor = _aten_binary(A.eq.Tensor, prims.eq)
eq_Scalar = _aten_binary(A.eq.Scalar, prims.eq)
ne_Tensor = _aten_binary(A.ne.Tensor, prims.ne)
ne_Scalar = _aten_binary(A.ne.Scalar, prims.ne)
lt_Tensor = _aten_binary(A.lt.Tensor, prims.lt)
lt_Scalar = _aten_binary(A.lt.Scalar, prims.lt)
le_Tensor = _aten_binary(A.le.Tensor, prims.le)
le_Scalar = _aten_binary(A.le.Scalar, prims.le)
gt_Tensor = _aten_binary(A.gt.Tensor, prims.gt)
gt_Scalar = _aten_binary(A.gt.Scalar, prims.gt)
ge_Tensor = _aten_binary(A.ge.Tensor, prims.ge)
ge_Scalar = _aten_binary(A.ge.Scalar, prims.ge)


@aten(A.relu.default, tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def relu_default(a):
    return ltorch.relu.decomposition(a)


@aten(A.gelu.default, tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def gelu_default(a, *, approximate="none"):
    return ltorch.gelu.decomposition(a, approximate)


@aten(A.where.self, tags=(Tag.ELEMENTWISE,))
def where_self(condition, a, b):
    return prims.where(condition, a, b)


@aten(A.remainder.Tensor, tags=(Tag.ELEMENTWISE,))
def remainder_Tensor(a, b):
    return prims.remainder(a, b)


@aten(A.remainder.Scalar, tags=(Tag.ELEMENTWISE,))
def remainder_Scalar(a, b):
    return prims.remainder(a, b)


@aten(A.masked_fill.Scalar, tags=(Tag.ELEMENTWISE,))
def masked_fill_Scalar(a, mask, value):
    return ltorch.masked_fill.decomposition(a, mask, value)


@aten(A.masked_fill.Tensor, tags=(Tag.ELEMENTWISE,))
def masked_fill_Tensor(a, mask, value):
    return ltorch.masked_fill.decomposition(a, mask, value)


@aten(A.tril.default, tags=(Tag.ELEMENTWISE,))
def tril_default(a, diagonal=0):
    return ltorch.tril.decomposition(a, diagonal)


@aten(A.triu.default, tags=(Tag.ELEMENTWISE,))
def triu_default(a, diagonal=0):
    return ltorch.triu.decomposition(a, diagonal)


@aten(A.clamp.default, tags=(Tag.ELEMENTWISE,))
def clamp_default(a, min=None, max=None):
    return ltorch.clamp.decomposition(a, min, max)


# -- matrix products ------------------------------------------------------------------------
def _ndim(op: str, name: str, a, n: int) -> None:
    if len(shape_of(a)) != n:
        raise ShapeError(f"aten.{op}: {name} must be a {n}-D tensor, got shape {shape_of(a)}")


@aten(A.mm.default, tags=(Tag.MATMUL,))
def mm_default(a, b):
    _ndim("mm", "self", a, 2)
    _ndim("mm", "mat2", b, 2)
    return prims.matmul(a, b)


@aten(A._int_mm.default, tags=(Tag.MATMUL,))
def _int_mm_default(a, b):
    """int8 (or, on CPU, uint8) @ int8 -> int32 (torchao's dynamic int8 activations): the
    product of the operands as int32, exact (sums of products wrap in int32 as the kernel's do)."""
    _ndim("_int_mm", "self", a, 2)
    _ndim("_int_mm", "mat2", b, 2)
    if dtype_of(a) not in (torch.int8, torch.uint8) or dtype_of(b) is not torch.int8:
        raise ShapeError(
            f"aten._int_mm: expected an int8 (or uint8) matrix times an int8 one, got {dtype_of(a)} and {dtype_of(b)}"
        )
    i32 = torch.int32
    return prims.matmul(prims.convert_element_type(a, i32), prims.convert_element_type(b, i32))


@aten(A._scaled_mm.default, tags=(Tag.MATMUL,))
def _scaled_mm_default(
    a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False
):
    """The float8 product torchao's float8 training runs: ``(a * scale_a) @ (b * scale_b)`` in
    float32 (plus ``bias``), in ``out_dtype`` (``a``'s dtype when not given). The torch executor
    runs eager's kernel; this is its value for the others."""
    _ndim("_scaled_mm", "self", a, 2)
    _ndim("_scaled_mm", "mat2", b, 2)
    if scale_result is not None:
        raise ShapeError("aten._scaled_mm: scale_result is not supported")
    f32 = torch.float32
    out = prims.matmul(
        prims.mul(prims.convert_element_type(a, f32), prims.convert_element_type(scale_a, f32)),
        prims.mul(prims.convert_element_type(b, f32), prims.convert_element_type(scale_b, f32)),
    )
    if bias is not None:
        out = prims.add(out, prims.convert_element_type(bias, f32))
    return prims.convert_element_type(out, out_dtype or dtype_of(a))


@aten(A.bmm.default, tags=(Tag.MATMUL,))
def bmm_default(a, b):
    _ndim("bmm", "self", a, 3)
    _ndim("bmm", "mat2", b, 3)
    if shape_of(a)[0] != shape_of(b)[0]:
        raise ShapeError(f"aten.bmm: batch sizes differ: {shape_of(a)} and {shape_of(b)}")
    return prims.matmul(a, b)


@aten(A.addmm.default, tags=(Tag.MATMUL,))
def addmm_default(bias, a, b, *, beta=1, alpha=1):
    _ndim("addmm", "mat1", a, 2)
    _ndim("addmm", "mat2", b, 2)
    out = _alpha(prims.matmul(a, b), alpha)
    if beta == 0:  # as torch: the input is ignored (a nan in it does not propagate)
        return out
    return prims.add(out, _alpha(bias, beta))
