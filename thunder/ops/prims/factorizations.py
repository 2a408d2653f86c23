"""Matrix factorizations and the solves they serve as primitives: ``cholesky``, ``qr``, ``eigh``,
``svd``, ``lu``, ``lu_factor``, ``lu_unpack``, ``solve_triangular``, and the solves and inverse
from a factor: ``cholesky_solve``, ``cholesky_inverse`` and ``lu_solve``.

No composition of elementwise prims computes a factorization, so each is a prim of its own, one
call of the torch function it names (with that function's flags, so its results are eager's,
strides included). Each takes a batch of matrices (..., m, n); the torch-language ops
(``thunder/ops/ltorch/factorizations.py``) check the arguments and name the user's op in their
errors. The gradients are rules in ``thunder/ops/vjp/factorizations.py``.
"""

from __future__ import annotations

import torch

from thunder.ops.meta import broadcast_shapes, dtype_of, new_tensor, shape_of
from thunder.ops.prims.declare import _torch_prim


def _real_of(dtype: torch.dtype) -> torch.dtype:
    return dtype.to_real() if dtype.is_complex else dtype


def _out(a, shape, dtype=None, differentiable: bool = True):
    """A result of ``a``'s device (and dtype unless given); a non-differentiable one (pivots,
    a permutation, an error code) never requires grad."""
    dt = dtype or dtype_of(a)
    return new_tensor(tuple(shape), dt, a.meta_device, *((a,) if differentiable else ()))


def _cholesky_meta(a, *, upper: bool, check_errors: bool):
    """(L or U, info): the factor and, per matrix, 0 or the order of the first minor that is
    not positive-definite."""
    s = shape_of(a)
    return _out(a, s), _out(a, s[:-2], torch.int32, False)


cholesky = _torch_prim("cholesky", _cholesky_meta, "torch.linalg.cholesky_ex")


def _qr_meta(a, mode: str):
    *batch, m, n = shape_of(a)
    k = min(m, n)
    if mode == "r":  # Q is not computed: an empty tensor
        return _out(a, (0,)), _out(a, (*batch, k, n))
    q_cols = m if mode == "complete" else k
    return _out(a, (*batch, m, q_cols)), _out(a, (*batch, q_cols, n))


qr = _torch_prim("qr", _qr_meta, "torch.linalg.qr")


def _eigh_meta(a, UPLO: str, compute_v: bool):
    """(eigenvalues (real, ascending), eigenvectors or an empty tensor)."""
    s = shape_of(a)
    return _out(a, s[:-1], _real_of(dtype_of(a))), _out(a, s if compute_v else (0,))


eigh = _torch_prim("eigh", _eigh_meta, "torch.ops.aten._linalg_eigh.default")


def _svd_meta(a, full_matrices: bool, compute_uv: bool):
    """(U, S (real, descending), Vh); U and Vh empty tensors without ``compute_uv``."""
    *batch, m, n = shape_of(a)
    k = min(m, n)
    s = _out(a, (*batch, k), _real_of(dtype_of(a)))
    if not compute_uv:
        return _out(a, (0,)), s, _out(a, (0,))
    u, v = (m, n) if full_matrices else (k, k)
    return _out(a, (*batch, m, u)), s, _out(a, (*batch, v, n))


svd = _torch_prim("svd", _svd_meta, "torch.ops.aten._linalg_svd.default")


def _lu_meta(a, *, pivot: bool):
    """(P, L, U) with P @ L @ U = A: P a permutation (no gradient), L (m, k) unit lower
    triangular, U (k, n) upper triangular."""
    *batch, m, n = shape_of(a)
    k = min(m, n)
    return _out(a, (*batch, m, m), differentiable=False), _out(a, (*batch, m, k)), _out(a, (*batch, k, n))


lu = _torch_prim("lu", _lu_meta, "torch.linalg.lu")


def _lu_factor_meta(a, *, pivot: bool, check_errors: bool):
    """(LU, pivots, info): L below the diagonal and U on and above it in one matrix, the
    1-based row swaps (int32) and, per matrix, 0 or the index of the first zero pivot."""
    *batch, m, n = shape_of(a)
    return (
        _out(a, shape_of(a)),
        _out(a, (*batch, min(m, n)), torch.int32, False),
        _out(a, batch, torch.int32, False),
    )


lu_factor = _torch_prim("lu_factor", _lu_factor_meta, "torch.linalg.lu_factor_ex")


def _lu_unpack_meta(LU, pivots, unpack_data: bool = True, unpack_pivots: bool = True):
    *batch, m, n = shape_of(LU)
    k = min(m, n)
    p = _out(LU, (*batch, m, m) if unpack_pivots else (0,), differentiable=False)
    if not unpack_data:
        return p, _out(LU, (0,)), _out(LU, (0,))
    return p, _out(LU, (*batch, m, k)), _out(LU, (*batch, k, n))


lu_unpack = _torch_prim("lu_unpack", _lu_unpack_meta, "torch.lu_unpack")


def _solve_triangular_meta(a, b, *, upper: bool, left: bool = True, unitriangular: bool = False):
    """X with A X = B (``left``) or X A = B, A triangular; the batch dims broadcast."""
    sa, sb = shape_of(a), shape_of(b)
    batch = broadcast_shapes(sa[:-2], sb[:-2], op="prims.solve_triangular")
    return new_tensor(batch + sb[-2:], dtype_of(b), b.meta_device, a, b)


solve_triangular = _torch_prim("solve_triangular", _solve_triangular_meta, "torch.linalg.solve_triangular")


def _cholesky_solve_meta(b, factor, upper: bool = False):
    """X with A X = B for A = L L^H (U^H U if ``upper``); the batch dims broadcast."""
    batch = broadcast_shapes(shape_of(b)[:-2], shape_of(factor)[:-2], op="prims.cholesky_solve")
    return new_tensor(batch + shape_of(b)[-2:], dtype_of(b), b.meta_device, b, factor)


cholesky_solve = _torch_prim("cholesky_solve", _cholesky_solve_meta, "torch.cholesky_solve")


def _cholesky_inverse_meta(factor, upper: bool = False):
    """(L L^H)^{-1} (or (U^H U)^{-1}) from the Cholesky factor."""
    return _out(factor, shape_of(factor))


cholesky_inverse = _torch_prim("cholesky_inverse", _cholesky_inverse_meta, "torch.cholesky_inverse")


def _lu_solve_meta(LU, pivots, b, *, left: bool = True, adjoint: bool = False):
    """X with A X = B (``left``) or X A = B, A = P L U given packed as ``lu_factor`` gives it
    (A^H for ``adjoint``); the batch dims of LU (and pivots) and B broadcast."""
    batch = broadcast_shapes(shape_of(LU)[:-2], shape_of(b)[:-2], op="prims.lu_solve")
    return new_tensor(batch + shape_of(b)[-2:], dtype_of(b), b.meta_device, LU, b)


lu_solve = _torch_prim("lu_solve", _lu_solve_meta, "torch.linalg.lu_solve")
