"""Objects whose state lives in C, reached by the traced code and changed by it: refused, and
put back as they were.

The traced code reads state through its globals, closure cells, default arguments, the user's
modules and classes and the plain objects they hold (``frontend/prologue/code_reads.py``).
Python-level state there is checked by the prologue and written again by the epilogue. An
object whose state is not Python attributes (a ``random.Random``, a NumPy ``Generator``, an
iterator held in a dict, an ``itertools.count``) can be neither: a draw from it while tracing
would be the same draw on every cached call. So the rule is by what the object is, not by a
list of holders: every such object the code can reach (down into containers and plain
objects) has its state recorded as the call begins, by pickling it; when the trace ends with
that state changed, the trace is refused with an error naming the object, and the object is
put back as it was (``__setstate__`` from its pickled copy; a NumPy generator's bit generator
state). An object that cannot be pickled (a generator object) is compared by its frame's
position instead, and named as not put back when it moved.

Objects known not to change (numbers, strings, tuples of them, functions, classes, modules,
tensors, ``nn.Module``s, torch's own objects) are not recorded, nor objects of over 1 MiB (a
large NumPy array: data, which the trace reads as a constant, not a generator's state).
"""

from __future__ import annotations

import inspect
import pickle
import sys
import types

import torch

from thunder.frontend.prologue.state_checks import is_plain_object
from thunder.frontend.stand_ins.made_objects import refusal

# how far into containers and plain objects the walk goes, how many objects it records, and
# the largest object it copies (bytes, as ``sys.getsizeof`` counts them: a NumPy array's data)
_DEPTH = 4
_BUDGET = 256
_LARGEST = 1 << 20
_SKIPPED = (
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    torch.Tensor,
    torch.nn.Module,
)
_CONTAINERS = (list, tuple, dict, set, frozenset)


def _opaque(v) -> bool:
    """An object whose state is neither values thunder checks nor Python attributes."""
    if isinstance(v, _SKIPPED) or isinstance(v, _CONTAINERS):
        return False
    t = type(v)
    if is_plain_object(v):  # (a Python class over a C base with state of its own: ``random.Random``)
        return refusal(v) is not None and t.__module__.split(".")[0] not in _FIXED_PACKAGES
    if hasattr(t, "__next__"):  # an iterator (a builtin one too: ``iter(data)``)
        return True
    return t.__module__.split(".")[0] not in _FIXED_PACKAGES


# numbers, strings and the other builtin values; torch's and thunder's objects; machinery
_FIXED_PACKAGES = frozenset({"builtins", "torch", "thunder", "logging", "threading", "_thread", "weakref"})


class _Recorded:
    __slots__ = ("obj", "label", "saved", "position")

    def __init__(self, obj, label: str):
        self.obj, self.label = obj, label
        self.saved = self.position = None
        if inspect.isgenerator(obj):
            frame = obj.gi_frame
            self.position = None if frame is None else frame.f_lasti
            return
        if sys.getsizeof(obj) > _LARGEST:  # (a large array: its data is not a generator's state)
            return
        try:
            self.saved = pickle.dumps(obj, protocol=4)
        except Exception:  # (not picklable: a lock, a socket; handled where they are, or fixed)
            self.saved = None

    def moved(self) -> bool:
        if inspect.isgenerator(self.obj):
            frame = self.obj.gi_frame
            return (None if frame is None else frame.f_lasti) != self.position
        if self.saved is None:
            return False
        try:
            now = pickle.dumps(self.obj, protocol=4)
        except Exception:
            return True
        return now != self.saved

    def put_back(self) -> bool:
        """The object as it was; False where it cannot be."""
        if self.saved is None:
            return False
        old = pickle.loads(self.saved)
        bit_generator = getattr(self.obj, "bit_generator", None)  # (NumPy's Generator)
        if bit_generator is not None:
            bit_generator.state = old.bit_generator.state
            return True
        reduced = old.__reduce_ex__(4)
        state = reduced[2] if isinstance(reduced, tuple) and len(reduced) > 2 else None
        setstate = getattr(self.obj, "__setstate__", None)
        if state is None or setstate is None:
            return False
        try:
            setstate(state)
        except Exception:
            return False
        return True


class OpaqueStates:
    """The opaque objects a trace's reads reach, with their state as the call began."""

    def __init__(self, reads):
        self.recorded: list[_Recorded] = []
        self._seen: set[int] = set()
        for g, values in reads.globals.values():
            module = g.get("__name__", "")
            for name, v in values.items():
                self._walk(v, f"the global {name}" if module else name, 0)
        for _, name, v in reads.cells:
            self._walk(v, f"the closure variable {name}", 0)
        for fn, values in reads.defaults:
            for v in values.values():
                self._walk(v, f"a default argument of {fn.__qualname__}", 0)
        for klass, values in reads.classes:
            for name, v in values.items():
                self._walk(v, f"{klass.__qualname__}.{name}", 0)
        for label, state in reads.objects.values():
            self._walk_object(state, label, 0)

    def _walk(self, v, label: str, depth: int) -> None:
        if len(self.recorded) >= _BUDGET or depth > _DEPTH or id(v) in self._seen:
            return
        if isinstance(v, _CONTAINERS):
            self._seen.add(id(v))
            items = v.items() if isinstance(v, dict) else enumerate(v)
            for k, x in list(items)[:_BUDGET]:
                self._walk(x, f"{label}[{k!r}]", depth + 1)
        elif _opaque(v):
            self._seen.add(id(v))
            self.recorded.append(_Recorded(v, label))

    def _walk_object(self, state, label: str, depth: int) -> None:
        for name, v in state.values.items():
            self._walk(v, f"{label}.{name}", depth + 1)
        for name, child in state.children.items():
            self._walk_object(child, f"{label}.{name}", depth + 1)

    def changed(self) -> str | None:
        """The first recorded object the trace changed, each put back where it can be; its
        description for the error, or None."""
        first = None
        for r in self.recorded:
            if not r.moved():
                continue
            restored = r.put_back()
            if first is None:
                t = type(r.obj)
                kind = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
                first = f"the state of {r.label} (a {kind})" + (
                    "" if restored else "; it could not be put back as it was"
                )
        return first
