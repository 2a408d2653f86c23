"""``max_unpool1d/2d/3d``: each value written back at the position its max pooling took it
from (``indices`` count positions in the flattened spatial output of each channel), zeros
elsewhere. A ``prims.scatter`` along the flattened spatial dims, so the gradient of the input
is the output's gradient gathered at ``indices``.
"""

from __future__ import annotations

import torch.nn.functional as F

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch import shape
from thunder.ops.ltorch.conv import int_tuple
from thunder.ops.ltorch.scatter import scatter
from thunder.ops.meta import ShapeError, device_of, dtype_of, shape_of


def _unpool(n: int, input, indices, kernel_size, stride, padding, output_size, op: str):
    s = shape_of(input)
    if len(s) not in (n + 1, n + 2):
        raise ShapeError(f"{op}: input must be {n + 1}-D or {n + 2}-D, got shape {s}")
    if shape_of(indices) != s:
        raise ShapeError(f"{op}: indices {shape_of(indices)} must have the input's shape {s}")
    k = int_tuple(kernel_size, n, "kernel_size", op)
    st = k if stride is None else int_tuple(stride, n, "stride", op)
    p = int_tuple(padding, n, "padding", op)
    lead, spatial = s[: len(s) - n], s[len(s) - n :]
    if output_size is None:
        out = tuple((i - 1) * a - 2 * b + c for i, a, b, c in zip(spatial, st, p, k))
    else:
        out = tuple(output_size)[-n:]
    if any(o < 0 for o in out):
        raise ShapeError(f"{op}: the output size {out} is negative")
    m = 1
    for o in out:
        m *= o
    flat_in = shape.reshape(input, lead + (-1,))
    flat_idx = shape.reshape(indices, lead + (-1,))
    zeros = prims.full(lead + (m,), 0, dtype=dtype_of(input), device=device_of(input))
    return shape.reshape(scatter(zeros, len(lead), flat_idx, flat_in), lead + out)


@torchsymbol(F.max_unpool1d, torch_impl="torch.nn.functional.max_unpool1d", tags=(Tag.SHAPE,))
def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _unpool(1, input, indices, kernel_size, stride, padding, output_size, "F.max_unpool1d")


@torchsymbol(F.max_unpool2d, torch_impl="torch.nn.functional.max_unpool2d", tags=(Tag.SHAPE,))
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _unpool(2, input, indices, kernel_size, stride, padding, output_size, "F.max_unpool2d")


@torchsymbol(F.max_unpool3d, torch_impl="torch.nn.functional.max_unpool3d", tags=(Tag.SHAPE,))
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _unpool(3, input, indices, kernel_size, stride, padding, output_size, "F.max_unpool3d")
