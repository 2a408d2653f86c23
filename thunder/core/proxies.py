"""Proxies: the named stand-ins for values while a program is traced.

A ``TensorProxy`` is a real ``torch.Tensor`` subclass with no storage (made with
``_make_wrapper_subclass``), so ``isinstance(x, torch.Tensor)`` holds in user code and
shape, dtype, device and requires_grad answer as they would for the real tensor. It never
reaches torch's dispatcher: everything done to it is intercepted by the acquisition mode.
``NumberProxy`` and ``AnyProxy`` name Python numbers and opaque objects (inputs, the
object an epilogue returns).
"""

from __future__ import annotations

import operator
import threading
from contextlib import contextmanager

import torch

from thunder.core.errors import UnsupportedOpError
from thunder.core.pytree import LEAF_TYPES, tree_leaves
from thunder.core.source import user_location

_DTYPE_SHORT = {
    torch.float64: "f64",
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.complex64: "c64",
    torch.complex128: "c128",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.uint8: "ui8",
    torch.bool: "b8",
}


def dtype_short(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``f32`` (as in ``# x: "cpu f32[3]"``)."""
    return _DTYPE_SHORT.get(dtype, str(dtype).replace("torch.", ""))


def device_str(device: torch.device) -> str:
    return str(device)


class Proxy:
    """A named value in a trace: ``TensorProxy``, ``NumberProxy`` and ``AnyProxy`` are proxies."""

    prefix = "p"

    def __init__(self, name: str):
        self.name = name

    def type_string(self) -> str:
        return "Any"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class NumberProxy(Proxy):
    """A Python number (int, float, bool) that the trace specialised on ``value``."""

    prefix = "i"

    def __init__(self, name: str, value: int | float | bool):
        super().__init__(name)
        self.value = value
        self.python_type = type(value)

    def type_string(self) -> str:
        return self.python_type.__name__


class AnyProxy(Proxy):
    """An opaque Python object (an input object, a module, a cache) named in a trace."""

    prefix = "p"

    def __init__(self, name: str, python_type: type | None = None):
        super().__init__(name)
        self.python_type = python_type

    def type_string(self) -> str:
        t = self.python_type
        return "Any" if t is None else f"{t.__module__}.{t.__qualname__}"


# Set while a trace is acquired: ``(func, args, kwargs) -> value | NotImplemented`` for the
# proxies that reach torch's dispatcher (thunder.frontend.torch_calls.value_reads).
dispatch_handler = None

# Set while a trace is acquired: ``(proxy) -> None``, told when ``isinstance(proxy,
# torch.nn.Parameter)`` asks whether the proxy stands for a parameter (thunder.frontend.effects.type_reads).
param_read_hook = None
# Set while a trace is acquired: ``(proxy) -> None``, told when ``proxy.__class__`` is read (the
# hook decides whether the user's code asked: thunder.frontend.effects.type_reads).
class_read_hook = None

# ``_DISPATCH.hook``: set while a tensor subclass's ``__torch_dispatch__`` runs over inner
# proxies at trace time; it records the aten ops that reach them (thunder/frontend/subclasses/ops.py).
_DISPATCH = threading.local()


@contextmanager
def dispatch_hook(hook):
    """Aten ops reaching a TensorProxy go to ``hook(func, args, kwargs)`` in this block."""
    prev = getattr(_DISPATCH, "hook", None)
    _DISPATCH.hook = hook
    try:
        yield
    finally:
        _DISPATCH.hook = prev


def _canonical_device(device) -> torch.device:
    device = torch.device(device) if not isinstance(device, torch.device) else device
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", 0)
    return device


# device (or its name) -> its canonical torch.device: every new proxy asks
_DEVICES: dict = {}
_INT = frozenset({int})


def _size(d):
    if isinstance(d, torch.SymInt):
        known = d.node.maybe_as_int()
        return d if known is None else known
    return int(d)


def _symbol_source(d) -> str:
    """A symbolic size's expression (thunder/core/symbolic/); ``str`` of anything else."""
    source = getattr(getattr(d, "node", None), "source", None)
    return source() if source is not None else str(d)


def _symbols_of(x) -> list:
    """The symbol proxies a symbolic size reads (its node's ``proxies``; none for torch's own)."""
    read = getattr(x.node, "proxies", None)
    return read() if read is not None else []


class TensorProxy(torch.Tensor, Proxy):
    """A tensor with metadata only. ``name`` is unique within its trace."""

    prefix = "t"

    @staticmethod
    def __new__(cls, name: str, shape, dtype: torch.dtype, device, requires_grad: bool = False):
        canonical = _DEVICES.get(device)
        if canonical is None:
            canonical = _canonical_device(device)
            if type(device) in (torch.device, str):
                _DEVICES[device] = canonical
        device = canonical
        shape = tuple(shape)
        t = torch.Tensor._make_wrapper_subclass(
            cls, shape, dtype=dtype, device=device, requires_grad=requires_grad
        )
        t._thunder_name = name
        # shape, dtype and device never change (a proxy never reaches the dispatcher): kept
        # as plain attributes, read by every meta function and printed on every line
        # the sizes torch accepted, as Python ints (usually they are already); a symbolic size
        # (a ``torch.SymInt`` of thunder/core/symbolic/) stays one
        t.meta_shape = shape if set(map(type, shape)) <= _INT else tuple(map(_size, shape))
        t.meta_dtype = dtype
        t.meta_device = device
        t._type_string = None
        return t

    def __init__(self, *args, **kwargs):  # made by __new__; Proxy.__init__ does not apply
        pass

    def wait(self):
        """``AsyncCollectiveTensor.wait()`` on a functional collective's result: the trace
        already waits for it (``prims.wait``, which marks its output), so it is its own value.
        Any other tensor has no ``wait``, as in eager."""
        if not getattr(self, "_thunder_waited", False):
            raise AttributeError("'Tensor' object has no attribute 'wait'")
        return self

    # torch.Tensor has a read-only ``name`` of its own; ours shadows it, read-only too (as
    # eager's, ``x.name = ...`` raises). Its getter is C code: every printed line and every
    # pass reads names.
    name = property(operator.attrgetter("_thunder_name"), doc="The proxy's name in its trace.")

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        hook = getattr(_DISPATCH, "hook", None)
        if hook is not None:  # a tensor subclass's __torch_dispatch__ is running over proxies
            return hook(func, args, kwargs or {})
        if dispatch_handler is not None:  # while tracing: reads of a value (``int(x)`` in C code)
            out = dispatch_handler(func, args, kwargs or {})
            if out is not NotImplemented:
                return out
        loc = user_location()
        where = f"\n  at {loc.filename}:{loc.lineno} in {loc.function}: {loc.line()}" if loc else ""
        raise UnsupportedOpError(
            f"thunder: the proxy tensor reached torch's dispatcher through {func}. This happens when "
            "torch runs an operation below its Python API, where thunder cannot see it (torch.vmap, "
            "functorch transforms, C++ extensions); it is not supported." + where
        )

    # ``isinstance(p, torch.nn.Parameter)`` reads ``_is_param`` (torch's ``_ParameterMeta``): the
    # answer of the tensor the proxy stands for, recorded so the prologue checks it
    @property
    def _is_param(self) -> bool:
        if param_read_hook is not None:
            param_read_hook(self)
        return self.__dict__.get("_thunder_is_param", False)

    @_is_param.setter
    def _is_param(self, value: bool) -> None:
        self.__dict__["_thunder_is_param"] = bool(value)

    # ``x.__class__`` as eager's for the tensor the proxy stands for (``type(x)`` in the user's
    # code: frontend/effects/type_reads.py); Python's own ``type(x)`` stays TensorProxy
    @property
    def __class__(self):
        if class_read_hook is not None:
            class_read_hook(self)
        return torch.nn.Parameter if self.__dict__.get("_thunder_is_param", False) else torch.Tensor

    @property
    def meta_requires_grad(self) -> bool:
        with torch._C.DisableTorchFunction():
            return torch.Tensor.requires_grad.__get__(self)

    def type_string(self) -> str:
        s = self._type_string
        if s is None:
            shape = ", ".join(str(d) if type(d) is int else _symbol_source(d) for d in self.meta_shape)
            s = self._type_string = f"{device_str(self.meta_device)} {dtype_short(self.meta_dtype)}[{shape}]"
        return s

    def __repr__(self, *, tensor_contents=None) -> str:  # noqa: ARG002 - torch passes this kwarg
        return f'<TensorProxy {self.name}: "{self.type_string()}">'

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __reduce_ex__(self, protocol):
        raise TypeError(f"thunder: the proxy {self.name} cannot be pickled or deep-copied during tracing")


# ``type(x).__name__`` of a plain tensor in eager (a proxy of a Parameter still answers "Tensor")
TensorProxy.__name__ = TensorProxy.__qualname__ = "Tensor"

# (leaves of every pytree, known by their exact type)
LEAF_TYPES.update({TensorProxy, NumberProxy, AnyProxy, torch.dtype, torch.device, torch.Size})


def proxies_in(x) -> list:
    """The proxies among the leaves of ``x`` (nested tuples, lists, dicts, dataclasses), in
    order. Plain tuples, lists, dicts and slices are walked directly (passes call this on
    every BoundSymbol of a model); anything else goes through ``tree_leaves``."""
    out: list = []
    _collect(x, out)
    return out


# Leaf types that are never proxies (skipped without a call).
_PLAIN = frozenset({type(None), int, float, bool, str, torch.dtype, torch.device})


def _collect(x, out: list) -> None:
    t = type(x)
    if t is tuple or t is list:
        for v in x:
            if type(v) in _PLAIN:
                continue
            if isinstance(v, Proxy):
                out.append(v)
            else:
                _collect(v, out)
    elif t is dict:
        for v in x.values():
            _collect(v, out)
    elif t is slice:
        _collect((x.start, x.stop, x.step), out)
    elif isinstance(x, Proxy):
        out.append(x)
    elif t in _PLAIN:
        return
    elif t is torch.SymInt or t is torch.SymBool:  # a symbolic size: the symbols it reads
        out.extend(_symbols_of(x))
    elif t is torch.Size:
        for v in x:
            if type(v) is torch.SymInt:
                out.extend(_symbols_of(v))
    else:
        out.extend(p for p in tree_leaves(x) if isinstance(p, Proxy))


def proxy_names(x) -> set[str]:
    """The names of the proxies among the leaves of ``x``."""
    return {p.name for p in proxies_in(x)}
