"""More elementwise math and small compositions (``thunder/ops/ltorch/special.py``)."""

from __future__ import annotations

import math

import torch

from .entries import INT, NAN, NUM, POS, T, f32, f64, i64, op, s, unary, with_nans

# -- more elementwise math and small compositions (thunder/ops/ltorch/special.py) -----------
op("deg2rad", torch.deg2rad, unary(), (f32, f64, i64), T.deg2rad)
op("rad2deg", torch.rad2deg, unary(), (f32, f64, i64), T.rad2deg)
op(
    "sinc",
    torch.sinc,
    lambda m: unary()(m) + [s(torch.tensor([0.0, 1.0, -2.0, 0.5], dtype=m.dtype))],
    (f32, f64),
    T.sinc,
)
op(
    "isposinf",
    torch.isposinf,
    lambda m: [s(torch.tensor([math.inf, -math.inf, NAN, 1.0], dtype=m.dtype)), s(m(3, 4))],
    (f32, f64),
    T.isposinf,
)
op(
    "isneginf",
    torch.isneginf,
    lambda m: [s(torch.tensor([math.inf, -math.inf, NAN, 1.0], dtype=m.dtype)), s(m(3, 4))],
    (f32, f64),
    T.isneginf,
)
op("isreal", torch.isreal, unary(), NUM, T.isreal)
op(
    "fmax",
    torch.fmax,
    lambda m: [s(with_nans(m, 3, 4), m(3, 4)), s(m(3, 4), with_nans(m, 4))],
    (f32, f64),
    T.fmax,
)
op(
    "fmin",
    torch.fmin,
    lambda m: [s(with_nans(m, 3, 4), m(3, 4)), s(m(3, 4), with_nans(m, 4))],
    (f32, f64),
    T.fmin,
)
# eager's gradient of ldexp is 0 where an integer exponent is negative (2 ** -1 taken as an integer)
op(
    "ldexp",
    torch.ldexp,
    lambda m: [s(m(3, 4), m(3, 4, dtype=i64, low=-3, high=3)), s(m(3, 4), m(4))],
    (f32, f64),
    numerical_grad=True,
)
op("angle", torch.angle, lambda m: [s(with_nans(m, 3, 4)), s(m(5))], (f32, f64), T.angle)
op(
    "polygamma",
    torch.polygamma,
    lambda m: [s(1, m(3, 4, **POS)), s(2, m(4, **POS))],
    (f32, f64),
    torch.special.polygamma,
)
op(
    "mvlgamma",
    torch.mvlgamma,
    lambda m: [s(m(3, 4, low=2.0, high=5.0), 1), s(m(3, 4, low=2.0, high=5.0), p=3)],
    (f32, f64),
    T.mvlgamma,
)
op(
    "special_entr",
    torch.special.entr,
    lambda m: [s(m(3, 4, **POS)), s(torch.tensor([0.0, -1.0, 2.0, NAN], dtype=m.dtype))],
    (f32, f64),
)
op(
    "special_xlog1py",
    torch.special.xlog1py,
    lambda m: [
        s(m(3, 4), m(3, 4, low=-0.9)),
        s(torch.tensor([0.0, 0.0, 1.5], dtype=m.dtype), torch.tensor([2.0, NAN, 1.0], dtype=m.dtype)),
    ],
    (f32, f64),
)
op("special_ndtr", torch.special.ndtr, unary(), (f32, f64))
op("special_log_ndtr", torch.special.log_ndtr, unary(), (f32, f64))
op(
    "bitwise_left_shift",
    torch.bitwise_left_shift,
    lambda m: [s(m(3, 4), m(3, 4, low=0, high=4)), s(m(3, 4), 2)],
    INT,
    T.__lshift__,
)
op(
    "bitwise_right_shift",
    torch.bitwise_right_shift,
    lambda m: [s(m(3, 4), m(3, 4, low=0, high=4)), s(m(3, 4), 1)],
    INT,
    T.__rshift__,
)
op(
    "bernoulli",
    torch.bernoulli,
    lambda m: [s(m(3, 4, low=0, high=1)), s(m(50), 0.3)],
    (f32, f64),
    values=False,
    check=lambda out, sample: bool(((out == 0) | (out == 1)).all()),
)
op("diagflat", torch.diagflat, lambda m: [s(m(2, 3)), s(m(4), 1), s(m(3), -2)], NUM, T.diagflat)
op(
    "dist",
    torch.dist,
    lambda m: [s(m(3, 4), m(3, 4)), s(m(3, 4), m(4), 3), s(m(5), m(5), 1)],
    (f32, f64),
    T.dist,
)
op(
    "trapezoid",
    torch.trapezoid,
    lambda m: [s(m(3, 4)), s(m(3, 4), dx=0.5, dim=0), s(m(3, 4), m(4)), s(m(3, 4), m(3, 4), dim=0)],
    (f32, f64),
)
op("trapz", torch.trapz, lambda m: [s(m(3, 4)), s(m(3, 4), m(4))], (f32, f64))
op(
    "cumulative_trapezoid",
    torch.cumulative_trapezoid,
    lambda m: [s(m(3, 4)), s(m(3, 4), dx=0.5, dim=0), s(m(3, 4), m(4))],
    (f32, f64),
)
