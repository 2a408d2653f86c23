"""``x.data_ptr()`` while tracing: an address compared as eager compares it, nothing more.

An address differs from call to call, so the program cannot hold one; but what code does with
``data_ptr()`` is mostly ask whether two tensors start at the same memory (tied weights, "is
this a view of that", "was it written in place"). ``x.data_ptr()`` gives a ``DataPtr`` standing
for the address of the value the user's tensor is (its storage, plus its byte offset there, as
eager's layout gives it: ``frontend/torch_calls/layout_queries.py``), and ``a.data_ptr() == b.data_ptr()`` is
answered from what the trace knows:

- two views of one value: by their byte offsets in it (the prologue checks the strides and
  offsets of the inputs the offsets rest on);
- a value the program computes and any other value: different (new memory);
- two inputs (arguments, parameters, captured tensors): whether their storages are one, which
  the prologue checks on every call (``check_same_storage``), and their offsets.

Anything else done with an address (arithmetic, ``int()``, ordering, hashing, formatting) is
an error naming the line, as it was for every use before.
"""

from __future__ import annotations

import torch

from thunder.core.errors import UnsupportedOpError, at
from thunder.core.proxies import TensorProxy
from thunder.core.source import user_location
from thunder.ops import python as pyops


def _refuse(what: str):
    raise UnsupportedOpError(
        f"thunder: {what} of a tensor's data_ptr() inside the compiled function: an address differs from call to "
        "call and is not known while tracing; only == and != between data_ptr()s are answered (as eager "
        "would, and checked on every call)" + at(user_location())
    )


class DataPtr:
    """``proxy.data_ptr()`` while tracing (see the module docstring)."""

    __slots__ = ("proxy", "state")

    def __init__(self, proxy: TensorProxy, state):
        self.proxy = proxy
        self.state = state

    def __eq__(self, other):
        if not isinstance(other, DataPtr):
            _refuse("comparing a number with the address")
        with torch._C.DisableTorchFunction():  # (called from the user's code, under the mode)
            return _same_address(self.state, self.proxy, other.proxy)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __repr__(self) -> str:
        return f"<the address of {self.proxy.name}, known when the program runs>"

    def __hash__(self):
        _refuse("hashing")

    def __int__(self):
        _refuse("int()")

    def __index__(self):
        _refuse("using as an int")

    def __format__(self, spec):
        _refuse("formatting")

    def __bool__(self):
        _refuse("truth")

    def __lt__(self, other):
        _refuse("ordering")

    __le__ = __gt__ = __ge__ = __lt__

    def __add__(self, other):
        _refuse("arithmetic")

    __radd__ = __sub__ = __rsub__ = __mod__ = __rmod__ = __and__ = __floordiv__ = __add__


def _byte_offset(state, p: TensorProxy) -> int:
    """``p``'s offset in bytes in the memory of the value it is a view of (or is)."""
    layouts = state.layouts
    m = layouts.meta(p)
    if m is None:
        raise UnsupportedOpError(
            f"thunder: data_ptr() of {p.name}: where it starts in its memory cannot be worked out while tracing "
            "(it was made by an op that cannot be replayed on meta tensors); not supported"
            + at(user_location())
        )
    for name in layouts.roots[p.name]:  # the prologue checks the strides and offsets it rests on
        if name in layouts.assumed:  # (a backward's cotangent: layout_queries.Layouts.assume)
            continue
        proxy, _, real = state.inputs.sources[name]
        state.views.layout_reads[name] = (proxy, real.stride())
        layouts.offset_reads[name] = (proxy, real.storage_offset())
    return m.storage_offset() * m.element_size()


def _same_address(state, a: TensorProxy, b: TensorProxy) -> bool:
    if a is b:
        return True
    off_a, off_b = _byte_offset(state, a), _byte_offset(state, b)
    root_a, root_b = state.views.root_of(a), state.views.root_of(b)
    if root_a == root_b:
        return off_a == off_b
    src_a, src_b = state.inputs.sources.get(root_a), state.inputs.sources.get(root_b)
    if src_a is None or src_b is None:  # a value the program makes has memory of its own
        return False
    same = src_a[2].untyped_storage().data_ptr() == src_b[2].untyped_storage().data_ptr()
    state.inputs.checks.add_check(pyops.check_same_storage, src_a[0], src_b[0], same, always=True)
    return same and off_a == off_b


def data_ptr(mode, func, args, kwargs):
    """The ``torch.Tensor.data_ptr`` handler of the acquisition mode."""
    p = args[0] if args else None
    if not isinstance(p, TensorProxy):
        return func(*args, **kwargs)
    return DataPtr(p, mode.state)
