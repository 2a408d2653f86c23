"""Matrix factorizations, triangular solves and the solves and inverse from a factor
(``thunder/ops/ltorch/factorizations.py``, their prims and their gradient rules in
``thunder/ops/vjp/factorizations.py``), and the matrix norms of the singular values
(``linalg.matrix_norm``, ``linalg.norm``): values, strides and gradients equal eager's for
batches, over several calls at two sizes; gradcheck passes; bad arguments are errors that name
the op and the value."""

from __future__ import annotations

import pytest
import torch
from support.against_eager import check_calls

import thunder

f64 = torch.float64


def spd(*shape):
    a = torch.randn(*shape, dtype=f64)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1], dtype=f64)


def tri(*shape, upper=False):
    a = torch.randn(*shape, dtype=f64) + 4 * torch.eye(shape[-1], dtype=f64)
    return a.triu() if upper else a.tril()


def _calls(make, sizes=(3, 5), per_size=2):
    """Inputs for several calls: ``per_size`` fresh draws at each size."""
    return [make(n) for n in sizes for _ in range(per_size)]


SQUARE = {
    "cholesky": (lambda a: torch.linalg.cholesky(a), lambda n: [spd(2, n, n)]),
    "cholesky_upper": (lambda a: torch.linalg.cholesky(a, upper=True), lambda n: [spd(2, n, n)]),
    "cholesky_ex": (lambda a: torch.linalg.cholesky_ex(a, upper=True), lambda n: [spd(3, n, n)]),
    "torch.cholesky": (lambda a: torch.cholesky(a), lambda n: [spd(2, n, n)]),
    "eigh": (lambda a: torch.linalg.eigh(a), lambda n: [spd(2, n, n)]),
    "eigh_upper": (lambda a: torch.linalg.eigh(a, UPLO="U"), lambda n: [torch.randn(2, n, n, dtype=f64)]),
    "eigvalsh": (lambda a: torch.linalg.eigvalsh(a), lambda n: [spd(2, n, n)]),
    "eigh_vectors_only": (lambda a: torch.linalg.eigh(a)[1], lambda n: [spd(n, n)]),
}
RECTANGULAR = {
    "qr": (lambda a: torch.linalg.qr(a), None),
    "qr_complete": (lambda a: torch.linalg.qr(a, mode="complete"), "wide"),
    "torch.qr": (lambda a: torch.qr(a), None),
    "svd": (lambda a: torch.linalg.svd(a, full_matrices=False), None),
    "svd_full": (lambda a: torch.linalg.svd(a), None),
    "svd_u_only": (lambda a: torch.linalg.svd(a, full_matrices=False).U, None),
    "svdvals": (lambda a: torch.linalg.svdvals(a), None),
    "torch.svd": (lambda a: torch.svd(a), None),
    "torch.svd_no_uv": (lambda a: torch.svd(a, compute_uv=False), None),
    "lu": (lambda a: torch.linalg.lu(a), None),
    "lu_factor": (lambda a: torch.linalg.lu_factor(a), None),
    "lu_factor_ex": (lambda a: torch.linalg.lu_factor_ex(a), None),
    "torch.lu": (lambda a: torch.lu(a, get_infos=True), None),
    "lu_unpack": (lambda a: torch.lu_unpack(*torch.linalg.lu_factor(a)), None),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", list(SQUARE))
def test_square_factorizations_equal_eager_over_calls_at_two_sizes(name):
    fn, make = SQUARE[name]
    check_calls(fn, _calls(make))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("shape", ["tall", "wide", "square"])
@pytest.mark.parametrize("name", list(RECTANGULAR))
def test_rectangular_factorizations_equal_eager_over_calls_at_two_sizes(name, shape):
    fn, only = RECTANGULAR[name]
    if only is not None and shape != only:
        pytest.skip(f"{name} is differentiable for {only} matrices only")
    extra = {"tall": (2, 0), "wide": (0, 2), "square": (0, 0)}[shape]
    check_calls(fn, _calls(lambda n: [torch.randn(2, n + extra[0], n + extra[1], dtype=f64)]))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_solve_triangular_equals_eager_with_batch_broadcasting(left, upper, unitriangular):
    def fn(a, b):
        return torch.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unitriangular)

    def make(n):
        b = torch.randn(3, n, 2, dtype=f64) if left else torch.randn(3, 2, n, dtype=f64)
        return [tri(n, n, upper=upper), b]  # A's batch broadcasts against B's

    check_calls(fn, _calls(make))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("transpose", [True, False])
def test_triangular_solve_equals_eager(transpose):
    check_calls(
        lambda b, a: torch.triangular_solve(b, a, upper=False, transpose=transpose),
        _calls(lambda n: [torch.randn(2, n, 3, dtype=f64), tri(2, n, n)]),
    )


def lu_of(*shape):
    return torch.linalg.lu_factor(
        torch.randn(*shape, dtype=f64) + 2 * shape[-1] * torch.eye(shape[-1], dtype=f64)
    )


FROM_A_FACTOR = {
    "cholesky_solve": (
        lambda b, factor: torch.cholesky_solve(b, factor),
        lambda n: [torch.randn(3, n, 2, dtype=f64), torch.linalg.cholesky(spd(n, n))],
    ),
    "cholesky_solve_upper": (
        lambda b, u: torch.cholesky_solve(b, u, upper=True),
        lambda n: [torch.randn(n, 2, dtype=f64), torch.linalg.cholesky(spd(2, n, n), upper=True)],
    ),
    "cholesky_inverse": (
        lambda factor: torch.cholesky_inverse(factor),
        lambda n: [torch.linalg.cholesky(spd(2, n, n))],
    ),
    "cholesky_inverse_upper": (
        lambda u: torch.cholesky_inverse(u, upper=True),
        lambda n: [torch.linalg.cholesky(spd(n, n), upper=True)],
    ),
    "lu_solve": (
        lambda b, lu, p: torch.lu_solve(b, lu, p),
        lambda n: [torch.randn(2, n, 3, dtype=f64), *lu_of(2, n, n)],
    ),
    **{
        f"linalg.lu_solve_left={left}_adjoint={adjoint}": (
            lambda lu, p, b, left=left, adjoint=adjoint: torch.linalg.lu_solve(
                lu, p, b, left=left, adjoint=adjoint
            ),
            lambda n, left=left: [
                *lu_of(n, n),
                torch.randn(3, n, 2, dtype=f64) if left else torch.randn(3, 2, n, dtype=f64),
            ],
        )
        for left in (True, False)
        for adjoint in (True, False)
    },
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", list(FROM_A_FACTOR))
def test_solves_and_inverse_from_a_factor_equal_eager_with_batch_broadcasting(name):
    """The gradient of the factor is eager's: over the whole of a Cholesky factor (eager's
    formula does not keep it to the triangle the solve reads), and of both of LU's parts."""
    fn, make = FROM_A_FACTOR[name]
    check_calls(fn, _calls(make))


@pytest.mark.parametrize("ord", ["nuc", 2, -2])
@pytest.mark.parametrize(
    "dim, keepdim",
    [((-2, -1), False), ((-1, 0), True), ((2, 0), False)],
    ids=["last-two", "moved-keepdim", "moved"],
)
def test_matrix_norms_of_the_singular_values_equal_eager(ord, dim, keepdim):
    """Values and gradients, also of the largest and smallest singular value, whose gradient
    finds it among the singular values again (the forward computes them as the backward does)."""
    check_calls(
        lambda a: torch.linalg.matrix_norm(a, ord, dim, keepdim),
        _calls(lambda n: [torch.randn(2, n, n + 1, dtype=f64)]),
    )
    check_calls(
        lambda a: torch.linalg.norm(a, ord, dim, keepdim),
        _calls(lambda n: [torch.randn(2, n + 1, n, dtype=f64)]),
    )


def test_singular_value_norms_under_grad_compute_the_vectors_as_eager():
    """Under grad, eager's svdvals computes the singular vectors too; so does the compiled
    forward (the SVD prim, not one svdvals call), and without grad it is one call."""
    jfn = thunder.jit(lambda a: torch.linalg.matrix_norm(a, 2))
    jfn(torch.randn(3, 4, dtype=f64))
    assert "torch.linalg.matrix_norm(" in str(thunder.last_traces(jfn)[-1])
    jfn(torch.randn(3, 4, dtype=f64, requires_grad=True))
    forward = str(thunder.last_traces(jfn)[-1])
    assert "_linalg_svd.default(a, False, True)" in forward and "torch.linalg.matrix_norm(" not in forward


def _symmetric(fn):
    """``fn`` of the symmetric part: the ops that read one triangle of a symmetric input have
    gradients for symmetric perturbations, which is what finite differences then make."""
    return lambda a: fn((a + a.mT) / 2)


@pytest.mark.parametrize(
    "fn, make",
    [
        (_symmetric(torch.linalg.cholesky), lambda: spd(2, 4, 4)),
        (_symmetric(lambda a: torch.linalg.eigh(a).eigenvalues), lambda: spd(4, 4)),
        (lambda a: torch.linalg.qr(a), lambda: torch.randn(2, 3, 5, dtype=f64)),
        (lambda a: torch.linalg.svd(a, full_matrices=False).S, lambda: torch.randn(5, 3, dtype=f64)),
        (lambda a: torch.linalg.lu(a)[1:], lambda: torch.randn(2, 4, 3, dtype=f64)),
        (lambda a: torch.linalg.lu_factor(a)[0], lambda: torch.randn(3, 4, dtype=f64)),
        (
            lambda a: torch.linalg.solve_triangular(a.triu() + 3 * torch.eye(3, dtype=f64), a, upper=True),
            lambda: torch.randn(3, 3, dtype=f64),
        ),
        # a Cholesky factor's triangle only: finite differences of the other are zero, where
        # eager's formula (and thunder's) gives the gradient over the whole matrix
        (
            lambda b, a: torch.cholesky_solve(b, a.tril() + 3 * torch.eye(3, dtype=f64)),
            lambda: (torch.randn(2, 3, 2, dtype=f64), torch.randn(3, 3, dtype=f64)),
        ),
        (
            lambda a: torch.cholesky_inverse(a.triu() + 3 * torch.eye(3, dtype=f64), upper=True),
            lambda: torch.randn(2, 3, 3, dtype=f64),
        ),
        (
            lambda lu, b: torch.linalg.lu_solve(lu, torch.arange(1, 4, dtype=torch.int32), b, adjoint=True),
            lambda: (
                torch.randn(3, 3, dtype=f64) + 6 * torch.eye(3, dtype=f64),
                torch.randn(3, 2, dtype=f64),
            ),
        ),
        (lambda a: torch.linalg.matrix_norm(a, -2), lambda: torch.randn(2, 4, 3, dtype=f64)),
        (lambda a: torch.linalg.matrix_norm(a, "nuc", (0, 2)), lambda: torch.randn(3, 2, 4, dtype=f64)),
    ],
    ids=[
        "cholesky",
        "eigvals",
        "qr",
        "singular-values",
        "lu",
        "lu_factor",
        "solve_triangular",
        "cholesky_solve",
        "cholesky_inverse",
        "lu_solve",
        "matrix_norm-2",
        "matrix_norm-nuc",
    ],
)
def test_gradients_pass_gradcheck(fn, make):
    """Finite differences agree with the compiled backward."""
    inputs = make()
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    assert torch.autograd.gradcheck(thunder.jit(fn), tuple(t.requires_grad_() for t in inputs))


def test_qr_without_q_runs_forward_and_refuses_the_gradient_as_eager():
    a = torch.randn(5, 3, dtype=f64, requires_grad=True)
    jfn = thunder.jit(lambda x: torch.linalg.qr(x, mode="r"))
    q, r = jfn(a)
    torch.testing.assert_close(r, torch.linalg.qr(a, mode="r").R)
    assert q.shape == (0,)
    with pytest.raises(RuntimeError, match="mode='r'"):
        r.sum().backward()


def test_eigvalsh_skips_the_eigenvectors_without_a_gradient():
    jfn = thunder.jit(lambda x: torch.linalg.eigvalsh(x))
    jfn(spd(4, 4))
    assert "False" in str(thunder.last_traces(jfn)[0]).split("eigh(")[1].split(")")[0]
    jfn(spd(4, 4).requires_grad_())
    assert "True" in str(thunder.last_traces(jfn)[0]).split("eigh(")[1].split(")")[0]


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: torch.linalg.cholesky(torch.randn(3, 4)),
            r"torch.linalg.cholesky: A must be a batch of square.*\(3, 4\)",
        ),
        (lambda: torch.linalg.eigh(torch.randn(4)), r"torch.linalg.eigh: A must be a matrix.*\(4,\)"),
        (
            lambda: torch.linalg.eigh(torch.randn(3, 3), UPLO="X"),
            r"torch.linalg.eigh: UPLO must be one of 'L', 'U', got 'X'",
        ),
        (
            lambda: torch.linalg.qr(torch.randn(3, 3), mode="full"),
            r"torch.linalg.qr: mode must be one of .*got 'full'",
        ),
        (
            lambda: torch.linalg.svd(torch.ones(3, 3, dtype=torch.int64)),
            r"torch.linalg.svd: expected a floating point A, got torch.int64",
        ),
        (lambda: torch.linalg.lu(torch.randn(3, 3, dtype=torch.complex64)), r"torch.linalg.lu: complex A"),
        (
            lambda: torch.linalg.solve_triangular(torch.eye(3), torch.randn(4, 2), upper=True),
            r"torch.linalg.solve_triangular: shapes of A \(3, 3\) and B \(4, 2\) do not fit the equation AX = B",
        ),
        (
            lambda: torch.cholesky_solve(torch.randn(4, 2), torch.eye(3)),
            r"torch.cholesky_solve: shapes of input2 \(3, 3\) and input \(4, 2\) do not fit the equation AX = B",
        ),
        (
            lambda: torch.linalg.lu_solve(torch.eye(3), torch.ones(3, dtype=torch.int64), torch.randn(3, 2)),
            r"torch.linalg.lu_solve: pivots must be int32 of shape \(3,\) .* got torch.int64",
        ),
        (
            lambda: torch.linalg.matrix_norm(torch.randn(3, 3), 3),
            r"torch.linalg.matrix_norm: matrix norm ord=3 is not supported: one of 'fro', 'nuc'",
        ),
        (
            lambda: torch.linalg.matrix_norm(torch.randn(3, 3, dtype=torch.bfloat16), "nuc"),
            r"torch.linalg.matrix_norm: torch.bfloat16 is not supported by torch's linear algebra",
        ),
        (
            lambda: torch.linalg.matrix_norm(torch.randn(3, 3, dtype=f64), dtype=torch.float32),
            r"torch.linalg.matrix_norm: A of torch.float64 does not convert to dtype=torch.float32",
        ),
    ],
    ids=[
        "not-square",
        "not-a-matrix",
        "uplo",
        "qr-mode",
        "integer",
        "complex",
        "solve-shapes",
        "cholesky_solve-shapes",
        "lu_solve-pivots",
        "matrix_norm-ord",
        "matrix_norm-low-precision-svd",
        "matrix_norm-narrowing-dtype",
    ],
)
def test_bad_arguments_are_errors_naming_the_op_and_the_value(call, message):
    with pytest.raises(Exception, match=message):
        thunder.jit(lambda: call())()
