"""Factories and masks: arange, zeros/ones/full (and ``*_like``, ``new_*``), rand/randn,
``torch.tensor`` and ``Tensor.new_tensor`` of Python numbers, eye, linspace, triu/tril,
masked_fill, fill.

A factory's dtype defaults to ``torch.get_default_dtype()`` (int64 for an all-integer
``arange``, the fill value's kind for ``full``) and its device to the CPU unless given;
``*_like`` and ``new_*`` take both from their tensor.
"""

from __future__ import annotations

import math
from numbers import Number

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch.shape import _shape_arg
from thunder.ops.meta import (
    ShapeError,
    _number_dtype,
    broadcast_shapes,
    device_of,
    dtype_of,
    is_tensor,
    shape_of,
)

T = torch.Tensor


def _device(device) -> torch.device:
    if device is None:
        return torch.device("cpu")
    return device if isinstance(device, torch.device) else torch.device(device)


def _check_layout(op: str, layout=None, generator=None, **_ignored) -> None:
    if layout not in (None, torch.strided):
        raise ShapeError(f"{op}: layout {layout} is not supported")
    if generator is not None:
        raise ShapeError(f"{op}: an explicit generator is not supported")


def _size(args, size) -> tuple[int, ...]:
    """``f(2, 3)``, ``f((2, 3))`` and ``f(size=(2, 3))``."""
    return _shape_arg(args) if size is None else _shape_arg((size,))


def _fill(shape, value, dtype, device):
    return prims.full(tuple(shape), value, dtype=dtype, device=_device(device))


def _value_dtype(value) -> torch.dtype:
    """``torch.full``'s dtype for a fill value: bool, int64, the default float or complex."""
    return dtype_of(value) if is_tensor(value) else _number_dtype(value)


def _cast_number(value, dtype: torch.dtype):
    """A Python number as ``masked_fill``/``full`` store it in a tensor of ``dtype``."""
    if not isinstance(value, Number):
        return value
    if dtype is torch.bool:
        return bool(value)
    if dtype.is_floating_point:
        return float(value)
    if dtype.is_complex:
        return complex(value)
    return int(value)


# -- ranges ---------------------------------------------------------------------------------
@torchsymbol(torch.arange, torch_impl="torch.arange", tags=(Tag.FACTORY,))
def arange(
    start,
    end=None,
    step=1,
    *,
    out=None,
    dtype: torch.dtype | None = None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    pin_memory: bool = False,
):
    _check_layout("torch.arange", layout)
    if end is None:
        start, end = 0, start
    if any(isinstance(v, torch.SymInt) for v in (start, end, step)):  # a symbolic size as a bound
        return _symbolic_arange(start, end, step, dtype, device)
    for name, v in (("start", start), ("end", end), ("step", step)):
        if not isinstance(v, Number) or isinstance(v, complex):
            raise ShapeError(f"torch.arange: {name} must be a real Python number, got {type(v).__name__}")
    if step == 0:
        raise ShapeError("torch.arange: step must be nonzero")
    length = math.ceil((end - start) / step)
    if length < 0:
        raise ShapeError(
            f"torch.arange: the range [{start}, {end}) with step {step} is empty the wrong way round"
        )
    if dtype is None:
        dtype = (
            torch.int64 if all(isinstance(v, int) for v in (start, end, step)) else torch.get_default_dtype()
        )
    return prims.iota(length, start=start, step=step, dtype=dtype, device=_device(device))


def _symbolic_arange(start, end, step, dtype, device):
    """``torch.arange`` whose bounds or step are integers, some symbolic sizes
    (thunder/core/symbolic/): as many elements as ``range`` gives."""
    if not all(isinstance(v, (int, torch.SymInt)) and not isinstance(v, bool) for v in (start, end, step)):
        raise ShapeError("torch.arange: a symbolic size with a bound or step that is not an int")
    step = int(step) if isinstance(step, torch.SymInt) else step  # (a symbolic step: pinned)
    if step == 0:
        raise ShapeError("torch.arange: step must be nonzero")
    length = (end - start + step - 1) // step if step > 0 else (start - end - step - 1) // -step
    if length < 0:
        raise ShapeError(
            f"torch.arange: the range [{start}, {end}) with step {step} is empty the wrong way round"
        )
    return prims.iota(length, start=start, step=step, dtype=dtype or torch.int64, device=_device(device))


@torchsymbol(torch.linspace, torch_impl="torch.linspace", tags=(Tag.FACTORY,))
def linspace(start, end, steps: int, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """As torch computes it: the first half counts up from ``start``, the second down from
    ``end``. Integer dtypes truncate ``start`` and ``end`` first, step in float64 and truncate
    each value. ``start``/``end`` may be 0-dim tensors (their values are read in the program;
    no gradient flows to them, as in eager)."""
    op = "torch.linspace"
    _check_layout(op, layout)
    dtype = dtype or torch.get_default_dtype()
    if dtype is torch.bool or dtype.is_complex:
        raise ShapeError(f"{op}: dtype {dtype} is not supported")
    if steps < 0:
        raise ShapeError(f"{op}: number of steps must be non-negative, got {steps}")
    for name, v in (("start", start), ("end", end)):
        if is_tensor(v) and shape_of(v):
            raise ShapeError(f"{op}: {name} must be a number or a 0-dim tensor, got shape {shape_of(v)}")
    dev = _device(device)
    if is_tensor(start) or is_tensor(end):
        return _linspace_of_tensors(start, end, steps, dtype, dev)
    if steps <= 1:
        return _fill((steps,), _cast_number(start, dtype), dtype, dev)
    if not dtype.is_floating_point:
        start, end = int(start), int(end)
        step = (end - start) / (steps - 1)
        i = prims.iota(steps, start=0, step=1, dtype=torch.float64, device=dev)
        up = prims.add(prims.mul(i, step), start)
        down = prims.sub(end, prims.mul(prims.sub(steps - 1, i), step))
        return prims.convert_element_type(prims.where(prims.lt(i, steps // 2), up, down), dtype)
    step = (end - start) / (steps - 1)
    i = prims.iota(steps, start=0, step=1, dtype=dtype, device=dev)
    up = prims.add(prims.mul(i, step), start)
    down = prims.sub(end, prims.mul(prims.sub(steps - 1, i), step))
    return prims.where(prims.lt(i, steps // 2), up, down)


def _linspace_of_tensors(start, end, steps: int, dtype, dev):
    """``linspace`` whose ends are values of the program: the step is computed in it too."""
    compute = dtype if dtype.is_floating_point else torch.float64

    def end_value(v):
        if not is_tensor(v):
            return prims.full((), _cast_number(v, dtype), dtype=dtype, device=dev)
        with torch.no_grad():  # eager reads the value: no gradient reaches it
            v = prims.clone(v) if v.requires_grad else v
        if device_of(v) != dev:
            v = prims.device_put(v, dev)
        return prims.convert_element_type(v, dtype) if dtype_of(v) is not dtype else v

    lo, hi = end_value(start), end_value(end)
    if steps == 0:
        return _fill((0,), 0, dtype, dev)
    if steps == 1:
        return prims.broadcast_in_dim(lo, (1,), ())
    lo_c = lo if compute is dtype else prims.convert_element_type(lo, compute)
    hi_c = hi if compute is dtype else prims.convert_element_type(hi, compute)
    step = prims.div(prims.sub(hi_c, lo_c), steps - 1)
    i = prims.iota(steps, start=0, step=1, dtype=compute, device=dev)
    up = prims.add(prims.mul(i, step), lo_c)
    down = prims.sub(hi_c, prims.mul(prims.sub(steps - 1, i), step))
    out = prims.where(prims.lt(i, steps // 2), up, down)
    return out if compute is dtype else prims.convert_element_type(out, dtype)


# -- constant fills -------------------------------------------------------------------------
def _constant(value, op: str):
    def fn(
        *args,
        size=None,
        out=None,
        dtype=None,
        layout=None,
        device=None,
        requires_grad=False,
        pin_memory=False,
        memory_format=None,
        names=None,
    ):
        _check_layout(op, layout)
        return _fill(_size(args, size), value, dtype or torch.get_default_dtype(), device)

    return fn


zeros = torchsymbol(torch.zeros, torch_impl="torch.zeros", tags=(Tag.FACTORY,), name="zeros")(
    _constant(0, "torch.zeros")
)
ones = torchsymbol(torch.ones, torch_impl="torch.ones", tags=(Tag.FACTORY,), name="ones")(
    _constant(1, "torch.ones")
)
# Uninitialised memory has no defined value, so zeros is a faithful ``empty``.
empty = torchsymbol(torch.empty, tags=(Tag.FACTORY,), name="empty")(_constant(0, "torch.empty"))


@torchsymbol(torch.full, torch_impl="torch.full", tags=(Tag.FACTORY,))
def full(
    size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
):
    _check_layout("torch.full", layout)
    if is_tensor(fill_value):
        raise ShapeError("torch.full: fill_value must be a Python number; use expand for a tensor value")
    return _fill(_shape_arg((size,)), fill_value, dtype or _value_dtype(fill_value), device)


def _like(value, op: str):
    def fn(
        input,
        *,
        dtype=None,
        layout=None,
        device=None,
        requires_grad=False,
        memory_format=None,
        pin_memory=False,
    ):
        _check_layout(op, layout)
        return _fill(shape_of(input), value, dtype or dtype_of(input), device or device_of(input))

    return fn


zeros_like = torchsymbol(
    torch.zeros_like, torch_impl="torch.zeros_like", tags=(Tag.FACTORY,), name="zeros_like"
)(_like(0, "torch.zeros_like"))
ones_like = torchsymbol(torch.ones_like, torch_impl="torch.ones_like", tags=(Tag.FACTORY,), name="ones_like")(
    _like(1, "torch.ones_like")
)
empty_like = torchsymbol(torch.empty_like, tags=(Tag.FACTORY,), name="empty_like")(
    _like(0, "torch.empty_like")
)


@torchsymbol(torch.full_like, torch_impl="torch.full_like", tags=(Tag.FACTORY,))
def full_like(
    input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None
):
    _check_layout("torch.full_like", layout)
    return _fill(shape_of(input), fill_value, dtype or dtype_of(input), device or device_of(input))


def _new(value, op: str):
    def fn(
        self, *args, size=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
    ):
        _check_layout(op, layout)
        return _fill(_size(args, size), value, dtype or dtype_of(self), device or device_of(self))

    return fn


new_zeros = torchsymbol(
    T.new_zeros, torch_impl="torch.Tensor.new_zeros", tags=(Tag.FACTORY,), name="new_zeros"
)(_new(0, "Tensor.new_zeros"))
new_ones = torchsymbol(T.new_ones, torch_impl="torch.Tensor.new_ones", tags=(Tag.FACTORY,), name="new_ones")(
    _new(1, "Tensor.new_ones")
)
new_empty = torchsymbol(T.new_empty, tags=(Tag.FACTORY,), name="new_empty")(_new(0, "Tensor.new_empty"))


@torchsymbol(T.new_full, torch_impl="torch.Tensor.new_full", tags=(Tag.FACTORY,))
def new_full(
    self, size, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
):
    _check_layout("Tensor.new_full", layout)
    return _fill(_shape_arg((size,)), fill_value, dtype or dtype_of(self), device or device_of(self))


@torchsymbol(torch.fill, torch_impl="torch.fill", tags=(Tag.FACTORY,))
def fill(input, value):
    """The out-of-place ``x.fill_(value)``: ``value`` a number or a 0-dim tensor; the result is
    in ``input``'s autograd graph, as torch's."""
    if is_tensor(value):
        if shape_of(value):
            raise ShapeError(f"torch.fill: value must be a 0-dim tensor, got shape {shape_of(value)}")
        v = (
            value
            if dtype_of(value) is dtype_of(input)
            else prims.convert_element_type(value, dtype_of(input))
        )
    else:
        v = _cast_number(value, dtype_of(input))
    return in_graph_of(v, input)


def in_graph_of(value, source):
    """``value`` (broadcast to ``source``'s shape) as a result that, like torch's, is in
    ``source``'s autograd graph with a zero gradient: a ``where`` that selects ``value``
    everywhere. For ops whose result does not depend on an input's values (``x.fill_(2)``)."""
    shape = broadcast_shapes(shape_of(source), shape_of(value) if is_tensor(value) else ())
    everywhere = prims.full(shape, True, dtype=torch.bool, device=device_of(source))
    return prims.where(everywhere, value, source)


@torchsymbol(torch.eye, torch_impl="torch.eye", tags=(Tag.FACTORY,))
def eye(n: int, m: int | None = None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    _check_layout("torch.eye", layout)
    m = n if m is None else m
    dev = _device(device)
    rows = prims.broadcast_in_dim(prims.iota(n, start=0, step=1, dtype=torch.int64, device=dev), (n, m), (0,))
    cols = prims.broadcast_in_dim(prims.iota(m, start=0, step=1, dtype=torch.int64, device=dev), (n, m), (1,))
    return prims.convert_element_type(prims.eq(rows, cols), dtype or torch.get_default_dtype())


# -- random ---------------------------------------------------------------------------------
def _random_dtype(dtype, op: str) -> torch.dtype:
    dtype = dtype or torch.get_default_dtype()
    if not dtype.is_floating_point:
        raise ShapeError(f"{op}: expected a floating dtype, got {dtype}")
    return dtype


def _uniform(shape, dtype, device):
    return prims.uniform(tuple(shape), 0.0, 1.0, dtype=dtype, device=_device(device))


def _normal(shape, dtype, device):
    """Box-Muller from two uniforms, computed in float32 (float64 for float64)."""
    compute = torch.float64 if dtype is torch.float64 else torch.float32
    u1 = _uniform(shape, compute, device)
    u2 = _uniform(shape, compute, device)
    radius = prims.sqrt(prims.mul(prims.log(prims.sub(1.0, u1)), -2.0))  # 1 - u1 is in (0, 1]
    z = prims.mul(radius, prims.cos(prims.mul(u2, 2 * math.pi)))
    return z if compute is dtype else prims.convert_element_type(z, dtype)


@torchsymbol(torch.rand, torch_impl="torch.rand", tags=(Tag.FACTORY, Tag.RANDOM))
def rand(
    *args,
    size=None,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
):
    _check_layout("torch.rand", layout, generator)
    return _uniform(_size(args, size), _random_dtype(dtype, "torch.rand"), device)


@torchsymbol(torch.randn, torch_impl="torch.randn", tags=(Tag.FACTORY, Tag.RANDOM))
def randn(
    *args,
    size=None,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
):
    _check_layout("torch.randn", layout, generator)
    return _normal(_size(args, size), _random_dtype(dtype, "torch.randn"), device)


@torchsymbol(torch.rand_like, torch_impl="torch.rand_like", tags=(Tag.FACTORY, Tag.RANDOM))
def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    _check_layout("torch.rand_like", layout)
    dtype = _random_dtype(dtype or dtype_of(input), "torch.rand_like")
    return _uniform(shape_of(input), dtype, device or device_of(input))


@torchsymbol(torch.randn_like, torch_impl="torch.randn_like", tags=(Tag.FACTORY, Tag.RANDOM))
def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    _check_layout("torch.randn_like", layout)
    dtype = _random_dtype(dtype or dtype_of(input), "torch.randn_like")
    return _normal(shape_of(input), dtype, device or device_of(input))


@torchsymbol(torch.randint, torch_impl="torch.randint", tags=(Tag.FACTORY, Tag.RANDOM))
def randint(*args, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """``torch.randint(high, size)`` or ``torch.randint(low, high, size)``."""
    _check_layout("torch.randint", layout, generator)
    if len(args) == 2:
        low, (high, size) = 0, args
    elif len(args) == 3:
        low, high, size = args
    else:
        raise ShapeError(
            f"torch.randint: expected (high, size) or (low, high, size), got {len(args)} arguments"
        )
    if high <= low:
        raise ShapeError(f"torch.randint: the range [{low}, {high}) is empty")
    u = prims.uniform(
        _shape_arg((size,)), float(low), float(high), dtype=torch.float64, device=_device(device)
    )
    r = prims.clamp(prims.floor(u), low, high - 1)  # rounding may reach ``high``
    return prims.convert_element_type(r, dtype or torch.int64)


# -- tensors from Python data ---------------------------------------------------------------
def _flatten_data(data, op: str):
    """(shape, flat list of numbers) of nested lists/tuples of Python numbers."""
    if isinstance(data, Number):
        return (), [data]
    if is_tensor(data):
        raise ShapeError(f"{op}: data containing tensors is not supported; use torch.stack")
    if not isinstance(data, (list, tuple)):
        raise ShapeError(f"{op}: expected numbers or nested lists of numbers, got {type(data).__name__}")
    if not data:
        return (0,), []
    parts = [_flatten_data(d, op) for d in data]
    if any(p[0] != parts[0][0] for p in parts):
        raise ShapeError(f"{op}: the nested lists do not form a rectangular shape")
    return (len(data),) + parts[0][0], [x for p in parts for x in p[1]]


def _data_dtype(values) -> torch.dtype:
    if any(isinstance(v, complex) for v in values):
        return _number_dtype(1j)
    if any(isinstance(v, float) for v in values):
        return torch.get_default_dtype()
    if not values:
        return torch.get_default_dtype()
    if all(isinstance(v, bool) for v in values):
        return torch.bool
    return torch.int64


def _from_data(data, dtype, device, op: str):
    shape, values = _flatten_data(data, op)
    dtype = dtype or _data_dtype(values)
    dev = _device(device)
    if len(set(values)) <= 1:
        return _fill(shape, _cast_number(values[0], dtype) if values else 0, dtype, dev)
    pieces = [_fill((1,), _cast_number(v, dtype), dtype, dev) for v in values]
    return prims.reshape(prims.cat(pieces, 0), shape)


@torchsymbol(torch.tensor, torch_impl="torch.tensor", tags=(Tag.FACTORY,))
def tensor(data, *, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False):
    """``torch.tensor`` of Python numbers (nested lists): a constant built in the trace."""
    return _from_data(data, dtype, device, "torch.tensor")


@torchsymbol(T.new_tensor, torch_impl="torch.Tensor.new_tensor", tags=(Tag.FACTORY,))
def new_tensor(
    self, data, *, dtype=None, device=None, requires_grad: bool = False, layout=None, pin_memory=False
):
    """A constant from Python numbers in ``self``'s dtype and device unless given (a float
    stored in an integer dtype truncates, as torch's)."""
    _check_layout("Tensor.new_tensor", layout)
    return _from_data(data, dtype or dtype_of(self), device or device_of(self), "Tensor.new_tensor")


@torchsymbol(torch.as_tensor, torch_impl="torch.as_tensor", tags=(Tag.FACTORY,))
def as_tensor(data, dtype=None, device=None):
    if is_tensor(data):
        out = data
        if dtype is not None and dtype is not dtype_of(out):
            out = prims.convert_element_type(out, dtype)
        if device is not None and _device(device) != device_of(out):
            out = prims.device_put(out, _device(device))
        return out
    return _from_data(data, dtype, device, "torch.as_tensor")


# -- masks ----------------------------------------------------------------------------------
def _zero_of(dtype: torch.dtype):
    return _cast_number(0, dtype)


def _triangle(a, diagonal: int, lower: bool, op: str):
    s = shape_of(a)
    if len(s) < 2:
        raise ShapeError(f"{op}: expected a tensor of at least 2 dimensions, got shape {s}")
    n, m = s[-2], s[-1]
    dev = device_of(a)
    rows = prims.broadcast_in_dim(
        prims.iota(n, start=diagonal, step=1, dtype=torch.int64, device=dev), (n, m), (0,)
    )
    cols = prims.broadcast_in_dim(prims.iota(m, start=0, step=1, dtype=torch.int64, device=dev), (n, m), (1,))
    keep = prims.le(cols, rows) if lower else prims.ge(cols, rows)
    return prims.where(keep, a, _zero_of(dtype_of(a)))


@torchsymbol(torch.tril, T.tril, torch_impl="torch.tril", tags=(Tag.FACTORY,))
def tril(input, diagonal: int = 0):
    return _triangle(input, diagonal, True, "torch.tril")


@torchsymbol(torch.triu, T.triu, torch_impl="torch.triu", tags=(Tag.FACTORY,))
def triu(input, diagonal: int = 0):
    return _triangle(input, diagonal, False, "torch.triu")


@torchsymbol(torch.masked_fill, T.masked_fill, torch_impl="torch.masked_fill", tags=(Tag.ELEMENTWISE,))
def masked_fill(input, mask, value):
    """``value`` (a number or a 0-dim tensor, cast to the input's dtype) where ``mask`` holds,
    in the shape input and mask broadcast to."""
    if dtype_of(mask) is not torch.bool:
        raise ShapeError(f"torch.masked_fill: mask must be a bool tensor, got {dtype_of(mask)}")
    dt = dtype_of(input)
    if is_tensor(value):
        if shape_of(value):
            raise ShapeError(f"torch.masked_fill: value must be a 0-dim tensor, got shape {shape_of(value)}")
        if dtype_of(value) is not dt:
            value = prims.convert_element_type(value, dt)
    else:
        value = _cast_number(value, dt)
    # out of place, the mask may broadcast the input too (eager's result has the joint shape);
    # ``masked_fill_`` cannot grow its tensor: the in-place write refuses that
    return prims.where(mask, value, input)
