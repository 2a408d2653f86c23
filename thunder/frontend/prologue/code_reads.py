"""What the user's code may read besides its inputs: the globals, closure cells and default
argument values of the user's functions, and the class attributes of the user's own module
classes (``scale = 2.0`` in the class body, the methods), with their values as the call
began; the prologue checks them by value (``thunder/frontend/prologue/state_checks.py``). An attribute added to
such a class since the trace (an instance ``forward``, a value that now shadows the class's)
misses the cache too.

Plain objects among the values of globals, closure cells and default arguments (or in a
list, tuple or dict there), a jitted callable object and a ``functools.partial``'s arguments
get the same check of their state, by attribute (``CodeReads.objects``); what the traced code
writes into them is put back and written by the epilogue on every call, as are the containers
and bindings it changes (``thunder/frontend/effects/recorder.py``).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
import sys
import sysconfig
import types
from typing import Any

import torch

from thunder.core.proxies import AnyProxy
from thunder.core.source import THUNDER_DIR
from thunder.core.trace import sanitize_name
from thunder.frontend.prologue.state_checks import (
    guard_object_state,
    is_plain_object,
    object_state,
    refill,
    snapshot,
    state_check,
)
from thunder.frontend.stand_ins.counters import is_counter, is_counter_value
from thunder.frontend.stand_ins.unpack import ATTR, Unpack
from thunder.frontend.stand_ins.writes import DelAttr, ReplaceContents, SetAttr
from thunder.ops import python as pyops
from thunder.ops.python import same


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    dirs.add(THUNDER_DIR)  # thunder itself
    return tuple(os.path.join(d, "") for d in dirs)


_LIBRARY_DIRS = _library_dirs()


def is_user_code(code: types.CodeType) -> bool:
    """Code outside the standard library, installed packages and thunder: its globals and
    closures are guarded (a library's module state is taken as fixed)."""
    name = code.co_filename
    known = _USER_FILES.get(name)
    if known is None:
        known = not os.path.abspath(name).startswith(_LIBRARY_DIRS)
        if os.path.isabs(name):  # (a relative name's answer depends on the working directory)
            _USER_FILES[name] = known
    return known


# absolute file name -> whether its code is user code: every method of ``nn.Module`` is asked
# about once per module class of each trace
_USER_FILES: dict[str, bool] = {}


def _codes(code: types.CodeType):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


@dataclasses.dataclass
class CodeReads:
    """The globals (per globals dict) and closure cells the user's functions may read, with
    their values as the call began."""

    globals: dict[int, tuple[dict, dict[str, Any]]] = dataclasses.field(default_factory=dict)
    cells: list[tuple[types.CellType, str, Any]] = dataclasses.field(default_factory=list)
    classes: list[tuple[type, dict[str, Any]]] = dataclasses.field(default_factory=list)
    # id(class) -> its own attributes (the objects themselves) as the call began: what the
    # trace wrote into a class (``C.n += 1``) is put back and written by the epilogue
    class_originals: dict[int, tuple[type, dict[str, Any]]] = dataclasses.field(default_factory=dict)
    defaults: list[tuple[types.FunctionType, dict[str, Any]]] = dataclasses.field(default_factory=list)
    # plain objects among those values, in them (a list of configs) or called (the jitted
    # callable object, a partial's arguments): id -> (a name for them, their state)
    objects: dict[int, tuple[str, Any]] = dataclasses.field(default_factory=dict)
    # id(globals dict) -> every global name the code names (one it creates is a write)
    names: dict[int, set[str]] = dataclasses.field(default_factory=dict)
    # the user's functions reached that hold no attribute of their own (checked by identity
    # only), with their ``__dict__`` as the call began (``functools.wraps``' ``__wrapped__``);
    # those the trace gave one (``f.seen = True``) are put back, their writes replayed and their
    # state checked from then on (``written_functions``)
    bare: list[tuple[types.FunctionType, dict]] = dataclasses.field(default_factory=list)
    written_functions: list = dataclasses.field(default_factory=list)
    # id(class) -> (its prologue name, attribute -> the DynamicNumber put in the class while
    # tracing): class attributes traced as values (``type(self).n += 1``, ``counters.py``)
    class_counters: dict[int, tuple[AnyProxy, dict[str, Any]]] = dataclasses.field(default_factory=dict)

    def add_objects(self, label: str, v) -> None:
        for o in _objects_in(v):
            if id(o) not in self.objects:
                self.objects[id(o)] = (label, object_state(o))

    def add_class(self, klass: type) -> bool:
        """Read the user's class ``klass``: its own attributes checked by value, its writes put
        back and replayed (a library's class is taken as fixed); whether it is the user's."""
        if id(klass) in self.class_originals:
            return True
        if not _is_user_class(klass):
            return False
        self.classes.append((klass, _class_values(klass)))
        self.class_originals[id(klass)] = (klass, _own_attributes(klass))
        return True

    def restore_objects(self, writes: list | None = None) -> str | None:
        """Put back what the trace changed of those objects and classes; the first change, or
        None (``writes`` gets the changes: ``ObjectState.restore``, ``_restore_class``)."""
        changed = None
        for label, obj in self.objects.values():
            inner = obj.restore(writes)
            if inner is not None and changed is None:
                changed = f"the {type(obj.obj).__qualname__} object {label} (its attribute {inner!r})"
        for fn, began in self.bare:
            if fn.__dict__.keys() != began.keys() or any(fn.__dict__[k] is not v for k, v in began.items()):
                first = next(k for k in fn.__dict__ if k not in began or fn.__dict__[k] is not began[k])
                state = object_state(fn)
                state.values = {k: snapshot(v) for k, v in began.items()}  # (as the call began)
                state.originals = dict(began)
                state.restore(writes)
                self.written_functions.append(state)
                changed = changed or f"the function {fn.__qualname__} (its attribute {first!r})"
        values = {id(k): v for k, v in self.classes}
        for klass, originals in self.class_originals.values():
            counters = self.class_counters.get(id(klass), (None, {}))[1]
            inner = _restore_class(klass, originals, values[id(klass)], writes, counters)
            if inner is not None and changed is None:
                changed = f"the class {klass.__qualname__} (its attribute {inner!r})"
        return changed

    def counters_written(self, writes: list) -> set[str]:
        """The int or float attributes of those objects the trace rebound to numbers
        (``ST.step += 1``; ``writes`` from ``restore_objects``): the name of each object's check
        and the key a later trace reads the attribute by, as a value."""
        out: set[str] = set()
        for w in writes:
            label, obj = self.objects.get(id(w.holder), (None, None))
            if obj is not None and obj.holder is not None and isinstance(w, SetAttr):
                if is_counter(obj.values.get(w.name)) and is_counter_value(w.value):
                    out |= {obj.holder.name, object_counter_key(label, w.name)}
            began = self.class_originals.get(id(w.holder))
            if began is not None and isinstance(w, SetAttr) and id(w.holder) in self.class_counters:
                if is_counter(began[1].get(w.name)) and is_counter_value(w.value):
                    out |= {self.class_counters[id(w.holder)][0].name, class_counter_key(began[0], w.name)}
        return out

    def put_class_counters(self) -> None:
        """Put the class attributes traced as values in their classes (as the trace begins;
        ``restore_objects`` puts the numbers back)."""
        for klass, _ in self.class_originals.values():
            for attr, put in self.class_counters.get(id(klass), (None, {}))[1].items():
                type.__setattr__(klass, attr, put)


def _objects_in(v) -> list:
    """``v`` when its attributes are state (``_has_state``), else the such objects a list,
    tuple or dict ``v`` holds (the first 64)."""
    if _has_state(v):
        return [v]
    if type(v) in (list, tuple, dict, collections.OrderedDict):
        return [x for x in (v.values() if isinstance(v, dict) else v) if _has_state(x)][:64]
    return []


def _has_state(v) -> bool:
    """Whether ``v``'s attributes are program state, checked and written back as a plain
    object's: an instance of a Python class (a config), and a function of the user's that
    holds attributes (``f.calls += 1``; one without any is checked by identity, and one that
    gains an attribute while tracing is refused: ``check_functions_unchanged``)."""
    if type(v) is types.FunctionType:  # (``__wrapped__`` and the like are Python's, not state)
        return any(not (k.startswith("__") and k.endswith("__")) for k in v.__dict__) and is_user_code(
            v.__code__
        )
    return is_plain_object(v)


def code_reads(functions, classes=()) -> CodeReads:
    """What ``functions``, the methods of ``classes`` and the user functions they reach
    through globals and closures read of globals and closure cells, and of the user's own
    modules they import (``config.FLAG``). A name bound to a module (``torch``, ``F``) is
    checked by identity: rebinding it to another object misses the cache."""
    reads = CodeReads()
    todo = []

    def read_module(mod: types.ModuleType, code: types.CodeType) -> None:
        """The attributes of the user's module ``mod`` that ``code`` may read, as globals."""
        d = vars(mod)
        _, read = reads.globals.setdefault(id(d), (d, {}))
        for name in code.co_names:
            v = d.get(name, _MISSING)
            if v is _MISSING or name in read or isinstance(v, types.ModuleType) or name.startswith("__"):
                continue
            read[name] = snapshot(v)
            reads.add_objects(f"{getattr(mod, '__name__', 'module')}.{name}", v)
            todo.extend(reach(v))

    def reach(v) -> list:  # (a class reached is read too: its attributes are state)
        if isinstance(v, type):
            for klass in v.__mro__:
                reads.add_class(klass)
        return _reached(v)

    for fn in functions:  # a callable object's state and methods; a partial's function and arguments
        if isinstance(fn, functools.partial):
            todo.append(fn.func)
            for i, v in enumerate((*fn.args, *fn.keywords.values())):
                reads.add_objects(f"bound by the partial ({i})", v)
                todo.extend(reach(v))
        elif is_plain_object(fn):
            reads.add_objects("called", fn)
            todo.extend(reach(type(fn)))
        else:
            reads.add_objects("called", fn)  # (a function's attributes: ``_has_state``)
            todo.append(fn)
    user_classes: dict[int, bool] = {}  # id(class) -> whether the user wrote it, asked once
    for cls in classes:
        for klass in cls.__mro__:
            user = user_classes.get(id(klass))
            if user is None:
                user = user_classes[id(klass)] = reads.add_class(klass)
            if not user:  # (``nn.Module``, in every module's MRO: none of its functions is user code)
                continue
            for v in vars(klass).values():
                if isinstance(v, (staticmethod, classmethod)):
                    v = v.__func__
                if isinstance(v, types.FunctionType):
                    todo.append(v)
    seen: set[int] = set()
    while todo:
        fn = todo.pop()
        if isinstance(fn, types.MethodType):
            fn = fn.__func__
        if not isinstance(fn, types.FunctionType) or id(fn) in seen or not is_user_code(fn.__code__):
            continue
        seen.add(id(fn))
        if not _has_state(fn):
            reads.bare.append((fn, dict(fn.__dict__)))
        if fn.__defaults__ is not None or fn.__kwdefaults__ is not None:
            values = {
                "__defaults__": snapshot(fn.__defaults__),
                "__kwdefaults__": snapshot(fn.__kwdefaults__),
            }
            reads.defaults.append((fn, values))
            for v in (*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()):
                reads.add_objects(f"a default of {fn.__name__}", v)
            todo.extend(
                f for v in (*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()) for f in reach(v)
            )
        g = fn.__globals__
        _, values = reads.globals.setdefault(id(g), (g, {}))
        named = reads.names.setdefault(id(g), set())
        for code in _codes(fn.__code__):
            named.update(code.co_names)
            for name in code.co_names:
                if name not in g:
                    continue
                v = g[name]
                if isinstance(v, types.ModuleType):  # (``config.FLAG``: every code's names of it)
                    if _is_user_module(v):
                        read_module(v, code)
                    values.setdefault(name, v)
                    continue
                if name in values:
                    continue
                values[name] = snapshot(v)
                reads.add_objects(f"global {name}", v)
                todo.extend(reach(v))
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            if name == "__class__":  # the class a method using super() is defined in: fixed
                continue
            try:
                v = cell.cell_contents
            except ValueError:  # not set yet (a recursive helper defined later)
                continue
            reads.cells.append((cell, name, snapshot(v)))
            reads.add_objects(f"closure variable {name}", v)
            if isinstance(v, types.ModuleType) and _is_user_module(v):
                for code in _codes(fn.__code__):
                    read_module(v, code)
            todo.extend(reach(v))
    return reads


_MISSING = object()


def _is_user_class(klass: type) -> bool:
    """A class the user wrote (in a script, a notebook cell, their own package): its class
    attributes are program state. A library's classes are taken as fixed."""
    if _is_user_module(sys.modules.get(klass.__module__)):
        return True
    return any(
        isinstance(f, types.FunctionType) and is_user_code(f.__code__)
        for v in vars(klass).values()
        for f in ((v.__func__,) if isinstance(v, (staticmethod, classmethod)) else (v,))
    )


def _own_attributes(klass: type) -> dict[str, Any]:
    """A class's own attributes, the objects themselves, Python's ``__dunder__`` entries aside."""
    return {k: v for k, v in vars(klass).items() if not (k.startswith("__") and k.endswith("__"))}


def _restore_class(
    klass: type, originals: dict, values: dict, writes: list | None, counters: dict | None = None
) -> str | None:
    """Put back what the trace changed of ``klass``'s own attributes (``originals``: the
    objects, ``values``: their snapshots as the call began; ``counters``: the DynamicNumbers
    put in it, read and not rebound when still there); ``writes`` gets the writes the
    epilogue makes on every call; the first attribute changed, or None."""
    now = _own_attributes(klass)
    counters = counters or {}
    changed = None
    for name in [*now, *(k for k in originals if k not in now)]:
        if name in counters and now.get(name) is counters[name]:
            type.__setattr__(klass, name, originals[name])  # a counter read, not rebound
            continue
        if name in now and name in originals and same(now[name], values[name]):
            continue
        changed = changed or name
        if name not in now:
            found = DelAttr(klass, name)
            type.__setattr__(klass, name, originals[name])
        elif name in originals and now[name] is originals[name]:  # a container changed in place
            v = now[name]
            found = ReplaceContents(klass, name, dict(v) if isinstance(v, dict) else type(v)(v))
            refill(v, values[name])
        else:
            found = SetAttr(klass, name, now[name])
            if name in originals:
                type.__setattr__(klass, name, originals[name])
            else:
                type.__delattr__(klass, name)
        if writes is not None:
            writes.append(found)
    return changed


def _class_values(klass: type) -> dict[str, Any]:
    """A class's own attributes as the call began (values, methods), Python's ``__dunder__``
    entries aside."""
    return {k: snapshot(v) for k, v in vars(klass).items() if not (k.startswith("__") and k.endswith("__"))}


def _is_user_module(mod: types.ModuleType | None) -> bool:
    """A module of the user's files, or one the program made (``types.ModuleType("cfg")``: no
    file and no import spec); a library's module (a file among the libraries, built into
    Python, a namespace package) is taken as fixed."""
    if mod is None:
        return False
    path = getattr(mod, "__file__", None)
    if path is None:
        return getattr(mod, "__spec__", None) is None and getattr(mod, "__loader__", None) is None
    return not os.path.abspath(path).startswith(_LIBRARY_DIRS)


def _reached(v) -> list:
    """Functions whose code the traced code may run through ``v``."""
    if isinstance(v, (types.FunctionType, types.MethodType)):
        return [v]
    if isinstance(v, type) and not issubclass(v, torch.nn.Module):  # modules: their shadows are guarded
        return [f for k in v.__mro__ for f in vars(k).values() if isinstance(f, types.FunctionType)]
    return []


def guard_code_reads(inputs, reads: CodeReads) -> dict[int, Any]:
    """Prologue checks for ``reads``: one line per globals dict, one per closure cell; their
    ``StateCheck`` by the id of the globals dict, cell or function (``frontend/effects/recorder.py`` relaxes them)."""
    checks: dict[int, Any] = {}

    def holder(name: str, obj, t: type) -> AnyProxy:
        p = AnyProxy(inputs.prologue.add_name(sanitize_name(name)), t)
        inputs.prologue.ctx_objects = {**inputs.prologue.ctx_objects, p.name: obj}
        return p

    for g, values in reads.globals.values():
        if values:
            h = holder(f"g_{g.get('__name__', 'globals')}", g, dict)
            inputs.global_holders[id(g)] = h.name  # (a counter it rebinds: frontend/effects/recorder.py)
            checks[id(g)] = state_check(values)
            inputs.checks.add_check(pyops.check_items, h, checks[id(g)], always=True)
    for klass, values in reads.classes:
        h = holder(f"cls_{klass.__name__}", klass, type)
        counters = {}
        for attr, v in _own_attributes(klass).items():  # a counter that changed between calls
            key = class_counter_key(klass, attr)
            if is_counter(v) and key in inputs.dynamic:
                counters[attr] = inputs.dynamic_number(v, key, Unpack(h, ATTR, attr))
        reads.class_counters[id(klass)] = (h, counters)
        checked = {k: v for k, v in values.items() if k not in counters}  # (those: by their type)
        check = state_check(checked, keys=vars(klass).keys())
        inputs.checks.add_check(pyops.check_class, h, check, always=True)
    for fn, values in reads.defaults:
        h = holder(f"fn_{fn.__name__}", fn, types.FunctionType)
        checks[id(fn)] = state_check(values)
        inputs.checks.add_check(pyops.check_defaults, h, checks[id(fn)], always=True)
    for cell, name, value in reads.cells:
        h = holder(f"cell_{name}", cell, types.CellType)
        inputs.global_holders[id(cell)] = h.name
        checks[id(cell)] = state_check({name: value})
        inputs.checks.add_check(pyops.check_cell, h, checks[id(cell)], always=True)
    for label, obj in reads.objects.values():  # (by identity through the checks above; their state here)
        obj.holder = holder(f"obj_{type(obj.obj).__name__}", obj.obj, type(obj.obj))
        d = object.__getattribute__(obj.obj, "__dict__")
        for attr in d:  # a counter that changed between calls (frontend/stand_ins/counters.py)
            key = object_counter_key(label, attr)
            if inputs.is_object_counter(obj.obj, attr, key):  # (put in the object by effects.substitute)
                obj.counters[attr] = inputs.object_counter(obj.obj, attr, key, Unpack(obj.holder, ATTR, attr))
        guard_object_state(inputs, obj.holder, obj)
    return checks


def guard_written_functions(inputs, reads: CodeReads) -> None:
    """Prologue checks of the functions the trace gave attributes (``CodeReads.bare``): they
    had none when traced, so a call where they have some is traced again, and reads them."""
    for state in reads.written_functions:
        fn = state.obj
        state.holder = AnyProxy(inputs.prologue.add_name(sanitize_name(f"fn_{fn.__name__}")), type(fn))
        inputs.prologue.ctx_objects = {**inputs.prologue.ctx_objects, state.holder.name: fn}
        guard_object_state(inputs, state.holder, state)


def class_counter_key(klass: type, attr: str) -> str:
    """The name under which the class attribute ``klass.attr`` is traced as a value."""
    return sanitize_name(f"cls_{klass.__qualname__}_{attr}")


def object_counter_key(label: str, attr: str) -> str:
    """The name under which the attribute ``attr`` of the object ``label`` names (``global
    ST``) is traced as a value."""
    return sanitize_name(f"obj_{label}_{attr}")
