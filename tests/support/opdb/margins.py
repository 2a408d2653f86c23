"""Margin, ranking and distance losses (``thunder/ops/ltorch/margins.py``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .entries import FLOAT, POS, Maker, f32, f64, op, s


# -- margin, ranking and distance losses (thunder/ops/ltorch/margins.py) ---------------------
def _signs(m: Maker, *shape) -> torch.Tensor:
    return (torch.randint(0, 2, shape, device=m.device) * 2 - 1).to(m.dtype)


op(
    "margin_ranking_loss",
    F.margin_ranking_loss,
    lambda m: [
        s(m(6), m(6), _signs(m, 6)),
        s(m(3, 4), m(3, 4), _signs(m, 3, 4), margin=0.5, reduction="none"),
    ],
)
op(
    "hinge_embedding_loss",
    F.hinge_embedding_loss,
    lambda m: [s(m(3, 4), _signs(m, 3, 4)), s(m(5), _signs(m, 5), margin=2.0, reduction="sum")],
)
op(
    "soft_margin_loss",
    F.soft_margin_loss,
    lambda m: [s(m(3, 4), _signs(m, 3, 4)), s(m(5), _signs(m, 5), reduction="none")],
)
op(
    "multilabel_soft_margin_loss",
    F.multilabel_soft_margin_loss,
    lambda m: [
        s(m(3, 4), m(3, 4, low=0, high=1)),
        s(m(3, 4), m(3, 4, low=0, high=1), weight=m(4), reduction="none"),
    ],
)
op(
    "multi_margin_loss",
    F.multi_margin_loss,
    lambda m: [
        s(m(4, 5), m.index(5, 4)),
        s(m(4, 5), m.index(5, 4), p=2, margin=0.5, weight=m(5, low=0.1, high=1), reduction="sum"),
        s(m(5), m.index(5, 1), reduction="none"),
        s(m(5), torch.tensor(3, device=m.device)),
    ],
    (f32, f64),
)
op(
    "multilabel_margin_loss",
    F.multilabel_margin_loss,
    lambda m: [
        s(m(3, 4), torch.tensor([[3, 0, -1, 1], [0, 1, 2, 3], [-1, 2, 0, 1]], device=m.device)),
        s(m(4), torch.tensor([1, 2, -1, 0], device=m.device), reduction="none"),
    ],
    (f32, f64),
)
op(
    "cosine_embedding_loss",
    F.cosine_embedding_loss,
    lambda m: [
        s(m(3, 4), m(3, 4), _signs(m, 3)),
        s(m(3, 4), m(3, 4), _signs(m, 3), margin=0.2, reduction="none"),
    ],
)
op(
    "pairwise_distance",
    F.pairwise_distance,
    lambda m: [s(m(3, 4), m(3, 4)), s(m(3, 4), m(4), 1.0, keepdim=True), s(m(2, 3), m(2, 3), 3)],
    FLOAT,
    torch.pairwise_distance,
)
op("pdist", F.pdist, lambda m: [s(m(4, 3)), s(m(5, 2), 1.0), s(m(3, 3), 3.0)], (f32, f64), torch.pdist)
op(
    "triplet_margin_loss",
    F.triplet_margin_loss,
    lambda m: [
        s(m(3, 4), m(3, 4), m(3, 4)),
        s(m(3, 4), m(3, 4), m(3, 4), margin=0.5, p=1, swap=True, reduction="none"),
    ],
)
op(
    "poisson_nll_loss",
    F.poisson_nll_loss,
    lambda m: [
        s(m(3, 4), m(3, 4, low=0, high=4)),
        s(m(3, 4, **POS), m(3, 4, low=0, high=4), log_input=False, full=True, reduction="sum"),
    ],
)
op(
    "gaussian_nll_loss",
    F.gaussian_nll_loss,
    lambda m: [
        s(m(3, 4), m(3, 4), m(3, 4, low=0.1, high=2)),
        s(m(3, 4), m(3, 4), m(3, low=0.1, high=2), full=True, reduction="sum"),
        s(m(3, 4), m(3, 4), m(3, 1, low=0.001, high=0.02), eps=0.01, reduction="none"),
    ],
)
