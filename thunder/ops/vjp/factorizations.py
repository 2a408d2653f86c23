"""VJP rules of the factorization prims (``thunder/ops/prims/factorizations.py``): eager's
backward formulas (``torch/csrc/autograd/FunctionsManual.cpp``: ``cholesky_backward``,
``linalg_qr_backward``, ``linalg_eig_backward`` for ``eigh``, ``svd_backward``,
``linalg_lu_backward``, ``lu_factor_ex_backward``, ``lu_unpack_backward``,
``linalg_solve_triangular_backward``, ``cholesky_solve_backward``, ``cholesky_inverse_backward``,
``linalg_lu_solve_LU``) for real matrices, written with thunder ops so that the backward is a
trace like any other.

Where eager's formula has no value (the QR of mode ``r`` or of a tall matrix with mode
``complete``), the backward is torch's own of the call, which refuses when it runs, as eager's
backward does (the forward runs).
"""

from __future__ import annotations

from thunder.ops import ltorch, prims
from thunder.ops.ltorch.factorizations import mT
from thunder.ops.meta import ShapeError, device_of, dtype_of, shape_of
from thunder.ops.vjp.table import AUGMENTED, rule_for


def _mm(a, b):
    return prims.matmul(a, b)


def _plus(x, y):
    return y if x is None else x if y is None else prims.add(x, y)


def _solve(A, B, *, upper: bool, left: bool = True, unitriangular: bool = False):
    return prims.solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)


def _narrow(a, dim: int, start: int, length: int):
    return ltorch.narrow(a, dim, start, length)


def _zeros(shape, like):
    return prims.full(tuple(shape), 0, dtype=dtype_of(like), device=device_of(like))


def _with_shape(a, dim: int, size: int) -> tuple:
    s = list(shape_of(a))
    s[dim] = size
    return tuple(s)


@rule_for(prims.solve_triangular)
def _solve_triangular(g, X, A, B, *, upper: bool, left: bool = True, unitriangular: bool = False):
    """X = A^{-1} B: gB = A^{-H} gX, gA = -gB X^H (left; X^H gB on the right) kept to A's
    triangle (strictly, when the diagonal is taken as ones)."""
    gB = _solve(mT(A), g, upper=not upper, left=left, unitriangular=unitriangular)
    gA = prims.neg(_mm(gB, mT(X)) if left else _mm(mT(X), gB))
    gA = ltorch.triu(gA, int(unitriangular)) if upper else ltorch.tril(gA, -int(unitriangular))
    return gA, gB


@rule_for(prims.cholesky)
def _cholesky(g, out, A, *, upper: bool, check_errors: bool):
    """A = L L^H: gA = L^{-H} Φ(L^H gL) L^{-1}, Φ taking the lower triangle with its diagonal
    halved and made Hermitian (eager's ``cholesky_backward``)."""
    gL = g[0]
    if gL is None:
        return (None,)
    L = out[0]
    if upper:
        L, gL = mT(L), mT(gL)
    gA = ltorch.tril(_mm(mT(L), gL))
    gA = prims.mul(prims.add(gA, mT(ltorch.tril(gA, -1))), 0.5)
    gA = _solve(mT(L), gA, upper=True)
    return (_solve(L, gA, upper=False, left=False),)


@rule_for(prims.qr)
def _qr(g, out, A, mode: str):
    """Eager's ``linalg_qr_backward``: for m >= n, gA = (gQ + Q copyltu(triu(gR R^H - Q^H gQ)))
    R^{-H}; for m < n, the leading square block through Q's gradient and the rest through R's."""
    gQ, gR = g
    Q, R = out
    if gQ is None and gR is None:
        return None, None
    m, n = shape_of(A)[-2:]
    if mode == "r" or (mode == "complete" and m > n):
        # no gradient exists (Q not computed, or not unique): eager's backward refuses when it
        # runs, with its own message, and so does this one (torch's backward of the call)
        return prims.custom_op_backward("torch.linalg.qr", (gQ, gR), (A,), {"mode": mode}, (0,))[0], None
    gA = None
    if gR is not None:
        gA = _mm(gR, mT(R))
    if gQ is not None:
        gA = _plus(gA, prims.neg(_mm(mT(Q), gQ)))
    if m >= n:
        upper = ltorch.triu(gA)
        # X + X^H with the diagonal halved: the adjoint of the inverse of sym on triangles
        sym = prims.add(upper, mT(upper))
        sym = prims.sub(sym, ltorch.diag_embed(ltorch.diagonal(upper, 0, -2, -1)))
        gA = _mm(Q, sym)
        if gQ is not None:
            gA = prims.add(gA, gQ)
        return _solve(mT(R), gA, upper=False, left=False), None
    skew = ltorch.tril(prims.sub(prims.neg(gA), mT(prims.neg(gA))))
    gA = _mm(Q, skew)
    gA = _solve(mT(_narrow(R, -1, 0, m)), gA, upper=False, left=False)
    gA = prims.cat([gA, _zeros(_with_shape(R, -1, n - m), gA)], len(shape_of(gA)) - 1)
    if gR is not None:
        gA = prims.add(gA, _mm(Q, gR))
    return gA, None


@rule_for(prims.eigh)
def _eigh(g, out, A, UPLO: str, compute_v: bool):
    """Eager's ``linalg_eig_backward`` for Hermitian A = V diag(L) V^H: gA = V (diag(gL) +
    skew(V^H gV) / 2E) V^H, E_ij = L_j - L_i (1 on the diagonal); with only gL, V diag(gL) V^H."""
    gL, gV = g
    L, V = out
    if gL is None and gV is None:
        return None, None, None
    if not compute_v:
        raise ShapeError("prims.eigh: a gradient needs the eigenvectors (compute_v=True)")
    if gV is None:
        return _mm(prims.mul(V, ltorch.unsqueeze(gL, -2)), mT(V)), None, None
    VhgV = _mm(mT(V), gV)
    VhgV = prims.mul(prims.sub(VhgV, mT(VhgV)), 0.5)
    n = shape_of(L)[-1]
    E = prims.sub(ltorch.unsqueeze(L, -2), ltorch.unsqueeze(L, -1))
    eye = ltorch.diag_embed(prims.full((*shape_of(L)[:-1], n), 1.0, dtype=dtype_of(L), device=device_of(L)))
    gA = prims.div(VhgV, prims.add(E, eye))
    if gL is not None:
        gA = prims.add(
            prims.sub(gA, ltorch.diag_embed(ltorch.diagonal(gA, 0, -2, -1))), ltorch.diag_embed(gL)
        )
    return _mm(V, _mm(gA, mT(V))), None, None


def _svd_backward(gU, gS, gVh, U, S, Vh):
    """Eager's ``svd_backward`` (real case, full-rank A with distinct singular values)."""
    m, n = shape_of(U)[-2], shape_of(Vh)[-1]
    if gU is None and gVh is None:
        if m >= n:
            return _mm(U, prims.mul(ltorch.unsqueeze(gS, -1), Vh))
        return _mm(prims.mul(U, ltorch.unsqueeze(gS, -2)), Vh)
    S2 = prims.mul(S, S)
    k = shape_of(S)[-1]
    eye = ltorch.diag_embed(prims.full((*shape_of(S)[:-1], k), 1.0, dtype=dtype_of(S), device=device_of(S)))
    E = prims.add(prims.sub(ltorch.unsqueeze(S2, -2), ltorch.unsqueeze(S2, -1)), eye)
    row, col = ltorch.unsqueeze(S, -2), ltorch.unsqueeze(S, -1)
    UhgU = None if gU is None else (lambda x: prims.sub(x, mT(x)))(_mm(mT(U), gU))
    VhgV = None if gVh is None else (lambda x: prims.sub(x, mT(x)))(_mm(Vh, mT(gVh)))
    if gU is not None and gVh is not None:
        gA = prims.div(prims.add(prims.mul(UhgU, row), prims.mul(col, VhgV)), E)
    elif gU is not None:
        gA = prims.mul(prims.div(UhgU, E), row)
    else:
        gA = prims.mul(col, prims.div(VhgV, E))
    if gS is not None:
        gA = prims.add(gA, ltorch.diag_embed(gS))
    if m > n and gU is not None:
        gA = _mm(U, gA)
        gUSinv = prims.div(gU, row)
        gA = prims.sub(prims.add(gA, gUSinv), _mm(U, _mm(mT(U), gUSinv)))
        return _mm(gA, Vh)
    if m < n and gVh is not None:
        gA = _mm(gA, Vh)
        SinvgVh = prims.div(gVh, col)
        gA = prims.sub(prims.add(gA, SinvgVh), _mm(_mm(SinvgVh, mT(Vh)), Vh))
        return _mm(U, gA)
    return _mm(U, _mm(gA, Vh)) if m >= n else _mm(_mm(U, gA), Vh)


@rule_for(prims.svd)
def _svd(g, out, A, full_matrices: bool, compute_uv: bool):
    """Through the first k = min(m, n) columns of U and rows of Vh (eager narrows the
    ``full_matrices`` factors the same way)."""
    gU, gS, gVh = g
    U, S, Vh = out
    if gU is None and gS is None and gVh is None:
        return None, None, None
    if not compute_uv:
        raise ShapeError("prims.svd: a gradient needs the singular vectors (compute_uv=True)")
    k = shape_of(S)[-1]
    if full_matrices:
        U, Vh = _narrow(U, -1, 0, k), _narrow(Vh, -2, 0, k)
        gU = None if gU is None else _narrow(gU, -1, 0, k)
        gVh = None if gVh is None else _narrow(gVh, -2, 0, k)
    if gS is None:
        gS = _zeros(shape_of(S), S)
    return _svd_backward(gU, gS, gVh, U, S, Vh), None, None


def lu_backward(gL, gU, P, L, U, pivot: bool):
    """Eager's ``linalg_lu_backward`` for A = P L U (square, wide and tall A)."""
    m, n = shape_of(L)[-2], shape_of(U)[-1]
    k = min(m, n)
    last, second = len(shape_of(L)) - 1, len(shape_of(L)) - 2
    if m == n:
        gA = None if gL is None else ltorch.tril(_mm(mT(L), gL), -1)
        if gU is not None:
            gA = _plus(gA, ltorch.triu(_mm(gU, mT(U))))
        gA = _solve(mT(U), gA, upper=False, left=False)
        gA = _solve(mT(L), gA, upper=True, unitriangular=True)
    elif m < n:
        U1 = _narrow(U, -1, 0, k)
        gA = None if gL is None else _mm(mT(L), gL)
        if gU is not None:
            gA = _plus(gA, prims.neg(_mm(ltorch.triu(gU), mT(U))))
        gA = _solve(mT(U1), ltorch.tril(gA, -1), upper=False, left=False)
        if gU is not None:
            gA = prims.cat(
                [prims.add(gA, ltorch.triu(_narrow(gU, -1, 0, k))), _narrow(gU, -1, k, n - k)], last
            )
        gA = _solve(mT(L), gA, upper=True, unitriangular=True)
        if gU is None:
            gA = prims.cat([gA, _zeros(_with_shape(U, -1, n - k), gA)], last)
    else:
        L1 = _narrow(L, -2, 0, k)
        gA = None if gU is None else _mm(gU, mT(U))
        if gL is not None:
            gA = _plus(gA, prims.neg(_mm(mT(L), ltorch.tril(gL, -1))))
        gA = _solve(mT(L1), ltorch.triu(gA), upper=True, unitriangular=True)
        if gL is not None:
            gA = prims.cat(
                [prims.add(gA, ltorch.tril(_narrow(gL, -2, 0, k), -1)), _narrow(gL, -2, k, m - k)], second
            )
        gA = _solve(mT(U), gA, upper=False, left=False)
        if gL is None:
            gA = prims.cat([gA, _zeros(_with_shape(L, -2, m - k), gA)], second)
    return _mm(P, gA) if pivot else gA


@rule_for(prims.lu)
def _lu(g, out, A, *, pivot: bool):
    _, gL, gU = g
    if gL is None and gU is None:
        return (None,)
    P, L, U = out
    return (lu_backward(gL, gU, P, L, U, pivot),)


@rule_for(prims.lu_factor)
def _lu_factor(g, out, A, *, pivot: bool, check_errors: bool):
    """Eager's ``lu_factor_ex_backward``: the packed gradient read as L's (below the diagonal)
    and U's (on and above it), through ``lu_backward``."""
    gLU = g[0]
    if gLU is None:
        return (None,)
    LU, pivots, _ = out
    P, L, U = prims.lu_unpack(LU, pivots, True, pivot)
    m, n = shape_of(LU)[-2:]
    k = min(m, n)
    return (lu_backward(_narrow(gLU, -1, 0, k), _narrow(gLU, -2, 0, k), P, L, U, pivot),)


@rule_for(prims.lu_unpack)
def _lu_unpack(g, out, LU, pivots, unpack_data: bool = True, unpack_pivots: bool = True):
    """Eager's ``lu_unpack_backward``: L's gradient below the diagonal, U's on and above it,
    each of its own part of a non-square LU."""
    _, gL, gU = g
    if (gL is None and gU is None) or not unpack_data:
        return None, None, None, None
    m, n = shape_of(LU)[-2:]
    k = min(m, n)
    last, second = len(shape_of(LU)) - 1, len(shape_of(LU)) - 2
    if gL is not None and gU is not None:
        if m == n:
            return prims.add(ltorch.tril(gL, -1), ltorch.triu(gU)), None, None, None
        a1 = prims.add(ltorch.tril(_narrow(gL, -2, 0, k), -1), ltorch.triu(_narrow(gU, -1, 0, k)))
        a2 = _narrow(gL, -2, k, m - k) if m > n else _narrow(gU, -1, k, n - k)
        return prims.cat([a1, a2], second if m > n else last), None, None, None
    if gL is not None:
        lower = ltorch.tril(gL, -1)
        if m >= n:
            return lower, None, None, None
        return prims.cat([lower, _zeros(_with_shape(gL, -1, n - m), gL)], last), None, None, None
    upper = ltorch.triu(gU)
    if n >= m:
        return upper, None, None, None
    return prims.cat([upper, _zeros(_with_shape(gU, -2, m - n), gU)], second), None, None, None


@rule_for(prims.cholesky_solve)
def _cholesky_solve(g, X, B, L, upper: bool = False):
    """X = A^{-1} B, A = L L^H: gB = A^{-1} gX and, as eager's ``cholesky_solve_backward``,
    gL = -(gB X^H + X gB^H) L (-U (gB X^H + X gB^H) for A = U^H U), over the whole of L, not
    only the triangle the solve reads."""
    gB = prims.cholesky_solve(g, L, upper)
    sym = _mm(gB, mT(X))
    sym = prims.add(sym, mT(sym))
    gL = prims.neg(_mm(L, sym) if upper else _mm(sym, L))
    return gB, gL


@rule_for(prims.cholesky_inverse)
def _cholesky_inverse(g, R, L, upper: bool = False):
    """R = (L L^H)^{-1}: gL = -R (gR + gR^H) R L (U-side for ``upper``), as eager's
    ``cholesky_inverse_backward``: the whole of L."""
    sym = _mm(R, _mm(prims.add(g, mT(g)), R))
    return (prims.neg(_mm(L, sym) if upper else _mm(sym, L)),)


@rule_for(prims.lu_solve)
def _lu_solve(g, X, LU, pivots, B, *, left: bool = True, adjoint: bool = False):
    """A = P L U packed in LU. B's gradient solves the adjoint system. LU's is eager's
    ``linalg_lu_solve_LU``: A's gradient, -A^{-H} gX X^H (A X = B; -A^{-H} gX^H X for
    X A^H = B) or -X gX^H A^{-H} (A^H X = B; -X^H gX A^{-H} for X A = B), read as L's part
    below the diagonal and U's on and above it, with triangular solves against the factors
    (A^{-H} is never formed)."""
    gB = prims.lu_solve(LU, pivots, g, left=left, adjoint=not adjoint)
    if left != adjoint:
        _, L, U = prims.lu_unpack(LU, pivots, True, False)
        # gR = U^{-H} op(-gX) op(X)^H, op the transpose where X A = B
        gR = _mm(prims.neg(g), mT(X)) if left else _mm(prims.neg(mT(g)), X)
        gR = _solve(mT(U), gR, upper=False)
        gL = _solve(mT(L), _mm(gR, mT(U)), upper=True, unitriangular=True)
        return prims.add(ltorch.tril(gL, -1), ltorch.triu(gR)), None, gB
    P, L, U = prims.lu_unpack(LU, pivots, True, True)
    M = _mm(X, mT(g)) if left else _mm(mT(X), g)
    gR = prims.neg(_mm(mT(P), _mm(M, P)))
    gR = _solve(mT(L), gR, upper=True, left=False, unitriangular=True)
    gU = ltorch.triu(_solve(mT(U), _mm(mT(L), gR), upper=False, left=False))
    return prims.add(ltorch.tril(gR, -1), gU), None, gB


# eigvalsh under grad computes the eigenvectors in its forward and keeps them, as eager's does,
# rather than the backward factorizing the input again
AUGMENTED[ltorch.linalg_eigvalsh] = lambda A, UPLO="L", out=None: prims.eigh(A, UPLO, True)
