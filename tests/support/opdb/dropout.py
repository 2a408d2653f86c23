"""Dropout and its variants: random results, checked by what they keep and drop
(``thunder/ops/ltorch/dropout.py``)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .entries import FLOAT, f32, op, s


def _dropout_check(out, sample) -> bool:
    x, p = sample.args[0], sample.args[1] if len(sample.args) > 1 else 0.5
    kept = out != 0
    return bool(torch.allclose(out[kept].double(), x[kept].double() / (1 - p), rtol=1e-2, atol=1e-3))


op("dropout", F.dropout, lambda m: [s(m(3, 4), training=False), s(m(3, 4), 0.0), s(m(3, 4), 1.0)], FLOAT)
op(
    "dropout",
    F.dropout,
    lambda m: [s(m(30, 40), 0.3)],
    FLOAT,
    values=False,
    check=_dropout_check,
    variant="random",
)
op("dropout", torch.dropout, lambda m: [s(m(3, 4), 0.5, False)], FLOAT, variant="torch")


def _channels_check(batched: bool):
    """Channel-wise dropout: each channel all zeros or all scaled by 1/(1-p)."""

    def check(out, sample) -> bool:
        x, p = sample.args[0], sample.args[1]
        lead = 2 if batched else 1
        for o, i in zip(
            out.reshape(*out.shape[:lead], -1).flatten(0, lead - 1),
            x.reshape(*x.shape[:lead], -1).flatten(0, lead - 1),
        ):
            if not (
                bool((o == 0).all()) or torch.allclose(o.double(), i.double() / (1 - p), rtol=1e-2, atol=1e-3)
            ):
                return False
        return True

    return check


for _n in (1, 2, 3):
    _fn = getattr(F, f"dropout{_n}d")
    _shape = (2, 3) + (4,) * _n
    op(f"dropout{_n}d", _fn, lambda m, sh=_shape: [s(m(*sh), training=False), s(m(*sh), 0.0)], FLOAT)
    op(
        f"dropout{_n}d",
        _fn,
        lambda m, sh=_shape, n=_n: [s(m(*sh), 0.4)] + ([s(m(*sh[1:]), 0.4)] if n != 2 else []),
        FLOAT,
        values=False,
        check=_channels_check(True),
        variant="random",
    )
op(
    "dropout1d",
    F.dropout1d,
    lambda m: [s(m(6, 20), 0.5)],
    (f32,),
    values=False,
    check=_channels_check(False),
    variant="unbatched",
)
op(
    "feature_dropout",
    torch.feature_dropout,
    lambda m: [s(m(4, 5, 6), 0.3, True)],
    FLOAT,
    values=False,
    check=_channels_check(True),
)
op("feature_dropout", torch.feature_dropout, lambda m: [s(m(4, 5, 6), 0.3, False)], FLOAT, variant="eval")

_SELU_ALPHA_SCALE = 1.7580993408473766


def _alpha_check(channel: bool):
    """Alpha dropout: kept elements map to a * x + a * alpha * p, dropped ones to a * alpha * (p - 1)."""

    def check(out, sample) -> bool:
        x, p = sample.args[0], sample.args[1]
        a = 1.0 / math.sqrt((_SELU_ALPHA_SCALE**2 * p + 1) * (1 - p))
        kept = torch.isclose(out.double(), a * x.double() + a * _SELU_ALPHA_SCALE * p, rtol=2e-2, atol=2e-2)
        dropped = torch.isclose(
            out.double(),
            torch.tensor(a * _SELU_ALPHA_SCALE * (p - 1), dtype=torch.float64),
            rtol=2e-2,
            atol=2e-2,
        )
        if channel:  # a whole channel is kept or dropped
            kept, dropped = kept.flatten(2).all(-1), dropped.flatten(2).all(-1)
        return bool((kept | dropped).all()) and bool(kept.any()) and bool(dropped.any())

    return check


op(
    "alpha_dropout",
    F.alpha_dropout,
    lambda m: [s(m(3, 4), 0.3, False), s(m(3, 4)), s(m(3, 4), 0.0, True)],
    FLOAT,
    torch.alpha_dropout,
)
op(
    "alpha_dropout",
    F.alpha_dropout,
    lambda m: [s(m(30, 40), 0.3, True)],
    FLOAT,
    values=False,
    check=_alpha_check(False),
    variant="random",
)
op(
    "feature_alpha_dropout",
    F.feature_alpha_dropout,
    lambda m: [s(m(3, 4, 5), 0.5, False)],
    FLOAT,
    torch.feature_alpha_dropout,
)
op(
    "feature_alpha_dropout",
    F.feature_alpha_dropout,
    lambda m: [s(m(8, 6, 5), 0.4, True)],
    FLOAT,
    values=False,
    check=_alpha_check(True),
    variant="random",
)
