"""Losses, and pad, prelu, glu (``thunder/ops/ltorch/losses.py``, ``nn.py``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .entries import FLOAT, NN_TOL, f32, f64, op, s


def LOSS(m):
    return [s(m(3, 4), m(3, 4)), s(m(3, 4), m(3, 4), reduction="none"), s(m(3, 4), m(3, 4), reduction="sum")]


op(
    "mse_loss",
    F.mse_loss,
    lambda m: LOSS(m) + [s(m(3, 4), m(3, 4), weight=m(3, 4, low=0, high=1))],
    FLOAT,
    tol=NN_TOL,
)
op("l1_loss", F.l1_loss, lambda m: LOSS(m) + [s(m(3, 4), m(3, 4), size_average=False)], FLOAT, tol=NN_TOL)
op("smooth_l1_loss", F.smooth_l1_loss, lambda m: LOSS(m) + [s(m(3, 4), m(3, 4), beta=0.5)], FLOAT, tol=NN_TOL)
op("huber_loss", F.huber_loss, lambda m: LOSS(m) + [s(m(3, 4), m(3, 4), delta=0.7)], FLOAT, tol=NN_TOL)
PROB = dict(low=0.01, high=0.99)
op(
    "binary_cross_entropy",
    F.binary_cross_entropy,
    lambda m: [
        s(m(3, 4, **PROB), m(3, 4, **PROB)),
        s(m(3, 4, **PROB), m(3, 4, **PROB), m(4, **PROB), reduction="sum"),
    ],
    (f32, f64),
    tol=NN_TOL,
)
op(
    "binary_cross_entropy_with_logits",
    F.binary_cross_entropy_with_logits,
    lambda m: [
        s(m(3, 4), m(3, 4, **PROB)),
        s(m(3, 4), m(3, 4, **PROB), m(3, 4), reduction="sum", pos_weight=m(4, **PROB)),
    ],
    FLOAT,
    tol=NN_TOL,
)
op(
    "kl_div",
    F.kl_div,
    lambda m: [
        s(m(3, 4, low=-3, high=0), m(3, 4, **PROB), reduction="batchmean"),
        s(m(3, 4, low=-3, high=0), m(3, 4, low=-3, high=0), log_target=True, reduction="none"),
    ],
    FLOAT,
    tol=NN_TOL,
)


def _targets(m, n=4, c=7, *extra):
    t = m.index(c, n, *extra)
    t[1] = -100  # an ignored target
    return t


op(
    "nll_loss",
    F.nll_loss,
    lambda m: [
        s(m(4, 7), _targets(m)),
        s(m(4, 7), _targets(m), m(7, low=0.1, high=1), reduction="sum"),
        s(m(4, 7, 3), _targets(m, 4, 7, 3), m(7, low=0.1, high=1)),
        s(m(7), torch.tensor(2), reduction="none"),
    ],
    FLOAT,
    tol=NN_TOL,
)
op(
    "cross_entropy",
    F.cross_entropy,
    lambda m: [
        s(m(4, 7), _targets(m)),
        s(m(4, 7), _targets(m), reduction="none"),
        s(m(4, 7, 3), _targets(m, 4, 7, 3), m(7, low=0.1, high=1)),
        s(m(4, 7), _targets(m), label_smoothing=0.1),
        s(m(4, 7), _targets(m), m(7, low=0.1, high=1), label_smoothing=0.2),
        s(m(4, 7), _targets(m), reduction="sum", label_smoothing=0.2),
        s(m(4, 7), torch.softmax(m(4, 7, dtype=f32), 1).to(m.dtype)),
        s(
            m(4, 7),
            torch.softmax(m(4, 7, dtype=f32), 1).to(m.dtype),
            m(7),
            label_smoothing=0.1,
            reduction="none",
        ),
        s(m(7), torch.tensor(3)),
    ],
    FLOAT,
    tol=NN_TOL,
)
op(
    "pad",
    F.pad,
    lambda m: [
        s(m(2, 3, 4), (1, 2)),
        s(m(2, 3, 4), (1, 0, -1, 2), value=3.5),
        s(m(2, 3, 4), (2, 1, 1, 2), mode="replicate"),
        s(m(2, 3, 4), (2, 3), mode="reflect"),
        s(m(1, 3, 4), (2, 3, 1, 1), mode="circular"),
    ],
    FLOAT,
)
op(
    "prelu",
    F.prelu,
    lambda m: [s(m(2, 3, 4), m(3)), s(m(2, 3), m(1)), s(m(5), m(1)), s(m(2, 3, 4, 2), m(3))],
    FLOAT,
    torch.prelu,
)
op("glu", F.glu, lambda m: [s(m(3, 4)), s(m(4, 3), 0)], FLOAT, tol=NN_TOL)
