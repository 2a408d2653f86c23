"""How state the traced code read without it being an input is checked: the plain attributes
of modules and of the objects they hold (a config), and the values ``code_reads.py`` finds in
globals, closure cells, default arguments and the user's own classes.

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
a check of their own state (``ObjectState``), four levels deep (``config.sub.inner.leaf``) and
up to 64 objects per object a module holds, and so do the first 64 such objects in a list,
tuple or dict a module holds; objects further down or beyond are checked by identity only.
"""

from __future__ import annotations

import array
import collections
import dataclasses
import enum
import types
from typing import Any

import torch

from thunder.core.proxies import AnyProxy
from thunder.core.symbol import Symbol
from thunder.core.trace import sanitize_name
from thunder.frontend.stand_ins.counters import DynamicNumber
from thunder.frontend.stand_ins.unpack import ATTR, Unpack
from thunder.frontend.stand_ins.writes import DelAttr, ReplaceContents, SetAttr
from thunder.ops import python as pyops
from thunder.ops.python import StateCheck, same

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
_CONTAINERS = (list, tuple, dict, collections.OrderedDict, set, frozenset, collections.deque)
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


def state_check(items: dict, *, hooks: bool = False, keys=None, tables=None, nones=()) -> StateCheck:
    """The check of ``items`` (name -> snapshot); ``keys``: every attribute name the object
    had (an attribute added later, which may shadow a class attribute, misses the cache);
    ``tables``: a module's tables the code read whole, with their names; ``nones``: its
    parameters and buffers that are None (``StateCheck``)."""
    return StateCheck(items.keys(), items.values(), hooks=hooks, keys=keys, tables=tables, nones=nones)


def snapshot(v):
    """What a guard compares ``v`` with on later calls: ``v`` itself when it cannot change
    without being replaced (literals, tuples of them, objects checked by identity), else a
    deep copy of the container (an ``array.array`` or a ``bytearray`` too: C code reads them)."""
    t = type(v)
    if t is array.array:
        return array.array(v.typecode, v)
    if t is bytearray:
        return bytearray(v)
    if is_immutable(v):
        return v
    if t in (list, tuple, set, frozenset):
        return t(snapshot(x) for x in v)
    if t is dict or t is collections.OrderedDict:
        return t((k, snapshot(x)) for k, x in v.items())
    if t is collections.defaultdict:
        return t(v.default_factory, ((k, snapshot(x)) for k, x in v.items()))
    if t is collections.Counter:
        return t({k: snapshot(x) for k, x in v.items()})
    if t is collections.deque:
        return t((snapshot(x) for x in v), v.maxlen)
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


# how deep the state of objects held by attributes (a config, its sub-configs, theirs) is
# checked, and how many objects of one such tree at most (an object holding a large graph of
# objects gets the first ones; those further on are checked by identity)
_OBJECT_DEPTH = 4
OBJECT_BUDGET = 64


@dataclasses.dataclass
class ObjectState:
    """The attributes of a plain object (a config) as the call began, and the objects they hold."""

    obj: Any
    values: dict[str, Any]  # name -> snapshot
    children: dict[str, ObjectState]
    originals: dict[str, Any]  # name -> the object itself (what a restore puts back)
    # int or float attributes traced as values (counters, frontend/stand_ins/counters.py): name -> the
    # DynamicNumber put in the object while tracing; checked by type, not value, put back
    counters: dict[str, Any] = dataclasses.field(default_factory=dict)
    holder: AnyProxy | None = None  # its prologue name, when a counter made it before tracing

    def put_counters(self) -> None:
        """Put the counters in the object (as the trace begins; ``restore`` takes them out)."""
        d = object.__getattribute__(self.obj, "__dict__")
        for attr, put in self.counters.items():
            if d.get(attr) is self.originals.get(attr):  # (once: another path may have put it)
                d[attr] = put

    def restore(self, writes: list | None = None) -> str | None:
        """Put back what the trace changed of the object (forward writes into the user's own
        object, which its module's shadow shares); the first attribute changed, or None.
        ``writes`` gets the changes (``SetAttr``, ``DelAttr``, ``ReplaceContents`` of the
        object itself, which the effects recorder names), the objects below it first."""
        d = object.__getattribute__(self.obj, "__dict__")
        changed = None
        found = []
        for name in [*d, *(k for k in self.values if k not in d)]:  # (in order: the first one is named)
            if name in self.counters and d.get(name) is self.counters[name]:
                continue  # a counter read, not rebound
            if name not in d or name not in self.values or not same(d[name], self.values[name]):
                changed = changed or name
                if name not in d:
                    found.append(DelAttr(self.obj, name))
                elif name in self.originals and d[name] is self.originals[name]:  # changed in place
                    v = d[name]
                    found.append(
                        ReplaceContents(self.obj, name, dict(v) if isinstance(v, dict) else type(v)(v))
                    )
                else:
                    found.append(SetAttr(self.obj, name, d[name]))
        if changed is not None:
            d.clear()
            d.update(self.originals)
            for name, v in self.originals.items():  # a list or dict changed in place
                if not same(v, self.values[name]):
                    refill(v, self.values[name])
        for name in self.counters:  # (also when read only: the object held the DynamicNumber)
            d[name] = self.originals[name]
        for name, child in self.children.items():
            inner = child.restore(writes)
            changed = changed or (None if inner is None else f"{name}.{inner}")
        if writes is not None:
            writes += found
        return changed


def refill(container, snap) -> None:
    if isinstance(container, (list, bytearray, array.array)):
        container[:] = snap
    elif isinstance(container, (dict, set)):
        container.clear()
        container.update(snap)


def object_state(obj, depth: int = 0, seen: set | None = None) -> ObjectState:
    """The state of ``obj`` and of the plain objects below it (``_OBJECT_DEPTH`` levels, at
    most ``OBJECT_BUDGET`` objects, each once: a back-reference is checked by identity)."""
    seen = {id(obj)} if seen is None else seen
    values, children, counters = {}, {}, {}
    d = object.__getattribute__(obj, "__dict__")
    originals = dict(d)
    for name, v in d.items():
        if isinstance(v, DynamicNumber) and v.proxy is v.roots[0]:
            # a counter this trace put there (met again: an object two modules hold): the
            # number it stands for, and put back as the first one is
            counters[name] = v
            v = originals[name] = v.value
        values[name] = snapshot(v)
    for name, v in d.items():
        if (
            depth + 1 < _OBJECT_DEPTH
            and id(v) not in seen
            and len(seen) < OBJECT_BUDGET
            and is_plain_object(v)
        ):
            seen.add(id(v))
            children[name] = object_state(v, depth + 1, seen)
    return ObjectState(obj, values, children, originals, counters)


def held_object_holder(inputs, parent: AnyProxy, name, obj: ObjectState, via: Symbol = ATTR) -> AnyProxy:
    """The prologue's name for ``obj``, unpacked from ``parent`` (``via``: as an attribute or an
    item); made once."""
    if obj.holder is None:
        obj.holder = AnyProxy(
            inputs.computation.add_name(sanitize_name(f"{parent.name}_{name}")), type(obj.obj)
        )
        inputs.prologue.names.add(obj.holder.name)
        inputs.sources[obj.holder.name] = (obj.holder, Unpack(parent, via, name), obj.obj)
    return obj.holder


def guard_held_object(inputs, parent: AnyProxy, name, obj: ObjectState, via: Symbol = ATTR) -> AnyProxy:
    """Prologue lines that unpack ``obj`` from ``parent`` and check its state
    (``guard_object_state``); its holder."""
    holder = held_object_holder(inputs, parent, name, obj, via)
    guard_object_state(inputs, holder, obj)
    return holder


def guard_object_state(inputs, holder: AnyProxy, obj: ObjectState) -> None:
    """``check_state(holder, cls, ...)`` for the object ``holder`` names, and the same for the
    objects below it."""
    values = {k: v for k, v in obj.values.items() if k not in obj.counters} if obj.counters else obj.values
    check = state_check(values, keys=obj.values.keys())
    inputs.checks.add_check(pyops.check_state, holder, type(obj.obj), check, always=True)
    for child_name, child in obj.children.items():
        guard_held_object(inputs, holder, child_name, child)
