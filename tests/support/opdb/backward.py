"""Backward ops (called by VJP rules only), against aten's backward kernels
(``thunder/ops/ltorch/backward.py``)."""

from __future__ import annotations

import math

import torch

from thunder.ops import ltorch

from .entries import FLOAT, NN_TOL, f32, f64, op, s

# -- backward ops (called by VJP rules only), against aten's backward kernels ---------------
A = torch.ops.aten


def _direct(sym):
    """Call a thunder op no torch callable maps to (as the grad pass does)."""

    def call(*args, **kwargs):
        with torch._C.DisableTorchFunction():
            return sym(*args, **kwargs)

    call.__name__ = sym.name
    return call


op(
    "threshold_backward",
    _direct(ltorch.threshold_backward),
    lambda m: [s(m(3, 4), m(3, 4), 0), s(m(3, 4), m(3, 4), 0.5)],
    ref=A.threshold_backward.default,
)
op(
    "gelu_backward",
    _direct(ltorch.gelu_backward),
    lambda m: [s(m(3, 4), m(3, 4)), s(m(3, 4), m(3, 4), approximate="tanh")],
    ref=A.gelu_backward.default,
    tol=NN_TOL,
)
op(
    "silu_backward",
    _direct(ltorch.silu_backward),
    lambda m: [s(m(3, 4), m(3, 4))],
    ref=A.silu_backward.default,
    tol=NN_TOL,
)

op(
    "hardsigmoid_backward",
    _direct(ltorch.hardsigmoid_backward),
    lambda m: [s(m(3, 4), m(3, 4, low=-5, high=5)), s(m(4), torch.tensor([-3, -1, 3, 4], dtype=m.dtype))],
    ref=A.hardsigmoid_backward.default,
)
op(
    "hardswish_backward",
    _direct(ltorch.hardswish_backward),
    lambda m: [s(m(3, 4), m(3, 4, low=-5, high=5)), s(m(4), torch.tensor([-3, -1, 3, 4], dtype=m.dtype))],
    ref=A.hardswish_backward.default,
    tol=NN_TOL,
)


def _softmax_like(fn):
    def gen(m):
        x = m(3, 4, 2)
        return [s(m(3, 4, 2), fn(x, 1), 1, m.dtype), s(m(3, 4), fn(m(3, 4), -1), -1, m.dtype)]

    return gen


op(
    "softmax_backward",
    _direct(ltorch.softmax_backward),
    _softmax_like(torch.softmax),
    ref=A._softmax_backward_data.default,
    tol=NN_TOL,
)
op(
    "log_softmax_backward",
    _direct(ltorch.log_softmax_backward),
    _softmax_like(torch.log_softmax),
    ref=A._log_softmax_backward_data.default,
    tol=NN_TOL,
)


def _layer_norm_backward(m):
    out = []
    for shape, ns in (((2, 3, 4), (4,)), ((2, 3, 4), (3, 4))):
        x, w, b = m(*shape), m(*ns), m(*ns)
        _, mean, rstd = A.native_layer_norm.default(x, list(ns), w, b, 1e-5)
        out.append(s(m(*shape), x, ns, mean, rstd, w, b, (True, True, True)))
    x, w = m(2, 3, 4), m(4)
    _, mean, rstd = A.native_layer_norm.default(x, [4], w, None, 1e-5)
    out.append(s(m(2, 3, 4), x, (4,), mean, rstd, w, None, (True, True, False)))  # no bias
    out.append(s(m(2, 3, 4), x, (4,), mean, rstd, None, None, (True, False, False)))
    return out


def _asked_for(kernel):
    """``kernel``'s gradients without the None of those ``output_mask`` did not ask for (the
    thunder op returns only the others)."""

    def call(*args, **kwargs):
        return tuple(t for t in kernel(*args, **kwargs) if t is not None)

    return call


op(
    "layer_norm_backward",
    _direct(ltorch.layer_norm_backward),
    _layer_norm_backward,
    (f32, f64),
    ref=_asked_for(A.native_layer_norm_backward.default),
    tol=NN_TOL,
)
op(
    "embedding_backward",
    _direct(ltorch.embedding_backward),
    lambda m: [
        s(m(2, 3, 4), m.index(10, 2, 3), 10, -1, False),
        s(m(5, 4), torch.tensor([1, 2, 1, 0, 1]), 10, 1, True),
    ],
    ref=A.embedding_dense_backward.default,
    tol=NN_TOL,
)
op(
    "slice_backward",
    _direct(ltorch.slice_backward),
    lambda m: [s(m(2, 3), (5, 3), 0, 1, 5, 2), s(m(4, 2), (4, 6), 1, 1, 3, 1)],
    ref=A.slice_backward.default,
)


def _batched_matmul(a, b):
    batch = math.prod(a.shape[:-2])
    return torch.matmul(a, b), a.reshape(batch, *a.shape[-2:]), b.reshape(batch, *b.shape[-2:])


op(
    "batched_matmul",
    _direct(ltorch.batched_matmul),
    lambda m: [
        s(m(2, 3, 4, 5), m(2, 3, 5, 6)),
        s(m(2, 5, 3, 4).transpose(1, 2), m(2, 3, 4, 6)),  # heads split off: batch dims that do not merge
        s(m(2, 1, 3, 4, 5), m(2, 1, 3, 5, 2).transpose(-2, -1).contiguous().transpose(-2, -1)),
    ],
    FLOAT,
    ref=_batched_matmul,
    tol=NN_TOL,
)
op(
    "native_layer_norm",
    _direct(ltorch.native_layer_norm),
    lambda m: [s(m(2, 3, 4), (4,), m(4), m(4), 1e-5), s(m(2, 3, 4), (3, 4), None, None, 1e-3)],
    (f32, f64),
    ref=A.native_layer_norm.default,
    tol=NN_TOL,
)


def _group_norm(m):
    """(input, weight, bias, N, C, HxW, groups, eps) with and without the affine parameters; the
    sizes read from the input (so that a grown input gives a valid sample)."""
    out = []
    for shape, affine, groups, eps in (
        ((2, 6, 5, 3), (True, True), 3, 1e-5),
        ((3, 3, 7), (False, False), 3, 1e-3),
        ((2, 4), (True, False), 1, 1e-5),
    ):
        x = m(*shape)
        w, b = (m(shape[1]) if a else None for a in affine)
        out.append(s(x, w, b, x.shape[0], x.shape[1], math.prod(x.shape[2:]), groups, eps))
    return out


def _native_group_norm(*args):
    """aten's kernel with its statistics detached: thunder's are not differentiable outputs (only
    its own backward reads them), eager's autograd differentiates them too."""
    out, mean, rstd = A.native_group_norm.default(*args)
    return out, mean.detach(), rstd.detach()


op(
    "native_group_norm",
    _direct(ltorch.native_group_norm),
    _group_norm,
    ref=_native_group_norm,
    tol=NN_TOL,
)


def _group_norm_backward(m):
    out = []
    for x, w, b, n, c, hxw, groups, eps in (sample.args for sample in _group_norm(m)):
        _, mean, rstd = A.native_group_norm.default(x, w, b, n, c, hxw, groups, eps)
        mask = (True, w is not None, b is not None)
        grad = torch.empty_like(x).uniform_(-3, 3)  # (m(*x.shape) would grow a grown shape again)
        out.append(s(grad, x, mean, rstd, w, n, c, hxw, groups, mask))
    return out


op(
    "group_norm_backward",
    _direct(ltorch.group_norm_backward),
    _group_norm_backward,
    ref=_asked_for(A.native_group_norm_backward.default),
    tol=NN_TOL,
)


def _bool_as_eager(kernel):
    """``kernel`` with a bool mask converted as ``F.scaled_dot_product_attention`` converts it."""

    def call(*args, attn_mask=None, **kwargs):
        if attn_mask is not None and attn_mask.dtype is torch.bool:
            attn_mask = torch.zeros(attn_mask.shape, dtype=args[0].dtype).masked_fill(~attn_mask, -math.inf)
        return kernel(*args, attn_mask=attn_mask, **kwargs)

    return call


def _attention(m):
    """(query, key, value, dropout_p, is_causal) and the mask and scale: causal, a float mask, a
    bool mask with a query that attends to nothing, grouped-query heads, a scale."""
    mask = m(5, 7, dtype=torch.bool)
    mask[2] = False
    return [
        s(m(2, 3, 5, 4), m(2, 3, 5, 4), m(2, 3, 5, 4), 0.0, True),
        s(m(1, 2, 5, 4), m(1, 2, 7, 4), m(1, 2, 7, 4), 0.0, False, attn_mask=m(1, 1, 5, 7)),
        s(m(1, 2, 5, 4), m(1, 2, 7, 4), m(1, 2, 7, 4), 0.0, False, attn_mask=mask, scale=0.7),
        s(m(2, 2, 6, 8), m(2, 1, 6, 8), m(2, 1, 6, 8), 0.0, True),  # (one key head: grown, still a divisor)
    ]


op(
    "flash_attention_cpu",
    _direct(ltorch.flash_attention_cpu),
    _attention,
    ref=_bool_as_eager(A._scaled_dot_product_flash_attention_for_cpu.default),
    tol=NN_TOL,
)


def _attention_backward(m):
    out = []
    for sample in _attention(m):
        q, k, v, dropout_p, is_causal = sample.args
        o, lse = _bool_as_eager(A._scaled_dot_product_flash_attention_for_cpu.default)(
            *sample.args, **sample.kwargs
        )
        grad = torch.empty_like(o).uniform_(-3, 3)  # (m(*o.shape) would grow a grown shape again)
        out.append(s(grad, q, k, v, o, lse, dropout_p, is_causal, **sample.kwargs))
    return out


op(
    "flash_attention_cpu_backward",
    _direct(ltorch.flash_attention_cpu_backward),
    _attention_backward,
    ref=_bool_as_eager(A._scaled_dot_product_flash_attention_for_cpu_backward.default),
    tol=NN_TOL,
)
