"""Neural-network ops: matmul family, linear, norms, embedding, attention, pad (losses: losses.py,
dropout: dropout.py).

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
    broadcast_shapes,
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


# -- normalisation --------------------------------------------------------------------------
def _normalized_dims(a, normalized_shape, op: str) -> tuple[int, ...]:
    s = shape_of(a)
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(s[len(s) - len(ns) :]) != ns or len(ns) > len(s):
        raise ShapeError(f"{op}: normalized_shape {ns} does not match the end of the input shape {s}")
    return tuple(range(len(s) - len(ns), len(s)))


def _affine(x, weight, bias, compute):
    if weight is not None:
        x = prims.mul(x, _cast(weight, compute))
    if bias is not None:
        x = prims.add(x, _cast(bias, compute))
    return x


def _moments(x, dims):
    """(mean, biased variance) over ``dims``, reduced."""
    mean = prims.div(prims.sum(x, dims), math.prod(shape_of(x)[d] for d in dims))
    return mean, prims.var(x, dims, correction=0)


def _normalize(x, dims, eps, moments=None):
    """(x - mean) / sqrt(var + eps) over ``dims`` (biased variance)."""
    shape = shape_of(x)
    mean, var = moments or _moments(x, dims)
    mean, var = red.keep_dims(mean, shape, dims), red.keep_dims(var, shape, dims)
    return prims.mul(prims.sub(x, mean), prims.rsqrt(prims.add(var, eps)))


@torchsymbol(F.layer_norm, torch_impl="torch.nn.functional.layer_norm", tags=(Tag.NORM,))
def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    dims = _normalized_dims(input, normalized_shape, "F.layer_norm")
    dt = dtype_of(input)
    compute = _compute_dtype(dt)
    out = _affine(_normalize(_cast(input, compute), dims, eps), weight, bias, compute)
    return _cast(out, dt)


@torchsymbol(F.rms_norm, torch_impl="torch.nn.functional.rms_norm", tags=(Tag.NORM,))
def rms_norm(input, normalized_shape, weight=None, eps: float | None = None):
    dims = _normalized_dims(input, normalized_shape, "F.rms_norm")
    dt = dtype_of(input)
    if eps is None:
        eps = torch.finfo(dt).eps
    compute = _compute_dtype(dt)
    x = _cast(input, compute)
    ms = prims.div(prims.sum(prims.mul(x, x), dims), math.prod(shape_of(x)[d] for d in dims))
    out = prims.mul(x, red.keep_dims(prims.rsqrt(prims.add(ms, eps)), shape_of(x), dims))
    return _cast(_affine(out, weight, None, compute), dt)


@torchsymbol(F.group_norm, torch_impl="torch.nn.functional.group_norm", tags=(Tag.NORM,))
def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    s = shape_of(input)
    if len(s) < 2 or s[1] % num_groups:
        raise ShapeError(f"F.group_norm: {num_groups} groups do not divide the channels of shape {s}")
    dt = dtype_of(input)
    compute = _compute_dtype(dt)
    grouped = prims.reshape(_cast(input, compute), (s[0], num_groups, math.prod(s[1:]) // num_groups))
    out = prims.reshape(_normalize(grouped, (2,), eps), s)
    w = None if weight is None else _channel_view(weight, len(s))
    b = None if bias is None else _channel_view(bias, len(s))
    return _cast(_affine(out, w, b, compute), dt)


@torchsymbol(F.batch_norm, torch_impl="torch.nn.functional.batch_norm", tags=(Tag.NORM,))
def batch_norm(
    input, running_mean, running_var, weight=None, bias=None, training: bool = False, momentum=0.1, eps=1e-5
):
    """Inference uses the running statistics; training normalises by the batch statistics and
    writes the updated running statistics into ``running_mean``/``running_var`` (``prims.copy_``)."""
    s = shape_of(input)
    if len(s) < 2:
        raise ShapeError(f"F.batch_norm: expected an input of at least 2 dimensions, got shape {s}")
    dt = dtype_of(input)
    compute = _compute_dtype(dt)
    x = _cast(input, compute)
    dims = (0, *range(2, len(s)))
    if training or running_mean is None:
        batch_mean, batch_var = _moments(x, dims)
        out = _normalize(x, dims, eps, (batch_mean, batch_var))
        if training and running_mean is not None:
            n = math.prod(s[d] for d in dims)
            unbiased = prims.mul(batch_var, n / max(n - 1, 1))  # the running variance is unbiased
            for run, stat in ((running_mean, batch_mean), (running_var, unbiased)):
                new = prims.add(prims.mul(run, 1 - momentum), prims.mul(_cast(stat, dtype_of(run)), momentum))
                prims.copy_(new, run)
    else:
        mean = _channel_view(_cast(running_mean, compute), len(s))
        var = _channel_view(_cast(running_var, compute), len(s))
        out = prims.mul(prims.sub(x, mean), prims.rsqrt(prims.add(var, eps)))
    w = None if weight is None else _channel_view(weight, len(s))
    b = None if bias is None else _channel_view(bias, len(s))
    return _cast(_affine(out, w, b, compute), dt)


@torchsymbol(F.instance_norm, torch_impl="torch.nn.functional.instance_norm", tags=(Tag.NORM,))
def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
):
    """Each (sample, channel) normalised over its own spatial dims. With running statistics,
    they move towards the batch mean of the per-instance statistics (unbiased variance), as
    torch's instance norm (a batch norm over samples * channels) updates them; without
    ``use_input_stats`` the running statistics normalise instead."""
    op = "F.instance_norm"
    s = shape_of(input)
    if len(s) < 3:
        raise ShapeError(f"{op}: expected an input of at least 3 dimensions (N, C, ...), got shape {s}")
    dt = dtype_of(input)
    compute = _compute_dtype(dt)
    x = _cast(input, compute)
    spatial = tuple(range(2, len(s)))
    if use_input_stats:
        n = math.prod(s[2:])
        if n <= 1:
            raise ShapeError(f"{op}: expected more than 1 spatial element when training, got input shape {s}")
        mean, var = _moments(x, spatial)  # (N, C)
        out = _normalize(x, spatial, eps, (mean, var))
        if running_mean is not None:
            batch = s[0]
            unbiased = prims.mul(var, n / (n - 1))
            for run, stat in ((running_mean, mean), (running_var, unbiased)):
                avg = prims.div(prims.sum(stat, (0,)), batch)
                new = prims.add(prims.mul(run, 1 - momentum), prims.mul(_cast(avg, dtype_of(run)), momentum))
                prims.copy_(new, run)
    else:
        if running_mean is None or running_var is None:
            raise ShapeError(f"{op}: use_input_stats=False needs running_mean and running_var")
        mean = _channel_view(_cast(running_mean, compute), len(s))
        var = _channel_view(_cast(running_var, compute), len(s))
        out = prims.mul(prims.sub(x, mean), prims.rsqrt(prims.add(var, eps)))
    w = None if weight is None else _channel_view(weight, len(s))
    b = None if bias is None else _channel_view(bias, len(s))
    return _cast(_affine(out, w, b, compute), dt)


@torchsymbol(torch._weight_norm, torch_impl="torch._weight_norm", tags=(Tag.NORM,))
def weight_norm(v, g, dim: int = 0):
    """``v * (g / ||v||)``, the norm taken over every dim but ``dim`` (over all of them for
    ``dim=-1``, as torch's weight norm reads it)."""
    op = "torch._weight_norm"
    s = shape_of(v)
    dims = (
        tuple(range(len(s)))
        if dim == -1
        else tuple(i for i in range(len(s)) if i != canonical_dim(dim, len(s), op))
    )
    dt = dtype_of(v)
    compute = _compute_dtype(dt)
    x = _cast(v, compute)
    norm = prims.sqrt(prims.sum(prims.mul(x, x), dims)) if dims else prims.abs(x)
    norm = red.keep_dims(norm, s, dims)
    scale = prims.div(_cast(g, compute), norm)
    return _cast(prims.mul(x, scale), dt)


@torchsymbol(F.normalize, torch_impl="torch.nn.functional.normalize", tags=(Tag.NORM,))
def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12):
    norm = red.vector_norm(input, p, dim, True)
    return prims.div(input, _expand_to(prims.maximum(norm, eps), shape_of(input)))


@torchsymbol(
    F.cosine_similarity, torch.cosine_similarity, torch_impl="torch.cosine_similarity", tags=(Tag.NORM,)
)
def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    shape = broadcast_shapes(shape_of(x1), shape_of(x2), op="F.cosine_similarity")
    x1, x2 = _expand_to(x1, shape), _expand_to(x2, shape)
    n1 = prims.maximum(red.vector_norm(x1, 2, dim, True), eps)
    n2 = prims.maximum(red.vector_norm(x2, 2, dim, True), eps)
    prod = prims.mul(prims.div(x1, n1), prims.div(x2, n2))
    return red.sum(prod, dim)


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


# -- einsum ---------------------------------------------------------------------------------
def _einsum_parse(equation: str, shapes):
    """Per operand its index letters, and the output's; ``...`` becomes letters of its own."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ShapeError(f"torch.einsum: {equation!r} names {len(terms)} operands, got {len(shapes)}")
    used = set(eq) - set(".,->")
    spare = iter(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used)
    ell_len = max(
        (len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t), default=0
    )
    ell = "".join(next(spare) for _ in range(ell_len))
    out_terms = []
    for t, shp in zip(terms, shapes):
        if "..." in t:
            n = len(shp) - len(t.replace("...", ""))
            t = t.replace("...", ell[ell_len - n :])
        if len(t) != len(shp):
            raise ShapeError(f"torch.einsum: {t!r} has {len(t)} indices for an operand of shape {tuple(shp)}")
        if len(set(t)) != len(t):
            raise ShapeError(
                f"torch.einsum: repeated indices in one operand ({t!r}, a diagonal) are not supported"
            )
        out_terms.append(t)
    if arrow:
        out = rhs.replace("...", ell)
    else:  # implicit output: the ellipsis, then the letters seen once, sorted
        letters = "".join(out_terms)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    return out_terms, out


def _einsum_sum_out(x, term: str, keep: set):
    """Sum the letters of ``term`` that are not in ``keep``."""
    dims = tuple(i for i, c in enumerate(term) if c not in keep)
    if not dims:
        return x, term
    return prims.sum(x, dims), "".join(c for c in term if c in keep)


def _einsum_pair(a, ta: str, b, tb: str, keep: set):
    """a (ta) times b (tb), summed over the shared letters not in ``keep``, as one matmul."""
    sizes = {**dict(zip(ta, shape_of(a))), **dict(zip(tb, shape_of(b)))}
    batch = [c for c in ta if c in tb and c in keep]
    contract = [c for c in ta if c in tb and c not in keep]
    left = [c for c in ta if c not in tb]
    right = [c for c in tb if c not in ta]

    def arrange(x, term, order, shape):
        perm = [term.index(c) for c in order]
        if perm != list(range(len(term))):
            x = prims.transpose(x, tuple(perm))
        return prims.reshape(x, shape) if tuple(shape) != shape_of(x) else x

    n = lambda cs: math.prod(sizes[c] for c in cs)  # noqa: E731
    a3 = arrange(a, ta, batch + left + contract, (n(batch), n(left), n(contract)))
    b3 = arrange(b, tb, batch + contract + right, (n(batch), n(contract), n(right)))
    out = prims.matmul(a3, b3)
    term = "".join(batch + left + right)
    return prims.reshape(out, tuple(sizes[c] for c in term)), term


@torchsymbol(torch.einsum, torch_impl="torch.einsum", tags=(Tag.MATMUL,))
def einsum(equation: str, *operands):
    """Pairwise, left to right: letters no later operand or the output needs are summed away
    (within one operand first), shared ones are contracted by a matmul."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    terms, out = _einsum_parse(equation, [shape_of(o) for o in operands])
    acc, acc_term = None, ""
    for i, (x, t) in enumerate(zip(operands, terms)):
        later = set(out).union(*terms[i + 1 :])
        x, t = _einsum_sum_out(x, t, later | set(acc_term))
        if acc is None:
            acc, acc_term = x, t
        else:
            acc, acc_term = _einsum_pair(acc, acc_term, x, t, later)
        acc, acc_term = _einsum_sum_out(acc, acc_term, later)
    perm = [acc_term.index(c) for c in out]
    return prims.transpose(acc, tuple(perm)) if perm != list(range(len(perm))) else acc
