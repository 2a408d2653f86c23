"""put, index_reduce (``thunder/ops/ltorch/indexed.py``)."""

from __future__ import annotations

import torch

from .entries import NUM, T, f32, f64, op, s

# -- put, index_reduce (thunder/ops/ltorch/indexed.py) --------------------------------------
op(
    "put",
    torch.put,
    lambda m: [
        s(m(3, 4), torch.tensor([0, 5, -1], device=m.device), m(3)),
        s(m(3, 4), torch.tensor([[1, 1], [2, -12]], device=m.device), m(2, 2), True),
    ],
    NUM,
    T.put,
)
op(
    "index_reduce",
    torch.index_reduce,
    lambda m: (
        [
            s(m(5, 3), 0, torch.tensor([0, 2, 0, 4], device=m.device), m(4, 3), r, include_self=inc)
            for r, inc in (("prod", True), ("mean", False), ("amax", True), ("amin", False))
        ]
        + [s(m(2, 6), 1, torch.tensor([5, 1], device=m.device), m(2, 2), "mean")]
    ),
    (f32, f64),
    T.index_reduce,
)
