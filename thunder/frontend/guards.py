"""Guards on state the traced code read without it being an input: the plain attributes of
modules and of the objects they hold (a config), globals and closure cells.

The state is checked as a whole, by value, in one prologue line per object:

    pythonex.check_module(m_fc1, torch_nn_modules_linear_Linear, ('training', 'in_features', 'out_features'), (True, 64, 64))
    pythonex.check_items(g___main__, ('SCALE', 'helper'), (2.0, _helper))

Each value is recorded as it was when the call began: literals (numbers, strings, None,
dtypes, and tuples of them), functions, classes and other objects as themselves, mutable
containers (lists, dicts, sets) as deep copies. A cached call first tests every value for
identity in one C-level pass (``all(map(operator.is_, ...))``), which is what an unchanged
state gives; only when that fails does it compare values exactly (type and value, so
``2`` does not pass for ``2.0``), which is what a re-set value or a container needs.

Objects held by attributes (instances of Python classes, such as a transformers config) get
a check of their own state, two levels deep; objects further down, and objects inside
containers, are checked by identity only.
"""

from __future__ import annotations

import collections
import enum
import types

import torch

from thunder.ops.python import StateCheck

# What nn.Module.__init__ puts into every module's __dict__, besides ``training``: the
# parameters, buffers and submodules are checked as inputs, the hooks on their own.
MODULE_MACHINERY = frozenset(k for k in torch.nn.Module().__dict__ if k != "training")
# The hook dictionaries a module call reads (``Module._call_impl``).
CALL_HOOKS = (
    "_forward_hooks",
    "_forward_pre_hooks",
    "_backward_hooks",
    "_backward_pre_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_forward_pre_hooks_with_kwargs",
)
# The global hooks every module call reads (torch.nn.modules.module).
GLOBAL_HOOKS = (
    "_global_forward_hooks",
    "_global_forward_pre_hooks",
    "_global_backward_hooks",
    "_global_backward_pre_hooks",
    "_global_forward_hooks_always_called",
    "_global_forward_hooks_with_kwargs",
)

_VALUE_TYPES = (
    int,
    float,
    bool,
    str,
    bytes,
    complex,
    type(None),
    type(Ellipsis),
    slice,
    range,
    torch.dtype,
    torch.device,
    torch.Size,
    torch.memory_format,
    torch.layout,
    enum.Enum,
)
_CONTAINERS = (list, tuple, dict, collections.OrderedDict, set, frozenset)
# objects checked by identity only: their own state is not the program's input
_IDENTITY_TYPES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type,
    torch.Tensor,
    torch.nn.Module,
)
# classes from these packages are machinery (loggers, locks), not program state
_MACHINERY_PACKAGES = ("logging", "threading", "torch", "thunder", "weakref", "_thread", "abc", "typing")


def state_check(items: dict, *, hooks: bool = False) -> StateCheck:
    """The check of ``items`` (name -> snapshot)."""
    return StateCheck(items.keys(), items.values(), hooks=hooks)


def snapshot(v):
    """What a guard compares ``v`` with on later calls: ``v`` itself when it cannot change
    without being replaced (literals, tuples of them, objects checked by identity), else a
    deep copy of the container."""
    if is_immutable(v):
        return v
    t = type(v)
    if t in (list, tuple, set, frozenset):
        return t(snapshot(x) for x in v)
    if t is dict or t is collections.OrderedDict:
        return t((k, snapshot(x)) for k, x in v.items())
    return v


def is_immutable(v) -> bool:
    if isinstance(v, _VALUE_TYPES):
        return True
    t = type(v)
    if t is tuple or t is frozenset:
        return all(is_immutable(x) for x in v)
    return not isinstance(v, _CONTAINERS)


def is_plain_object(v) -> bool:
    """An instance of a Python class whose attributes are program state (a config)."""
    t = type(v)
    if isinstance(v, _VALUE_TYPES + _CONTAINERS + _IDENTITY_TYPES) or t.__module__ == "builtins":
        return False
    if t.__module__.split(".")[0] in _MACHINERY_PACKAGES:
        return False
    try:
        object.__getattribute__(v, "__dict__")
    except AttributeError:
        return False
    return True
