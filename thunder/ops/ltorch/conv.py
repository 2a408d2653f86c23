"""Convolutions and pooling: ``F.conv1d/2d/3d``, ``F.max_pool*``, ``F.avg_pool*``,
``F.adaptive_avg_pool*`` (and their ``torch.*`` spellings).

Each maps to one prim (``prims.convolution``, ``prims.max_pool``, ...): a windowed op has
no useful decomposition into elementwise prims, so the prim is the unit executors claim.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import alias, torchsymbol
from thunder.ops.meta import ShapeError, device_of, dtype_of, shape_of
from thunder.ops.prims.windowed import _window_out


def int_tuple(v, n: int, name: str, op: str) -> tuple[int, ...]:
    """``v`` (an int, or one or ``n`` ints) as ``n`` ints; ``name`` and ``op`` for the error."""
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
        stride_ = int_tuple(stride, n, "stride", op)
        dilation_ = int_tuple(dilation, n, "dilation", op)
        if isinstance(padding, str):
            if padding == "valid":
                pad = (0,) * n
            elif padding == "same":
                if any(s != 1 for s in stride_):
                    raise ShapeError(f"{op}: padding='same' needs stride 1, got {stride_}")
                total = [d * (k - 1) for d, k in zip(dilation_, shape_of(weight)[2:])]
                pad = tuple(t // 2 for t in total)
                odd = tuple(t % 2 for t in total)  # as torch: the one extra zero at the end
            else:
                raise ShapeError(f"{op}: padding must be 'same', 'valid' or ints, got {padding!r}")
        else:
            pad = int_tuple(padding, n, "padding", op)
        batched = len(shape_of(input)) == n + 2
        x = (
            input
            if batched
            else prims.broadcast_in_dim(input, (1,) + shape_of(input), tuple(range(1, n + 2)))
        )
        if padding == "same" and any(odd):
            x = _zeros_at_end(x, odd)
        out = prims.convolution(x, weight, bias, stride_, pad, dilation_, groups)
        return out if batched else prims.squeeze(out, (0,))

    conv.__name__ = f"conv{n}d"
    fns = [getattr(F, f"conv{n}d")] + (
        [getattr(torch, f"conv{n}d")] if getattr(torch, f"conv{n}d") is not getattr(F, f"conv{n}d") else []
    )
    return torchsymbol(*fns, torch_impl=f"torch.nn.functional.conv{n}d", tags=(Tag.CONV,))(conv)


def _zeros_at_end(x, widths):
    """``x`` with ``widths[i]`` zeros appended along spatial dim ``i`` (after batch, channels)."""
    for i, w in enumerate(widths):
        if w:
            shape = list(shape_of(x))
            shape[2 + i] = w
            zeros = prims.full(tuple(shape), 0, dtype=dtype_of(x), device=device_of(x))
            x = prims.cat([x, zeros], 2 + i)
    return x


conv1d, conv2d, conv3d = _conv(1), _conv(2), _conv(3)


def _max_pool(n: int):
    op = f"F.max_pool{n}d"

    def max_pool(
        input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
    ):
        k = int_tuple(kernel_size, n, "kernel_size", op)
        st = int_tuple(stride if stride not in (None, ()) else k, n, "stride", op)
        pad, dil = int_tuple(padding, n, "padding", op), int_tuple(dilation, n, "dilation", op)
        if not return_indices:
            return prims.max_pool(input, k, st, pad, dil, ceil_mode)
        s = shape_of(input)
        if len(s) not in (n + 1, n + 2):
            raise ShapeError(f"{op}: expected a {n + 1}-D or {n + 2}-D input, got shape {s}")
        if any(p > kk // 2 for p, kk in zip(pad, k)):
            raise ShapeError(f"{op}: padding {pad} should be at most half of the kernel size {k}")
        windows = []
        for i in range(n):
            size = s[len(s) - n + i]
            out = _window_out(size, k[i], st[i], pad[i], dil[i], ceil_mode)
            if out <= 0:
                raise ShapeError(f"{op}: the window {k} is larger than the padded input {s[-n:]}")
            windows.append(_strided_windows(size, out, k[i], st[i], pad[i], dil[i], device_of(input)))
        return _max_with_indices(input, windows)

    max_pool.__name__ = f"max_pool{n}d"
    fns = [getattr(F, f"max_pool{n}d"), getattr(torch, f"max_pool{n}d")]
    sym = torchsymbol(*fns, torch_impl=f"torch.nn.functional.max_pool{n}d", tags=(Tag.POOL,))(max_pool)
    # ``F.max_pool2d(..., return_indices=True)`` arrives as ``F.max_pool2d_with_indices``
    alias(
        lambda *args, **kwargs: sym(*args, **{**kwargs, "return_indices": True}),
        getattr(F, f"max_pool{n}d_with_indices"),
    )
    return sym


# -- max pooling with indices ------------------------------------------------------------------
# The first maximum of each window (in row-major order, as torch's kernels scan) is found one
# spatial dim at a time, last dim first: each stage gathers the windows along its dim, takes
# the argmax, and carries the position chosen so far. The values are then gathered from the
# input at those positions, so a gradient reaches exactly the element torch's would.
def _strided_windows(size: int, out: int, kernel: int, stride: int, pad: int, dil: int, device):
    """(positions clamped into [0, size), in-range mask), each (out, kernel), of strided windows."""
    starts = prims.iota(out, start=-pad, step=stride, dtype=torch.int64, device=device)
    offsets = prims.iota(kernel, start=0, step=dil, dtype=torch.int64, device=device)
    pos = prims.add(
        prims.broadcast_in_dim(starts, (out, kernel), (0,)),
        prims.broadcast_in_dim(offsets, (out, kernel), (1,)),
    )
    valid = prims.logical_and(prims.ge(pos, 0), prims.lt(pos, size))
    return prims.clamp(pos, 0, size - 1), valid


def _adaptive_windows(size: int, out: int, device):
    """Windows [floor(o * size / out), ceil((o + 1) * size / out)): padded to the longest."""
    width = max(-(-(o + 1) * size // out) - o * size // out for o in range(out))
    o = prims.iota(out, start=0, step=1, dtype=torch.int64, device=device)
    start = prims.floor_divide(prims.mul(o, size), out)
    end = prims.floor_divide(prims.add(prims.mul(o, size), size + out - 1), out)
    k = prims.iota(width, start=0, step=1, dtype=torch.int64, device=device)
    pos = prims.add(
        prims.broadcast_in_dim(start, (out, width), (0,)), prims.broadcast_in_dim(k, (out, width), (1,))
    )
    valid = prims.lt(pos, prims.broadcast_in_dim(end, (out, width), (0,)))
    return prims.minimum(pos, size - 1), valid


def _max_with_indices(x, windows):
    """(values, indices): the maximum of each window and its flat position in the spatial dims."""
    s = shape_of(x)
    n = len(windows)
    lead = len(s) - n
    dt = dtype_of(x)
    lowest = float("-inf") if dt.is_floating_point else torch.iinfo(dt).min
    vals, flat, inner = x, None, 1
    for j in reversed(range(n)):
        d = lead + j
        pos, valid = windows[j]
        grid = prims.take(vals, pos, d)  # (..., out, kernel, ...)
        gs = shape_of(grid)
        grid = prims.where(prims.broadcast_in_dim(valid, gs, (d, d + 1)), grid, lowest)
        best = prims.argmax(grid, (d + 1,))
        chosen = prims.broadcast_in_dim(
            best, gs[: d + 1] + (1,) + gs[d + 2 :], tuple(i for i in range(len(gs)) if i != d + 1)
        )
        where_ = prims.take_along_axis(prims.broadcast_in_dim(pos, gs, (d, d + 1)), chosen, d + 1)
        where_ = prims.squeeze(where_, (d + 1,))
        flat = (
            where_
            if flat is None
            else prims.add(prims.mul(where_, inner), prims.take_along_axis(flat, where_, d))
        )
        inner *= s[d]
        vals = prims.amax(grid, (d + 1,))
    lead_shape, out_shape = s[:lead], shape_of(flat)[lead:]
    x_flat = prims.reshape(x, lead_shape + (inner,))
    idx_flat = prims.reshape(flat, lead_shape + (math.prod(out_shape),))
    values = prims.reshape(prims.take_along_axis(x_flat, idx_flat, lead), shape_of(flat))
    return values, flat


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
        k = int_tuple(kernel_size, n, "kernel_size", op)
        st = int_tuple(stride if stride not in (None, ()) else k, n, "stride", op)
        pad = int_tuple(padding, n, "padding", op)
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
        size = int_tuple(output_size, n, "output_size", op)
        size = tuple(s[len(s) - n + i] if o is None else o for i, o in enumerate(size))
        return prims.adaptive_avg_pool(input, size)

    adaptive_avg_pool.__name__ = f"adaptive_avg_pool{n}d"
    return torchsymbol(
        getattr(F, f"adaptive_avg_pool{n}d"),
        torch_impl=f"torch.nn.functional.adaptive_avg_pool{n}d",
        tags=(Tag.POOL,),
    )(adaptive_avg_pool)


adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d = (_adaptive_avg_pool(n) for n in (1, 2, 3))


def _adaptive_max_pool(n: int):
    op = f"F.adaptive_max_pool{n}d"

    def adaptive_max_pool(input, output_size, return_indices=False):
        s = shape_of(input)
        if len(s) not in (n + 1, n + 2):
            raise ShapeError(f"{op}: expected a {n + 1}-D or {n + 2}-D input, got shape {s}")
        size = int_tuple(output_size, n, "output_size", op)
        size = tuple(s[len(s) - n + i] if o is None else o for i, o in enumerate(size))
        if any(o <= 0 for o in size) or any(d <= 0 for d in s[-n:]):
            raise ShapeError(f"{op}: input {s} and output size {size} must be positive")
        windows = [_adaptive_windows(s[len(s) - n + i], size[i], device_of(input)) for i in range(n)]
        values, indices = _max_with_indices(input, windows)
        return (values, indices) if return_indices else values

    adaptive_max_pool.__name__ = f"adaptive_max_pool{n}d"
    sym = torchsymbol(
        getattr(F, f"adaptive_max_pool{n}d"),
        torch_impl=f"torch.nn.functional.adaptive_max_pool{n}d",
        tags=(Tag.POOL,),
    )(adaptive_max_pool)
    alias(
        lambda *args, **kwargs: sym(*args, **{**kwargs, "return_indices": True}),
        getattr(F, f"adaptive_max_pool{n}d_with_indices"),
    )
    return sym


adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d = (_adaptive_max_pool(n) for n in (1, 2, 3))


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
        st = int_tuple(stride, n, "stride", op)
        pad = int_tuple(padding, n, "padding", op)
        out_pad = int_tuple(output_padding, n, "output_padding", op)
        dil = int_tuple(dilation, n, "dilation", op)
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
