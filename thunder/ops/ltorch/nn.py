"""Neural-network ops: matmul family, linear, embedding, one_hot, prelu, attention, pad, glu
(norms: normalization.py, einsum: einsum.py, losses: losses.py, dropout: dropout.py), and the
casts and per-channel views those modules share.

Each is a composition of prims and other torch-language ops; most name the torch function
that computes the whole op at once (``torch_impl``) so the torch executor can run it in
one call. bfloat16/float16 inputs are normalised and attended in float32, as torch does.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import alias, torchsymbol
from thunder.ops.ltorch import reductions as red
from thunder.ops.ltorch import shape as sh
from thunder.ops.ltorch.dropout import dropout
from thunder.ops.meta import (
    LOW_PRECISION_DTYPES,
    ShapeError,
    canonical_dim,
    device_of,
    dtype_of,
    shape_of,
)

T = torch.Tensor


def _cast(a, dtype):
    return a if a is None or dtype is None or dtype_of(a) is dtype else prims.convert_element_type(a, dtype)


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in LOW_PRECISION_DTYPES else dtype


def _swap_last(a):
    n = len(shape_of(a))
    perm = list(range(n))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return prims.transpose(a, tuple(perm))


def _expand_to(a, shape):
    """Broadcast ``a`` (numpy-style, aligned on the right) to ``shape``."""
    s = shape_of(a)
    if s == tuple(shape):
        return a
    return prims.broadcast_in_dim(a, tuple(shape), tuple(range(len(shape) - len(s), len(shape))))


def _channel_view(p, ndim: int, dim: int = 1):
    """A per-channel ``(C,)`` parameter viewed as ``(1, C, 1, ...)`` against ``ndim`` dims."""
    shape = [1] * ndim
    shape[dim] = shape_of(p)[0]
    return prims.broadcast_in_dim(p, tuple(shape), (dim,))


# -- matrix products ------------------------------------------------------------------------
@torchsymbol(torch.matmul, T.matmul, T.__matmul__, torch_impl="torch.matmul", tags=(Tag.MATMUL,))
def matmul(a, b):
    return prims.matmul(a, b)


alias(lambda a, b: matmul(b, a), T.__rmatmul__)


@torchsymbol()
def batched_matmul(a, b):
    """``matmul`` of two operands of 4 or more dims with the same batch dims, as eager computes
    it, with the operands it multiplies: (``a @ b``, ``a`` as ``(B, M, K)``, ``b`` as
    ``(B, K, N)``), each operand reshaped to 3 dims (a copy where its batch dims do not merge:
    attention's heads split off a projection) and the product viewed back. The grad pass uses
    it as matmul's forward (``AUGMENTED``) so that the backward multiplies the 3-dim operands
    the forward made, as eager's does, instead of copying the operands again for each of its
    two matmuls. No user code calls it."""
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) < 4 or sa[:-2] != sb[:-2] or sa[-1] != sb[-2]:
        raise ShapeError(
            f"batched_matmul: expected operands of 4 or more dims with the same batch dims, got {sa} and {sb}"
        )
    batch = math.prod(sa[:-2])
    a3 = prims.reshape(a, (batch, *sa[-2:]))
    b3 = prims.reshape(b, (batch, *sb[-2:]))
    return prims.reshape(prims.matmul(a3, b3), (*sa[:-1], sb[-1])), a3, b3


@torchsymbol(torch.mm, T.mm, torch_impl="torch.mm", tags=(Tag.MATMUL,))
def mm(a, b):
    if len(shape_of(a)) != 2 or len(shape_of(b)) != 2:
        raise ShapeError(f"torch.mm: expected 2-D tensors, got shapes {shape_of(a)} and {shape_of(b)}")
    return prims.matmul(a, b)


@torchsymbol(torch.bmm, T.bmm, torch_impl="torch.bmm", tags=(Tag.MATMUL,))
def bmm(a, b):
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) != 3 or len(sb) != 3 or sa[0] != sb[0]:
        raise ShapeError(f"torch.bmm: expected 3-D tensors with the same batch size, got {sa} and {sb}")
    return prims.matmul(a, b)


@torchsymbol(torch.dot, T.dot, torch_impl="torch.dot", tags=(Tag.MATMUL,))
def dot(a, b):
    if len(shape_of(a)) != 1 or len(shape_of(b)) != 1:
        raise ShapeError(f"torch.dot: expected 1-D tensors, got shapes {shape_of(a)} and {shape_of(b)}")
    return prims.matmul(a, b)


@torchsymbol(torch.inner, T.inner, torch_impl="torch.inner", tags=(Tag.MATMUL,))
def inner(a, b):
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        return prims.mul(a, b)
    if len(sa) == 1 and len(sb) == 1:
        return prims.matmul(a, b)
    a2 = prims.reshape(a, (math.prod(sa[:-1]), sa[-1]))
    b2 = prims.reshape(b, (math.prod(sb[:-1]), sb[-1]))
    return prims.reshape(prims.matmul(a2, _swap_last(b2)), sa[:-1] + sb[:-1])


@torchsymbol(torch.outer, T.outer, torch.ger, T.ger, torch_impl="torch.outer", tags=(Tag.MATMUL,))
def outer(a, b):
    (n,), (m,) = shape_of(a), shape_of(b)
    return prims.mul(prims.broadcast_in_dim(a, (n, m), (0,)), prims.broadcast_in_dim(b, (n, m), (1,)))


def _scaled_sum(inp, prod, beta, alpha):
    if alpha != 1:
        prod = prims.mul(prod, alpha)
    if beta == 0:  # torch ignores ``input`` (even nan) when beta is 0
        return prod
    return prims.add(prims.mul(inp, beta) if beta != 1 else inp, prod)


@torchsymbol(torch.addmm, T.addmm, torch_impl="torch.addmm", tags=(Tag.MATMUL,))
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    return _scaled_sum(input, mm(mat1, mat2), beta, alpha)


@torchsymbol(torch.baddbmm, T.baddbmm, torch_impl="torch.baddbmm", tags=(Tag.MATMUL,))
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha)


@torchsymbol(F.linear, torch_impl="torch.nn.functional.linear", tags=(Tag.MATMUL,))
def linear(input, weight, bias=None):
    return prims.linear(input, weight, bias)


# -- embedding, one_hot ---------------------------------------------------------------------
@torchsymbol(F.embedding, torch_impl="torch.nn.functional.embedding", tags=(Tag.INDEXING,))
def embedding(
    input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False
):
    """``weight[input]``; ``padding_idx`` only changes gradients, so it is accepted as is."""
    if max_norm is not None:
        raise ShapeError("F.embedding: max_norm renormalises the weight in place and is not supported")
    return prims.take(weight, input, 0)


@torchsymbol(F.embedding_bag, torch_impl="torch.nn.functional.embedding_bag", tags=(Tag.INDEXING,))
def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights=None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
):
    """Sums, means or maxima of bags of embeddings: a 2-D input is one bag per row; a 1-D
    input is cut into bags at ``offsets``, whose values move the cuts but not the number of
    bags. Each index's bag (the number of offsets at or before it, less one) is where its
    embedding is scattered to; empty bags give zeros and ``padding_idx`` entries count in no
    bag, as in torch."""
    op = "F.embedding_bag"
    if max_norm is not None:
        raise ShapeError(f"{op}: max_norm renormalises the weight in place and is not supported")
    if mode not in ("sum", "mean", "max"):
        raise ShapeError(f"{op}: mode has to be one of sum, mean or max, got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise ShapeError(f"{op}: per_sample_weights is only supported for mode='sum', got mode={mode!r}")
    sw, si = shape_of(weight), shape_of(input)
    if len(sw) != 2:
        raise ShapeError(f"{op}: weight has to be a 2-D tensor, got shape {sw}")
    if per_sample_weights is not None and shape_of(per_sample_weights) != si:
        raise ShapeError(
            f"{op}: per_sample_weights {shape_of(per_sample_weights)} must have the input's shape {si}"
        )
    dev = device_of(weight)
    n = math.prod(si)
    if len(si) == 2:
        if offsets is not None:
            raise ShapeError(f"{op}: if input is 2-D, offsets has to be None")
        bags = si[0]
        pos = prims.iota(n, start=0, step=1, dtype=torch.int64, device=dev)
        bag = prims.floor_divide(pos, max(si[1], 1))
    elif len(si) == 1:
        if offsets is None or len(shape_of(offsets)) != 1:
            raise ShapeError(f"{op}: a 1-D input needs 1-D offsets")
        k = shape_of(offsets)[0]
        bags = k - 1 if include_last_offset else k
        pos = prims.iota(n, start=0, step=1, dtype=dtype_of(offsets), device=dev)
        started = prims.le(
            prims.broadcast_in_dim(offsets, (n, k), (1,)), prims.broadcast_in_dim(pos, (n, k), (0,))
        )
        bag = prims.sub(prims.sum(started, (1,)), 1)
    else:
        raise ShapeError(f"{op}: input has to be a 1-D or 2-D tensor, got shape {si}")
    idx = prims.reshape(input, (n,)) if len(si) != 1 else input
    valid = prims.logical_and(prims.ge(bag, 0), prims.lt(bag, bags))
    if padding_idx is not None:
        pad = padding_idx + sw[0] if padding_idx < 0 else padding_idx
        valid = prims.logical_and(valid, prims.ne(idx, pad))
    slot = prims.where(valid, bag, bags)  # entries in no bag go to a spare row, dropped below
    rows = prims.take(weight, idx, 0)
    if per_sample_weights is not None:
        psw = prims.reshape(per_sample_weights, (n,)) if len(si) != 1 else per_sample_weights
        rows = prims.mul(rows, prims.broadcast_in_dim(psw, (n, sw[1]), (0,)))
    slots = prims.broadcast_in_dim(slot, (n, sw[1]), (0,))
    zeros = prims.full((bags + 1, sw[1]), 0, dtype=dtype_of(weight), device=dev)
    if mode == "max":
        out = prims.scatter_reduce(zeros, 0, slots, rows, "amax", False)
    else:
        out = prims.scatter_add(zeros, 0, slots, rows)
    out = prims.slice(out, (0, 0), (bags, sw[1]), (1, 1))
    if mode == "mean":
        ones = prims.full((n,), 1, dtype=dtype_of(weight), device=dev)
        count = prims.scatter_add(
            prims.full((bags + 1,), 0, dtype=dtype_of(weight), device=dev), 0, slot, ones
        )
        count = prims.maximum(prims.slice(count, (0,), (bags,), (1,)), 1)
        out = prims.div(out, prims.broadcast_in_dim(count, (bags, sw[1]), (0,)))
    return out


@torchsymbol(F.one_hot, torch_impl="torch.nn.functional.one_hot", tags=(Tag.INDEXING,))
def one_hot(tensor, num_classes: int = -1):
    if num_classes < 0:
        raise ShapeError("F.one_hot: num_classes=-1 depends on the data; pass num_classes")
    s = shape_of(tensor)
    classes = prims.iota(num_classes, start=0, step=1, dtype=torch.int64, device=device_of(tensor))
    out_shape = (*s, num_classes)
    hit = prims.eq(
        prims.broadcast_in_dim(tensor, out_shape, tuple(range(len(s)))),
        prims.broadcast_in_dim(classes, out_shape, (len(s),)),
    )
    return prims.convert_element_type(hit, torch.int64)


@torchsymbol(F.prelu, torch_impl="torch.nn.functional.prelu", tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def prelu(input, weight):
    """``x`` where positive, ``weight * x`` elsewhere; a per-channel weight runs along dim 1
    (an input of fewer dims has one channel)."""
    s, w = shape_of(input), shape_of(weight)
    k = math.prod(w)
    if k != 1:
        channels = s[1] if len(s) > 1 else 1
        if k != channels:
            raise ShapeError(f"F.prelu: {k} weights for {channels} channels of input shape {s}")
        weight = prims.reshape(weight, (k,)) if w != (k,) else weight
        weight = _channel_view(weight, len(s), 1)
    elif len(w) > len(s) or w:
        weight = prims.reshape(weight, ())
    return prims.where(prims.gt(input, 0), input, prims.mul(weight, input))


# -- attention ------------------------------------------------------------------------------
def _repeat_heads(a, n_rep: int):
    """(..., H, S, E) -> (..., H * n_rep, S, E), each head repeated n_rep times in place."""
    if n_rep == 1:
        return a
    s = shape_of(a)
    wide = s[:-3] + (s[-3], n_rep) + s[-2:]
    dims = tuple(range(len(s) - 2)) + (len(s) - 1, len(s))
    return prims.reshape(prims.broadcast_in_dim(a, wide, dims), s[:-3] + (s[-3] * n_rep,) + s[-2:])


def _tril_mask(rows: int, cols: int, device, diagonal: int = 0):
    """Bool (rows, cols): True where col - row <= diagonal."""
    r = prims.broadcast_in_dim(
        prims.iota(rows, start=diagonal, step=1, dtype=torch.int64, device=device), (rows, cols), (0,)
    )
    c = prims.broadcast_in_dim(
        prims.iota(cols, start=0, step=1, dtype=torch.int64, device=device), (rows, cols), (1,)
    )
    return prims.le(c, r)


@torchsymbol(
    F.scaled_dot_product_attention,
    torch_impl="torch.nn.functional.scaled_dot_product_attention",
    tags=(Tag.ATTENTION,),
)
def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale=None,
    enable_gqa=False,
):
    """softmax(q @ k^T * scale + mask) @ v; fully masked rows give 0, as torch's safe softmax."""
    op = "F.scaled_dot_product_attention"
    sq, sk, sv = shape_of(query), shape_of(key), shape_of(value)
    if len(sq) < 2 or sq[-1] != sk[-1] or sk[-2] != sv[-2]:
        raise ShapeError(f"{op}: query {sq}, key {sk} and value {sv} do not fit together")
    if is_causal and attn_mask is not None:
        raise ShapeError(f"{op}: give either attn_mask or is_causal, not both")
    dt = dtype_of(query)
    compute = _compute_dtype(dt)
    q, k, v = (_cast(t, compute) for t in (query, key, value))
    if enable_gqa and len(sq) >= 3 and sq[-3] != sk[-3]:
        if sq[-3] % sk[-3]:
            raise ShapeError(f"{op}: {sq[-3]} query heads are not a multiple of {sk[-3]} key heads")
        k, v = _repeat_heads(k, sq[-3] // sk[-3]), _repeat_heads(v, sq[-3] // sk[-3])
    L, S = sq[-2], sk[-2]
    scale = 1.0 / math.sqrt(sq[-1]) if scale is None else scale
    scores = prims.mul(prims.matmul(q, _swap_last(k)), scale)
    if is_causal:
        attn_mask = _tril_mask(L, S, device_of(query))
    if attn_mask is not None:
        if dtype_of(attn_mask) is torch.bool:
            scores = prims.where(attn_mask, scores, -math.inf)
        else:
            scores = prims.add(scores, _cast(attn_mask, compute))
    d = len(shape_of(scores)) - 1
    m = red.keep_dims(prims.amax(scores, (d,)), shape_of(scores), (d,))
    m = prims.where(prims.eq(m, -math.inf), 0, m)  # a fully masked row: exp(-inf - 0) = 0
    e = prims.exp(prims.sub(scores, m))
    s = red.keep_dims(prims.sum(e, (d,)), shape_of(e), (d,))
    probs = prims.div(e, prims.where(prims.eq(s, 0), 1, s))
    if dropout_p > 0:
        probs = dropout(probs, dropout_p, True)
    return _cast(prims.matmul(probs, v), dt)


# -- padding, glu ---------------------------------------------------------------------------
def _pad_index(n: int, lo: int, hi: int, mode: str, device):
    """Source positions along a dimension of length n padded by (lo, hi) in ``mode``."""
    i = prims.iota(n + lo + hi, start=-lo, step=1, dtype=torch.int64, device=device)
    if mode == "replicate":
        return prims.clamp(i, 0, n - 1)
    if mode == "circular":
        return prims.remainder(i, n)
    if mode == "reflect":
        return prims.sub(n - 1, prims.abs(prims.sub(n - 1, prims.abs(i))))
    raise ShapeError(f"F.pad: mode {mode!r} is not supported")


@torchsymbol(F.pad, torch_impl="torch.nn.functional.pad", tags=(Tag.SHAPE,))
def pad(input, pad, mode: str = "constant", value=None):
    s = shape_of(input)
    if len(pad) % 2 or len(pad) // 2 > len(s):
        raise ShapeError(f"F.pad: padding {tuple(pad)} must have an even length of at most 2 * {len(s)}")
    out = input
    for j in range(len(pad) // 2):
        d = len(s) - 1 - j
        lo, hi = pad[2 * j], pad[2 * j + 1]
        if lo == 0 and hi == 0:
            continue
        n = shape_of(out)[d]
        if mode != "constant":
            if mode == "circular" and (lo < 0 or hi < 0):  # as torch: crop, then wrap what is left
                out = sh._slice_dim(out, d, max(-lo, 0), n - max(-hi, 0))
                n, lo, hi = shape_of(out)[d], max(lo, 0), max(hi, 0)
            out = prims.take(out, _pad_index(n, lo, hi, mode, device_of(input)), d)
            continue
        # negative padding crops
        start, stop = max(-lo, 0), n - max(-hi, 0)
        if start or stop != n:
            out = sh._slice_dim(out, d, start, stop)
        parts = []
        for width in (max(lo, 0), max(hi, 0)):
            shape = list(shape_of(out))
            shape[d] = width
            parts.append(
                prims.full(
                    tuple(shape),
                    0 if value is None else value,
                    dtype=dtype_of(input),
                    device=device_of(input),
                )
                if width
                else None
            )
        pieces = [p for p in (parts[0], out, parts[1]) if p is not None]
        out = prims.cat(pieces, d) if len(pieces) > 1 else out
    return out


@torchsymbol(F.glu, torch_impl="torch.nn.functional.glu", tags=(Tag.ACTIVATION,))
def glu(input, dim: int = -1):
    s = shape_of(input)
    d = canonical_dim(dim, len(s), "F.glu")
    if s[d] % 2:
        raise ShapeError(f"F.glu: dimension {d} of shape {s} must have an even length")
    a, b = sh._slice_dim(input, d, 0, s[d] // 2), sh._slice_dim(input, d, s[d] // 2, s[d])
    return prims.mul(a, prims.sigmoid(b))
