"""How the torch.compile executor lays out what Inductor compiles: a region's signature names each
input's layout in terms that hold for every size (``layout_key``: row-major, a dense order of the
dimensions, or exact strides), the strides a symbolic input has in it (``input_strides``), the
strides eager's ops would give each output (``eager_strides``, run on fake tensors) and the copies
that give an output eager's layout where Inductor picked another (``reordered``, ``restrided``).
``laid_out_trace`` keeps an op that asks for a memory format whole, so that the layout flows
through the region's later ops as in eager."""

from __future__ import annotations

import torch

from thunder.core.symbol import BoundSymbol
from thunder.core.symbolic import contiguous_strides
from thunder.core.tags import Tag
from thunder.executors.claim import claim
from thunder.executors.fusion import Region
from thunder.executors.registry import fallback_executors


def layout_key(a: torch.Tensor):
    """How ``a`` is laid out, in terms that hold for every size: None for row-major;
    ``("order", dims, expanded)`` for another dense layout (its dimensions from outermost to
    innermost, size-1 ones left out, and those expanded with stride 0); else ``("strides",
    strides)``, these strides exactly."""
    if a.is_contiguous():
        return None
    shape, stride = a.shape, a.stride()
    order = dense_order(shape, stride)
    if order is None:
        return ("strides", tuple(stride))
    return ("order", order, tuple(d for d in order if stride[d] == 0))


def dense_order(shape, stride) -> tuple | None:
    """The dimensions of size other than 1 from outermost to innermost when ``stride`` lays
    ``shape`` out densely (expanded dimensions, stride 0, allowed), else None."""
    dims = sorted((d for d in range(len(shape)) if shape[d] != 1), key=lambda d: -stride[d])
    step = 1
    for d in reversed(dims):
        if stride[d] == 0:
            continue
        if stride[d] != step:
            return None
        step *= shape[d]
    return tuple(dims)


def ordered_strides(shape, order: tuple, expanded: tuple = ()) -> list:
    """The strides that lay ``shape`` out densely in ``order`` (1 for dimensions left out)."""
    strides = [1] * len(shape)
    step = 1
    for d in reversed(order):
        if d in expanded:
            strides[d] = 0
            continue
        strides[d] = step
        step = step * shape[d]
    return strides


def input_strides(shape: tuple, layout, a: torch.Tensor) -> tuple:
    """The strides, symbolic where the sizes are, of an input of ``shape`` (symbolic ints) laid
    out as ``layout`` says (``a``: the tensor of this call)."""
    if layout is None:
        return contiguous_strides(shape)
    if layout[0] == "strides":
        return layout[1]
    strides = ordered_strides(shape, layout[1], layout[2])
    return tuple(s if d in layout[1] else a.stride(d) for d, s in enumerate(strides))


def reordered(out, moves: tuple) -> list:
    """``out`` with each output named in ``moves`` copied into eager's order of dimensions."""
    out = list(out)
    for i, order in moves:
        o = out[i]
        stride = ordered_strides(o.shape, order)
        out[i] = torch.empty_strided(o.shape, stride, dtype=o.dtype, device=o.device).copy_(o)
    return out


def eager_strides(region: Region, args) -> list:
    """Each output's strides when the region's ops run whole in torch on tensors laid out as
    ``args`` (eager's), None for one that is not dense (an expanded view: left as it comes) or
    when an op cannot run on fake tensors (then nothing is moved)."""
    from torch._prims_common import is_non_overlapping_and_dense_or_false
    from torch._subclasses.fake_tensor import FakeTensorMode

    try:
        program = claim(region.trace(prims=False), fallback_executors()).python_callable()
        mode = FakeTensorMode()
        fakes = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        with mode, torch.no_grad():
            outs = program(*fakes)
        return [o.stride() if is_non_overlapping_and_dense_or_false(o) else None for o in outs]
    except Exception:
        return [None] * len(region.outputs)


def nontrivial_strides(shape, stride) -> tuple:
    return tuple(s for s, n in zip(stride, shape) if n > 1)


def restrided(out, moves: tuple) -> list:
    """``out`` with each output named in ``moves`` copied into eager's strides."""
    out = list(out)
    for i, stride in moves:
        o = out[i]
        out[i] = torch.empty_strided(o.shape, stride, dtype=o.dtype, device=o.device).copy_(o)
    return out


def _asks_layout(bsym: BoundSymbol) -> bool:
    memory_format = bsym.kwargs.get("memory_format")
    return isinstance(memory_format, torch.memory_format) and memory_format is not torch.preserve_format


def laid_out_trace(region: Region):
    """The region's prims as a trace, except that an op asking for a memory format (a clone
    made by ``contiguous(memory_format=...)``) stays whole: ``prims.clone`` has no memory format,
    and the layout flows on through the region's later ops in eager (an elementwise op keeps
    channels_last) and so in Inductor's code traced from these calls."""

    def parts(bsym: BoundSymbol) -> list[BoundSymbol]:
        if _asks_layout(bsym) or Tag.PRIM in bsym.sym.tags or not bsym.subsymbols:
            return [bsym]
        return [p for sub in bsym.subsymbols for p in parts(sub)]

    trace = region.trace()
    trace.bound_symbols = [p for m in region.members for p in parts(m)]
    return trace
