"""Shape ops: views, reshapes, permutations, expansions, concatenation, splits, diagonals and
flips (``thunder/ops/ltorch/shape.py``, ``matrix.py``)."""

from __future__ import annotations

import torch

from .entries import ALL, T, f32, i32, i64, op, s, unary

# -- shape ----------------------------------------------------------------------------------
op(
    "reshape",
    torch.reshape,
    lambda m: [s(m(3, 4), (4, 3)), s(m(3, 4), (-1,)), s(m(2, 3, 4), (6, -1)), s(m(3, 4), shape=(2, 6))],
    ALL,
    T.reshape,
)
op("reshape", T.reshape, lambda m: [s(m(3, 4), 2, 6), s(m(2, 3, 4), -1, 4)], ALL, variant="varargs")
op(
    "view",
    T.view,
    lambda m: [s(m(3, 4), 12), s(m(3, 4), 2, -1), s(m(3, 4), (4, 3)), s(m(3, 4), size=(2, 6))],
    ALL,
)
op(
    "view",
    T.view,
    lambda m: [
        s(m(3, 4), torch.int32),
        s(m(3, 4), torch.float16),
        s(m(3, 4), dtype=f32),
        s(m(3, 4), torch.uint8),
    ],
    (f32,),
    variant="dtype",
)
op(
    "as_strided",
    torch.as_strided,
    lambda m: [s(m(4, 4), (2, 2), (1, 2)), s(m(4, 4), (3, 2), (0, 5), 3), s(m(2, 3), (6,), (1,))],
    ALL,
    T.as_strided,
)
op(
    "view_as_real",
    torch.view_as_real,
    lambda m: [s(torch.randn(3, 4, dtype=m.dtype)), s(torch.randn((), dtype=m.dtype))],
    (torch.complex64, torch.complex128),
)
op("reshape_as", T.reshape_as, lambda m: [s(m(3, 4), m(2, 6))], ALL, T.view_as)
op(
    "flatten",
    torch.flatten,
    lambda m: [s(m(2, 3, 4)), s(m(2, 3, 4), 1), s(m(2, 3, 4, 5), 1, 2), s(m())],
    ALL,
    T.flatten,
)
op("unflatten", torch.unflatten, lambda m: [s(m(2, 12), 1, (3, 4)), s(m(6, 2), 0, (-1, 3))], ALL, T.unflatten)
op("permute", torch.permute, lambda m: [s(m(2, 3, 4), (2, 0, 1)), s(m(2, 3), dims=(1, 0))], ALL, T.permute)
op("permute", T.permute, lambda m: [s(m(2, 3, 4), 2, 0, 1)], ALL, variant="varargs")
op(
    "transpose",
    torch.transpose,
    lambda m: [s(m(2, 3, 4), 0, 2), s(m(2, 3), -1, -2)],
    ALL,
    T.transpose,
    torch.swapaxes,
)
op("t", torch.t, lambda m: [s(m(2, 3)), s(m(3))], ALL, T.t)
op("movedim", torch.movedim, lambda m: [s(m(2, 3, 4), 0, -1), s(m(2, 3, 4), (0, 1), (2, 0))], ALL, T.movedim)
op("unsqueeze", torch.unsqueeze, lambda m: [s(m(2, 3), 0), s(m(2, 3), -1), s(m(), 0)], ALL, T.unsqueeze)
op(
    "squeeze",
    torch.squeeze,
    lambda m: [s(m(2, 1, 3, 1)), s(m(2, 1, 3), 1), s(m(2, 1, 3), 0), s(m(1, 3, 1), (0, 2))],
    ALL,
    T.squeeze,
)
op(
    "expand",
    T.expand,
    lambda m: [s(m(3, 1), 3, 4), s(m(3, 1), (2, 3, 4)), s(m(1), -1), s(m(3, 1), size=(3, 2))],
    ALL,
)
op("expand_as", T.expand_as, lambda m: [s(m(3, 1), m(2, 3, 4))], ALL)
op("broadcast_to", torch.broadcast_to, lambda m: [s(m(3, 1), (2, 3, 4))], ALL, T.broadcast_to)
op("broadcast_to", T.broadcast_to, lambda m: [s(m(3, 1), 2, 3, 4), s(m(3), 2, -1)], ALL, variant="sizes")
op("contiguous", T.contiguous, unary(), ALL)
op("clone", torch.clone, unary(), ALL, T.clone)
op(
    "cat",
    torch.cat,
    lambda m: [s([m(2, 3), m(4, 3)]), s([m(2, 3), m(2, 1)], dim=1), s([m(2), m(0)])],
    ALL,
    torch.concat,
)
op("stack", torch.stack, lambda m: [s([m(2, 3), m(2, 3)]), s([m(2, 3), m(2, 3), m(2, 3)], dim=-1)], ALL)
op("split", torch.split, lambda m: [s(m(5, 3), 2), s(m(5, 3), [1, 2], dim=1)], ALL, T.split)
op("chunk", torch.chunk, lambda m: [s(m(5, 3), 2), s(m(5, 4), 2, 1)], ALL, T.chunk)
op("unbind", torch.unbind, lambda m: [s(m(3, 2)), s(m(3, 2), 1)], ALL, T.unbind)
op("narrow", torch.narrow, lambda m: [s(m(5, 3), 0, 1, 3), s(m(5, 3), -1, -2, 2)], ALL, T.narrow)
op(
    "narrow",
    torch.narrow,
    lambda m: [s(m(5, 3), 0, torch.tensor(1), 3), s(m(5, 3), 1, torch.tensor(-2), 2)],
    ALL,
    T.narrow,
    variant="tensor_start",
)
op("select", torch.select, lambda m: [s(m(3, 4), 0, 1), s(m(3, 4, 2), -1, -2), s(m(3), 0, 2)], ALL, T.select)
op("ravel", torch.ravel, lambda m: [s(m(3, 4)), s(m()), s(m(2, 3, 1))], ALL, T.ravel)
op(
    "tensor_split",
    torch.tensor_split,
    lambda m: [
        s(m(7, 3), 3),
        s(m(7, 3), [1, 4], 0),
        s(m(3, 7), (2, -1, 9), dim=1),
        s(m(4, 5), [3, 1], 1),
        s(m(5), sections=2),
    ],
    ALL,
    T.tensor_split,
)
op("hstack", torch.hstack, lambda m: [s([m(3), m(2)]), s([m(2, 3), m(2, 1)]), s((m(), m()))], ALL)
op(
    "vstack",
    torch.vstack,
    lambda m: [s([m(3), m(3)]), s([m(2, 3), m(1, 3)]), s([m(2, 3, 2), m(1, 3, 2)])],
    ALL,
    torch.row_stack,
)
op(
    "dstack",
    torch.dstack,
    lambda m: [s([m(3), m(3)]), s([m(2, 3), m(2, 3)]), s([m(2, 3, 2), m(2, 3, 1)])],
    ALL,
)
op(
    "meshgrid",
    torch.meshgrid,
    lambda m: [
        s(m(3), m(4), indexing="ij"),
        s(m(3), m(4), m(2), indexing="xy"),
        s([m(3), m()], indexing="ij"),
    ],
    ALL,
)
op(
    "broadcast_tensors",
    torch.broadcast_tensors,
    lambda m: [s(m(3, 1), m(4)), s(m(2, 1, 3), m(), m(4, 1))],
    ALL,
)
op(
    "diagonal",
    torch.diagonal,
    lambda m: [
        s(m(3, 4)),
        s(m(3, 4), 1),
        s(m(4, 3), -2),
        s(m(2, 3, 4), 0, 2, 0),
        s(m(3, 3), 5),
        s(m(2, 3, 4), offset=-1, dim1=-1, dim2=1),
    ],
    ALL,
    T.diagonal,
)
op(
    "diagonal_scatter",
    torch.diagonal_scatter,
    lambda m: [
        s(m(3, 4), m(3)),
        s(m(3, 4), m(2), 2),
        s(m(4, 3), m(2), -2),
        s(m(2, 3, 4), m(3, 2), 0, 2, 0),
        s(m(3, 3), m(0), 5),
        s(m(2, 3, 4), m(2, 3), offset=-1, dim1=-1, dim2=1),
    ],
    ALL,
    T.diagonal_scatter,
)
op("diag", torch.diag, lambda m: [s(m(3)), s(m(3), 2), s(m(3, 4), -1), s(m(4, 3))], ALL, T.diag)
op(
    "diag_embed",
    torch.diag_embed,
    lambda m: [s(m(3)), s(m(2, 3), 1), s(m(2, 3), -2, 0, 2), s(m(2, 3), dim1=2, dim2=0)],
    ALL,
    T.diag_embed,
)
op(
    "tril_indices",
    torch.tril_indices,
    lambda m: [s(3, 4), s(4, 3, 1), s(5, 5, -2, dtype=m.dtype), s(3, 3, -4), s(0, 3), s(3, 4, 9)],
    (i64, i32),
)
op(
    "triu_indices",
    torch.triu_indices,
    lambda m: [s(3, 4), s(4, 3, 1), s(5, 5, -2, dtype=m.dtype), s(3, 3, 4), s(3, 4, -9)],
    (i64, i32),
)
op(
    "flip",
    torch.flip,
    lambda m: [s(m(3, 4), (0,)), s(m(2, 3, 4), [0, -1]), s(m(3, 4), dims=(1,))],
    ALL,
    T.flip,
)
op("flip", T.flip, lambda m: [s(m(2, 3, 4), 0, 2)], ALL, variant="varargs")
