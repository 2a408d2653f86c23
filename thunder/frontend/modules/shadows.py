"""Modules while tracing: the traced code runs *shadows* of the user's modules.

A shadow is an object of the module's own class whose ``__dict__`` is a copy of the
module's, with proxies in place of its parameters, buffers and tensor attributes, shadows in
place of its submodules (shared submodules stay shared) and tracked copies in place of its
lists, dicts, sets and deques (``thunder/frontend/effects/recorder.py``). The user's modules are
never changed while tracing: another thread calling them, or calling the cached program,
at the same moment sees nothing of the trace, and a failed trace leaves them as they were.

What ``forward`` writes lands in the shadows; afterwards each shadow is compared with how it
started, and the writes (``self.calls += 1``, ``self.running = ...``, a new buffer value, a
hook registered on a submodule, as transformers does to capture hidden states) go to the
epilogue, which applies them to the real modules.

What the trace read of each module is checked by the prologue: its parameters, buffers and
tensor attributes as inputs, and its type, plain attributes and hooks in one line
(``pythonex.check_module``, see ``thunder/frontend/prologue/state_checks.py``). The state checked is the
state as the call began: a module attribute changed between calls (``m.eval()``,
``m.scale = 2.0``, a new forward hook, a submodule replaced) is a cache miss.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import types
import weakref
from typing import Any

import torch

from thunder.core.errors import UnsupportedValueError
from thunder.core.proxies import AnyProxy, TensorProxy
from thunder.core.symbol import Symbol
from thunder.core.trace import sanitize_name
from thunder.frontend.effects.c_objects import is_stand_in
from thunder.frontend.modules.backward_hooks import backward_hooks_outside, refuse_global_backward_hooks
from thunder.frontend.modules.fastpaths import FAST_PATHS
from thunder.frontend.prologue.state_checks import (
    CALL_HOOKS,
    GLOBAL_HOOKS,
    MODULE_MACHINERY,
    OBJECT_BUDGET,
    ObjectState,
    guard_held_object,
    held_object_holder,
    is_immutable,
    is_plain_object,
    object_state,
    snapshot,
    state_check,
)
from thunder.frontend.prologue.value_kinds import LITERAL_TYPES
from thunder.frontend.stand_ins.containers import trackable
from thunder.frontend.stand_ins.counters import is_counter, is_counter_value
from thunder.frontend.stand_ins.unpack import ATTR, BUFFER, ITEM, PARAM, SUBMODULE, Unpack
from thunder.frontend.stand_ins.writes import DelAttr, DelHook, SetAttr, SetHook, Write
from thunder.ops import python as pyops
from thunder.ops.python import same

_ABSENT = object()
NO_OWN_FORWARD = object()  # what a compiled forward replaced: none of the module's own in its __dict__
_HOLDING = (list, tuple, dict, collections.OrderedDict)


class _Watched(dict):
    """A shadow's table of parameters, buffers or submodules that notes (on its record, while
    the traced code runs) when the code iterates it, asks its length, or finds a name missing:
    what the code did then depends on every name in it (``for layer in self.layers``,
    ``self.parameters()``, ``hasattr(self, "bias")``), and the prologue checks the names."""

    __slots__ = ("_record", "_name")

    def __init__(self, items: dict, record, name: str):
        super().__init__(items)
        self._record = record
        self._name = name

    def _note(self) -> None:
        if self._record.watching:
            self._record.read_all.add(self._name)

    def __iter__(self):
        self._note()
        return super().__iter__()

    def __len__(self):
        self._note()
        return super().__len__()

    def keys(self):
        self._note()
        return super().keys()

    def values(self):
        self._note()
        return super().values()

    def items(self):
        self._note()
        return super().items()

    def __contains__(self, name):
        found = super().__contains__(name)
        if not found:
            self._missing(name)
        return found

    def get(self, name, default=None):
        if not super().__contains__(name):
            self._missing(name)
        return super().get(name, default)

    def _missing(self, name) -> None:
        # (``nn.Module.__getattr__`` looks a submodule up in the parameters and the buffers
        # first: a name another table holds is no absence the code depends on)
        d = self._record.shadow.__dict__
        tables = (d.get("_parameters"), d.get("_buffers"), d.get("_modules"))
        if not any(dict.__contains__(t, name) for t in tables if t is not None):
            self._note()


@dataclasses.dataclass
class Shadow:
    """One module of a traced tree: the real module, its shadow and what is known of both."""

    real: torch.nn.Module
    shadow: torch.nn.Module
    holder: AnyProxy
    state: dict[str, Any]  # the real module's plain attributes as the call began (snapshots)
    # plain objects held by attributes (by name), or in a list, tuple or dict held so ((name, key))
    objects: dict[str | tuple, ObjectState]
    params: dict[str, Any]  # the shadow's _parameters as made
    buffers: dict[str, Any]
    inputs: set[str]  # attributes read as inputs (tensors, counters), not checked by value
    hooks: dict[str, list]  # the real module's hook tables (name -> items) as the call began
    keys: frozenset[str]  # the names in the real module's __dict__ as the call began
    nones: tuple  # (table, name) of its parameters and buffers that were None (StateCheck)
    # the shadow's __dict__ and _modules as made (once the whole tree has its shadows)
    initial: dict[str, Any] = dataclasses.field(default_factory=dict)
    modules: dict[str, Any] = dataclasses.field(default_factory=dict)
    read_all: set = dataclasses.field(default_factory=set)  # tables the code read whole (_Watched)
    watching: bool = True  # (until the trace ends)


class ModuleShadows:
    """The shadows made for one trace, by the id of the real module."""

    def __init__(self, state):
        self.state = state
        self.by_id: dict[int, Shadow] = {}
        self.of_shadow: dict[int, Shadow] = {}  # id(shadow) -> its record
        self.order: list[Shadow] = []
        self.hooks_removed: Shadow | None = None  # a module whose own hooks the trace removed
        # what forward wrote into plain objects the modules hold (a config), put back: for the epilogue
        self.object_writes: list[Write] = []
        self.tensors: dict[int, TensorProxy] = {}  # id(parameter, buffer or tensor attribute) -> its proxy
        self.paths: dict[int, str] = {}  # id(module or its shadow) -> its path, for module scopes
        # what forward did to the modules, for the epilogue: (holder, "set"/"del"/..., name, value)
        self.writes: list[Write] = []

    def real_of(self, v):
        """The user's module for a shadow (``v`` itself otherwise)."""
        s = self.of_shadow.get(id(v))
        return s.real if s is not None else v

    def holder_of(self, v) -> AnyProxy | None:
        s = self.of_shadow.get(id(v))
        return s.holder if s is not None else None

    # -- making shadows -----------------------------------------------------------------
    def shadow(
        self, module: torch.nn.Module, root: AnyProxy | None = None, prefix: str = "", scope_path: str = ""
    ):
        """The shadow of ``module`` and its submodules. ``root``: the module's proxy when it
        is an argument (``None``: the jitted module, a name in the prologue's namespace);
        ``prefix`` starts its tensors' names and ``scope_path`` its submodules' paths in
        module scopes (``thunder/frontend/modules/scopes.py``)."""
        inputs = self.state.inputs
        self.state.sharding.discover(
            module, scope_path
        )  # (modules sharded with FSDP2: frontend/distributed/fsdp.py)
        jitted = root is None
        if root is None:
            root = AnyProxy(inputs.prologue.add_name("module"), type(module))
            inputs.module_proxy = root
            inputs.prologue.ctx_objects = {**inputs.prologue.ctx_objects, root.name: module}
        if not self.order:
            self._guard_global_hooks()
        holders = {"": root}
        made: list[Shadow] = []
        for path, mod in module.named_modules(remove_duplicate=False):
            holder = holders.get(path)
            if holder is None:
                parent_path, _, name = path.rpartition(".")
                holder = AnyProxy(
                    inputs.computation.add_name(f"m_{prefix}" + path.replace(".", "_")), type(mod)
                )
                inputs.prologue.names.add(holder.name)
                inputs.sources[holder.name] = (holder, Unpack(holders[parent_path], SUBMODULE, name), mod)
                holders[path] = holder
            known = self.by_id.get(id(mod))
            if known is not None:  # a module met again (shared): it must stay the same object
                if known.holder is not holder:
                    inputs.checks.add_check(pyops.check_is, holder, known.holder, always=True)
                continue
            record = self._make(mod, holder, path, prefix, jitted=jitted and path == "")
            made.append(record)
        paths = self.paths
        for path, mod in module.named_modules(remove_duplicate=False):
            paths.setdefault(id(self.by_id[id(mod)].shadow), ".".join(p for p in (scope_path, path) if p))
        for record in made:  # submodules: their shadows (the tree is complete now)
            subs = {
                k: (self.by_id[id(m)].shadow if m is not None else None)
                for k, m in record.real._modules.items()
            }
            record.shadow.__dict__["_modules"] = _Watched(subs, record, "_modules")
            record.modules = dict(subs)
            for k, v in list(record.shadow.__dict__.items()):  # modules held outside _modules
                if isinstance(v, torch.nn.Module) and id(v) in self.by_id:
                    record.shadow.__dict__[k] = self.by_id[id(v)].shadow
            record.initial = dict(record.shadow.__dict__)
        return self.by_id[id(module)].shadow

    def _make(self, mod, holder: AnyProxy, path: str, prefix: str, jitted: bool = False) -> Shadow:
        inputs = self.state.inputs
        shadow = object.__new__(type(mod))
        d = dict(mod.__dict__)
        outside = backward_hooks_outside(mod, path, jitted)
        for name in outside:  # (the compiled module's own: run around the program, thunder/runtime/module.py)
            d[name] = type(d[name])()
        state, objects, as_inputs = {}, {}, set()
        nones: list[tuple[str, str]] = []  # (table, name) of the parameters and buffers that are None
        tensors = self.tensors
        for via, table_name in ((PARAM, "_parameters"), (BUFFER, "_buffers")):
            table = getattr(mod, table_name)
            made = {}
            for name, t in table.items():
                if t is None:  # (a bias=False Linear's bias, a buffer registered as None)
                    made[name] = None
                    nones.append((table_name, name))
                    continue
                p = tensors.get(id(t))
                if p is None:
                    full = f"t_{prefix}" + (f"{path}.{name}" if path else name).replace(".", "_")
                    unpack = Unpack(holder, via, name)
                    p = self.state.sharding.local_shard(
                        t, full, unpack
                    )  # (FSDP's: frontend/distributed/fsdp.py)
                    if p is None:
                        p = inputs.tensor(t, full, unpack)
                    tensors[id(t)] = p
                    inputs.seen.setdefault(id(t), p)
                else:  # a tied parameter: the prologue checks it is still the same tensor
                    alias = AnyProxy(inputs.computation.add_name(f"{holder.name}_{name}"), type(t))
                    inputs.prologue.names.add(alias.name)
                    inputs.sources[alias.name] = (alias, Unpack(holder, via, name), t)
                    inputs.checks.add_check(pyops.check_is, alias, p, always=True)
                made[name] = p
            d[table_name] = made
        hooks = {}
        for name in MODULE_MACHINERY:
            v = d.get(name)
            if name in outside:
                continue
            if isinstance(v, (dict, set)) and name not in ("_parameters", "_buffers", "_modules"):
                d[name] = type(v)(v)  # hooks registered while tracing: the epilogue registers them
                if isinstance(v, dict):
                    hooks[name] = list(v.items())
                    for key, h in v.items():  # (FSDP's run as recorded: frontend/distributed/fsdp.py)
                        d[name][key] = self.state.sharding.substitute(h)
        own = getattr(d.get("forward"), "replaced", _ABSENT)
        if (
            own is not _ABSENT
        ):  # generate()'s compiled forward (runtime/hf_generate.py): trace the module's own
            del d["forward"]
            if own is not NO_OWN_FORWARD:
                d["forward"] = own
        for name, v in mod.__dict__.items():
            if name in MODULE_MACHINERY or (name == "forward" and own is not _ABSENT):
                continue
            if type(v) is torch.Tensor or isinstance(v, torch.nn.Parameter):
                p = tensors.get(id(v))
                if p is None:
                    path_name = f"{path}.{name}" if path else name
                    p = inputs.tensor(
                        v, f"t_{prefix}" + path_name.replace(".", "_"), Unpack(holder, ATTR, name)
                    )
                    tensors[id(v)] = p
                    inputs.seen.setdefault(id(v), p)
                d[name] = p
                as_inputs.add(name)
                continue
            if is_counter(v) and sanitize_name(f"{holder.name}_{name}") in inputs.dynamic:
                # a counter that changed between calls: traced as a value (frontend/stand_ins/counters.py)
                d[name] = inputs.dynamic_number(v, f"{holder.name}_{name}", Unpack(holder, ATTR, name))
                as_inputs.add(name)
                continue
            state[name] = snapshot(v)
            label = f"the attribute {name} of the {type(mod).__qualname__} module"
            if trackable(
                v
            ):  # a list, dict, set or deque: the shadow's is a tracked copy (frontend/effects/recorder.py)
                d[name] = self.state.effects.attribute(v, holder, name, label)
            elif (
                put := self.state.effects.stand_in_for(v, label)
            ) is not None:  # an array, a socket (frontend/effects/c_objects.py)
                d[name] = put
            elif not is_immutable(v):  # a container the forward may change in place: the shadow's own
                d[name] = snapshot(v)
            if is_plain_object(v):
                objects[name] = object_state(v)
                self._held_counters(holder, name, objects[name])
            elif type(v) in _HOLDING:  # objects in a list, a tuple or a dict (the first ones)
                items = v.items() if isinstance(v, dict) else enumerate(v)
                held = [(k, x) for k, x in items if is_plain_object(x)][:OBJECT_BUDGET]
                for k, x in held:
                    objects[(name, k)] = object_state(x)
        fast = FAST_PATHS.get(type(mod))
        if fast is not None and "forward" not in d:  # eager's input-dependent path, as traced
            d["forward"] = types.MethodType(functools.partial(fast, flag=self.guarded_flag), shadow)
        shadow.__dict__.update(d)
        record = Shadow(
            real=mod,
            shadow=shadow,
            holder=holder,
            state=state,
            objects=objects,
            params=dict(d["_parameters"]),
            buffers=dict(d["_buffers"]),
            inputs=as_inputs,
            hooks=hooks,
            keys=frozenset(mod.__dict__),
            nones=tuple(nones),
        )
        for table in ("_parameters", "_buffers"):
            shadow.__dict__[table] = _Watched(shadow.__dict__[table], record, table)
        self.by_id[id(mod)] = record
        self.of_shadow[id(shadow)] = record
        self.order.append(record)
        return record

    def guarded_flag(self, name: str) -> bool:
        """The value of a global torch flag (``pyops.TORCH_FLAGS``) the trace depends on; the
        prologue checks it keeps that value."""
        value = pyops.TORCH_FLAGS[name]()
        checks = self.state.inputs.checks
        if not any(b.sym is pyops.check_torch_flag and b.args[0] == name for b in checks.of_globals):
            checks.add_global_check(pyops.check_torch_flag, name, value)
        return value

    def _guard_global_hooks(self) -> None:
        refuse_global_backward_hooks()
        from torch.nn.modules import module as module_module

        inputs = self.state.inputs
        if not any(getattr(module_module, name, None) for name in GLOBAL_HOOKS):
            inputs.checks.add_global_check(pyops.check_no_module_hooks)
            return
        holder = AnyProxy(inputs.prologue.add_name("g_torch_nn_modules_module"), dict)
        inputs.prologue.ctx_objects = {**inputs.prologue.ctx_objects, holder.name: module_module.__dict__}
        hooks = {n: snapshot(getattr(module_module, n)) for n in GLOBAL_HOOKS if hasattr(module_module, n)}
        inputs.checks.add_check(pyops.check_items, holder, state_check(hooks), always=True)

    # -- after the trace ----------------------------------------------------------------
    def restore_user_state(self) -> None:
        """Put back the user's hook tables that changed while tracing (``handle.remove()`` with
        a handle made before the call reaches the module's own table, not the shadow's copy)
        and the objects held by modules that forward changed (they are shared with the
        shadows): also when the trace fails. Their writes go to the epilogue (``object_writes``)."""
        for record in self.order:
            record.watching = False  # (what thunder reads of the tables from here on is its own)
        for record in self.order:
            for name, items in record.hooks.items():
                table = record.real.__dict__.get(name)
                if isinstance(table, dict) and (table or items) and list(table.items()) != items:
                    table.clear()
                    table.update(items)
                    self.hooks_removed = record
            for obj in record.objects.values():
                obj.restore(self.object_writes)  # (the epilogue writes them: frontend/effects/recorder.py)

    def finish(self) -> None:
        """Record what ``forward`` wrote (for the epilogue) and check the state it read."""
        if self.hooks_removed is not None:
            raise UnsupportedValueError(
                f"thunder: forward removes a hook of {type(self.hooks_removed.real).__qualname__} registered before "
                "the call (RemovableHandle.remove() reaches the module's own hooks); not supported while tracing: "
                "remove it before calling the compiled module"
            )
        reals = {id(p): t for t, p in self._tensors()}  # (one table for every module)
        for record in self.order:
            written = self._diff(record, reals)
            self._guard(record, written)

    def _diff(self, record: Shadow, reals: dict[int, torch.Tensor]) -> set[str]:
        """``reals``: id(proxy) -> the real tensor, for every module's tensors."""
        shadow, holder, mod = record.shadow, record.holder, record.real
        written = set()
        for name, v in shadow._parameters.items():
            if record.params.get(name, _ABSENT) is not v:
                raise UnsupportedValueError(
                    f"thunder: forward assigns the parameter {type(mod).__qualname__}.{name}; assigning "
                    "parameters while tracing is not supported"
                )
        for name, v in shadow._buffers.items():
            if record.buffers.get(name, _ABSENT) is not v:
                self.writes.append(SetAttr(holder, name, v))
        for name in record.buffers:
            if name not in shadow._buffers:
                self.writes.append(DelAttr(holder, name))
        if shadow._modules != record.modules or any(
            shadow._modules[k] is not v for k, v in record.modules.items()
        ):
            raise UnsupportedValueError(
                f"thunder: forward of {type(mod).__qualname__} adds or replaces submodules; not supported while tracing"
            )
        d = shadow.__dict__
        self._diff_hooks(record)
        tracked = self.state.effects.holders
        for name, v in d.items():
            old = record.initial.get(name, _ABSENT)
            if old is v and (
                id(v) in tracked or is_stand_in(v)
            ):  # a tracked copy, a stand-in: frontend/effects/recorder.py's
                continue
            if old is v and not (name in record.state and not same(v, record.state[name])):
                continue  # (a list or dict changed in place is a write of its new contents)
            if _rereads(record.real.__dict__.get(name, _ABSENT), v, reals):
                continue
            if name in ("_parameters", "_buffers", "_modules"):
                raise UnsupportedValueError(f"thunder: forward replaces {type(mod).__qualname__}.{name}")
            self.writes.append(SetAttr(holder, name, v))
            written.add(name)
            self._guard_written(record, name)
        for name in record.initial:
            if name not in d:
                self.writes.append(DelAttr(holder, name))
                written.add(name)
                self._guard_written(record, name)
        return written

    def _diff_hooks(self, record: Shadow) -> None:
        """Hooks registered or removed on the shadow (its own copies of the hook tables):
        the same in the user's module, by the handle's id, as ``register_*_hook`` and
        ``RemovableHandle.remove`` do."""
        d, real, writes = record.shadow.__dict__, record.real.__dict__, self.writes
        for name in record.hooks:
            table, before = d.get(name), real.get(name)
            if table is not record.initial.get(name) or not isinstance(table, dict):
                continue  # (a table the forward replaced is an attribute write)
            if not table and not before:
                continue  # (most tables, empty before and after)
            for key in before:
                if key not in table:
                    writes.append(DelHook(record.holder, name, key))
            # new hooks go first (``prepend=True``: before a hook the module had) or last
            substitute = self.state.sharding.substitute
            new = [
                (i, key)
                for i, (key, hook) in enumerate(table.items())
                if substitute(before.get(key, _ABSENT)) is not hook
            ]
            last_old = max((i for i, key in enumerate(table) if key in before), default=-1)
            front = [key for i, key in new if i < last_old]
            for key in reversed(front):
                writes.append(SetHook(record.holder, name, key, table[key], first=True))
            for i, key in new:
                if i > last_old:
                    writes.append(SetHook(record.holder, name, key, table[key], first=False))

    def _tensors(self):
        """(real tensor, its proxy) for every parameter, buffer and tensor attribute."""
        for record in self.order:
            real = record.real
            for table in (real._parameters, real._buffers):
                for t in table.values():
                    if t is not None:
                        yield t, self.tensors[id(t)]
            for name in record.inputs:
                t = real.__dict__.get(name)
                if isinstance(t, torch.Tensor) and id(t) in self.tensors:
                    yield t, self.tensors[id(t)]

    def _guard_written(self, record: Shadow, name: str) -> None:
        # the value a write replaced was most likely read (``self.calls += 1``): the prologue
        # checks it on its own line, so a counter that changed is named (see frontend/stand_ins/counters.py)
        inputs = self.state.inputs
        if name in record.inputs:  # a tensor (an input) or a counter traced as a value
            return
        old = record.state.get(name, _ABSENT)
        if old is _ABSENT:
            inputs.guard_absent(record.holder, name)
        elif isinstance(old, LITERAL_TYPES):
            guard = inputs.guard_attr(record.holder, name, old)
            if is_counter(old):
                self.state.written_numbers.add(guard)

    def _guard(self, record: Shadow, written: set[str]) -> None:
        inputs = self.state.inputs
        # a written value is checked on its own line (``_guard_written``); a list or dict the
        # forward changed is checked here, by its contents as the call began
        state = {k: v for k, v in record.state.items() if k not in written or not is_immutable(v)}
        effects = self.state.effects
        for k in state:  # a container the forward did not read: by identity
            if effects.unread(record.real.__dict__.get(k)):
                state[k] = record.real.__dict__[k]
        hooks = [n for n in CALL_HOOKS if record.real.__dict__.get(n)]
        if hooks:  # traced with hooks: they are checked by value, every one of them
            for n in CALL_HOOKS:
                if n in record.real.__dict__:
                    state[n] = snapshot(record.real.__dict__[n])
        initial = {"_modules": record.modules, "_parameters": record.params, "_buffers": record.buffers}
        tables = tuple((name, tuple(initial[name])) for name in sorted(record.read_all)) or None
        check = state_check(state, hooks=bool(hooks), keys=record.keys, tables=tables, nones=record.nones)
        inputs.checks.add_check(pyops.check_module, record.holder, type(record.real), check, always=True)
        holding: dict[str, AnyProxy] = {}  # the containers held objects are in, unpacked once
        for name, obj in record.objects.items():
            if isinstance(name, str):
                if name in state:
                    self._guard_object(record.holder, name, obj)
                continue
            attr, key = name
            if attr not in state:
                continue
            if attr not in holding:
                container = record.real.__dict__[attr]
                holding[attr] = AnyProxy(
                    inputs.computation.add_name(f"{record.holder.name}_{attr}"), type(container)
                )
                inputs.prologue.names.add(holding[attr].name)
                inputs.sources[holding[attr].name] = (
                    holding[attr],
                    Unpack(record.holder, ATTR, attr),
                    container,
                )
            self._guard_object(holding[attr], key, obj, ITEM)

    def _held_counters(self, holder: AnyProxy, name: str, obj: ObjectState) -> None:
        """A DynamicNumber for each int or float attribute of the object the attribute ``name``
        holds that changed between calls (``self.state.step += 1``: frontend/stand_ins/counters.py); put in
        the object as the trace begins (``put_counters``), taken out by its restore."""
        inputs = self.state.inputs
        d = object.__getattribute__(obj.obj, "__dict__")
        for attr in d:
            key = sanitize_name(f"{holder.name}_{name}_{attr}")
            if inputs.is_object_counter(obj.obj, attr, key):
                at = held_object_holder(inputs, holder, name, obj)
                obj.counters[attr] = inputs.object_counter(obj.obj, attr, key, Unpack(at, ATTR, attr))

    def put_counters(self) -> None:
        """Put the counters traced as values in the objects the modules hold (in the ``try``
        whose ``finally`` restores them)."""
        for record in self.order:
            for obj in record.objects.values():
                obj.put_counters()

    def _guard_object(self, parent: AnyProxy, name, obj: ObjectState, via: Symbol = ATTR) -> None:
        holder = guard_held_object(self.state.inputs, parent, name, obj, via)
        if via is not ATTR:
            return
        # a number attribute the forward rebound to a number (``self.state.step += 1``): when a
        # call finds another value there, it is traced as a value (frontend/stand_ins/counters.py)
        for w in self.object_writes:
            if (
                isinstance(w, SetAttr)
                and w.holder is obj.obj
                and is_counter(obj.values.get(w.name))
                and is_counter_value(w.value)
            ):
                self.state.written_numbers |= {holder.name, sanitize_name(f"{parent.name}_{name}_{w.name}")}


def _rereads(old, new, reals: dict) -> bool:
    """``new`` is ``old`` with the module's tensors read again: nothing to write back. (An
    ``nn.LSTM`` rebuilds its list of weights, and weak references to them, when it finds
    proxies in place of its parameters.)"""
    if isinstance(new, TensorProxy):
        return id(new) in reals and reals[id(new)] is old
    if isinstance(new, weakref.ref) and isinstance(old, weakref.ref):
        return _rereads(old(), new(), reals)
    if type(new) in (list, tuple) and type(old) is type(new) and len(old) == len(new):
        return all(o is n or _rereads(o, n, reals) for o, n in zip(old, new))
    return False
