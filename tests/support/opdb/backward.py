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
    return out


op(
    "layer_norm_backward",
    _direct(ltorch.layer_norm_backward),
    _layer_norm_backward,
    (f32, f64),
    ref=A.native_layer_norm_backward.default,
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
