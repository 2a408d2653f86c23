"""``isinstance(x, torch.nn.Parameter)`` and ``type(x)`` while tracing: answered for the tensor
the proxy stands for (an input that is a Parameter, a module's own parameter), and checked by
the prologue, since a later call may pass a plain tensor where a Parameter was
(``check_is_param(x, True)``). Values computed while tracing are never parameters.

``type(proxy)`` is ``TensorProxy`` to Python; the user's code that names ``type`` finds, while it
is traced, a stand-in in its globals (as ``patches.replacements`` are put there) whose
one-argument form answers ``torch.nn.Parameter`` or ``torch.Tensor`` for a proxy, as eager's
``type(t)`` does for the tensor it stands for, and is the builtin otherwise:

    def h(p):
        return p * (2 if type(p) is torch.nn.Parameter else 3)  # a Parameter: 2, then checked

The stand-in is a class whose instances are the classes (``isinstance(cls, type)`` holds); only
``type is builtins.type`` tells it apart.
"""

from __future__ import annotations

import builtins
import sys
from contextlib import contextmanager

import torch

from thunder.core import proxies
from thunder.frontend.effects.c_objects import is_stand_in
from thunder.frontend.effects.python_calls import RecordedFile
from thunder.frontend.prologue.code_reads import is_user_code
from thunder.frontend.stand_ins.containers import is_tracked
from thunder.frontend.stand_ins.counters import DynamicNumber
from thunder.ops import python as pyops


@contextmanager
def param_reads(state):
    """While tracing: ``isinstance(proxy, torch.nn.Parameter)`` of an input is remembered."""
    reads = state.param_reads

    def hook(p):
        src = state.inputs.sources.get(p.name)
        if src is not None and src[0] is p:  # an input of this trace
            reads[p.name] = p

    def class_hook(p):  # ``x.__class__``: the user's code's reads (not torch's, not an ABC's)
        if is_user_code(sys._getframe(2).f_code):
            hook(p)

    old = proxies.param_read_hook, proxies.class_read_hook
    proxies.param_read_hook, proxies.class_read_hook = hook, class_hook
    try:
        yield
    finally:
        proxies.param_read_hook, proxies.class_read_hook = old


def guard_param_reads(state) -> None:
    for p in state.param_reads.values():
        state.inputs.checks.add_check(
            pyops.check_is_param, p, p.__dict__.get("_thunder_is_param", False), always=True
        )


def type_of(v) -> type:
    """``type(v)`` as eager answers it for the tensor a proxy stands for."""
    if isinstance(v, proxies.TensorProxy):
        return torch.nn.Parameter if v._is_param else torch.Tensor  # (_is_param: recorded for the prologue)
    if isinstance(
        v, DynamicNumber
    ):  # a counter traced as a value (frontend/stand_ins/counters.py): its type is checked
        return builtins.type(v.value)
    if is_tracked(v) or is_stand_in(v) or isinstance(v, RecordedFile):
        return v.__class__  # (a tracked copy, a stand-in: the class of the user's object)
    return builtins.type(v)


class _TypeQueryMeta(builtins.type):
    """Makes the stand-in ``type`` answer ``isinstance(c, type)``, ``issubclass`` and ``==``
    as the builtin."""

    def __call__(cls, *args, **kwargs):
        if cls is TracedType:
            if len(args) == 1 and not kwargs:
                return type_of(args[0])
            return builtins.type(*args, **kwargs)
        return super().__call__(*args, **kwargs)

    def __instancecheck__(cls, v) -> bool:
        return isinstance(v, builtins.type) if cls is TracedType else super().__instancecheck__(v)

    def __subclasscheck__(cls, c) -> bool:
        return issubclass(c, builtins.type) if cls is TracedType else super().__subclasscheck__(c)

    def __eq__(cls, other) -> bool:
        return other is cls or (cls is TracedType and other is builtins.type)

    def __hash__(cls) -> int:
        return hash(builtins.type) if cls is TracedType else builtins.type.__hash__(cls)

    def __repr__(cls) -> str:
        return "<class 'type'>" if cls is TracedType else super().__repr__()


class TracedType(builtins.type, metaclass=_TypeQueryMeta):
    """``type`` in the traced user code's globals (see the module docstring)."""


TracedType.__name__ = TracedType.__qualname__ = "type"
TracedType.__module__ = "builtins"


@contextmanager
def type_queries(reads):
    """While tracing: ``type`` in each globals dict of ``reads`` (``CodeReads``) whose code names
    it and has no ``type`` of its own is the stand-in; removed after, also on failure."""
    put = [g for g, _ in reads.globals.values() if "type" in reads.names.get(id(g), ()) and "type" not in g]
    for g in put:
        g["type"] = TracedType
    try:
        yield
    finally:
        for g in put:
            if g.get("type") is TracedType:
                del g["type"]
