"""Unpacking inputs by provenance (``x = args[0]``, ``m = self._modules['fc1']``, printed as
plain Python so the compiled prologue is as fast as hand-written code), and taking tensor
subclasses apart into their inner tensors and back together."""

from __future__ import annotations

from thunder.core.subclass import subclass_of


def flatten_tensor_subclass(x):
    names, _ = x.__tensor_flatten__()
    return tuple(getattr(x, n) for n in names)


def unflatten_tensor_subclass(cls, inner, ctx, size, stride):
    return subclass_of(cls).__tensor_unflatten__(inner, ctx, size, stride)


def unpack_item(container, key):
    return container[key]


def unpack_size(t, dim):
    return t.shape[dim]


def unpack_attr(container, name):
    return getattr(container, name)


def unpack_param(module, name):
    return module._parameters[name]


def unpack_buffer(module, name):
    return module._buffers[name]


def unpack_submodule(module, name):
    return module._modules[name]


def unpack_captured(value):
    return value


def unpack_local_shard(dtensor):
    return dtensor.to_local()
