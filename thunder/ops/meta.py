"""Shape, dtype and device rules shared by the primitives' meta functions.

These are the project's own rules (a few microseconds per op): torch's meta kernels are
not used for ops defined here.
"""

from __future__ import annotations

from numbers import Number

import torch

from thunder.core.context import current_trace
from thunder.core.proxies import NumberProxy, TensorProxy


class ShapeError(ValueError):
    """Bad shapes, dtypes or devices for an op; acquisition adds the user's source line."""


class IndexOutOfBounds(ShapeError, IndexError):
    """An index past a dimension's size: an ``IndexError`` as eager's (a ``try``/``except
    IndexError`` around it, or the old iteration protocol, behaves the same)."""


def is_tensor(x) -> bool:
    return isinstance(x, torch.Tensor)


def is_number(x) -> bool:
    """A Python number, a ``NumberProxy`` (an int input that changes between calls, taken
    by an elementwise op as its number operand: ``torch.mul(x, i0)``), or a symbolic size
    (``torch.add(t, s0)``, thunder/core/symbolic/)."""
    return isinstance(x, (Number, NumberProxy, torch.SymInt))


def as_size(s):
    """A size argument as an ``int``, or a symbolic size as itself (thunder/core/symbolic/)."""
    if type(s) is int:
        return s
    if isinstance(s, torch.SymInt):
        known = s.node.maybe_as_int()
        return s if known is None else known
    return int(s)


def slice_bounds(k: slice, size) -> tuple:
    """``k.indices(size)``, also where ``size`` or a bound is a symbolic size: each comparison
    the clamping makes is recorded (``s0 - 1 < 0`` is known false, a size at least 2)."""
    if type(size) is int and all(type(v) is int or v is None for v in (k.start, k.stop, k.step)):
        return k.indices(size)
    if not all(v is None or isinstance(v, (int, torch.SymInt)) for v in (k.start, k.stop, k.step)):
        return k.indices(int(size))  # (a tensor as a bound: its value, read as Python reads it)
    step = 1 if k.step is None else k.step
    if not bool(step > 0):  # (negative steps: Python's own rules, at this call's values)
        return slice(*(None if v is None else int(v) for v in (k.start, k.stop, k.step))).indices(int(size))

    def clamp(v, default):
        if v is None:
            return default
        if bool(v < 0):
            v = v + size
            if bool(v < 0):
                return 0
        return size if bool(v > size) else v

    return clamp(k.start, 0), clamp(k.stop, size), step


def shape_of(x) -> tuple[int, ...]:
    return x.meta_shape if isinstance(x, TensorProxy) else tuple(x.shape)


def dtype_of(x) -> torch.dtype:
    return x.meta_dtype if isinstance(x, TensorProxy) else x.dtype


def device_of(x) -> torch.device:
    return x.meta_device if isinstance(x, TensorProxy) else x.device


def requires_grad_of(x) -> bool:
    return x.meta_requires_grad if isinstance(x, TensorProxy) else x.requires_grad


# The half-precision floating dtypes: where torch computes an op in float32 for them and rounds
# the result once (reductions, norms, softmax, some elementwise ops), the decompositions and the
# fusion translators do too.
LOW_PRECISION_DTYPES = (torch.bfloat16, torch.float16)


def differentiable(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


def new_tensor(shape, dtype: torch.dtype, device, *inputs) -> TensorProxy:
    """An output proxy; it requires grad if grad is on and a floating input requires it."""
    rg = False
    if (dtype.is_floating_point or dtype.is_complex) and torch.is_grad_enabled():
        for i in inputs:
            if isinstance(i, torch.Tensor) and requires_grad_of(i):
                rg = True
                break
    trc = current_trace()
    return TensorProxy(trc.make_name("t"), shape, dtype, device, rg)


def canonical_dim(dim: int, ndim: int, op: str = "") -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise ShapeError(f"{op}: dimension {dim} is out of range for a tensor of {ndim} dimensions")
    return dim % n


def canonical_dims(dims, ndim: int, op: str = "") -> tuple[int, ...]:
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    return tuple(sorted({canonical_dim(d, ndim, op) for d in dims}))


def broadcast_shapes(*shapes, op: str = "") -> tuple[int, ...]:
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s, ndim - len(s)):
            if d == 1:
                continue
            if out[i] != 1 and out[i] != d:
                raise ShapeError(
                    f"{op}: shapes {' and '.join(str(tuple(x)) for x in shapes)} cannot be broadcast"
                )
            out[i] = d
    return tuple(out)


def category(dtype: torch.dtype) -> int:
    if dtype is torch.bool:
        return 0
    if dtype.is_complex:
        return 3
    if dtype.is_floating_point:
        return 2
    return 1


def _number_dtype(x) -> torch.dtype:
    if isinstance(x, NumberProxy):
        x = x.value  # (its type is checked by the prologue: the dtype holds on every call)
    if isinstance(x, torch.SymInt):
        return torch.int64
    if isinstance(x, bool):
        return torch.bool
    if isinstance(x, int):
        return torch.int64
    if isinstance(x, float):
        return torch.get_default_dtype()
    if isinstance(x, complex):
        return torch.complex128 if torch.get_default_dtype() is torch.float64 else torch.complex64
    raise ShapeError(f"expected a tensor or a number, got {type(x).__name__}")


def _promote_all(dtypes) -> torch.dtype | None:
    if not dtypes:
        return None
    res = dtypes[0]
    for d in dtypes[1:]:
        if d is not res:  # promoting a dtype with itself gives it back: no call
            res = torch.promote_types(res, d)
    return res


def result_dtype(*args) -> torch.dtype:
    """torch's type promotion: dimensioned tensors, then zero-dim tensors, then numbers."""
    dims, zeros, nums = [], [], []
    for a in args:
        if isinstance(a, torch.Tensor):
            (dims if len(shape_of(a)) > 0 else zeros).append(dtype_of(a))
        elif is_number(a):
            nums.append(_number_dtype(a))
    res = _promote_all(dims)
    for group, numbers in ((_promote_all(zeros), False), (_promote_all(nums), True)):
        if group is None:
            continue
        if res is None:
            res = group
        elif category(group) > category(res):
            if not numbers:
                res = group
            elif category(group) == 3 and category(res) == 2:
                res = torch.promote_types(res, torch.complex64)
            else:
                res = group
    if res is None:
        raise ShapeError("no tensor or number among the arguments")
    return res


def common_device(op: str, *args) -> torch.device:
    """The device of the tensor arguments; CPU zero-dim tensors go with any device."""
    dev = None
    for a in args:
        if not is_tensor(a):
            continue
        d = device_of(a)
        if dev is None:
            dev = d
        elif d is not dev and d != dev:
            if d.type == "cpu" and len(shape_of(a)) == 0:
                continue
            if dev.type == "cpu" and all(
                len(shape_of(b)) == 0 for b in args if is_tensor(b) and device_of(b) == dev
            ):
                dev = d
                continue
            raise ShapeError(f"{op}: expected all tensors on the same device, got {dev} and {d}")
    return dev if dev is not None else torch.device("cpu")
