"""Slice writes, logspace, covariance (``thunder/ops/ltorch/statistics.py``)."""

from __future__ import annotations

import torch

from .entries import NUM, T, f32, f64, op, s

# -- slice writes, logspace, covariance (thunder/ops/ltorch/statistics.py) --------------------
op(
    "select_scatter",
    torch.select_scatter,
    lambda m: [s(m(3, 4), m(4), 0, 1), s(m(2, 3, 4), m(2, 4), 1, -1)],
    NUM,
)
op(
    "slice_scatter",
    torch.slice_scatter,
    lambda m: [s(m(5, 4), m(2, 4), 0, 1, 3), s(m(3, 6), m(3, 3), 1, 0, None, 2), s(m(4, 3), m(4, 3))],
    NUM,
)
op(
    "logspace",
    lambda start, end, steps, **kw: torch.logspace(start, end, steps, **kw),
    lambda m: [
        s(0.0, 2.0, 5, dtype=m.dtype),
        s(-1.0, 1.5, 4, base=2.0, dtype=m.dtype),
        s(1.0, 2.0, 1, dtype=m.dtype),
    ],
    (f32, f64),
)
op(
    "cov",
    torch.cov,
    lambda m: [
        s(m(3, 5)),
        s(m(4), correction=0),
        s(m(2, 4), fweights=torch.tensor([1, 2, 1, 3], device=m.device)),
        s(m(2, 4), aweights=m(4, low=0.5, high=1.5), correction=0),
    ],
    (f32, f64),
    T.cov,
)
op("corrcoef", torch.corrcoef, lambda m: [s(m(3, 5)), s(m(6))], (f32, f64), T.corrcoef)
