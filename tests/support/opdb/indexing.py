"""Indexing, gathers and scatters, and repetition (``thunder/ops/ltorch/indexing.py``,
``scatter.py``, ``repetition.py``)."""

from __future__ import annotations

import torch

from .entries import ALL, NUM, T, b8, i64, op, s

op(
    "getitem",
    T.__getitem__,
    lambda m: [
        s(m(4, 5), 1),
        s(m(4, 5), (slice(1, 3), None, Ellipsis)),
        s(m(4, 5, 6), (Ellipsis, -1)),
        s(m(4, 5, 6), (slice(None, None, 2), 0, slice(1, None))),
        s(m(4, 5), m.index(4, 3)),
        s(m(4, 5, 6), (slice(None), m.index(5, 2, 2), 1)),
        s(m(4, 5), torch.tensor([-1, 0, -4])),
        s(m(3, 4, 5, 6), (slice(None), torch.tensor([0, -1]), torch.tensor([[1], [2]]))),
        s(m(3, 4, 5, 6), (torch.tensor([0, 2]), slice(1, 3), torch.tensor([[1], [4]]), None)),
        s(m(3, 4, 5, 6), (None, torch.tensor([0, 2]), 1, torch.tensor([1, 4]))),
        s(m(3, 4, 5), (m.index(3, 2, 1), m.index(4, 3), m.index(5, 1, 3))),
    ],
    ALL,
)
op(
    "getitem",
    T.__getitem__,
    lambda m: [
        s(m(3, 4, 5), (Ellipsis, [-2], slice(None))),  # Falcon's qkv[..., [-2], :]
        s(m(3, 4, 5), [2, 0, 2, 1]),
        s(m(3, 4, 5), ([[0, 1], [2, 0]],)),
        s(m(3, 4, 5), (slice(None), [True, False, True, True])),
        s(m(3, 4, 5), ([0, 2], slice(None), [1, 4])),
        s(m(3, 4, 5), ([[True, False, True, True], [False, False, True, False], [True] * 4],)),
    ],
    ALL,
    variant="lists",
)
op(
    "index_select",
    torch.index_select,
    lambda m: [s(m(4, 5), 1, m.index(5, 3)), s(m(4), 0, m.index(4, 6))],
    ALL,
    T.index_select,
)
op(
    "gather",
    torch.gather,
    lambda m: [s(m(4, 5), 1, m.index(5, 4, 2)), s(m(4, 5), 0, m.index(4, 2, 5))],
    ALL,
    T.gather,
)
op(
    "take_along_dim",
    torch.take_along_dim,
    lambda m: [
        s(m(4, 5), m.index(5, 4, 2), 1),
        s(m(4, 5), m.index(20, 3, 2)),
        s(m(4, 1, 5), m.index(4, 2, 3, 1), 0),
    ],
    ALL,
    T.take_along_dim,
)
op(
    "index_copy",
    torch.index_copy,
    lambda m: [s(m(5, 3), 0, torch.tensor([4, 0, 2]), m(3, 3)), s(m(5, 3), 1, torch.tensor([2, 0]), m(5, 2))],
    ALL,
    T.index_copy,
)
op(
    "index_add",
    torch.index_add,
    lambda m: [
        s(m(5, 3), 0, torch.tensor([4, 0, 4]), m(3, 3)),
        s(m(5, 3), 1, torch.tensor([2, 0]), m(5, 2), alpha=2),
    ],
    NUM,
    T.index_add,
)
op(
    "repeat",
    T.repeat,
    lambda m: [s(m(2, 3), 2, 1), s(m(2, 3), (1, 2, 3)), s(m(3), 1), s(m(), 2), s(m(2), repeats=(2, 2))],
    ALL,
)
op(
    "tile",
    torch.tile,
    lambda m: [s(m(2, 3), (2,)), s(m(2, 3), (2, 1, 2)), s(m(2, 3), dims=(1, 2))],
    ALL,
    T.tile,
)
op("tile", T.tile, lambda m: [s(m(2, 3), 2, 2)], ALL, variant="varargs")
op(
    "repeat_interleave",
    torch.repeat_interleave,
    lambda m: [s(m(2, 3), 2), s(m(2, 3), 3, 1), s(m(2, 3), 2, dim=-2)],
    ALL,
    T.repeat_interleave,
)
op("roll", torch.roll, lambda m: [s(m(4, 3), 1), s(m(4, 3), -1, 0), s(m(4, 3), (2, 5), (0, 1))], ALL, T.roll)
op("scatter_add", torch.scatter_add, lambda m: [s(m(3, 5), 1, m.index(5, 3, 4), m(3, 4))], NUM, T.scatter_add)
# a permutation per row: no index repeats, so which write wins is defined
_PERM = torch.tensor([[0, 3, 1, 4], [2, 0, 4, 1], [4, 2, 3, 0]])
op(
    "scatter",
    torch.scatter,
    lambda m: [
        s(m(3, 5), 1, _PERM, m(3, 4)),
        s(m(3, 5), 1, _PERM[:2, :3], m.scalar()),
        s(m(5, 3), 0, _PERM.T[:2], m(3, 3), reduce="add"),
        s(m(3, 5), 1, m.index(5, 3, 4), m(3, 4), reduce="multiply"),
    ],
    NUM,
    T.scatter,
)
op("scatter", torch.scatter, lambda m: [s(m(3, 5), 1, _PERM, value=1)], NUM, variant="value")
op(
    "scatter_reduce",
    torch.scatter_reduce,
    lambda m: [
        s(m(3, 5), 1, m.index(5, 3, 4), m(3, 4), r, include_self=i)
        for r in ("sum", "mean", "prod", "amax", "amin")
        for i in (True, False)
    ],
    NUM,
    T.scatter_reduce,
)
op(
    "index_put",
    torch.index_put,
    lambda m: [
        s(m(4, 3), (torch.tensor([0, 2, 0]), torch.tensor([1, 1, 2])), m(3)),
        s(m(4, 3), (torch.tensor([0, 2, 0]),), m(3, 3), True),
        s(m(4, 3), (torch.tensor([[1], [3]]), torch.tensor([0, 2])), m(), accumulate=True),
        s(m(4, 3), (m(4, 3, dtype=b8),), m()),
    ],
    NUM,
    T.index_put,
)
op(
    "index_fill",
    torch.index_fill,
    lambda m: [
        s(m(4, 3), 0, torch.tensor([0, -1, 0]), m.scalar()),
        s(m(4, 3), 1, torch.tensor(1), torch.tensor(2, dtype=m.dtype)),
        s(m(), 0, torch.tensor([0]), m.scalar()),
    ],
    ALL,
    T.index_fill,
)
op(
    "masked_scatter",
    torch.masked_scatter,
    lambda m: [
        s(m(3, 4), m(3, 4, dtype=b8), m(12)),
        s(m(3, 4), m(4, dtype=b8), m(4, 5)),
        s(m(3, 4), m(3, 4, dtype=b8) & False, m(0)),
    ],
    ALL,
    T.masked_scatter,
)

op(
    "take",
    torch.take,
    lambda m: [
        s(m(3, 4), m.index(12, 5)),
        s(m(3, 4), torch.tensor([[-1, 0], [5, -12]])),
        s(m(), torch.tensor([0, -1])),
        s(m(3), torch.tensor([], dtype=i64)),
        s(m(3, 4), torch.tensor(7)),
    ],
    ALL,
    T.take,
)
