"""Matrix factorizations and triangular solves: ``linalg.cholesky``/``cholesky_ex`` and the old
``cholesky``, ``linalg.qr`` and ``qr``, ``linalg.eigh``/``eigvalsh``, ``linalg.svd``/``svdvals``
and ``svd``, ``linalg.lu``/``lu_factor``/``lu_factor_ex``, ``lu`` and ``lu_unpack``,
``linalg.solve_triangular`` and ``triangular_solve``, and the solves and inverse from a factor:
``cholesky_solve``, ``cholesky_inverse``, ``linalg.lu_solve`` and ``lu_solve``.

Each is a factorization prim (``thunder/ops/prims/factorizations.py``: one torch call with the
op's own flags, so values and strides are eager's) after the checks eager makes, named in the
errors as the user called it. Where eager computes only the eigenvalues or singular values
(``eigvalsh``, ``svdvals``) it does so unless the input needs a gradient, whose formula reads
the vectors; these ops do the same. Complex inputs are refused: thunder has no conjugate, which
their gradients are made of.
"""

from __future__ import annotations

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import result_type, torchsymbol
from thunder.ops.meta import ShapeError, device_of, dtype_of, requires_grad_of, shape_of

T = torch.Tensor

linalg_cholesky_ex_result = result_type("linalg_cholesky_ex", ["L", "info"])
linalg_qr_result = result_type("linalg_qr", ["Q", "R"])
qr_result = result_type("qr", ["Q", "R"])
linalg_eigh_result = result_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_svd_result = result_type("linalg_svd", ["U", "S", "Vh"])
svd_result = result_type("svd", ["U", "S", "V"])
linalg_lu_result = result_type("linalg_lu", ["P", "L", "U"])
linalg_lu_factor_result = result_type("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex_result = result_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
lu_unpack_result = result_type("lu_unpack", ["P", "L", "U"])
lu_with_info_result = result_type("_lu_with_info", ["LU", "pivots", "info"])
triangular_solve_result = result_type("triangular_solve", ["solution", "cloned_coefficient"])


def check_matrices(op: str, a, name: str = "A", square: bool = False) -> None:
    """``a`` is a batch of matrices (..., m, n) of a real floating dtype (square if asked)."""
    s = shape_of(a)
    if len(s) < 2:
        raise ShapeError(f"{op}: {name} must be a matrix or a batch of matrices (..., m, n), got shape {s}")
    if square and s[-1] != s[-2]:
        raise ShapeError(f"{op}: {name} must be a batch of square matrices (..., n, n), got shape {s}")
    dt = dtype_of(a)
    if dt.is_complex:
        raise ShapeError(
            f"{op}: complex {name} ({dt}) is not supported: thunder has no conjugate for its gradient"
        )
    if not dt.is_floating_point:
        raise ShapeError(f"{op}: expected a floating point {name}, got {dt}")
    if dt in (torch.bfloat16, torch.float16):
        raise ShapeError(
            f"{op}: {dt} is not supported by torch's linear algebra; convert {name} to float32 first"
        )


def _check_choice(op: str, name: str, value, choices: tuple) -> None:
    if value not in choices:
        raise ShapeError(f"{op}: {name} must be one of {', '.join(map(repr, choices))}, got {value!r}")


def _no_out(op: str, out) -> None:
    if out is not None:
        raise ShapeError(f"{op}: out= is not supported")


def mT(a):
    """The transpose of the last two dims (a view, as eager's ``mT``)."""
    n = len(shape_of(a))
    return prims.transpose(a, (*range(n - 2), n - 1, n - 2))


def _needs_grad(a) -> bool:
    return torch.is_grad_enabled() and requires_grad_of(a)


# -- Cholesky ---------------------------------------------------------------------------------
@torchsymbol(torch.linalg.cholesky_ex, torch_impl="torch.linalg.cholesky_ex", tags=(Tag.MATMUL,))
def linalg_cholesky_ex(A, *, upper: bool = False, check_errors: bool = False, out=None):
    """L (or U = L^H) with A = L L^H for a symmetric positive-definite A (only its lower, or
    upper, triangle is read), and per matrix ``info``: 0, or the order of the first leading
    minor that is not positive-definite (the factor is then not valid)."""
    op = "torch.linalg.cholesky_ex"
    _no_out(op, out)
    check_matrices(op, A, square=True)
    return linalg_cholesky_ex_result(*prims.cholesky(A, upper=upper, check_errors=check_errors))


@torchsymbol(torch.linalg.cholesky, torch_impl="torch.linalg.cholesky", tags=(Tag.MATMUL,))
def linalg_cholesky(A, *, upper: bool = False, out=None):
    """The Cholesky factor; a matrix that is not positive-definite is torch's error when run."""
    op = "torch.linalg.cholesky"
    _no_out(op, out)
    check_matrices(op, A, square=True)
    return prims.cholesky(A, upper=upper, check_errors=True)[0]


@torchsymbol(torch.cholesky, T.cholesky, torch_impl="torch.cholesky", tags=(Tag.MATMUL,))
def cholesky(input, upper: bool = False, *, out=None):
    op = "torch.cholesky"
    _no_out(op, out)
    check_matrices(op, input, "input", square=True)
    return prims.cholesky(input, upper=upper, check_errors=True)[0]


# -- QR ---------------------------------------------------------------------------------------
@torchsymbol(torch.linalg.qr, torch_impl="torch.linalg.qr", tags=(Tag.MATMUL,))
def linalg_qr(A, mode: str = "reduced", *, out=None):
    """Q with orthonormal columns and upper triangular R, A = Q R: (m, k) and (k, n) with
    k = min(m, n) (``reduced``), (m, m) and (m, n) (``complete``), or R alone with an empty Q
    (``r``)."""
    op = "torch.linalg.qr"
    _no_out(op, out)
    check_matrices(op, A)
    _check_choice(op, "mode", mode, ("reduced", "complete", "r"))
    return linalg_qr_result(*prims.qr(A, mode))


@torchsymbol(torch.qr, T.qr, torch_impl="torch.qr", tags=(Tag.MATMUL,))
def qr(input, some: bool = True, *, out=None):
    op = "torch.qr"
    _no_out(op, out)
    check_matrices(op, input, "input")
    return qr_result(*prims.qr(input, "reduced" if some else "complete"))


# -- symmetric eigenvalue problem -------------------------------------------------------------
@torchsymbol(torch.linalg.eigh, torch_impl="torch.linalg.eigh", tags=(Tag.MATMUL,))
def linalg_eigh(A, UPLO: str = "L", *, out=None):
    """The eigenvalues (ascending) and orthonormal eigenvectors (columns) of a symmetric A, of
    which only the lower (``UPLO="L"``) or upper triangle is read."""
    op = "torch.linalg.eigh"
    _no_out(op, out)
    check_matrices(op, A, square=True)
    _check_choice(op, "UPLO", UPLO, ("L", "U"))
    return linalg_eigh_result(*prims.eigh(A, UPLO, True))


@torchsymbol(torch.linalg.eigvalsh, torch_impl="torch.linalg.eigvalsh", tags=(Tag.MATMUL,))
def linalg_eigvalsh(A, UPLO: str = "L", *, out=None):
    op = "torch.linalg.eigvalsh"
    _no_out(op, out)
    check_matrices(op, A, square=True)
    _check_choice(op, "UPLO", UPLO, ("L", "U"))
    return prims.eigh(A, UPLO, _needs_grad(A))[0]


# -- singular value decomposition -------------------------------------------------------------
def _check_driver(op: str, A, driver) -> None:
    if driver is not None and device_of(A).type != "cuda":
        raise ShapeError(
            f"{op}: driver={driver!r} is only for CUDA inputs (torch's rule), got a {device_of(A)} input"
        )


@torchsymbol(torch.linalg.svd, torch_impl="torch.linalg.svd", tags=(Tag.MATMUL,))
def linalg_svd(A, full_matrices: bool = True, *, driver: str | None = None, out=None):
    """U, S (descending), Vh with A = U diag(S) Vh; with ``full_matrices`` U is (m, m) and Vh
    (n, n), else (m, k) and (k, n), k = min(m, n)."""
    op = "torch.linalg.svd"
    _no_out(op, out)
    check_matrices(op, A)
    _check_driver(op, A, driver)
    return linalg_svd_result(*prims.svd(A, full_matrices, True))


@torchsymbol(
    torch.linalg.svdvals,
    torch_impl="torch.linalg.svdvals",
    impl_check=lambda A, *args, **kwargs: not requires_grad_of(A),
    tags=(Tag.MATMUL,),
)
def linalg_svdvals(A, *, driver: str | None = None, out=None):
    """The singular values, descending. Under grad (as eager's) they come with the singular
    vectors the gradient reads, so the call is the SVD prim then, not one torch call, which
    would compute them without the vectors (under the forward's no-grad): values that can
    differ in the last bit from those the backward computes again with the vectors."""
    op = "torch.linalg.svdvals"
    _no_out(op, out)
    check_matrices(op, A)
    _check_driver(op, A, driver)
    return prims.svd(A, False, _needs_grad(A))[1]


@torchsymbol(torch.svd, T.svd, torch_impl="torch.svd", tags=(Tag.MATMUL,))
def svd(input, some: bool = True, compute_uv: bool = True, *, out=None):
    """The old spelling: V rather than Vh (its transpose, a view), and without ``compute_uv``
    U and V of zeros, (m, m) and (n, n), as eager's."""
    op = "torch.svd"
    _no_out(op, out)
    check_matrices(op, input, "input")
    if compute_uv:
        U, S, Vh = prims.svd(input, not some, True)
        return svd_result(U, S, mT(Vh))
    *batch, m, n = shape_of(input)
    S = prims.svd(input, False, _needs_grad(input))[1]
    dt, dev = dtype_of(input), device_of(input)
    U = prims.full((*batch, m, m), 0, dtype=dt, device=dev)
    V = mT(prims.full((*batch, n, n), 0, dtype=dt, device=dev))
    return svd_result(U, S, V)


# -- LU ---------------------------------------------------------------------------------------
@torchsymbol(torch.linalg.lu, torch_impl="torch.linalg.lu", tags=(Tag.MATMUL,))
def linalg_lu(A, *, pivot: bool = True, out=None):
    """P, L, U with A = P L U: P a permutation, L (m, k) unit lower and U (k, n) upper
    triangular, k = min(m, n)."""
    op = "torch.linalg.lu"
    _no_out(op, out)
    check_matrices(op, A)
    return linalg_lu_result(*prims.lu(A, pivot=pivot))


@torchsymbol(torch.linalg.lu_factor_ex, torch_impl="torch.linalg.lu_factor_ex", tags=(Tag.MATMUL,))
def linalg_lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False, out=None):
    """L and U in one matrix (L's unit diagonal implied), the 1-based row swaps, and per matrix
    ``info``: 0, or the index of the first zero on U's diagonal."""
    op = "torch.linalg.lu_factor_ex"
    _no_out(op, out)
    check_matrices(op, A)
    return linalg_lu_factor_ex_result(*prims.lu_factor(A, pivot=pivot, check_errors=check_errors))


@torchsymbol(torch.linalg.lu_factor, torch_impl="torch.linalg.lu_factor", tags=(Tag.MATMUL,))
def linalg_lu_factor(A, *, pivot: bool = True, out=None):
    op = "torch.linalg.lu_factor"
    _no_out(op, out)
    check_matrices(op, A)
    LU, pivots, _ = prims.lu_factor(A, pivot=pivot, check_errors=True)
    return linalg_lu_factor_result(LU, pivots)


@torchsymbol(torch.lu, T.lu, torch_impl="torch.lu", tags=(Tag.MATMUL,))
def lu(A, pivot: bool = True, get_infos: bool = False, out=None):
    """The old spelling of ``linalg.lu_factor`` (``get_infos``: of ``lu_factor_ex``)."""
    op = "torch.lu"
    _no_out(op, out)
    check_matrices(op, A)
    LU, pivots, info = prims.lu_factor(A, pivot=pivot, check_errors=not get_infos)
    return lu_with_info_result(LU, pivots, info) if get_infos else (LU, pivots)


@torchsymbol(torch.lu_unpack, torch_impl="torch.lu_unpack", tags=(Tag.MATMUL,))
def lu_unpack(LU_data, LU_pivots, unpack_data: bool = True, unpack_pivots: bool = True, *, out=None):
    """P, L, U from ``lu_factor``'s result; what is not unpacked is an empty tensor."""
    op = "torch.lu_unpack"
    _no_out(op, out)
    check_matrices(op, LU_data, "LU_data")
    *batch, m, n = shape_of(LU_data)
    if dtype_of(LU_pivots) is not torch.int32 or shape_of(LU_pivots) != (*batch, min(m, n)):
        raise ShapeError(
            f"{op}: LU_pivots must be int32 of shape {(*batch, min(m, n))} for LU_data of shape "
            f"{shape_of(LU_data)}, got {dtype_of(LU_pivots)} of shape {shape_of(LU_pivots)}"
        )
    return lu_unpack_result(*prims.lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots))


# -- triangular solves ------------------------------------------------------------------------
def _check_solve(op: str, A, B, left: bool, names: tuple[str, str] = ("A", "B")) -> None:
    """A square A (named ``names[0]`` in the errors) and B (``names[1]``) of one dtype that fit
    A X = B (``left``) or X A = B."""
    na, nb = names
    check_matrices(op, A, na, square=True)
    check_matrices(op, B, nb)
    sa, sb = shape_of(A), shape_of(B)
    if dtype_of(A) is not dtype_of(B):
        raise ShapeError(f"{op}: {na} and {nb} must have one dtype, got {dtype_of(A)} and {dtype_of(B)}")
    if (sb[-2] if left else sb[-1]) != sa[-1]:
        eq = "AX = B" if left else "XA = B"
        raise ShapeError(f"{op}: shapes of {na} {sa} and {nb} {sb} do not fit the equation {eq}")


@torchsymbol(torch.linalg.solve_triangular, torch_impl="torch.linalg.solve_triangular", tags=(Tag.MATMUL,))
def linalg_solve_triangular(A, B, *, upper: bool, left: bool = True, unitriangular: bool = False, out=None):
    """X with A X = B (``left``) or X A = B for a triangular A: only its upper (``upper``) or
    lower triangle is read, and its diagonal taken as ones if ``unitriangular``."""
    op = "torch.linalg.solve_triangular"
    _no_out(op, out)
    _check_solve(op, A, B, left)
    return prims.solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)


@torchsymbol(
    torch.triangular_solve, T.triangular_solve, torch_impl="torch.triangular_solve", tags=(Tag.MATMUL,)
)
def triangular_solve(
    b, A, upper: bool = True, transpose: bool = False, unitriangular: bool = False, *, out=None
):
    """The old spelling: X with op(A) X = b, op(A) = A^T if ``transpose``, and a copy of A."""
    op = "torch.triangular_solve"
    _no_out(op, out)
    _check_solve(op, A, b, True)
    coefficient = mT(A) if transpose else A
    x = prims.solve_triangular(
        coefficient, b, upper=upper != transpose, left=True, unitriangular=unitriangular
    )
    return triangular_solve_result(x, prims.clone(A))


# -- solves and the inverse from a factor -----------------------------------------------------
@torchsymbol(torch.cholesky_solve, T.cholesky_solve, torch_impl="torch.cholesky_solve", tags=(Tag.MATMUL,))
def cholesky_solve(input, input2, upper: bool = False, *, out=None):
    """X with A X = ``input`` for A = L L^H given its Cholesky factor L = ``input2`` (U^H U with
    U = ``input2`` if ``upper``): only that triangle of ``input2`` is read."""
    op = "torch.cholesky_solve"
    _no_out(op, out)
    _check_solve(op, input2, input, True, ("input2", "input"))
    return prims.cholesky_solve(input, input2, upper)


@torchsymbol(
    torch.cholesky_inverse, T.cholesky_inverse, torch_impl="torch.cholesky_inverse", tags=(Tag.MATMUL,)
)
def cholesky_inverse(input, upper: bool = False, *, out=None):
    """(L L^H)^{-1} from the Cholesky factor L = ``input`` ((U^H U)^{-1} if ``upper``)."""
    op = "torch.cholesky_inverse"
    _no_out(op, out)
    check_matrices(op, input, "input", square=True)
    return prims.cholesky_inverse(input, upper)


def _check_pivots(op: str, LU, pivots, names: tuple[str, str] = ("LU", "pivots")) -> None:
    s = shape_of(LU)[:-1]
    if dtype_of(pivots) is not torch.int32 or shape_of(pivots) != s:
        raise ShapeError(
            f"{op}: {names[1]} must be int32 of shape {s} for {names[0]} of shape {shape_of(LU)}, got "
            f"{dtype_of(pivots)} of shape {shape_of(pivots)}"
        )


@torchsymbol(torch.linalg.lu_solve, torch_impl="torch.linalg.lu_solve", tags=(Tag.MATMUL,))
def linalg_lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False, out=None):
    """X with A X = B (``left``) or X A = B, A given as ``lu_factor`` factors it (its packed L
    and U, and the row swaps); A^H in its place if ``adjoint``."""
    op = "torch.linalg.lu_solve"
    _no_out(op, out)
    _check_solve(op, LU, B, left, ("LU", "B"))
    _check_pivots(op, LU, pivots)
    return prims.lu_solve(LU, pivots, B, left=left, adjoint=adjoint)


@torchsymbol(torch.lu_solve, T.lu_solve, torch_impl="torch.lu_solve", tags=(Tag.MATMUL,))
def lu_solve(input, LU_data, LU_pivots, *, out=None):
    """The old spelling: X with A X = ``input``."""
    op = "torch.lu_solve"
    _no_out(op, out)
    _check_solve(op, LU_data, input, True, ("LU_data", "input"))
    _check_pivots(op, LU_data, LU_pivots, ("LU_data", "LU_pivots"))
    return prims.lu_solve(LU_data, LU_pivots, input)
