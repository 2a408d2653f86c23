"""Contractions, products with vectors, cross products, distances and norms: ``tensordot``
(one matmul between reshaped operands), ``mv``/``addmv``, ``addr``, ``vdot``, ``kron``,
``addbmm`` (one matmul over the batch), ``chain_matmul``/``linalg.multi_dot`` (the cheapest
order of the chain), ``cross``/``linalg.cross``, ``cdist`` (pairwise p-norm distances),
``linalg.norm``, ``linalg.matrix_norm`` and ``renorm``."""

from __future__ import annotations

import math

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import alias, torchsymbol
from thunder.ops.ltorch import reductions as red
from thunder.ops.ltorch.factories import in_graph_of
from thunder.ops.ltorch.factorizations import check_matrices, linalg_svdvals
from thunder.ops.ltorch.nn import _scaled_sum
from thunder.ops.ltorch.shape import _slice_dim, unsqueeze
from thunder.ops.meta import (
    LOW_PRECISION_DTYPES,
    ShapeError,
    broadcast_shapes,
    canonical_dim,
    device_of,
    dtype_of,
    is_tensor,
    requires_grad_of,
    shape_of,
)

T = torch.Tensor


@torchsymbol(torch.tensordot, torch_impl="torch.tensordot", tags=(Tag.MATMUL,))
def tensordot(a, b, dims=2, out=None):
    """Sum over ``dims`` (the last n of ``a`` with the first n of ``b``, or two lists of
    dims): the contracted dims are moved together and flattened into one matmul."""
    op = "torch.tensordot"
    if out is not None:
        raise ShapeError(f"{op}: out= is not supported")
    sa, sb = shape_of(a), shape_of(b)
    if is_tensor(dims):
        raise ShapeError(f"{op}: dims given as a tensor are data-dependent; pass an int or two lists of ints")
    if isinstance(dims, int):
        if dims < 0 or dims > min(len(sa), len(sb)):
            raise ShapeError(f"{op}: dims={dims} is out of range for shapes {sa} and {sb}")
        da, db = list(range(len(sa) - dims, len(sa))), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    da = [canonical_dim(d, len(sa), op) for d in da]
    db = [canonical_dim(d, len(sb), op) for d in db]
    if len(da) != len(db) or any(sa[i] != sb[j] for i, j in zip(da, db)):
        raise ShapeError(f"{op}: contracted dims {da} of {sa} and {db} of {sb} do not match")
    free_a = [i for i in range(len(sa)) if i not in da]
    free_b = [j for j in range(len(sb)) if j not in db]
    k = math.prod(sa[i] for i in da)

    def arrange(x, s, order, shape):
        if order != list(range(len(s))):
            x = prims.transpose(x, tuple(order))
        return prims.reshape(x, shape) if tuple(shape) != shape_of(x) else x

    a2 = arrange(a, sa, free_a + da, (math.prod(sa[i] for i in free_a), k))
    b2 = arrange(b, sb, db + free_b, (k, math.prod(sb[j] for j in free_b)))
    out_shape = tuple(sa[i] for i in free_a) + tuple(sb[j] for j in free_b)
    return prims.reshape(prims.matmul(a2, b2), out_shape)


def _safe_root(s, p: float):
    """s ** (1/p) with a zero gradient where s is 0 (a zero distance), as torch's cdist has."""
    zero = prims.eq(s, 0)
    root = prims.sqrt(prims.where(zero, 1.0, s)) if p == 2 else prims.pow(prims.where(zero, 1.0, s), 1.0 / p)
    return prims.where(zero, 0.0, root)


@torchsymbol(torch.cdist, torch_impl="torch.cdist", tags=(Tag.REDUCTION,))
def cdist(x1, x2, p: float = 2.0, compute_mode: str | None = None):
    """Distances between the rows of ``x1`` (..., P, M) and of ``x2`` (..., R, M): the
    p-norm of every difference, (..., P, R)."""
    op = "torch.cdist"
    s1, s2 = shape_of(x1), shape_of(x2)
    if len(s1) < 2 or len(s2) < 2 or s1[-1] != s2[-1]:
        raise ShapeError(f"{op}: expected (..., P, M) and (..., R, M) with the same M, got {s1} and {s2}")
    if p < 0:
        raise ShapeError(f"{op}: p must be non-negative, got {p}")
    dt = dtype_of(x1)
    if not dt.is_floating_point:
        raise ShapeError(f"{op}: expected floating point inputs, got {dt}")
    batch = broadcast_shapes(s1[:-2], s2[:-2], op=op)
    P, R, M = s1[-2], s2[-2], s1[-1]
    nb = len(batch)
    grid = batch + (P, R, M)
    a = prims.broadcast_in_dim(x1, grid, tuple(range(nb - len(s1) + 2, nb)) + (nb, nb + 2))
    b = prims.broadcast_in_dim(x2, grid, tuple(range(nb - len(s2) + 2, nb)) + (nb + 1, nb + 2))
    if dt in LOW_PRECISION_DTYPES:
        a, b = prims.convert_element_type(a, torch.float32), prims.convert_element_type(b, torch.float32)
    mag = prims.abs(prims.sub(a, b))
    last = (nb + 2,)
    if p == 0:  # a count: in the inputs' graph with a zero gradient, as torch's
        count = prims.sum(prims.convert_element_type(prims.ne(mag, 0), dtype_of(mag)), last)
        out = in_graph_of(count, prims.sum(mag, last))
    elif p == 1:
        out = prims.sum(mag, last)
    elif p == math.inf:
        out = (
            prims.amax(mag, last)
            if M
            else prims.full(batch + (P, R), 0.0, dtype=dtype_of(mag), device=device_of(mag))
        )
    elif p == 2:
        out = _safe_root(prims.sum(prims.mul(mag, mag), last), 2)
    else:
        out = _safe_root(prims.sum(prims.pow(mag, p), last), p)
    return out if dt not in LOW_PRECISION_DTYPES else prims.convert_element_type(out, dt)


# -- products with vectors and matrices ----------------------------------------------------
def _same_dtype(op: str, *tensors) -> torch.dtype:
    dts = [dtype_of(t) for t in tensors]
    if any(d is not dts[0] for d in dts):
        raise ShapeError(f"{op}: expected tensors of one dtype, got {', '.join(str(d) for d in dts)}")
    return dts[0]


def _check_scales(op: str, dt: torch.dtype, beta, alpha) -> None:
    """Integer results take integer ``beta`` and ``alpha`` (a float would change the dtype)."""
    if dt.is_floating_point or dt.is_complex or dt is torch.bool:
        return
    for name, v in (("beta", beta), ("alpha", alpha)):
        if not isinstance(v, int):
            raise ShapeError(f"{op}: {name}={v!r} must be an integer for {dt} inputs")


def _check_into(op: str, input, shape: tuple) -> None:
    if broadcast_shapes(shape_of(input), shape, op=op) != shape:
        raise ShapeError(
            f"{op}: input of shape {shape_of(input)} does not broadcast to the result's shape {shape}"
        )


@torchsymbol(torch.mv, T.mv, torch_impl="torch.mv", tags=(Tag.MATMUL,))
def mv(input, vec):
    op = "torch.mv"
    sa, sv = shape_of(input), shape_of(vec)
    if len(sa) != 2 or len(sv) != 1 or sa[1] != sv[0]:
        raise ShapeError(f"{op}: expected a matrix (n, m) and a vector (m,), got shapes {sa} and {sv}")
    _same_dtype(op, input, vec)
    return prims.matmul(input, vec)


@torchsymbol(torch.addmv, T.addmv, torch_impl="torch.addmv", tags=(Tag.MATMUL,))
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``; with ``beta == 0`` the input is ignored (even nan)."""
    op = "torch.addmv"
    dt = _same_dtype(op, input, mat, vec)
    _check_scales(op, dt, beta, alpha)
    prod = mv(mat, vec)
    _check_into(op, input, shape_of(prod))
    return _scaled_sum(input, prod, beta, alpha)


@torchsymbol(torch.addr, T.addr, torch_impl="torch.addr", tags=(Tag.MATMUL,))
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``; for bools, ``and`` and ``or``."""
    op = "torch.addr"
    s1, s2 = shape_of(vec1), shape_of(vec2)
    if len(s1) != 1 or len(s2) != 1:
        raise ShapeError(f"{op}: expected two vectors, got shapes {s1} and {s2}")
    shape = (s1[0], s2[0])
    _check_into(op, input, shape)
    outer = prims.mul(prims.broadcast_in_dim(vec1, shape, (0,)), prims.broadcast_in_dim(vec2, shape, (1,)))
    dt = dtype_of(outer)
    if dt is torch.bool and dtype_of(input) is torch.bool:
        if not alpha:
            outer = prims.full(shape, False, dtype=torch.bool, device=device_of(outer))
        return prims.logical_or(input, outer) if beta else outer
    _check_scales(op, dt, beta, alpha)
    return _scaled_sum(input, outer, beta, alpha)


@torchsymbol(torch.vdot, T.vdot, torch_impl="torch.vdot", tags=(Tag.MATMUL,))
def vdot(a, b):
    op = "torch.vdot"
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) != 1 or sa != sb:
        raise ShapeError(f"{op}: expected two vectors of the same length, got shapes {sa} and {sb}")
    dt = _same_dtype(op, a, b)
    if dt.is_complex:
        raise ShapeError(f"{op}: complex inputs (conjugated by vdot) are not supported, got {dt}")
    return prims.matmul(a, b)


@torchsymbol(torch.kron, T.kron, torch_impl="torch.kron", tags=(Tag.MATMUL,))
def kron(a, b):
    """Every product ``a[i] * b[j]`` at ``i * shape(b) + j``: the operands broadcast against
    each other on interleaved dims (a's dims first in each pair), then pairs are merged."""
    sa, sb = shape_of(a), shape_of(b)
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    grid = tuple(x for pair in zip(pa, pb) for x in pair)
    wa = prims.broadcast_in_dim(a, grid, tuple(2 * i for i in range(n - len(sa), n)))
    wb = prims.broadcast_in_dim(b, grid, tuple(2 * i + 1 for i in range(n - len(sb), n)))
    out = prims.mul(wa, wb)
    merged = tuple(x * y for x, y in zip(pa, pb))
    return prims.reshape(out, merged) if merged != grid else out


@torchsymbol(torch.addbmm, T.addbmm, torch_impl="torch.addbmm", tags=(Tag.MATMUL,))
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``: the sum over the batch is the
    contraction of one matmul, (n, B * p) @ (B * p, m)."""
    op = "torch.addbmm"
    s1, s2 = shape_of(batch1), shape_of(batch2)
    if len(s1) != 3 or len(s2) != 3 or s1[0] != s2[0] or s1[2] != s2[1]:
        raise ShapeError(f"{op}: expected batches (B, n, p) and (B, p, m), got shapes {s1} and {s2}")
    dt = _same_dtype(op, input, batch1, batch2)
    _check_scales(op, dt, beta, alpha)
    nb, n, p = s1
    m = s2[2]
    a = prims.reshape(prims.transpose(batch1, (1, 0, 2)), (n, nb * p))
    prod = prims.matmul(a, prims.reshape(batch2, (nb * p, m)))
    _check_into(op, input, (n, m))
    return _scaled_sum(input, prod, beta, alpha)


def _chain(mats):
    """The product of 2-D ``mats`` in the cheapest order, as torch chooses it: for three, the
    closed form (``(AB)C`` unless ``A(BC)`` is strictly cheaper); for more, the classic dynamic
    programme over the dims, the first cheapest split winning."""
    dims = [shape_of(mats[0])[0]] + [shape_of(m)[1] for m in mats]
    n = len(mats)
    split = {}
    if n == 3:
        a, b, c, d = dims
        split[0, 2] = 0 if a * c * (b + d) > b * d * (a + c) else 1
    else:
        cost = {(i, i): 0 for i in range(n)}
        for length in range(1, n):
            for i in range(n - length):
                j = i + length
                for k in range(i, j):
                    c = cost[i, k] + cost[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1]
                    if (i, j) not in cost or c < cost[i, j]:
                        cost[i, j], split[i, j] = c, k

    def product(i, j):
        if i == j:
            return mats[i]
        k = split.get((i, j), i)
        return prims.matmul(product(i, k), product(k + 1, j))

    return product(0, n - 1)


def _check_chain(op: str, mats) -> None:
    for i, (x, y) in enumerate(zip(mats, mats[1:])):
        if shape_of(x)[-1] != shape_of(y)[0]:
            raise ShapeError(
                f"{op}: tensors {i} and {i + 1} cannot be multiplied (shapes {shape_of(x)} and {shape_of(y)})"
            )


@torchsymbol(torch.chain_matmul, torch_impl="torch.chain_matmul", tags=(Tag.MATMUL,))
def chain_matmul(*matrices):
    op = "torch.chain_matmul"
    if not matrices:
        raise ShapeError(f"{op}: expected one or more matrices")
    for i, m in enumerate(matrices):
        if len(shape_of(m)) != 2:
            raise ShapeError(f"{op}: expected 2-D tensors, tensor {i} has shape {shape_of(m)}")
    _same_dtype(op, *matrices)
    _check_chain(op, matrices)
    return prims.clone(matrices[0]) if len(matrices) == 1 else _chain(list(matrices))


@torchsymbol(torch.linalg.multi_dot, torch_impl="torch.linalg.multi_dot", tags=(Tag.MATMUL,))
def multi_dot(tensors):
    """A chain of matrices whose first may be a row vector and last a column vector (1-D),
    their dims dropped from the result."""
    op = "torch.linalg.multi_dot"
    ts = list(tensors)
    if len(ts) < 2:
        raise ShapeError(f"{op}: expected at least 2 tensors, got {len(ts)}")
    for i, t in enumerate(ts):
        allowed = (1, 2) if i in (0, len(ts) - 1) else (2,)
        if len(shape_of(t)) not in allowed:
            raise ShapeError(
                f"{op}: tensor {i} must be {' or '.join(f'{k}-D' for k in allowed)}, got {shape_of(t)}"
            )
    _same_dtype(op, *ts)
    _check_chain(op, ts)
    if len(ts) == 2:
        return prims.matmul(ts[0], ts[1])
    first, last = shape_of(ts[0]), shape_of(ts[-1])
    if len(first) == 1:
        ts[0] = prims.broadcast_in_dim(ts[0], (1,) + first, (1,))
    if len(last) == 1:
        ts[-1] = prims.broadcast_in_dim(ts[-1], last + (1,), (0,))
    out = _chain(ts)
    shape = first[:-1] + last[1:]
    return prims.reshape(out, shape) if shape != shape_of(out) else out


# -- cross product ----------------------------------------------------------------------------
@torchsymbol(torch.cross, T.cross, torch_impl="torch.cross", tags=(Tag.ELEMENTWISE,))
def cross(input, other, dim: int | None = None):
    """The cross product of 3-vectors along ``dim`` (the operands broadcast); without ``dim``,
    torch.cross takes the first dim of size 3 of ``input`` (torch.linalg.cross: the last)."""
    op = "torch.cross"
    sa, sb = shape_of(input), shape_of(other)
    if len(sa) != len(sb) or not sa:
        raise ShapeError(
            f"{op}: expected inputs with the same number of dimensions, got shapes {sa} and {sb}"
        )
    _same_dtype(op, input, other)
    if dim is None:
        d = next((i for i, n in enumerate(sa) if n == 3), None)
        if d is None:
            raise ShapeError(f"{op}: no dimension of size 3 in input of shape {sa}")
    else:
        d = canonical_dim(dim, len(sa), op)
    if sa[d] != 3 or sb[d] != 3:
        raise ShapeError(f"{op}: dimension {d} must have length 3, got shapes {sa} and {sb}")
    broadcast_shapes(sa, sb, op=op)
    a0, a1, a2 = (_slice_dim(input, d, i, i + 1) for i in range(3))
    b0, b1, b2 = (_slice_dim(other, d, i, i + 1) for i in range(3))
    parts = [
        prims.sub(prims.mul(a1, b2), prims.mul(a2, b1)),
        prims.sub(prims.mul(a2, b0), prims.mul(a0, b2)),
        prims.sub(prims.mul(a0, b1), prims.mul(a1, b0)),
    ]
    return prims.cat(parts, d)


alias(lambda input, other, *, dim=-1: cross(input, other, dim), torch.linalg.cross)


# -- norms ------------------------------------------------------------------------------------
def _matrix_norm(a, ord, dims: tuple, keepdim: bool, op: str):
    """Of the matrices in ``dims`` (two distinct, non-negative): 'fro'; the orders that are sums
    and extrema of magnitudes (1, -1: over columns; inf, -inf: over rows); and those of the
    singular values ('nuc' their sum, 2 and -2 the largest and smallest), computed as eager
    computes them, by ``linalg.svdvals`` of the matrices moved to the last two dims."""
    if ord == "fro":
        return red.vector_norm(a, 2, dims, keepdim)
    if ord in ("nuc", 2, -2):
        n = len(shape_of(a))
        check_matrices(op, a)
        rest = tuple(i for i in range(n) if i not in dims)
        moved = a if rest + dims == tuple(range(n)) else prims.transpose(a, rest + dims)
        sv = linalg_svdvals(moved)
        out = red.sum(sv, -1) if ord == "nuc" else (red.amax if ord == 2 else red.amin)(sv, -1)
        return unsqueeze(unsqueeze(out, min(dims)), max(dims)) if keepdim else out
    if ord not in (1, -1, math.inf, -math.inf):
        raise ShapeError(
            f"{op}: matrix norm ord={ord!r} is not supported: one of 'fro', 'nuc', inf, -inf, 1, -1, 2, -2"
        )
    summed, other = (dims[0], dims[1]) if ord in (1, -1) else (dims[1], dims[0])
    s = red.sum(prims.abs(a), summed, True)
    if shape_of(s)[other] == 0:
        if ord < 0:
            raise ShapeError(f"{op}: ord={ord} of a matrix with an empty dimension has no value")
        s = prims.full(
            tuple(1 if i == other else n for i, n in enumerate(shape_of(s))),
            0,
            dtype=dtype_of(s),
            device=device_of(s),
        )
    out = (red.amax if ord > 0 else red.amin)(s, other, True)
    if keepdim:
        return out
    return prims.squeeze(out, tuple(sorted(dims))) if shape_of(out) else out


def _whole_unless_singular_values_under_grad(A, ord=None, *args, **kwargs) -> bool:
    """Whether the torch executor may run the norm as one torch call: not for the orders of
    the singular values of an input that needs a gradient. Run whole, under the forward's
    no-grad, torch computes them without the singular vectors, which can differ in the last
    bit from those the backward computes with them (and the gradient of 2 and -2 finds the
    extremum among them again); in its parts the forward computes them as eager does under
    grad, as the backward computes them again."""
    return not (ord in ("nuc", 2, -2) and requires_grad_of(A))


@torchsymbol(
    torch.linalg.norm,
    torch_impl="torch.linalg.norm",
    impl_check=_whole_unless_singular_values_under_grad,
    tags=(Tag.REDUCTION,),
    name="linalg_norm",
)
def linalg_norm(A, ord=None, dim=None, keepdim: bool = False, *, dtype: torch.dtype | None = None):
    """A vector norm (over one dim, or all when neither ``ord`` nor ``dim`` is given) or a
    matrix norm (over two dims, or a 2-D input given ``ord``)."""
    op = "torch.linalg.norm"
    if dtype is not None and dtype is not dtype_of(A):
        A = prims.convert_element_type(A, dtype)
    dt = dtype_of(A)
    if not (dt.is_floating_point or dt.is_complex):
        raise ShapeError(f"{op}: expected a floating point input, got {dt}")
    n = len(shape_of(A))
    dims = (dim,) if isinstance(dim, int) else tuple(dim) if dim is not None else None
    if dims is not None and len(dims) not in (1, 2):
        raise ShapeError(f"{op}: dim must have 1 or 2 entries, got {dim!r}")
    if ord is None:
        return red.vector_norm(A, 2, dims, keepdim)
    if dims is None:
        if n not in (1, 2):
            raise ShapeError(f"{op}: with ord={ord!r} and no dim the input must be 1-D or 2-D, got {n}-D")
        dims = tuple(range(n))
    if len(dims) == 1:
        if isinstance(ord, str):
            raise ShapeError(f"{op}: ord={ord!r} is a matrix norm; it needs two dims, got dim={dim!r}")
        return red.vector_norm(A, ord, dims, keepdim)
    d0, d1 = (canonical_dim(d, n, op) for d in dims)
    if d0 == d1:
        raise ShapeError(f"{op}: the two dims must differ, got {dim!r}")
    return _matrix_norm(A, ord, (d0, d1), keepdim, op)


@torchsymbol(
    torch.linalg.matrix_norm,
    torch_impl="torch.linalg.matrix_norm",
    impl_check=_whole_unless_singular_values_under_grad,
    tags=(Tag.REDUCTION,),
)
def linalg_matrix_norm(
    A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype: torch.dtype | None = None, out=None
):
    """The norm of the matrices in the two dims ``dim`` (the last two by default), of order
    'fro', 'nuc', inf, -inf, 1, -1, 2 or -2; ``dtype`` converts A first."""
    op = "torch.linalg.matrix_norm"
    if out is not None:
        raise ShapeError(f"{op}: out= is not supported")
    dt = dtype_of(A)
    if not (dt.is_floating_point or dt.is_complex):
        raise ShapeError(f"{op}: expected a floating point A, got {dt}")
    if dtype is not None and torch.promote_types(dt, dtype) is not dtype:
        raise ShapeError(f"{op}: A of {dt} does not convert to dtype={dtype} without narrowing")
    if dtype is not None and dtype is not dt:
        A = prims.convert_element_type(A, dtype)
    n = len(shape_of(A))
    if n < 2:
        raise ShapeError(f"{op}: A must have at least 2 dimensions, got shape {shape_of(A)}")
    if isinstance(dim, int) or len(dim) != 2:
        raise ShapeError(f"{op}: dim must be a pair of dims, got {dim!r}")
    d0, d1 = (canonical_dim(d, n, op) for d in dim)
    if d0 == d1:
        raise ShapeError(f"{op}: the two dims must differ, got {dim!r}")
    if isinstance(ord, str) and ord not in ("fro", "nuc"):
        raise ShapeError(f"{op}: ord={ord!r} is not supported: one of 'fro', 'nuc' or a number")
    return _matrix_norm(A, ord, (d0, d1), keepdim, op)


@torchsymbol(torch.renorm, T.renorm, torch_impl="torch.renorm", tags=(Tag.NORM,))
def renorm(input, p, dim: int, maxnorm):
    """Each slice along ``dim`` whose p-norm exceeds ``maxnorm`` scaled down to it (by
    ``maxnorm / (norm + 1e-7)``). The norm and factor are computed in float32 for
    bfloat16/float16 inputs, the factor then cast to the input's dtype, as torch's kernel."""
    op = "torch.renorm"
    s = shape_of(input)
    dt = dtype_of(input)
    if not (dt.is_floating_point or dt.is_complex):
        raise ShapeError(f"{op}: expected a floating point input, got {dt}")
    if len(s) < 2:
        raise ShapeError(f"{op}: input needs at least 2 dimensions, got shape {s}")
    if not p > 0:
        raise ShapeError(f"{op}: p must be positive, got {p}")
    if maxnorm < 0:
        raise ShapeError(f"{op}: maxnorm must be >= 0, got {maxnorm}")
    d = canonical_dim(dim, len(s), op)
    rest = tuple(i for i in range(len(s)) if i != d)
    acc = torch.float32 if dt in LOW_PRECISION_DTYPES else None
    norm = red.vector_norm(input, p, rest, True, dtype=acc)
    factor = prims.where(prims.gt(norm, maxnorm), prims.div(maxnorm, prims.add(norm, 1e-7)), 1.0)
    if acc is not None:
        factor = prims.convert_element_type(factor, dt)
    return prims.mul(input, factor)
