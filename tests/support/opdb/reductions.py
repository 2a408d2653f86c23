"""Reductions, softmax, scans, order statistics, searching and norms
(``thunder/ops/ltorch/reductions.py``, ``scans.py``, ``order.py``, ``linalg.py``)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .entries import ALL, FLOAT, INT, NAN, NUM, T, bf16, distinct, f32, f64, i64, op, s, sorted_, with_nans

# -- reductions -----------------------------------------------------------------------------
RED_TOL = {bf16: (2e-2, 2e-2)}


def reduce(*extra):
    """Full, one dim, several dims with keepdim, a 0-dim tensor, plus ``extra(m)`` samples."""
    return lambda m: (
        [s(m(3, 4, 5)), s(m(3, 4, 5), 1), s(m(3, 4, 5), (0, 2), True), s(m())] + [e(m) for e in extra]
    )


op("sum", torch.sum, reduce(lambda m: s(m(3, 4), dtype=f64)), ALL, T.sum, tol=RED_TOL)
op("nansum", torch.nansum, reduce(), (f32, f64, i64), T.nansum, tol=RED_TOL)
op(
    "prod",
    torch.prod,
    lambda m: [s(m(3, 4, low=-2, high=2)), s(m(3, 4), 1), s(m(3, 4), 0, True)],
    NUM,
    T.prod,
    tol=RED_TOL,
)
op("mean", torch.mean, reduce(lambda m: s(m(3, 4), dtype=f64)), FLOAT, T.mean, tol=RED_TOL)
op("mean", torch.mean, lambda m: [s(m(3, 4), 1, dtype=f32)], INT, variant="int_dtype")
op(
    "count_nonzero",
    torch.count_nonzero,
    lambda m: [s(m(3, 4)), s(m(3, 4), 1), s(m(3, 4), (0, 1))],
    ALL,
    T.count_nonzero,
)
op(
    "cumsum",
    torch.cumsum,
    lambda m: [s(m(3, 4), 1), s(m(3, 4), -2), s(m(), 0), s(m(3), 0, dtype=f64)],
    NUM,
    T.cumsum,
    tol=RED_TOL,
)
for _n in "amax amin".split():
    op(_n, getattr(torch, _n), reduce(), NUM, getattr(T, _n))
for _n in "argmax argmin".split():
    op(
        _n,
        getattr(torch, _n),
        lambda m: [s(m(3, 4, 5)), s(m(3, 4), 1), s(m(3, 4), -1, True), s(m(3, 4), keepdim=True), s(m())],
        (f32, f64),
        getattr(T, _n),
    )
for _n in "max min".split():
    _samples = lambda m: [s(m(3, 4)), s(m(3, 4), 1), s(m(3, 4, 2), -1, True), s(m(3, 4), m(4))]  # noqa: E731
    op(_n, getattr(torch, _n), _samples, (f32, f64), getattr(T, _n))
for _n in "all any".split():
    op(
        _n,
        getattr(torch, _n),
        lambda m: [s(m(3, 4)), s(m(3, 4), 1), s(m(3, 4), 0, True), s(m())],
        ALL + (torch.uint8,),
        getattr(T, _n),
    )
VAR = lambda m: [  # noqa: E731
    s(m(3, 4, 5)),
    s(m(3, 4, 5), 1),
    s(m(3, 4, 5), (0, 2), keepdim=True),
    s(m(3, 4), 1, correction=0),
    s(m(3, 4), False),
    s(m(3, 4), 0, True, True),
]
for _n in "var std".split():
    op(_n, getattr(torch, _n), VAR, FLOAT, getattr(T, _n), tol=RED_TOL)
for _n in "var_mean std_mean".split():
    op(_n, getattr(torch, _n), VAR, FLOAT, tol=RED_TOL)
op(
    "vector_norm",
    torch.linalg.vector_norm,
    lambda m: [
        s(m(3, 4)),
        s(m(3, 4), 1, 1),
        s(m(3, 4, 2), math.inf, (0, 1), True),
        s(m(3, 4), -math.inf, 0),
        s(m(3, 4), 3.0, -1),
        s(m(3, 4), 0),
    ],
    FLOAT,
    tol=RED_TOL,
)
op(
    "norm",
    torch.norm,
    lambda m: [s(m(3, 4)), s(m(3, 4), 1, 1), s(m(3, 4, 2), "fro", (1, 2), True)],
    FLOAT,
    T.norm,
    tol=RED_TOL,
)
SOFTMAX = lambda m: [s(m(3, 4), 1), s(m(3, 4, 2), -1), s(m(3, 4), 0, dtype=f64)]  # noqa: E731
op("softmax", torch.softmax, SOFTMAX, FLOAT, T.softmax, tol=RED_TOL)
op(
    "softmax",
    F.softmax,
    lambda m: [s(m(3, 4), dim=1), s(m(3, 4), 1, dtype=f64)],
    FLOAT,
    variant="F",
    tol=RED_TOL,
)
op("log_softmax", torch.log_softmax, SOFTMAX, FLOAT, T.log_softmax, tol=RED_TOL)
op("log_softmax", F.log_softmax, lambda m: [s(m(3, 4), dim=0)], FLOAT, variant="F", tol=RED_TOL)
op("softmin", F.softmin, lambda m: [s(m(3, 4), 1), s(m(3, 4), dim=0, dtype=f64)], FLOAT, tol=RED_TOL)
op(
    "topk",
    torch.topk,
    lambda m: [s(m(3, 8), 3), s(m(3, 8), 2, 0), s(m(3, 8), 4, largest=False), s(m(5), 5)],
    (f32, f64),
    T.topk,
)
op(
    "cumprod",
    torch.cumprod,
    lambda m: [
        s(m(3, 7, low=-2, high=2), 1),
        s(m(5, 3, low=-2, high=2), 0),
        s(m(), 0),
        s(m(4, 2), -2, dtype=f64),
    ],
    NUM,
    T.cumprod,
    tol=RED_TOL,
)
op(
    "cumprod",
    torch.cumprod,
    lambda m: [s(torch.tensor([[2.0, 0.0, 3.0, 4.0], [0.0, 0.0, 1.5, -1.0]], dtype=m.dtype), 1)],
    FLOAT,
    variant="zeros",
)
op(
    "logcumsumexp",
    torch.logcumsumexp,
    lambda m: [
        s(m(3, 9), 1),
        s(m(5, 3), 0),
        s(
            torch.tensor([-1000.0, 0.0, -math.inf, 5.0, -math.inf], dtype=m.dtype), 0
        ),  # a prefix far below the max
    ],
    FLOAT,
    T.logcumsumexp,
    tol=RED_TOL,
)
op(
    "histc",
    torch.histc,
    lambda m: [
        s(m(40)),
        s(m(3, 20), bins=7, min=-1, max=1),
        s(m.index(8, 50).to(m.dtype), bins=8, min=0, max=7),  # Mixtral's expert counts
        s(torch.full((6,), 2.0, dtype=m.dtype), bins=4),
    ],
    FLOAT,
    T.histc,
)
op(
    "logsumexp",
    torch.logsumexp,
    lambda m: [s(m(3, 4), 1), s(m(3, 4, 2), (0, 2), True)],
    NUM,
    T.logsumexp,
    tol=RED_TOL,
)
op(
    "aminmax",
    torch.aminmax,
    lambda m: [
        s(m(3, 4)),
        s(m(3, 4), dim=1),
        s(m(3, 4), dim=-2, keepdim=True),
        s(m(3, 4), keepdim=True),
        s(m()),
        s(m(), dim=0),
    ],
    ALL,
    T.aminmax,
)
op(
    "nanmean",
    torch.nanmean,
    lambda m: [
        s(with_nans(m, 3, 4)),
        s(with_nans(m, 3, 4), 1),
        s(with_nans(m, 3, 4, 2), (0, 2), True),
        s(m()),
        s(m(3, 4), dtype=f64),
    ],
    FLOAT,
    T.nanmean,
    tol=RED_TOL,
)
# a slice of NaNs only: NaN, as eager. (Its gradient is not compared: eager's is NaN there, the
# 0 * inf of its nansum backward, where the decomposition's ``where`` passes 0.)
op(
    "nanmean",
    torch.nanmean,
    lambda m: [s(torch.tensor([[NAN, NAN], [1.0, NAN]]).to(m.dtype), 1), s(torch.tensor(NAN).to(m.dtype))],
    (f32, bf16),
    variant="all_nan",
)


def _cum_extremum_samples(m):
    ties = [1, 3, 3, 2, 3, NAN, 5, NAN, 1] if m.dtype.is_floating_point else [1, 3, 3, 2, 3, 0, 0, 5, 5]
    return [
        s(m(3, 5), 1),
        s(m(4, 3), 0),
        s(m(2, 7), -1),
        s(m(), 0),
        s(m(3, 0), 1),
        s(torch.tensor([ties, ties[::-1]]).to(m.dtype), 1),
    ]


for _n in ("cummax", "cummin"):
    op(_n, getattr(torch, _n), _cum_extremum_samples, ALL, getattr(T, _n))


def _nan_rows(m):
    return torch.tensor([[1.0, NAN, 2.0, NAN], [3.0, 1.0, 2.0, 0.0], [NAN, 4.0, 0.0, 1.0]]).to(m.dtype)


op(
    "median",
    torch.median,
    lambda m: (
        [
            s(distinct(m, 3, 5)),
            s(distinct(m, 3, 5), 1),
            s(distinct(m, 4, 3), 0, True),
            s(distinct(m, 6)),
            s(distinct(m, 2, 6), -1),
            s(m(5, 4)),  # ties: the value is defined
            s(m(), 0),
        ]
        + (
            [
                s(m(0)),
                s(_nan_rows(m)),
                s(_nan_rows(m), 1),
                s(torch.tensor([[1.0, 2.0, 2.0], [3.0, 2.0, 0.0]]).to(m.dtype)),
            ]
            if m.dtype.is_floating_point
            else []
        )
    ),
    FLOAT + INT,
    T.median,
)
op(
    "kthvalue",
    torch.kthvalue,
    lambda m: (
        [
            s(distinct(m, 3, 5), 2),
            s(distinct(m, 3, 5), 1, 0),
            s(distinct(m, 4, 3), 3, 0, True),
            s(distinct(m, 6), 6),
            s(m(), 1),
        ]
        + ([s(_nan_rows(m), 3, 1), s(_nan_rows(m), 4, -1)] if m.dtype.is_floating_point else [])
    ),
    FLOAT + INT,
    T.kthvalue,
)


def _quantile_samples(m):
    q = torch.tensor([0.0, 0.125, 0.375, 0.5, 0.8, 1.0], dtype=m.dtype)
    out = [
        s(m(7), 0.3),
        s(m(3, 5), q, 1),
        s(m(3, 5), 0.5, 0, True),
        s(m(2, 3, 4), torch.tensor(0.25, dtype=m.dtype), -1),
        s(m(3, 4), q, keepdim=True),
        s(m(), 0.7, 0),
        s(with_nans(m, 3, 5), q, 1),
        s(_nan_rows(m), 0.4),
    ]
    return out + [s(m(3, 5), q, 1, interpolation=i) for i in ("lower", "higher", "midpoint", "nearest")]


op("quantile", torch.quantile, _quantile_samples, (f32, f64), T.quantile)
op(
    "nanquantile",
    torch.nanquantile,
    lambda m: (
        _quantile_samples(m) + [s(torch.tensor([[NAN, NAN, NAN], [1.0, NAN, 2.0]], dtype=m.dtype), 0.5, 1)]
    ),
    (f32, f64),
    T.nanquantile,
)
op(
    "isin",
    torch.isin,
    lambda m: (
        [
            (lambda x: s(x, x.flatten()[::3]))(m(3, 4)),
            s(m(3, 4), m(2, 2)),
            (lambda x: s(x, x[1:], invert=True))(m(5)),
            (lambda x: s(x[2].item(), x))(m(4)),
            s(m(5), m.scalar()),
            s(m(3, 4), m(0)),
            s(m(3, 4), m(5, dtype=f64)),
        ]
        + (
            [s(torch.tensor([NAN, 1.0, 0.0]).to(m.dtype), torch.tensor([NAN, 0.0]).to(m.dtype))]
            if m.dtype.is_floating_point
            else []
        )
    ),
    NUM,
)


def _search_samples(m):
    seq = sorted_(m(6))
    hits = m(7)
    return [
        s(seq, m(3, 4)),
        s(seq, m(3, 4), right=True),
        s(sorted_(hits), hits, side="right"),
        s(sorted_(hits), hits, side="left"),
        s(sorted_(m(3, 6)), m(3, 4)),
        s(seq, m.scalar()),
        s(seq, m(5), out_int32=True),
        (lambda x: s(x, m(5), sorter=x.argsort()))(m(6)),
        s(m(7), m(5)),  # not sorted: eager's binary search decides
        s(m(0), m(3)),
        s(m(1), m(2, 2)),
    ] + (
        [s(torch.tensor([1.0, 2.0, NAN]).to(m.dtype), torch.tensor([1.5, NAN, 3.0]).to(m.dtype))]
        if m.dtype.is_floating_point
        else []
    )


op("searchsorted", torch.searchsorted, _search_samples, NUM)
op(
    "bucketize",
    torch.bucketize,
    lambda m: [
        s(m(3, 4), sorted_(m(5))),
        (lambda x: s(x, sorted_(x.flatten()), right=True))(m(2, 3)),
        (lambda x: s(x, sorted_(x.flatten())))(m(2, 3)),
        s(m.scalar(), sorted_(m(5))),
        s(m(3, 4), sorted_(m(5)), out_int32=True),
        s(m(3), m(0)),
    ],
    NUM,
)
op(
    "linalg_norm",
    torch.linalg.norm,
    lambda m: [
        s(m(3, 4)),
        s(m(5)),
        s(m(2, 3, 4)),
        s(m(3, 4), 1),
        s(m(3, 4), -1),
        s(m(3, 4), math.inf),
        s(m(3, 4), -math.inf),
        s(m(3, 4), "fro"),
        s(m(2, 3, 4), "fro", (0, 2), True),
        s(m(2, 3, 4), 3, -1),
        s(m(2, 3, 4), math.inf, (2, 0)),
        s(m(2, 3, 4), -1, (1, 2), True),
        s(m(3, 4), dim=(1, 0)),
        s(m(5), 0),
        s(m(3, 4), dtype=f64),
        s(m(0, 4), math.inf),
    ],
    FLOAT,
    tol=RED_TOL,
)
op(  # the orders of the singular values: torch has no SVD of low-precision dtypes
    "linalg_norm",
    torch.linalg.norm,
    lambda m: [s(m(3, 4), "nuc"), s(m(2, 3, 4), 2, (2, 0), True), s(m(4, 3), -2)],
    (f32, f64),
    variant="singular_values",
)
op(
    "linalg_matrix_norm",
    torch.linalg.matrix_norm,
    lambda m: [
        s(m(4, 3), 2),
        s(m(3, 4)),
        s(m(2, 3, 4), "nuc"),
        s(m(2, 3, 4), -2, (2, 0), True),
        s(m(2, 3, 4), "nuc", (0, 1), keepdim=True),
        s(m(3, 4), 1, keepdim=True),
        s(m(2, 3, 4), -1, (-1, 0)),
        s(m(3, 4), math.inf),
        s(m(2, 3, 4), -math.inf, (1, 2), True),
        s(m(3, 4), "fro", (1, 0), dtype=f64),
    ],
    (f32, f64),
    tol=RED_TOL,
)
op(
    "renorm",
    torch.renorm,
    lambda m: [
        s(m(3, 4), 2, 0, 1.0),
        s(m(3, 4, 2), 1, 1, 2.0),
        s(m(3, 4), 3, -1, 0.5),
        s(m(2, 3), math.inf, 0, 1.0),
        s(m(3, 4), 2, 0, 100.0),
        s(m(3, 4), 2, 1, 0.0),
    ],
    FLOAT,
    T.renorm,
    tol=RED_TOL,
)
