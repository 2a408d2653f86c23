"""Matrix products and other linear algebra (``thunder/ops/ltorch/nn.py``, ``linalg.py``,
``einsum.py``, ``grouped.py``)."""

from __future__ import annotations

import math

import torch

from .entries import ALL, FLOAT, NAN, NN_TOL, NUM, T, bf16, f32, f64, i64, op, pick, s

# -- nn -------------------------------------------------------------------------------------
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
