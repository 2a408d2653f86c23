"""Matrix factorizations and triangular solves (``thunder/ops/ltorch/factorizations.py``): square,
tall and wide matrices, and batches of them, for each mode of each op."""

from __future__ import annotations

import torch

from .entries import T, f32, f64, op, s

TOL = {f32: (1e-4, 1e-4)}
DT = (f32, f64)


def spd(m, *shape):
    """A symmetric positive-definite matrix (batch): A A^T plus the size on the diagonal."""
    a = m(*shape)  # (its size, not ``shape``'s: a maker may grow it, tests/ops/test_dynamic_ops.py)
    n = a.shape[-1]
    return a @ a.mT + n * torch.eye(n, dtype=m.dtype, device=m.device)


def triangular(m, *shape, upper: bool = False):
    """A well-conditioned triangular matrix (batch): its diagonal away from zero."""
    a = m(*shape, low=-1.0, high=1.0)
    a = a + 3 * torch.eye(a.shape[-1], dtype=m.dtype, device=m.device)
    return a.triu() if upper else a.tril()


def _shapes(m):
    return [m(4, 4), m(5, 3), m(3, 5), m(2, 4, 3), m(2, 3, 4)]


op(
    "linalg_cholesky",
    torch.linalg.cholesky,
    lambda m: [s(spd(m, 4, 4)), s(spd(m, 2, 3, 3), upper=True), s(spd(m, 0, 0))],
    DT,
    tol=TOL,
)
op(
    "linalg_cholesky_ex",
    torch.linalg.cholesky_ex,
    lambda m: [s(spd(m, 4, 4)), s(spd(m, 2, 3, 3), upper=True), s(m(3, 3, low=-2, high=-1))],
    DT,
    tol=TOL,
)
op("cholesky", torch.cholesky, lambda m: [s(spd(m, 4, 4)), s(spd(m, 2, 3, 3), True)], DT, T.cholesky, tol=TOL)
op(
    "linalg_qr",
    torch.linalg.qr,
    lambda m: [s(x) for x in _shapes(m)] + [s(m(3, 5), "complete"), s(m(2, 5, 3), mode="r")],
    DT,
    tol=TOL,
)
op("qr", torch.qr, lambda m: [s(m(5, 3)), s(m(2, 3, 5), False)], DT, T.qr, tol=TOL)
op(
    "linalg_eigh",
    torch.linalg.eigh,
    lambda m: [s(spd(m, 4, 4)), s(m(2, 3, 3), "U"), s(m(2, 3, 3), UPLO="L")],
    DT,
    tol=TOL,
)
op("linalg_eigvalsh", torch.linalg.eigvalsh, lambda m: [s(spd(m, 4, 4)), s(m(2, 3, 3), "U")], DT, tol=TOL)
op(
    "linalg_svd",
    torch.linalg.svd,
    lambda m: [s(x, full_matrices=False) for x in _shapes(m)] + [s(m(5, 3)), s(m(2, 3, 4), True)],
    DT,
    tol=TOL,
)
op("linalg_svdvals", torch.linalg.svdvals, lambda m: [s(x) for x in _shapes(m)], DT, tol=TOL)
op(
    "svd",
    torch.svd,
    lambda m: [s(m(5, 3)), s(m(2, 3, 4), some=False), s(m(3, 5), compute_uv=False), s(m(4, 2), False, False)],
    DT,
    T.svd,
    tol=TOL,
)
op("linalg_lu", torch.linalg.lu, lambda m: [s(x) for x in _shapes(m)], DT, tol=TOL)
op("linalg_lu_factor", torch.linalg.lu_factor, lambda m: [s(x) for x in _shapes(m)], DT, tol=TOL)
op(
    "linalg_lu_factor_ex",
    torch.linalg.lu_factor_ex,
    lambda m: [s(x) for x in _shapes(m)] + [s(torch.zeros(3, 3, dtype=m.dtype))],
    DT,
    tol=TOL,
)
op("lu", torch.lu, lambda m: [s(m(4, 4)), s(m(2, 5, 3), get_infos=True)], DT, T.lu, tol=TOL)
op(
    "lu_unpack",
    torch.lu_unpack,
    lambda m: (
        [s(*torch.linalg.lu_factor(x)) for x in (m(4, 4), m(5, 3), m(2, 3, 5))]
        + [
            s(*torch.linalg.lu_factor(m(4, 4)), unpack_pivots=False),
            s(*torch.linalg.lu_factor(m(3, 3)), False),
        ]
    ),
    DT,
    tol=TOL,
)
op(
    "linalg_solve_triangular",
    torch.linalg.solve_triangular,
    lambda m: [
        s(triangular(m, 4, 4, upper=True), m(4, 3), upper=True),
        s(triangular(m, 2, 4, 4), m(2, 3, 4), upper=False, left=False),
        s(triangular(m, 4, 4), m(2, 4, 2), upper=False, unitriangular=True),
    ],
    DT,
    tol=TOL,
)
op(
    "triangular_solve",
    torch.triangular_solve,
    lambda m: [
        s(m(4, 2), triangular(m, 4, 4, upper=True)),
        s(m(2, 4, 3), triangular(m, 2, 4, 4), False, True),
        s(m(4, 1), triangular(m, 4, 4), upper=False, unitriangular=True),
    ],
    DT,
    T.triangular_solve,
    tol=TOL,
)


# -- solves and the inverse from a factor -----------------------------------------------------
def chol(m, *shape, upper: bool = False):
    """The Cholesky factor (batch) of a symmetric positive-definite matrix."""
    return torch.linalg.cholesky(spd(m, *shape), upper=upper)


def lu_of(m, *shape):
    """``lu_factor`` of a well-conditioned matrix (batch): (LU, pivots)."""
    a = m(*shape)
    n = a.shape[-1]
    return torch.linalg.lu_factor(a + 2 * n * torch.eye(n, dtype=m.dtype, device=m.device))


op(
    "cholesky_solve",
    torch.cholesky_solve,
    lambda m: [
        s(m(4, 3), chol(m, 4, 4)),
        s(m(2, 4, 2), chol(m, 4, 4, upper=True), True),
        s(m(4, 2), chol(m, 3, 4, 4), upper=False),
        s(m(2, 1, 3, 1), chol(m, 2, 3, 3), upper=True),
    ],
    DT,
    T.cholesky_solve,
    tol=TOL,
)
op(
    "cholesky_inverse",
    torch.cholesky_inverse,
    lambda m: [s(chol(m, 4, 4)), s(chol(m, 2, 3, 3, upper=True), True), s(chol(m, 3, 3), upper=False)],
    DT,
    T.cholesky_inverse,
    tol=TOL,
)
op(
    "linalg_lu_solve",
    torch.linalg.lu_solve,
    lambda m: [
        s(*lu_of(m, 4, 4), m(4, 3)),
        s(*lu_of(m, 4, 4), m(2, 3, 4), left=False),
        s(*lu_of(m, 2, 3, 3), m(3, 2), adjoint=True),
        s(*lu_of(m, 3, 3), m(2, 2, 3), left=False, adjoint=True),
        s(*lu_of(m, 2, 1, 3, 3), m(4, 3, 1)),
    ],
    DT,
    tol=TOL,
)
op(
    "lu_solve",
    torch.lu_solve,
    lambda m: [s(m(4, 2), *lu_of(m, 4, 4)), s(m(3, 3, 1), *lu_of(m, 3, 3, 3))],
    DT,
    T.lu_solve,
    tol=TOL,
)
