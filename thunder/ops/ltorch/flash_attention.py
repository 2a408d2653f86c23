"""Eager's fused attention on CPU as a pair of ops: ``flash_attention_cpu`` (the output and the
logsumexp of each query's scores) and ``flash_attention_cpu_backward`` (the gradients of
query, key and value from them), the kernels ``F.scaled_dot_product_attention`` and its
autograd node run where eager's dispatcher picks its flash backend on CPU
(``flash_attention_applies`` says where: thunder/ops/vjp/attention.py uses the pair there).

Each mirrors its ``torch.ops.aten`` kernel argument for argument, except that a bool mask is
taken as ``F.scaled_dot_product_attention`` takes it (True: attend); the torch executor runs
each as that one kernel, after the conversion eager makes of a bool mask. The decompositions
into prims are what other executors see and what the op database checks against the kernels.
No user code calls these.
"""

from __future__ import annotations

import math

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch.nn import _cast, _compute_dtype, _repeat_heads, _swap_last, _tril_mask
from thunder.ops.ltorch.reductions import keep_dims
from thunder.ops.meta import device_of, dtype_of, is_tensor, requires_grad_of, shape_of

# the dtypes eager's CPU flash kernel takes (query, key and value alike)
_FLASH_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def flash_attention_applies(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, enable_gqa=False
) -> bool:
    """Whether eager's ``F.scaled_dot_product_attention`` runs these arguments through the CPU
    flash kernel (its dispatcher's checks, ``torch._fused_sdp_choice``; a test compares them
    over many arguments), which is then what its autograd differentiates. Not seen here: the
    strides, which eager also checks (a last dim of stride other than 1 goes to its math
    backend; the torch executor gives the kernel a contiguous copy instead)."""
    tensors = [t for t in (query, key, value, attn_mask) if t is not None]
    if not all(is_tensor(t) and device_of(t).type == "cpu" for t in tensors):
        return False
    if not torch.backends.cuda.flash_sdp_enabled():  # (the switch eager's CPU dispatcher reads too)
        return False
    if not isinstance(dropout_p, (int, float)) or dropout_p != 0:
        return False
    sq, sk, sv = shape_of(query), shape_of(key), shape_of(value)
    if not (len(sq) == len(sk) == len(sv) == 4):
        return False
    if dtype_of(query) not in _FLASH_DTYPES or not (dtype_of(query) is dtype_of(key) is dtype_of(value)):
        return False
    if not (sq[0] == sk[0] == sv[0]) or not (sq[3] == sk[3] == sv[3]) or sk[1] != sv[1]:
        return False
    if sq[1] != sk[1] and not (enable_gqa and sq[1] % sk[1] == 0):
        return False
    if sq[2] == 0 or sk[2] == 0:
        return False
    if attn_mask is None:
        return True
    sm = shape_of(attn_mask)
    if requires_grad_of(attn_mask) or dtype_of(attn_mask) not in (torch.bool, torch.float32, dtype_of(query)):
        return False
    if len(sm) == 4:
        lead = sm[0] in (1, sq[0]) and sm[1] in (1, sq[1])
    else:
        lead = len(sm) == 2
    return lead and sm[-2] in (1, sq[2]) and sm[-1] in (1, sk[2])


def _scores(query, key, attn_mask, is_causal: bool, scale):
    """q @ k^T * scale with the mask applied, in the computation dtype; key heads repeated for
    grouped-query attention."""
    sq, sk = shape_of(query), shape_of(key)
    compute = _compute_dtype(dtype_of(query))
    q, k = _cast(query, compute), _cast(key, compute)
    k = _repeat_heads(k, sq[1] // sk[1])
    scale = 1.0 / math.sqrt(sq[-1]) if scale is None else scale
    scores = prims.mul(prims.matmul(q, _swap_last(k)), scale)
    mask = _tril_mask(sq[-2], sk[-2], device_of(query)) if is_causal else attn_mask
    if mask is None:
        return scores
    if dtype_of(mask) is torch.bool:
        return prims.where(mask, scores, -math.inf)
    return prims.add(scores, _cast(mask, compute))


def _finite(a):
    """``a`` with -inf (a row with every key masked) as 0."""
    return prims.where(prims.eq(a, -math.inf), 0, a)


@torchsymbol(
    torch_impl="torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default",
    tags=(Tag.ATTENTION, Tag.BACKWARD_OP),
)
def flash_attention_cpu(
    query, key, value, dropout_p: float = 0.0, is_causal: bool = False, *, attn_mask=None, scale=None
):
    """(attention's output, the logsumexp of each query's scores (B, H, L) in the computation
    dtype); a query whose every key is masked gets output 0 and logsumexp 0, as the kernel's."""
    if dropout_p != 0:
        raise ValueError(
            f"flash_attention_cpu: dropout_p must be 0 (eager's math backend runs dropout), got {dropout_p}"
        )
    scores = _scores(query, key, attn_mask, is_causal, scale)
    d = len(shape_of(scores)) - 1
    m = _finite(prims.amax(scores, (d,)))
    e = prims.exp(prims.sub(scores, keep_dims(m, shape_of(scores), (d,))))
    s = prims.sum(e, (d,))
    s = prims.where(prims.eq(s, 0), 1, s)
    probs = prims.div(e, keep_dims(s, shape_of(e), (d,)))
    v = _repeat_heads(_cast(value, dtype_of(probs)), shape_of(query)[1] // shape_of(value)[1])
    out = _cast(prims.matmul(probs, v), dtype_of(query))
    with torch.no_grad():  # as aten's: the logsumexp is not a differentiable output
        lse = prims.add(m, prims.log(s))
    return out, lse


def _sum_groups(g, heads: int):
    """The gradient of repeating ``heads`` heads: each group of repeated heads summed."""
    s = shape_of(g)
    if s[1] == heads:
        return g
    return prims.sum(prims.reshape(g, (s[0], heads, s[1] // heads, *s[2:])), (2,))


@torchsymbol(
    torch_impl="torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default",
    tags=(Tag.ATTENTION, Tag.BACKWARD_OP),
)
def flash_attention_cpu_backward(
    grad_out,
    query,
    key,
    value,
    out,
    logsumexp,
    dropout_p: float,
    is_causal: bool,
    *,
    attn_mask=None,
    scale=None,
):
    """(grad query, grad key, grad value) of ``flash_attention_cpu`` from its output and
    logsumexp: P = exp(scores - logsumexp), dV = P^T dO, dS = P * (dO V^T - rowsum(dO * O)),
    dQ = dS K * scale, dK = dS^T Q * scale, grouped-query heads summed into their key head."""
    if dropout_p != 0:
        raise ValueError(f"flash_attention_cpu_backward: dropout_p must be 0, got {dropout_p}")
    sq, sk, sv = shape_of(query), shape_of(key), shape_of(value)
    compute = _compute_dtype(dtype_of(query))
    scores = _scores(query, key, attn_mask, is_causal, scale)
    d = len(shape_of(scores)) - 1
    lse = keep_dims(_finite(_cast(logsumexp, compute)), shape_of(scores), (d,))
    p = prims.exp(prims.sub(scores, lse))
    go, o = _cast(grad_out, compute), _cast(out, compute)
    q = _cast(query, compute)
    k, v = (_repeat_heads(_cast(t, compute), sq[1] // shape_of(t)[1]) for t in (key, value))
    gv = prims.matmul(_swap_last(p), go)
    gp = prims.matmul(go, _swap_last(v))
    rowsum = keep_dims(prims.sum(prims.mul(go, o), (d,)), shape_of(go), (d,))
    gs = prims.mul(p, prims.sub(gp, rowsum))
    scale = 1.0 / math.sqrt(sq[-1]) if scale is None else scale
    gq = prims.mul(prims.matmul(gs, k), scale)
    gk = prims.mul(prims.matmul(_swap_last(gs), q), scale)
    return (
        _cast(gq, dtype_of(query)),
        _cast(_sum_groups(gk, sk[1]), dtype_of(key)),
        _cast(_sum_groups(gv, sv[1]), dtype_of(value)),
    )
