"""Splits and stacks along an axis, and matrix rearrangements (``thunder/ops/ltorch/stacking.py``,
``matrix.py``, ``resample.py``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .entries import ALL, NUM, T, f64, op, s

op(
    "hsplit",
    torch.hsplit,
    lambda m: [
        s(m(4, 6), 2),
        s(m(6), 3),
        s(m(2, 7), [1, 5, 10]),
        s(m(2, 7, 2), (3,)),
        s(m(2, 6), [4, 1]),
    ],
    ALL,
    T.hsplit,
)
op("vsplit", torch.vsplit, lambda m: [s(m(4, 3), 2), s(m(5, 2), [1, 3]), s(m(6, 2, 2), 3)], ALL, T.vsplit)
op("dsplit", torch.dsplit, lambda m: [s(m(2, 3, 4), 2), s(m(2, 3, 5), [1, -2])], ALL, T.dsplit)
op(
    "column_stack",
    torch.column_stack,
    lambda m: [
        s([m(3), m(3, 2), m(3)]),
        s([m(), m()]),
        s((m(2, 3, 4), m(2, 1, 4))),
        s([m(3, 2)]),
        s([m(3)]),
    ],
    ALL,
)
for _n in (1, 2, 3):
    op(
        f"atleast_{_n}d",
        getattr(torch, f"atleast_{_n}d"),
        lambda m: [
            s(m()),
            s(m(3)),
            s(m(2, 3)),
            s(m(2, 3, 4)),
            s(m(), m(3), m(2, 3)),
            s([m(4), m(2, 2)]),
            s((m(),)),
        ],
        ALL,
    )
op(
    "tensor_unfold",
    T.unfold,
    lambda m: [
        s(m(2, 6), 1, 2, 2),
        s(m(7), 0, 3, 1),
        s(m(3, 4, 5), -1, 2, 3),
        s(m(3, 4), 0, 3, 2),
        s(m(4, 3), 0, 4, 1),
        s(m(5), 0, 0, 2),
        s(m(), 0, 1, 1),
        s(m(), 0, 0, 1),
    ],
    ALL,
)
op(
    "channel_shuffle",
    F.channel_shuffle,
    lambda m: [s(m(2, 6, 3), 3), s(m(1, 4, 2, 2), 2), s(m(1, 4, 2, 2), 1), s(m(2, 6, 2, 1, 2), 2)],
    ALL,
    torch.native_channel_shuffle,
    lambda x, groups: torch.nn.ChannelShuffle(groups)(x),
)
op(
    "rot90",
    torch.rot90,
    lambda m: [
        s(m(2, 3)),
        s(m(2, 3, 4), 2, [1, 2]),
        s(m(2, 3, 4), -1, (2, 0)),
        s(m(2, 3), 3, [-1, -2]),
        s(m(2, 3), 4),
        s(m(0, 3), 1),
    ],
    ALL,
    T.rot90,
)
op(
    "cartesian_prod",
    torch.cartesian_prod,
    lambda m: [s(m(3), m(2)), s(m(2), m(3), m(2)), s(m(3), m(0)), s(m(4))],
    ALL,
)
op(
    "block_diag",
    torch.block_diag,
    lambda m: [
        s(m(2, 3), m(1, 2)),
        s(m(2), m(), m(2, 2)),
        s(m(3, 0), m(2, 1)),
        s(m(2, 2), m(2, dtype=f64)),
        s(m(3, 3)),
        s(),
    ],
    ALL,
)
# an empty 1-D input is an empty row: eager's gradient reads the rows below it one too high
op(
    "block_diag",
    torch.block_diag,
    lambda m: [s(m(0), m(2, 2)), s(m(2, 2), m(0), m(1, 2))],
    ALL,
    variant="empty_row",
    numerical_grad=True,
)
op("trace", torch.trace, lambda m: [s(m(3, 3)), s(m(3, 5)), s(m(4, 2)), s(m(0, 3)), s(m(1, 1))], NUM, T.trace)
