"""More ``torch.nn.functional`` layers: ``bilinear``, ``rrelu``, ``local_response_norm``.

(``F.upsample_nearest``/``F.upsample_bilinear`` need nothing here: they are Python functions
without a ``__torch_function__`` check that call ``F.interpolate``, which is an op.)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch import conv, factories, nn, shape
from thunder.ops.ltorch import elementwise as ew
from thunder.ops.meta import ShapeError, shape_of


@torchsymbol(F.bilinear, torch.bilinear, torch_impl="torch.nn.functional.bilinear", tags=(Tag.MATMUL,))
def bilinear(input1, input2, weight, bias=None):
    """``out[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o]``: ``x1 @ W`` for every
    output feature, then the product with ``x2`` summed over ``j``."""
    s1, s2, sw = shape_of(input1), shape_of(input2), shape_of(weight)
    if len(sw) != 3 or s1[-1:] != sw[1:2] or s2[-1:] != sw[2:3] or s1[:-1] != s2[:-1]:
        raise ShapeError(f"F.bilinear: input1 {s1}, input2 {s2} and weight {sw} do not fit")
    o, i, j = sw
    w = shape.reshape(shape.permute(weight, (1, 0, 2)), (i, o * j))  # (i, o*j)
    t = shape.reshape(nn.matmul(input1, w), s1[:-1] + (o, j))
    out = prims.sum(ew.mul(t, shape.unsqueeze(input2, -2)), (len(s1),))
    return out if bias is None else ew.add(out, bias)


@torchsymbol(F.rrelu, torch.rrelu, torch_impl="torch.nn.functional.rrelu", tags=(Tag.ELEMENTWISE,))
def rrelu(
    input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False
):
    """A leaky ReLU whose negative slope is ``(lower + upper) / 2`` in evaluation and drawn
    uniformly from ``[lower, upper]`` per element in training."""
    if not training:
        return ew.leaky_relu(input, (lower + upper) / 2)
    slope = ew.add(ew.mul(factories.rand_like(input), upper - lower), lower)
    return ew.where(ew.ge(input, 0), input, ew.mul(input, slope))


@torchsymbol(F.local_response_norm, torch_impl="torch.nn.functional.local_response_norm", tags=(Tag.NORM,))
def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
    """F's formula: ``x / (k + alpha * avg of x**2 over size neighbouring channels) ** beta``
    (the window zero-padded, ``size // 2`` before and ``(size - 1) // 2`` after)."""
    s = shape_of(input)
    if len(s) < 3:
        raise ShapeError(f"F.local_response_norm: input must have at least 3 dimensions, got shape {s}")
    if s[0] == 0 or s[1] == 0:
        return input
    div = shape.unsqueeze(ew.mul(input, input), 1)
    if len(s) == 3:
        div = nn.pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = shape.squeeze(conv.avg_pool2d(div, (size, 1), stride=1), 1)
    else:
        div = shape.reshape(div, (s[0], 1, s[1], s[2], -1))
        div = nn.pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = shape.squeeze(conv.avg_pool3d(div, (size, 1, 1), stride=1), 1)
        div = shape.reshape(div, s)
    div = ew.pow(ew.add(ew.mul(div, alpha), k), beta)
    return ew.div(input, div)
