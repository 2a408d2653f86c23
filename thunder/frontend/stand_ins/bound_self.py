"""The object a jitted bound method belongs to (``thunder.jit(optimizer.step)``) is an input.

``thunder.jit(obj.method)`` traces ``type(obj).method`` with the object as its first argument,
reached by the prologue as the object itself (``self_0 = bound_self``): its attributes and the
containers they hold are read, checked on every call and written back as an argument object's
(``frontend/stand_ins/objects.py``). So a learning rate changed in ``param_groups`` between
calls (a schedule) is a new value the program reads, never the one traced.

An LR scheduler attached to an optimizer replaces ``optimizer.step`` with a wrapper that
marks the optimizer stepped (``_opt_called``) and calls the method on the optimizer it holds
by a weak reference: jitting that wrapper traces the method on that optimizer and makes the
mark, as the wrapper does.

    opt = torch.optim.SGD(params, lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2, 0.5)
    step = thunder.jit(opt.step)   # each call reads opt.param_groups[i]["lr"] as it is then
"""

from __future__ import annotations

import inspect
import types
import weakref

import torch


class BoundCall:
    """``func(obj, ...)`` for a method bound to ``obj`` (and the writes its wrapper makes)."""

    def __init__(self, obj, func, marks: dict):
        self.obj, self.func, self.marks = obj, func, marks
        self.self_value = obj  # (the input's value while tracing: set by acquisition)

    def method(self):
        """The method bound to the object itself (its signature names the call's arguments)."""
        return types.MethodType(self.func, self.obj)

    def __call__(self, *args, **kwargs):
        out = self.func(self.self_value, *args, **kwargs)
        for name, value in self.marks.items():
            setattr(self.self_value, name, value)
        return out


def bound_call(fn) -> BoundCall | None:
    """The call ``fn`` makes on the object it is bound to: a method of an instance of a Python
    class (not an ``nn.Module``, which runs as a shadow), or an LR scheduler's wrapper of an
    optimizer's ``step``; None for anything else."""
    if getattr(fn, "_wrapped_by_lr_sched", False) and inspect.isfunction(getattr(fn, "__wrapped__", None)):
        for cell in fn.__closure__ or ():
            ref = cell.cell_contents
            if isinstance(ref, weakref.ref) and isinstance(ref(), torch.optim.Optimizer):
                return BoundCall(ref(), fn.__wrapped__, {"_opt_called": True})
    if not inspect.ismethod(fn):
        return None
    obj = fn.__self__
    if isinstance(obj, (type, torch.nn.Module)) or not hasattr(obj, "__dict__"):
        return None
    return BoundCall(obj, fn.__func__, {})
