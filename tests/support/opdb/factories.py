"""Factories: ranges, filled and random tensors, triangles, masked fills
(``thunder/ops/ltorch/factories.py``)."""

from __future__ import annotations

import torch

from .entries import ALL, FLOAT, T, b8, f32, f64, i32, i64, op, s

# -- factories ------------------------------------------------------------------------------
EXACT = {f32: (1e-6, 1e-6)}
op(
    "arange",
    torch.arange,
    lambda m: [
        s(5),
        s(1, 10, 3),
        s(0, 1, 0.1),
        s(10, 0, -2.5),
        s(0, 0.3, 0.1),
        s(5, dtype=m.dtype),
        s(3, device="cpu"),
    ],
    (f32, i64),
    tol=EXACT,
)
op(
    "linspace",
    torch.linspace,
    lambda m: [
        s(0, 1, 7, dtype=m.dtype),
        s(-3, 5.5, 10, dtype=m.dtype),
        s(2, 3, 1),
        s(torch.tensor(-2.5), torch.tensor(4.0), 6, dtype=m.dtype),  # ends read in the program
        s(torch.tensor(1), 9.5, 5, dtype=m.dtype),
    ],
    (f32, f64, i64, i32),
)


def _SIZES(m):
    return [
        s(2, 3, dtype=m.dtype),
        s((2, 3), dtype=m.dtype),
        s([4]),
        s(torch.Size([2, 1]), dtype=m.dtype),
        s(size=(1, 2), dtype=m.dtype),
    ]


op("zeros", torch.zeros, _SIZES, ALL)
op("ones", torch.ones, _SIZES, ALL)
op("empty", torch.empty, _SIZES, ALL, values=False)
op("full", torch.full, lambda m: [s((2, 3), m.scalar()), s([2], 1.5, dtype=m.dtype), s((2,), True)], ALL)
op("zeros_like", torch.zeros_like, lambda m: [s(m(3, 4)), s(m(3, 4), dtype=f64)], ALL)
op("ones_like", torch.ones_like, lambda m: [s(m(3, 4)), s(m(3, 4), dtype=i32)], ALL)
op("empty_like", torch.empty_like, lambda m: [s(m(3, 4))], ALL, values=False)
op("full_like", torch.full_like, lambda m: [s(m(3, 4), m.scalar()), s(m(3, 4), 7, dtype=f64)], ALL)
op("new_zeros", T.new_zeros, lambda m: [s(m(3, 4), (2, 2)), s(m(3, 4), 2, 3, dtype=i32)], ALL)
op("new_ones", T.new_ones, lambda m: [s(m(3, 4), (2, 2)), s(m(3, 4), size=(3,))], ALL)
op("new_empty", T.new_empty, lambda m: [s(m(3, 4), (2, 2))], ALL, values=False)
op("new_full", T.new_full, lambda m: [s(m(3, 4), (2, 2), m.scalar())], ALL)
op("fill", torch.fill, lambda m: [s(m(3, 4), m.scalar()), s(m(3, 4), torch.tensor(1, dtype=m.dtype))], ALL)
op("eye", torch.eye, lambda m: [s(3, dtype=m.dtype), s(2, 4, dtype=m.dtype)], ALL)
op(
    "tensor",
    torch.tensor,
    lambda m: [
        s([[1, 2], [3, 4]]),
        s(2.5),
        s([1, 2.5, True]),
        s([True, False]),
        s([1, 2], dtype=m.dtype),
        s([]),
    ],
    (f32, i64),
)
op("as_tensor", torch.as_tensor, lambda m: [s([1, 2]), s(m(3, 4), dtype=f64), s(m(3, 4))], (f32, i64))
op(
    "new_tensor",
    T.new_tensor,
    lambda m: [
        s(m(2), [1, 2.5, -3.7]),
        s(m(2), [[1, 2], [3, 4]]),
        s(m(2), 2),
        s(m(2), [True, False]),
        s(m(2), [1.5, 2], dtype=i32),
        s(m(2), []),
    ],
    ALL,
)
op("tril", torch.tril, lambda m: [s(m(2, 4, 5)), s(m(3, 3), -1), s(m(3, 5), 2)], ALL, T.tril)
op("triu", torch.triu, lambda m: [s(m(2, 4, 5)), s(m(3, 3), 1), s(m(5, 3), -2)], ALL, T.triu)
op(
    "masked_fill",
    torch.masked_fill,
    lambda m: [
        s(m(3, 4), m(3, 4, dtype=b8), m.scalar()),
        s(m(3, 4), m(4, dtype=b8), 2.7),
        s(m(3, 4), m(3, 4, dtype=b8), torch.tensor(9.0)),
        # the mask broadcasts the input too (Falcon's ALiBi scores)
        s(m(2, 4, 1, 6), m(2, 1, 6, 6, dtype=b8), -1.5),
    ],
    ALL,
    T.masked_fill,
)
op(
    "masked_fill",
    T.masked_fill,
    lambda m: [s(m(3, 4), m(3, 4, dtype=b8), float("-inf"))],
    FLOAT,
    variant="inf",
)


def _rand_check(low, high):
    return lambda out, sample: bool(((out >= low) & (out < high)).all())


op(
    "rand",
    torch.rand,
    lambda m: [s(2, 3, dtype=m.dtype), s((40, 50)), s(size=(20, 3))],
    FLOAT,
    values=False,
    check=_rand_check(0, 1),
)
op(
    "randn",
    torch.randn,
    lambda m: [s(200, 50, dtype=m.dtype)],
    (f32, f64),
    values=False,
    check=lambda out, sample: (
        abs(out.double().mean().item()) < 0.05 and abs(out.double().std().item() - 1) < 0.05
    ),
)
op("rand_like", torch.rand_like, lambda m: [s(m(30, 40))], FLOAT, values=False, check=_rand_check(0, 1))
op("randn_like", torch.randn_like, lambda m: [s(m(30, 40)), s(m(2), dtype=f64)], FLOAT, values=False)
op(
    "randint",
    torch.randint,
    lambda m: [s(0, 5, (30, 40)), s(7, (3,), dtype=m.dtype)],
    (i64, i32),
    values=False,
    check=_rand_check(0, 7),
)
