"""Unpooling and more nn.functional layers (``thunder/ops/ltorch/unpool.py``, ``layers.py``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .entries import FLOAT, Maker, bf16, distinct, f32, f64, op, s


# -- unpooling and more nn.functional layers (thunder/ops/ltorch/unpool.py, layers.py) -------
def _unpool_sample(m: Maker, n: int, shape, kernel, **kw):
    """A max pooling's output and indices (distinct values, so no index is written twice)."""
    x = distinct(m, *shape)
    pooled, idx = getattr(F, f"max_pool{n}d")(x.to(f64), kernel, return_indices=True, **kw)
    return s(pooled.to(m.dtype), idx, kernel, **kw)


op(
    "max_unpool1d",
    F.max_unpool1d,
    lambda m: [_unpool_sample(m, 1, (2, 3, 8), 2), _unpool_sample(m, 1, (3, 9), 3, stride=2, padding=1)],
)
op(
    "max_unpool2d",
    F.max_unpool2d,
    lambda m: [_unpool_sample(m, 2, (2, 3, 4, 6), 2), _unpool_sample(m, 2, (1, 5, 5), (2, 3), stride=1)],
)
op("max_unpool3d", F.max_unpool3d, lambda m: [_unpool_sample(m, 3, (1, 2, 4, 4, 4), 2)])
op(
    "bilinear",
    F.bilinear,
    lambda m: [s(m(3, 4), m(3, 5), m(2, 4, 5), m(2)), s(m(2, 3, 4), m(2, 3, 5), m(6, 4, 5))],
    FLOAT,
    torch.bilinear,
    tol={f32: (1e-4, 1e-4), bf16: (5e-2, 5e-2)},
)
op(
    "rrelu",
    F.rrelu,
    lambda m: [s(m(3, 4)), s(m(3, 4), 0.1, 0.3)],
    FLOAT,
    torch.rrelu,
)
op(
    "rrelu",
    F.rrelu,
    lambda m: [s(m(3, 4), training=True)],
    FLOAT,
    values=False,
    check=lambda out, sample: bool(
        (
            (out == sample.args[0])
            | ((out / sample.args[0] >= 1 / 8 - 1e-3) & (out / sample.args[0] <= 1 / 3 + 1e-3))
        ).all()
    ),
    variant="training",
)
op(
    "local_response_norm",
    F.local_response_norm,
    lambda m: [s(m(2, 5, 7), 3), s(m(2, 6, 3, 4), 2, alpha=0.1, beta=0.5, k=2.0), s(m(1, 4, 2, 2, 3), 4)],
    (f32, f64),
)
