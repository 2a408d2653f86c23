"""The aten op database: one entry per aten symbol (``thunder.ops.aten``).

An entry names the symbol (``add.Tensor``), the ``torch.ops.aten`` overload user code calls
(run under ``thunder.jit`` and eagerly as the reference), the dtypes to try and samples, as
in ``tests/support/opdb/`` (whose ``Maker`` and ``S`` it uses).
"""

from __future__ import annotations

import torch
from support.opdb import FLOAT, INT, NUM, POS, UNIT, OpInfo, b8, binary, f32, f64, i64, one, s, unary

from thunder.ops import aten

A = torch.ops.aten
OPS: list[OpInfo] = []


def op(overload, samples, dtypes=FLOAT, **kw) -> None:
    name = f"{overload._schema.name.split('::')[1]}.{overload._overloadname}"
    OPS.append(OpInfo(name, overload, samples, dtypes, **kw))


def _scalar_binary(alpha: bool):
    def gen(m):
        out = [s(m(3, 4), m.scalar()), s(m(2, 3), m.scalar())]
        if alpha:
            out.append(s(m(3, 4), m.scalar(), 2))
        return out

    return gen


def _with_alpha(m):
    return binary(scalar=False)(m) + [s(m(3, 4), m(3, 4), alpha=2), s(m(2, 1, 4), m(3, 1), alpha=3)]


# -- elementwise ----------------------------------------------------------------------------
for _o in (A.add.Tensor, A.sub.Tensor, A.rsub.Tensor):
    op(_o, _with_alpha, NUM)
for _o in (A.add.Scalar, A.sub.Scalar, A.rsub.Scalar):
    op(_o, _scalar_binary(alpha=True), NUM)
op(A.mul.Tensor, binary(), NUM + (b8,))
op(A.mul.Scalar, _scalar_binary(alpha=False), NUM)
op(A.div.Tensor, binary(low=0.5), FLOAT + (i64,))
op(A.div.Scalar, lambda m: [s(m(3, 4), 2.5), s(m(3, 4), 4)], FLOAT + (i64,))
op(
    A.div.Tensor_mode,
    lambda m: [s(m(3, 4), m(3, 4, low=0.5), rounding_mode="trunc"), s(m(3, 4), 3, rounding_mode="floor")],
    FLOAT + INT,
)
op(A.pow.Tensor_Scalar, lambda m: [s(m(3, 4, **POS), 2), s(m(3, 4, **POS), 0.5)], FLOAT)
op(A.pow.Tensor_Tensor, binary(low=0.5, high=2.0, scalar=False), FLOAT)
op(A.maximum.default, binary(scalar=False), NUM)
op(A.minimum.default, binary(scalar=False), NUM)
for _o in (A.neg.default, A.abs.default, A.floor.default, A.ceil.default, A.trunc.default, A.sign.default):
    op(_o, unary(), NUM)
for _o in (A.exp.default, A.sin.default, A.cos.default, A.tanh.default, A.sigmoid.default):
    op(_o, unary(), FLOAT)
for _o in (A.log.default, A.sqrt.default, A.rsqrt.default, A.reciprocal.default):
    op(_o, unary(**POS), FLOAT)
for _o in (A.erf, A.erfc, A.exp2, A.expm1, A.tan, A.atan, A.sinh, A.cosh, A.asinh):
    op(_o.default, unary(low=-2.0, high=2.0), FLOAT)
for _o in (A.log1p, A.log2, A.log10, A.lgamma, A.digamma):
    op(_o.default, unary(**POS), FLOAT)
for _o in (A.erfinv, A.asin, A.acos, A.atanh):
    op(_o.default, unary(**UNIT), FLOAT)
op(A.acosh.default, unary(low=1.1, high=5.0), FLOAT)
op(A.polygamma.default, lambda m: [s(1, m(3, 4, **POS)), s(2, m(2, 3, **POS))], (f32, f64))
op(A.round.default, unary(), FLOAT)
op(A.bitwise_not.default, unary(), INT + (b8,))
for _packet in (
    A.bitwise_and,
    A.bitwise_or,
    A.bitwise_xor,
    A.__and__,
    A.__or__,
    A.__xor__,
):
    op(_packet.Tensor, binary(scalar=False), INT + (b8,))
    op(_packet.Scalar, lambda m: [s(m(3, 4), 6), s(m(2, 3), 1)], INT)


def _shifts(m):
    return [
        s(m(3, 4, low=0, high=64), m(3, 4, low=0, high=4)),
        s(m(2, 3, low=0, high=64), m(3, low=0, high=3)),
    ]


def _shifts_by_a_number(m):
    return [s(m(3, 4, low=0, high=64), 2), s(m(2, 3, low=0, high=64), 4)]


for _packet, _by_number in (
    (A.__rshift__, "Scalar"),
    (A.__lshift__, "Scalar"),
    (A.bitwise_right_shift, "Tensor_Scalar"),
    (A.bitwise_left_shift, "Tensor_Scalar"),
):
    op(_packet.Tensor, _shifts, INT)
    op(getattr(_packet, _by_number), _shifts_by_a_number, INT)
for _o in (A.logical_not, A.isnan, A.isinf, A.isfinite, A.signbit):
    op(_o.default, unary(), NUM)
for _p in ("eq", "ne", "lt", "le", "gt", "ge"):
    op(getattr(A, _p).Tensor, binary(scalar=False), NUM)
    op(getattr(A, _p).Scalar, lambda m: [s(m(3, 4), m.scalar()), s(m(2), 0)], NUM)
op(A.relu.default, unary(), NUM)
op(A.gelu.default, lambda m: [s(m(3, 4)), s(m(3, 4), approximate="tanh")], FLOAT)
op(A.where.self, lambda m: [s(m(3, 4, dtype=b8), m(3, 4), m(3, 4)), s(m(3, 1, dtype=b8), m(4), m(3, 4))], NUM)
op(A.remainder.Tensor, binary(low=0.5, scalar=False), NUM)
op(A.remainder.Scalar, lambda m: [s(m(3, 4), 3), s(m(3, 4), -2)], NUM)
op(
    A.masked_fill.Scalar,
    lambda m: [s(m(3, 4), m(3, 4, dtype=b8), 2), s(m(3, 4), m(4, dtype=b8), 0)],
    NUM + (b8,),
)
op(
    A.masked_fill.Tensor,
    lambda m: [s(m(3, 4), m(3, 4, dtype=b8), m()), s(m(3, 4), m(1, 4, dtype=b8), m())],
    NUM + (b8,),
)
op(A.tril.default, lambda m: [s(m(4, 4)), s(m(3, 5), 1), s(m(2, 3, 4), -1)], NUM + (b8,))
op(A.triu.default, lambda m: [s(m(4, 4)), s(m(3, 5), -1)], NUM + (b8,))
op(A.clamp.default, lambda m: [s(m(3, 4), -1, 1), s(m(3, 4), None, 0), s(m(3, 4), 0)], NUM)

# -- matrix products ------------------------------------------------------------------------
MM_TOL = {torch.bfloat16: (3e-2, 3e-2)}
op(A.mm.default, lambda m: [s(m(3, 4), m(4, 5)), s(m(1, 3), m(3, 1))], FLOAT, tol=MM_TOL)
op(A._int_mm.default, lambda m: [s(m(17, 8), m(8, 9)), s(m(32, 16), m(16, 24))], (torch.int8,))
op(
    A._int_mm.default,
    lambda m: [s(m(17, 8, dtype=torch.uint8), m(8, 9, dtype=torch.int8))],
    (torch.int8,),
    variant="uint8",
)


def _scaled_mm(m):
    e4m3 = torch.float8_e4m3fn
    a, b = m(16, 32).to(e4m3), m(8, 32).to(e4m3).t()  # (eager's kernel takes its second operand so)
    scale_a, scale_b = torch.tensor(0.5), torch.tensor(2.0)
    return [
        s(a, b, scale_a, scale_b, out_dtype=torch.float32),
        s(a, b, scale_a, scale_b, out_dtype=torch.bfloat16),
        s(a, b, scale_a, scale_b, m(8), out_dtype=torch.float32),
    ]


op(A._scaled_mm.default, _scaled_mm, (f32,), tol=MM_TOL)

op(A.bmm.default, lambda m: [s(m(2, 3, 4), m(2, 4, 5))], FLOAT, tol=MM_TOL)
op(
    A.addmm.default,
    lambda m: [
        s(m(3, 5), m(3, 4), m(4, 5)),
        s(m(5), m(3, 4), m(4, 5), beta=0.5, alpha=2),
        s(m(3, 5), m(3, 4), m(4, 5), beta=0),
    ],
    FLOAT,
    tol=MM_TOL,
)

# -- shapes and views -----------------------------------------------------------------------
ALL = NUM + (b8,)
op(A.view.default, lambda m: [s(m(3, 4), (12,)), s(m(3, 4), (2, -1, 3))], ALL)
op(A._unsafe_view.default, lambda m: [s(m(3, 4), (4, 3))], ALL)
op(A.t.default, lambda m: [s(m(3, 4)), s(m(1, 4))], ALL)
op(A.t.default, one(4), (f32,), variant="1d", noop=True)
op(A.transpose.int, lambda m: [s(m(2, 3, 4), 0, 2), s(m(2, 3, 4), -1, 1)], ALL)
op(A.permute.default, lambda m: [s(m(2, 3, 4), (2, 0, 1)), s(m(2, 3), (-1, 0))], ALL)
op(A.expand.default, lambda m: [s(m(3, 1), (3, 4)), s(m(4), (2, 3, 4)), s(m(3, 1), (-1, 5))], ALL)
op(A.unsqueeze.default, lambda m: [s(m(3, 4), 0), s(m(3, 4), -1)], ALL)
op(A.squeeze.default, lambda m: [s(m(3, 1, 4, 1))], ALL)
op(A.squeeze.dim, lambda m: [s(m(3, 1, 4), 1), s(m(3, 1, 4), -2)], ALL)
op(A.squeeze.dims, lambda m: [s(m(1, 3, 1, 4), (0, 2))], ALL)
op(A.select.int, lambda m: [s(m(3, 4), 0, 1), s(m(3, 4), 1, -1), s(m(2, 3, 4), 2, 0)], ALL)
op(
    A.slice.Tensor,
    lambda m: [
        s(m(5, 6), 0, 1, 3),
        s(m(5, 6), 1, -4, None),
        s(m(5, 6), 1, 0, 100, 2),
        s(m(5, 6), 0, 4, 2),
        s(m(5, 6), 1, None, -1, 3),
    ],
    ALL,
)
op(A.split.Tensor, lambda m: [s(m(5, 4), 2), s(m(5, 4), 3, 1)], ALL)
op(A.diagonal.default, lambda m: [s(m(4, 4)), s(m(3, 5), 1), s(m(2, 3, 4), -1, 2, 0)], ALL)
op(A.unfold.default, lambda m: [s(m(5, 4), 0, 2, 1), s(m(5, 4), 1, 3, 2), s(m(6), 0, 2, 3)], ALL)
op(
    A.view.dtype,
    lambda m: [
        s(m(3, 4), torch.int32),
        s(m(3, 4), m.dtype),
        s(m(3, 4), torch.bfloat16),
        s(m(3, 4), torch.int8),
    ],
    (f32,),
)
op(
    A.view.dtype,
    lambda m: [s(m(3, 4), f32), s(m(3, 2), torch.int64), s(m(2, 4), torch.float16)],
    (torch.int32,),
    variant="of int32",
)
op(
    A.as_strided.default,
    lambda m: [
        s(m(4, 4), (2, 2), (1, 2)),
        s(m(4, 4), (3, 2), (0, 5), 3),
        s(m(3, 4), (), (), 11),
        s(m(2, 3), (6,), (1,)),
    ],
    ALL,
)
op(
    A.view_as_real.default,
    lambda m: [s(torch.randn(3, 4, dtype=m.dtype)), s(torch.randn((), dtype=m.dtype))],
    (torch.complex64, torch.complex128),
)
op(A.unbind.int, lambda m: [s(m(3, 4)), s(m(2, 3, 4), 2)], ALL)
op(A.split_with_sizes.default, lambda m: [s(m(5, 4), [2, 3]), s(m(5, 4), [1, 0, 3], 1)], ALL)
op(A.select_scatter.default, lambda m: [s(m(3, 4), m(4), 0, 1), s(m(3, 4), m(3), 1, -1)], ALL)
op(
    A.slice_scatter.default,
    lambda m: [s(m(5, 4), m(2, 4), 0, 1, 3), s(m(5, 4), m(5, 2), 1, 0, None, 2), s(m(5, 4), m(5, 4))],
    ALL,
)
op(
    A.diagonal_scatter.default,
    lambda m: [s(m(4, 4), m(4)), s(m(3, 5), m(3), 1), s(m(2, 3, 4), m(3, 2), 0, 0, 2)],
    ALL,
)
op(A.cat.default, lambda m: [s([m(2, 3), m(4, 3)]), s([m(2, 3), m(2, 1)], 1)], ALL)
op(A.constant_pad_nd.default, lambda m: [s(m(3, 4), [1, 2]), s(m(3, 4), [0, 1, 2, 0], 5)], ALL)
op(A.stack.default, lambda m: [s([m(2, 3), m(2, 3)]), s([m(2, 3), m(2, 3), m(2, 3)], -1)], ALL)
op(A.flip.default, lambda m: [s(m(3, 4), [0]), s(m(2, 3, 4), [0, -1])], ALL)
op(A.repeat.default, lambda m: [s(m(2, 3), [2, 1]), s(m(3), [2, 2])], ALL)
op(A.roll.default, lambda m: [s(m(3, 4), [1], [0]), s(m(3, 4), [1, -2], [0, 1]), s(m(3, 4), [5])], ALL)
op(A.clone.default, unary(), ALL)
op(A.detach.default, one(3, 4), (f32,), noop=True)
op(A.alias.default, one(3, 4), (f32,), noop=True)
op(
    A._to_copy.default,
    lambda m: [s(m(3, 4), dtype=f64), s(m(3, 4), dtype=torch.int32), s(m(3, 4)), s(m(3, 4), device="cpu")],
    ALL,
)
op(A.to.dtype, lambda m: [s(m(3, 4), torch.int32), s(m(2, 3), torch.int64, False, True)], FLOAT)
op(A.to.dtype, lambda m: [s(m(3, 4), f32)], (f32,), variant="same", noop=True)
op(A.to.dtype_layout, lambda m: [s(m(3, 4), dtype=torch.int32), s(m(2, 3), device="cpu", copy=True)], FLOAT)
op(A.to.dtype_layout, lambda m: [s(m(3, 4), dtype=f32, device="cpu")], (f32,), variant="same", noop=True)
op(A.copy_.default, lambda m: [s(m(3, 4), m(4, dtype=f64)), s(m(3, 4), m(3, 1))], ALL)
# the same shape and dtype: the value after the copy is the source itself, nothing to compute
op(A.copy_.default, lambda m: [s(m(3, 4), m(3, 4))], ALL, variant="same", noop=True)
op(
    A.full_like.default,
    lambda m: [s(m(3, 4), 2.5), s(m(3, 4), 7, dtype=torch.int32), s(m(2, 3), -1.0, dtype=f64)],
    ALL,
)
op(A.zeros_like.default, lambda m: [s(m(3, 4)), s(m(3, 4), dtype=f64)], ALL)
op(A.fill.Scalar, lambda m: [s(m(3, 4), m.scalar()), s(m(2), 0)], ALL)
op(A.fill.Tensor, lambda m: [s(m(3, 4), m()), s(m(2), torch.tensor(1, dtype=f64))], ALL)
op(A.zero.default, unary(), ALL)
op(A.narrow_copy.default, lambda m: [s(m(4, 3), 0, 1, 2), s(m(4, 3), -1, 0, 1)], ALL)
op(A.diag_embed.default, lambda m: [s(m(3)), s(m(2, 3), 1, 0, 2), s(m(2, 3), -1)], NUM)
op(
    A.index_select.default,
    lambda m: [s(m(4, 3), 0, torch.tensor([0, 2, 0])), s(m(4, 3), -1, torch.tensor([1]))],
    NUM,
)
op(
    A.index_copy.default,
    lambda m: [s(m(4, 3), 0, torch.tensor([2, 0]), m(2, 3)), s(m(4, 3), -1, torch.tensor([1]), m(4, 1))],
    NUM,
)
op(
    A.index.Tensor,
    lambda m: [
        s(m(4, 3), [torch.tensor([0, 2, 0])]),
        s(m(4, 3), [None, torch.tensor([1, -1])]),
        s(m(4, 3), [torch.tensor([[0], [3]]), torch.tensor([0, 2])]),
    ],
    NUM,
)
op(A.gather.default, lambda m: [s(m(3, 4), 1, m.index(4, 3, 2)), s(m(3, 4), 0, m.index(3, 2, 4))], NUM)
op(
    A.scatter_add.default,
    lambda m: [s(m(3, 5), 1, m.index(5, 3, 4), m(3, 4)), s(m(4), 0, m.index(4, 6), m(6))],
    NUM,
)
op(
    A.index_put.default,
    lambda m: [
        s(m(4, 3), [torch.tensor([0, 2, 0]), torch.tensor([1, 1, 2])], m(3)),
        s(m(4, 3), [torch.tensor([0, 2])], m(2, 3), True),
        s(m(4, 3), [None, torch.tensor([0, 2])], m()),
    ],
    NUM,
)
op(A.empty_like.default, lambda m: [s(m(3, 4)), s(m(3, 4), dtype=f64)], ALL, values=False)
op(A.new_zeros.default, lambda m: [s(m(3, 4), [2, 2]), s(m(3, 4), [3], dtype=torch.int32)], ALL)
op(A.new_ones.default, lambda m: [s(m(3, 4), [2, 2])], ALL)
op(A.new_empty.default, lambda m: [s(m(3, 4), [2, 2])], ALL, values=False)
op(A.new_full.default, lambda m: [s(m(3, 4), [2, 2], 3), s(m(3, 4), [2], 1, dtype=f64)], ALL)
op(A.ones_like.default, lambda m: [s(m(3, 4)), s(m(2), dtype=torch.int32)], ALL)

# -- reductions -----------------------------------------------------------------------------
RED_TOL = {torch.bfloat16: (2e-2, 2e-2)}
op(A.sum.default, lambda m: [s(m(3, 4)), s(m(3, 4), dtype=f64)], NUM + (b8,), tol=RED_TOL)
op(
    A.sum.dim_IntList,
    lambda m: [s(m(3, 4), [0]), s(m(2, 3, 4), [0, 2], True), s(m(3, 4), [1], dtype=f64)],
    NUM,
    tol=RED_TOL,
)
op(A.mean.default, lambda m: [s(m(3, 4))], FLOAT, tol=RED_TOL)
op(A.trace.default, lambda m: [s(m(3, 4)), s(m(4, 4))], FLOAT + INT, tol=RED_TOL)
op(A.mean.dim, lambda m: [s(m(3, 4), [1]), s(m(2, 3, 4), [0, 1], True)], FLOAT, tol=RED_TOL)
op(A.amax.default, lambda m: [s(m(3, 4)), s(m(3, 4), [1]), s(m(2, 3, 4), [0, 2], True)], NUM)
op(A.amin.default, lambda m: [s(m(3, 4)), s(m(3, 4), [0], True)], NUM)
op(A.max.default, lambda m: [s(m(3, 4))], NUM)
op(A.min.default, lambda m: [s(m(3, 4))], NUM)
op(A._softmax.default, lambda m: [s(m(3, 4), 1, False), s(m(3, 4), 0, False)], FLOAT, tol=RED_TOL)
op(A._log_softmax.default, lambda m: [s(m(3, 4), -1, False)], FLOAT, tol=RED_TOL)


# -- foreach (a subclass's dispatch receives them for torch._foreach_add_ and the like) -----
def _foreach_samples(overload):
    """One sample from the overload's schema: a list of two positive tensors for each tensor
    list, a number for each number, a number per tensor for each list of numbers, None for an
    optional dtype."""
    values = {"List[Tensor]": lambda m: [m(3, low=0.5, high=2.0), m(2, 4, low=0.5, high=2.0)]}
    values |= {
        "number": lambda m: 0.5,
        "List[number]": lambda m: [0.5, 0.25],
        "Optional[int]": lambda m: None,
    }
    positional = [a for a in overload._schema.arguments if not a.kwarg_only]
    return lambda m: [s(*(values[str(a.type)](m) for a in positional))]


for _o in sorted((o for o in aten.ATEN if o._schema.name.startswith("aten::_foreach_")), key=str):
    op(_o, _foreach_samples(_o), (f32, f64))


# -- the copying twins of the views (``aten.diagonal_copy.default``): the view's samples -------
for _info in list(OPS):
    _packet = getattr(A, _info.op._schema.name.split("::")[1] + "_copy", None)
    _twin = getattr(_packet, _info.op._overloadname, None) if _packet is not None else None
    if _twin in aten.ATEN:
        op(_twin, _info.samples, _info.dtypes, variant=_info.variant, tol=_info.tol)
