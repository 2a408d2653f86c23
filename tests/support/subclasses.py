"""Tensor wrapper subclasses used by the tests (and ones that thunder must refuse clearly)."""

from __future__ import annotations

import torch
import torch.utils._pytree as pytree


class ScaleTensor(torch.Tensor):
    """A tensor stored as data and a scale: its value is ``_x * _scale``. Every op computes on
    the values and stores a floating result with the scale of its first scaled operand."""

    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, x, scale, outer_size=None, outer_stride=None):
        return torch.Tensor._make_wrapper_subclass(
            cls,
            outer_size if outer_size is not None else x.shape,
            strides=outer_stride if outer_stride is not None else x.stride(),
            dtype=x.dtype,
            device=x.device,
            requires_grad=x.requires_grad,
        )

    def __init__(self, x, scale, outer_size=None, outer_stride=None):
        self._x = x
        self._scale = scale

    def __tensor_flatten__(self):
        return ["_x", "_scale"], None

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return ScaleTensor(inner["_x"], inner["_scale"], outer_size, outer_stride)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        scale = next(a._scale for a in pytree.tree_leaves((args, kwargs)) if isinstance(a, ScaleTensor))
        args, kwargs = pytree.tree_map_only(ScaleTensor, lambda a: a._x * a._scale, (args, kwargs))
        out = func(*args, **kwargs)
        return pytree.tree_map_only(
            torch.Tensor, lambda o: ScaleTensor(o / scale, scale) if o.is_floating_point() else o, out
        )

    def dequantize(self):
        """A Python method of the subclass (user code calls it on traced values too)."""
        return self._x * self._scale

    def __repr__(self):
        return f"ScaleTensor({self._x!r}, {self._scale!r})"


def scale_tensor(*shape, scale: float = 2.0, dtype=torch.float32, requires_grad: bool = False) -> ScaleTensor:
    x = torch.randn(*shape, dtype=dtype)
    out = ScaleTensor(x, torch.tensor(scale, dtype=dtype))
    return out.requires_grad_() if requires_grad else out


class DequantizingTensor(ScaleTensor):
    """Like ScaleTensor, but every op returns plain tensors (the dequantized result)."""

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return DequantizingTensor(inner["_x"], inner["_scale"], outer_size, outer_stride)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        args, kwargs = pytree.tree_map_only(cls, lambda a: a._x * a._scale, (args, kwargs or {}))
        return func(*args, **kwargs)


class OffsetTensor(torch.Tensor):
    """Its value is ``_x + offset``; the offset is the flatten context (a Python float)."""

    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, x, offset: float):
        return torch.Tensor._make_wrapper_subclass(cls, x.shape, dtype=x.dtype, device=x.device)

    def __init__(self, x, offset: float):
        self._x = x
        self.offset = offset

    def __tensor_flatten__(self):
        return ["_x"], self.offset

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return OffsetTensor(inner["_x"], ctx)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        offset = next(a.offset for a in args if isinstance(a, OffsetTensor))
        args = [a._x + a.offset if isinstance(a, OffsetTensor) else a for a in args]
        out = func(*args, **(kwargs or {}))
        return OffsetTensor(out - offset, offset) if isinstance(out, torch.Tensor) else out


class NoFlattenTensor(torch.Tensor):
    """A wrapper subclass without ``__tensor_flatten__``/``__tensor_unflatten__``."""

    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, x):
        return torch.Tensor._make_wrapper_subclass(cls, x.shape, dtype=x.dtype, device=x.device)

    def __init__(self, x):
        self._x = x

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        args = [a._x if isinstance(a, NoFlattenTensor) else a for a in args]
        return NoFlattenTensor(func(*args, **(kwargs or {})))


class _Wrapper(torch.Tensor):
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, x):
        return torch.Tensor._make_wrapper_subclass(cls, x.shape, dtype=x.dtype, device=x.device)

    def __init__(self, x):
        self._x = x

    def __tensor_flatten__(self):
        return ["_x"], None


class I0Tensor(_Wrapper):
    """Its dispatch calls an aten op thunder has no symbol for (``aten.i0``)."""

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return I0Tensor(inner["_x"])

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        x = args[0]._x
        return I0Tensor(torch.ops.aten.i0.default(x))


class BranchyTensor(_Wrapper):
    """Its dispatch branches on a tensor's value (data-dependent Python control flow)."""

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return BranchyTensor(inner["_x"])

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        x = args[0]._x
        if x.sum() > 0:
            return BranchyTensor(x * 2)
        return BranchyTensor(x)


class ReplacingScaleTensor(ScaleTensor):
    """A ScaleTensor whose in-place ops write the result into the tensor: its dispatch
    replaces the data attribute ``_x`` by a new tensor (rather than writing into it)."""

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return ReplacingScaleTensor(inner["_x"], inner["_scale"], outer_size, outer_stride)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        if not func._schema.is_mutable:
            return super().__torch_dispatch__.__func__(cls, func, types, args, kwargs)
        self = args[0]
        plain = pytree.tree_map_only(ScaleTensor, lambda a: a._x * a._scale, (args, kwargs or {}))
        out = func(*plain[0], **plain[1])
        self._x = out / self._scale
        return self
