"""Convolutions and pooling: ``F.conv1d/2d/3d``, ``F.max_pool*``, ``F.avg_pool*``,
``F.adaptive_avg_pool*`` (and their ``torch.*`` spellings).

Each maps to one prim (``prims.convolution``, ``prims.max_pool``, ...): a windowed op has
no useful decomposition into elementwise prims, so the prim is the unit executors claim.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.meta import ShapeError, device_of, dtype_of, shape_of


def _tuple(v, n: int, name: str, op: str) -> tuple[int, ...]:
    if isinstance(v, int):
        return (v,) * n
    v = tuple(v)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise ShapeError(f"{op}: {name} must be an int or {n} ints, got {v}")
    return v


def _conv(n: int):
    op = f"F.conv{n}d"

    def conv(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        stride_ = _tuple(stride, n, "stride", op)
        dilation_ = _tuple(dilation, n, "dilation", op)
        if isinstance(padding, str):
            if padding == "valid":
                pad = (0,) * n
            elif padding == "same":
                if any(s != 1 for s in stride_):
                    raise ShapeError(f"{op}: padding='same' needs stride 1, got {stride_}")
                total = [d * (k - 1) for d, k in zip(dilation_, shape_of(weight)[2:])]
                if any(t % 2 for t in total):
                    raise ShapeError(f"{op}: padding='same' with an even kernel extent is not supported")
                pad = tuple(t // 2 for t in total)
            else:
                raise ShapeError(f"{op}: padding must be 'same', 'valid' or ints, got {padding!r}")
        else:
            pad = _tuple(padding, n, "padding", op)
        batched = len(shape_of(input)) == n + 2
        x = (
            input
            if batched
            else prims.broadcast_in_dim(input, (1,) + shape_of(input), tuple(range(1, n + 2)))
        )
        out = prims.convolution(x, weight, bias, stride_, pad, dilation_, groups)
        return out if batched else prims.squeeze(out, (0,))

    conv.__name__ = f"conv{n}d"
    fns = [getattr(F, f"conv{n}d")] + (
        [getattr(torch, f"conv{n}d")] if getattr(torch, f"conv{n}d") is not getattr(F, f"conv{n}d") else []
    )
    return torchsymbol(*fns, torch_impl=f"torch.nn.functional.conv{n}d", tags=(Tag.CONV,))(conv)


conv1d, conv2d, conv3d = _conv(1), _conv(2), _conv(3)


def _max_pool(n: int):
    op = f"F.max_pool{n}d"

    def max_pool(
        input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
    ):
        if return_indices:
            raise ShapeError(f"{op}: return_indices=True is not supported")
        k = _tuple(kernel_size, n, "kernel_size", op)
        st = _tuple(stride if stride not in (None, ()) else k, n, "stride", op)
        return prims.max_pool(
            input, k, st, _tuple(padding, n, "padding", op), _tuple(dilation, n, "dilation", op), ceil_mode
        )

    max_pool.__name__ = f"max_pool{n}d"
    fns = [getattr(F, f"max_pool{n}d"), getattr(torch, f"max_pool{n}d")]
    return torchsymbol(*fns, torch_impl=f"torch.nn.functional.max_pool{n}d", tags=(Tag.POOL,))(max_pool)


max_pool1d, max_pool2d, max_pool3d = _max_pool(1), _max_pool(2), _max_pool(3)


def _avg_pool(n: int):
    op = f"F.avg_pool{n}d"

    def avg_pool(
        input,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ):
        k = _tuple(kernel_size, n, "kernel_size", op)
        st = _tuple(stride if stride not in (None, ()) else k, n, "stride", op)
        pad = _tuple(padding, n, "padding", op)
        if n == 1 and divisor_override is not None:
            raise ShapeError(f"{op}: divisor_override is not an argument of avg_pool1d")
        return prims.avg_pool(input, k, st, pad, ceil_mode, count_include_pad, divisor_override)

    avg_pool.__name__ = f"avg_pool{n}d"
    fns = [getattr(F, f"avg_pool{n}d")] + (
        [getattr(torch, f"avg_pool{n}d")] if hasattr(torch, f"avg_pool{n}d") else []
    )
    return torchsymbol(*fns, torch_impl=f"torch.nn.functional.avg_pool{n}d", tags=(Tag.POOL,))(avg_pool)


avg_pool1d, avg_pool2d, avg_pool3d = _avg_pool(1), _avg_pool(2), _avg_pool(3)


def _adaptive_avg_pool(n: int):
    op = f"F.adaptive_avg_pool{n}d"

    def adaptive_avg_pool(input, output_size):
        s = shape_of(input)
        size = _tuple(output_size, n, "output_size", op)
        size = tuple(s[len(s) - n + i] if o is None else o for i, o in enumerate(size))
        return prims.adaptive_avg_pool(input, size)

    adaptive_avg_pool.__name__ = f"adaptive_avg_pool{n}d"
    return torchsymbol(
        getattr(F, f"adaptive_avg_pool{n}d"),
        torch_impl=f"torch.nn.functional.adaptive_avg_pool{n}d",
        tags=(Tag.POOL,),
    )(adaptive_avg_pool)


adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d = (_adaptive_avg_pool(n) for n in (1, 2, 3))


# -- transposed convolution -------------------------------------------------------------------
def _spread(x, dim: int, stride: int):
    """Insert ``stride - 1`` zeros between neighbours along ``dim``: L -> (L - 1) * stride + 1."""
    s = shape_of(x)
    if stride == 1 or s[dim] == 0:
        return x
    wide = s[: dim + 1] + (1,) + s[dim + 1 :]
    col = prims.broadcast_in_dim(x, wide, tuple(i for i in range(len(wide)) if i != dim + 1))
    zeros = prims.full(s[: dim + 1] + (stride - 1,) + s[dim + 1 :], 0, dtype=dtype_of(x), device=device_of(x))
    flat = prims.reshape(prims.cat([col, zeros], dim + 1), s[:dim] + (s[dim] * stride,) + s[dim + 1 :])
    return _pad_dim(flat, dim, 0, 1 - stride)


def _pad_dim(x, dim: int, lo: int, hi: int):
    """Zeros added before (``lo``) and after (``hi``) along ``dim``; a negative width crops."""
    s = shape_of(x)
    start, stop = max(-lo, 0), s[dim] - max(-hi, 0)
    if start or stop != s[dim]:
        begin, end = [0] * len(s), list(s)
        begin[dim], end[dim] = start, stop
        x = prims.slice(x, tuple(begin), tuple(end), (1,) * len(s))
    parts = []
    for width in (max(lo, 0), max(hi, 0)):
        shape = list(shape_of(x))
        shape[dim] = width
        parts.append(prims.full(tuple(shape), 0, dtype=dtype_of(x), device=device_of(x)) if width else None)
    pieces = [p for p in (parts[0], x, parts[1]) if p is not None]
    return prims.cat(pieces, dim) if len(pieces) > 1 else x


def _conv_transpose(n: int):
    op = f"F.conv_transpose{n}d"

    def conv_transpose(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        """The gradient of a convolution: the input spread by ``stride`` (zeros between
        elements), padded by ``dilation * (kernel - 1) - padding`` (plus ``output_padding``
        at the end), convolved with the weight flipped and its channel axes swapped per group."""
        st = _tuple(stride, n, "stride", op)
        pad = _tuple(padding, n, "padding", op)
        out_pad = _tuple(output_padding, n, "output_padding", op)
        dil = _tuple(dilation, n, "dilation", op)
        sw = shape_of(weight)
        if len(sw) != n + 2 or sw[0] % groups:
            raise ShapeError(f"{op}: weight {sw} does not fit groups={groups}")
        for o, s_, d in zip(out_pad, st, dil):
            if o >= max(s_, d):
                raise ShapeError(
                    f"{op}: output_padding {out_pad} must be smaller than either stride {st} or dilation {dil}"
                )
        batched = len(shape_of(input)) == n + 2
        x = (
            input
            if batched
            else prims.broadcast_in_dim(input, (1,) + shape_of(input), tuple(range(1, n + 2)))
        )
        if shape_of(x)[1] != sw[0]:
            raise ShapeError(
                f"{op}: input {shape_of(input)} has {shape_of(x)[1]} channels, the weight {sw} takes {sw[0]}"
            )
        c_in, c_out_g, k = sw[0], sw[1], sw[2:]
        w = prims.reshape(weight, (groups, c_in // groups, c_out_g, *k))
        w = prims.transpose(w, (0, 2, 1, *range(3, n + 3)))
        w = prims.flip(prims.reshape(w, (groups * c_out_g, c_in // groups, *k)), tuple(range(2, n + 2)))
        for i in range(n):
            edge = dil[i] * (k[i] - 1) - pad[i]
            x = _pad_dim(_spread(x, 2 + i, st[i]), 2 + i, edge, edge + out_pad[i])
        out = prims.convolution(x, w, bias, (1,) * n, (0,) * n, dil, groups)
        return out if batched else prims.squeeze(out, (0,))

    conv_transpose.__name__ = f"conv_transpose{n}d"
    return torchsymbol(
        getattr(F, f"conv_transpose{n}d"),
        torch_impl=f"torch.nn.functional.conv_transpose{n}d",
        tags=(Tag.CONV,),
    )(conv_transpose)


conv_transpose1d, conv_transpose2d, conv_transpose3d = (_conv_transpose(n) for n in (1, 2, 3))
