"""VJP rules of ``scaled_dot_product_attention``. Where eager runs it as its CPU flash kernel
(``ltorch.flash_attention_applies``), the grad pass uses ``flash_attention_cpu`` as the forward
(its ``AUGMENTED`` entry), which keeps the logsumexp of the scores, and the backward is
``flash_attention_cpu_backward`` from it: eager's kernel pair, one kernel each on the torch
executor. Elsewhere (dropout, a mask that needs a gradient, 3-dim inputs, CUDA) the rule of
``scaled_dot_product_attention`` without dropout recomputes the probabilities as the forward
computes them, then the gradients of the two matmuls and the softmax between them, with
grouped-query heads summed back into their group.
"""

from __future__ import annotations

import math

import torch

from thunder.ops import ltorch, prims
from thunder.ops.ltorch import nn as lnn
from thunder.ops.meta import LOW_PRECISION_DTYPES, device_of, dtype_of, shape_of
from thunder.ops.vjp.table import AUGMENTED, rule_for, swap_last


def _unrepeat_heads(g, n_rep: int):
    """The gradient of ``_repeat_heads``: each group of n_rep heads summed back into one."""
    s = shape_of(g)
    grouped = prims.reshape(g, s[:-3] + (s[-3] // n_rep, n_rep) + s[-2:])
    return prims.sum(grouped, (len(s) - 2,))


@rule_for(ltorch.scaled_dot_product_attention)
def _sdpa(
    g, out, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """Recompute the probabilities P as the forward does, then dV = P^T dO, dP = dO V^T,
    dS = P * (dP - rowsum(dP * P)), dQ = dS K * scale, dK = dS^T Q * scale (a float mask gets
    dS). With dropout the mask is random: the decomposition saves it instead."""
    if dropout_p > 0:
        return NotImplemented
    sq, sk = shape_of(query), shape_of(key)
    compute = torch.float32 if dtype_of(query) in LOW_PRECISION_DTYPES else dtype_of(query)
    q, k, v = (lnn._cast(t, compute) for t in (query, key, value))
    n_rep = sq[-3] // sk[-3] if enable_gqa and len(sq) >= 3 and sq[-3] != sk[-3] else 1
    k, v = lnn._repeat_heads(k, n_rep), lnn._repeat_heads(v, n_rep)
    scale = 1.0 / math.sqrt(sq[-1]) if scale is None else scale
    scores = prims.mul(prims.matmul(q, swap_last(k)), scale)
    mask = lnn._tril_mask(sq[-2], sk[-2], device_of(query)) if is_causal else attn_mask
    if mask is not None:
        if dtype_of(mask) is torch.bool:
            scores = prims.where(mask, scores, -math.inf)
        else:
            scores = prims.add(scores, lnn._cast(mask, compute))
    d = len(shape_of(scores)) - 1
    m = ltorch.amax(scores, d, True)
    m = prims.where(prims.eq(m, -math.inf), 0, m)
    e = prims.exp(prims.sub(scores, m))
    s = ltorch.sum(e, d, True)
    p = prims.div(e, prims.where(prims.eq(s, 0), 1, s))
    go = lnn._cast(g, compute)
    gv = prims.matmul(swap_last(p), go)
    gp = prims.matmul(go, swap_last(v))
    gs = prims.mul(p, prims.sub(gp, ltorch.sum(prims.mul(gp, p), d, True)))
    gq = prims.mul(prims.matmul(gs, k), scale)
    gk = prims.mul(prims.matmul(swap_last(gs), q), scale)
    if n_rep > 1:
        gk, gv = _unrepeat_heads(gk, n_rep), _unrepeat_heads(gv, n_rep)
    gmask = gs if attn_mask is not None and dtype_of(attn_mask) is not torch.bool else None
    return gq, gk, gv, gmask, None, None, None, None


@rule_for(ltorch.flash_attention_cpu)
def _flash_attention_cpu(
    g, out, query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None
):
    """The kernel's gradients from the output and logsumexp the forward kept (eager's way);
    the mask gets none (the forward is used only for a mask that needs none)."""
    g_out = g[0]
    if g_out is None:  # (the logsumexp is not differentiable)
        return None, None, None, None, None
    o, lse = out
    gq, gk, gv = ltorch.flash_attention_cpu_backward(
        g_out, query, key, value, o, lse, dropout_p, is_causal, attn_mask=attn_mask, scale=scale
    )
    return gq, gk, gv, None, None


def _attention_keeping_logsumexp(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """``flash_attention_cpu`` where eager runs the CPU flash kernel, else None."""
    if not ltorch.flash_attention_applies(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa):
        return None
    return ltorch.flash_attention_cpu(query, key, value, 0.0, is_causal, attn_mask=attn_mask, scale=scale)


AUGMENTED[ltorch.scaled_dot_product_attention] = _attention_keeping_logsumexp
