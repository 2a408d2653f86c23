"""What kind of value an input is, which decides how the prologue checks it: a literal by
equality (numbers, strings, dtypes, enums, ``torch.Size``), a constant object by identity
(functions, classes, modules, process groups), or an instance of a Python class wrapped so that
its attributes are read and checked (``stand_ins/objects.py``)."""

from __future__ import annotations

import enum
import functools
import types

import torch

LITERAL_TYPES = (
    int,
    float,
    bool,
    str,
    complex,
    type(None),
    torch.dtype,
    torch.device,
    type(Ellipsis),
    slice,
)


def is_literal(v) -> bool:
    """Values checked by equality: enums, torch.Size, frozensets of literals."""
    if isinstance(v, (enum.Enum, torch.Size, torch.memory_format, torch.layout, bytes, range)):
        return True
    if type(v) is frozenset:
        return all(isinstance(x, LITERAL_TYPES) for x in v)
    return False


_CONSTANT_TYPES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type,
    functools.partial,
    torch.nn.Module,
)


def is_constant_object(v) -> bool:
    """Objects used as they are and checked by identity (functions, classes, modules, and
    torch.distributed's process groups and device meshes, which the program communicates over)."""
    if isinstance(v, _CONSTANT_TYPES) or type(v).__module__ == "builtins" and callable(v):
        return True
    return type(v).__module__.startswith("torch") and type(v).__name__ in ("ProcessGroup", "DeviceMesh")


def is_wrappable(v) -> bool:
    """Instances of Python classes (with a ``__dict__`` or ``__slots__``)."""
    t = type(v)
    return t.__module__ != "builtins" and (hasattr(v, "__dict__") or hasattr(t, "__slots__"))
