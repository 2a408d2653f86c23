"""Side effects of the traced code on Python state it did not make: recorded while tracing,
performed by the epilogue on every call with that call's values.

What the user's code reaches through its globals, closure cells and default arguments
(``frontend/prologue/code_reads.py``, including the code of hooks and callbacks it calls) and through module
attributes is handled in three ways:

- lists, dicts, sets and deques there (and the containers inside them) are replaced, while the
  trace runs, by tracked copies (``frontend/stand_ins/containers.py``) put where the code finds them (the globals
  dict, the cell, ``__defaults__``, a module's shadow, a list's bound ``append`` passed as an
  argument); the user's containers are never written. Afterwards the
  bindings are put back, and each copy gives the epilogue its writes: the logged calls
  (``pythonex.python_call(list.append, g___main___L, t0)``) when the code did not read the
  container, else its final contents (``pythonex.python_call(replace_contents, ...)``). The
  epilogue reaches a container by its path from the binding (``g___main__['L']``), as the
  code does. An unread container is checked by identity only (so the function's own appends
  do not invalidate the entry), a read one by its contents as the call began;
- a global or closure variable the code rebinds (``global n; n += 1``) is put back and set by
  the epilogue (``python_setitem(g___main__, 'n', 1)``);
- plain objects (``G.count += 1``) are written while tracing and put back afterwards
  (``guards.ObjectState``); their attribute writes go to the epilogue;
- files are ``RecordedFile`` (``python_calls.py``), and an ``array.array``, a ``bytearray``, a
  ``memoryview``, an ``mmap`` or a socket a stand-in that refuses writes (``c_objects.py``).

The prologue checks the values the code read as they were when the call began; a value the
epilogue changes then misses the cache on the next call and is traced again with its new value.
While a trace runs, another thread that reads such a global or cell directly sees the copy.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import threading
import types

from thunder.core.proxies import AnyProxy
from thunder.core.symbol import Symbol
from thunder.core.trace import sanitize_name
from thunder.frontend.effects.c_objects import (
    C_BUFFERS,
    buffer_write_refusal,
    is_stand_in,
    stand_in,
    taken_locks,
    written,
)
from thunder.frontend.effects.patches import replacements
from thunder.frontend.effects.python_calls import RecordedFile
from thunder.frontend.prologue.state_checks import snapshot
from thunder.frontend.prologue.value_kinds import LITERAL_TYPES
from thunder.frontend.stand_ins.containers import (
    Track,
    contents,
    is_container_method,
    trackable,
    tracked_copy,
)
from thunder.frontend.stand_ins.counters import is_counter, is_counter_value
from thunder.frontend.stand_ins.unpack import ATTR, ITEM, Unpack
from thunder.frontend.stand_ins.writes import (
    ContainerCall,
    DelAttr,
    DelItem,
    HolderWrite,
    ReplaceContents,
    SetAttr,
    SetItem,
    Write,
)
from thunder.ops import python as pyops

_MISSING = object()
# Held while a trace has tracked copies in the user's globals, cells and defaults: a second
# trace (another function, another thread) would take a copy for the user's container.
SUBSTITUTING = threading.RLock()


def _is_value(v) -> bool:
    return isinstance(v, (int, float, str, bytes, complex, type(None))) or _needs_copy(v)


def _slot_names(v) -> tuple[str, ...]:
    """The slots of an instance of a Python class without a ``__dict__`` (its state is there)."""
    t = type(v)
    if t.__module__ == "builtins" or hasattr(v, "__dict__"):
        return ()
    names = []
    for klass in t.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += (
            [slots] if isinstance(slots, str) else [n for n in slots if n not in ("__weakref__", "__dict__")]
        )
    return tuple(names)


def _needs_copy(v) -> bool:
    if trackable(v) or is_container_method(v):
        return True
    return type(v) is tuple and any(_needs_copy(x) for x in v)


def counter_key(where, name: str) -> str:
    """The name under which the global ``name`` of the globals dict ``where`` (or the closure
    variable ``name`` held by the cell ``where``) is traced as a value."""
    if isinstance(where, dict):
        return sanitize_name(f"g_{where.get('__name__', 'globals')}_{name}")
    return sanitize_name(f"cell_{name}_{id(where):x}")


def counters_written(effects: Effects, inputs) -> set[str]:
    """Keys (and the names of their checks' holders) of the int or float globals and closure
    variables the function rebound to numbers: a call that then finds another value there traces them as
    values."""
    out: set[str] = set()
    for g, name, old, now in effects.rebound:
        if is_counter(old) and is_counter_value(now):
            out.add(counter_key(g, name))
            holder = inputs.global_holders.get(id(g))
            if holder is not None:
                out.add(holder)
    return out


class Effects:
    """The tracked copies and bindings of one trace, and the writes they give the epilogue."""

    def __init__(self, inputs):
        self.inputs = inputs
        self.copies: dict[int, object] = {}  # id(original container) -> its tracked copy
        self._swapped: dict[int, object] = {}  # id(patched function) -> its replacement, put for the trace
        self._counters: list = []  # (globals, name, the DynamicNumber put there) of counters traced as values
        self.rebound: list = []  # (globals or cell, name, value before, value after) of the names rebound
        self.holders: dict[int, AnyProxy] = {}  # id(tracked copy or original) -> its holder
        self.order: list = []  # tracked copies, in the order made
        self._globals: list[tuple[dict, dict]] = []  # (dict, name -> value as begun)
        self._patched: dict = {}  # id(function) -> (it, its replacement's maker), while substituting
        self._cells: list[tuple[types.CellType, str, object, object]] = []  # (cell, name, before, put)
        self._defaults: list[
            tuple[types.FunctionType, tuple, dict]
        ] = []  # (fn, __defaults__, __kwdefaults__)
        self._ctx: dict[int, AnyProxy] = {}  # id(dict, cell or function) -> its holder
        self._put_defaults: dict[int, tuple] = {}  # id(function) -> the defaults put in while tracing
        self._put_kwdefaults: dict[int, dict] = {}
        self.writes: list[Write] = []
        self._keep: list = []
        self._slotted: list[tuple[object, dict]] = []  # (an object with slots, its slots as begun)
        # objects the tracked containers hold (the prologue checks them by identity, through
        # the container's contents): the epilogue puts back the very objects
        self._held: set[int] = set()

    # -- holders ---------------------------------------------------------------------------
    def _site(self, obj, name: str) -> AnyProxy:
        h = self._ctx.get(id(obj))
        if h is None:
            pro = self.inputs.prologue
            h = AnyProxy(pro.add_name(sanitize_name(name)), type(obj))
            pro.ctx_objects = {**pro.ctx_objects, h.name: obj}
            self._ctx[id(obj)] = h
            self._keep.append(obj)
        return h

    def _child(self, parent: AnyProxy, via: Symbol, key, real) -> AnyProxy:
        inputs = self.inputs
        h = AnyProxy(inputs.computation.add_name(sanitize_name(f"{parent.name}_{key}")), type(real))
        inputs.prologue.names.add(h.name)
        inputs.sources[h.name] = (h, Unpack(parent, via, key), real)
        return h

    def holder_of(self, v) -> AnyProxy | None:
        h = self.holders.get(id(v))
        if h is None and id(v) in self._held:  # an object a tracked container holds: itself
            h = self.holders[id(v)] = self._site(v, f"obj_{type(v).__name__}")
        return h

    # -- copies ----------------------------------------------------------------------------
    def _copy(self, v, holder: AnyProxy, label: str):
        """``v`` with its containers replaced by tracked copies (``holder``: its path; ``label``:
        what it is to the user, ``the global L``)."""
        if trackable(v):
            known = self.copies.get(id(v))
            if known is not None:
                return known
            c = tracked_copy(v, Track(v, holder, label))
            self.copies[id(v)] = c
            self.holders[id(c)] = self.holders[id(v)] = holder
            self.order.append(c)
            self._keep.append(v)
            self._held.update(id(x) for x in (v.values() if isinstance(v, dict) else v) if not _is_value(x))
            if type(v) is list:
                for i, x in enumerate(v):
                    if _needs_copy(x):
                        list.__setitem__(
                            c, i, self._copy(x, self._child(holder, ITEM, i, x), f"{label}[{i}]")
                        )
            elif isinstance(v, dict):
                for k, x in v.items():
                    if _needs_copy(x):
                        dict.__setitem__(
                            c, k, self._copy(x, self._child(holder, ITEM, k, x), f"{label}[{k!r}]")
                        )
            elif not isinstance(v, (set, frozenset)):  # a deque
                for i, x in enumerate(v):
                    if _needs_copy(x):
                        type(v).__setitem__(
                            c, i, self._copy(x, self._child(holder, ITEM, i, x), f"{label}[{i}]")
                        )
            return c
        if is_container_method(v):  # ``rec.append`` as a callback: the copy's method
            c = self._copy(v.__self__, self._child(holder, ATTR, "__self__", v.__self__), f"{label}.__self__")
            return getattr(c, v.__name__)
        if type(v) is tuple and _needs_copy(v):
            return tuple(
                self._copy(x, self._child(holder, ITEM, i, x), f"{label}[{i}]") if _needs_copy(x) else x
                for i, x in enumerate(v)
            )
        return v

    def attribute(self, v, module: AnyProxy, name: str, label: str):
        """The tracked copy of a container a module holds as ``name`` (its shadow holds it)."""
        return self._copy(v, self._child(module, ATTR, name, v), label)

    def unread(self, v) -> bool:
        """``v`` is a container the code has a tracked copy of and did not read."""
        return id(v) in self.copies and self._unread(v)

    def _unread(self, v) -> bool:
        """The code did not read the original ``v``'s tracked copy, nor the containers it
        reached in it by key (``acts[name]``)."""
        fx = self.copies[id(v)].fx
        return not fx.read and all(self._unread(dict.__getitem__(v, k)) for k in fx.keys)

    def bound_method(self, v, holder: AnyProxy):
        """A container's method passed as an argument (``f(x, rec.append)``): the same method
        of the container's tracked copy; the prologue checks the method's name and the
        container's type, and the epilogue writes into the container the call passes."""
        checks = self.inputs.checks
        checks.add_check(pyops.check_type, holder, type(v))
        name = self._child(holder, ATTR, "__name__", v.__name__)
        checks.add_check(pyops.check_literal, name, v.__name__, always=True)
        container = self._child(holder, ATTR, "__self__", v.__self__)
        checks.add_check(pyops.check_type, container, type(v.__self__), always=True)
        return getattr(
            self._copy(v.__self__, container, f"the {type(v.__self__).__name__} of {v!r}"), v.__name__
        )

    def _note_slots(self, v) -> None:
        names = _slot_names(v)
        if names and all(o is not v for o, _ in self._slotted):
            self._slotted.append((v, {n: getattr(v, n, _MISSING) for n in names}))

    def substitute(self, reads) -> None:
        """Put tracked copies where the code finds the containers it may reach (and note the
        slots of the objects with slots it may write), and the counters traced as values in
        the objects that hold them (``ObjectState.restore`` puts the numbers back)."""
        for _, obj in reads.objects.values():
            obj.put_counters()
        reads.put_class_counters()
        for g, values in reads.globals.values():
            for name in values:
                self._note_slots(g.get(name))
        for cell, _, _ in reads.cells:
            try:
                self._note_slots(cell.cell_contents)
            except ValueError:
                pass
        self._patched = replacements()  # (``from time import time``: the refusing replacement)
        for g, values in reads.globals.values():
            names = reads.names.get(id(g), set()) | set(values)
            before = {n: g.get(n, _MISSING) for n in names}
            site = functools.partial(self._site, g, f"g_{g.get('__name__', 'globals')}")
            for name in values:
                v = g.get(name, _MISSING)
                if v is not _MISSING:
                    put = self._replacement(v, site, ITEM, name, (g, name), f"the global {name}")
                    if put is not v:
                        g[name] = put
            self._globals.append((g, before))
        for cell, name, _ in reads.cells:
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            site = functools.partial(self._site, cell, f"cell_{name}")
            put = self._replacement(
                v, site, ATTR, "cell_contents", (cell, name), f"the closure variable {name}"
            )
            if put is not v:
                cell.cell_contents = put
            self._cells.append((cell, name, v, put))
        for fn, _ in reads.defaults:
            defaults, kwdefaults = fn.__defaults__, fn.__kwdefaults__
            self._defaults.append((fn, defaults, kwdefaults))
            if defaults and _needs_copy(defaults):
                h = self._child(self._site(fn, f"fn_{fn.__name__}"), ATTR, "__defaults__", defaults)
                label = f"the default arguments of {fn.__qualname__}"
                fn.__defaults__ = self._put_defaults[id(fn)] = self._copy(defaults, h, label)
            if kwdefaults and any(_needs_copy(x) for x in kwdefaults.values()):
                h = self._child(self._site(fn, f"fn_{fn.__name__}"), ATTR, "__kwdefaults__", kwdefaults)
                fn.__kwdefaults__ = self._put_kwdefaults[id(fn)] = {
                    k: self._copy(
                        x, self._child(h, ITEM, k, x), f"the default argument {k} of {fn.__qualname__}"
                    )
                    if _needs_copy(x)
                    else x
                    for k, x in kwdefaults.items()
                }
            named = f"a default argument of {fn.__qualname__}"
            if defaults and [x for x in defaults if self.stand_in_for(x, named) is not None]:
                fn.__defaults__ = self._put_defaults[id(fn)] = tuple(
                    self._swapped.get(id(x), x) for x in fn.__defaults__
                )
            if kwdefaults and [
                k
                for k, x in kwdefaults.items()
                if self.stand_in_for(x, f"the default argument {k} of {fn.__qualname__}") is not None
            ]:
                fn.__kwdefaults__ = self._put_kwdefaults[id(fn)] = {
                    k: self._swapped.get(id(x), x) for k, x in fn.__kwdefaults__.items()
                }

    def _replacement(self, v, site, via: Symbol, key, binding: tuple, label: str):
        """What the code finds in place of ``v``, which it reaches as the ``via`` ``key`` of
        ``site()`` (a global: the item ``name`` of its globals dict; a closure variable: the
        attribute ``cell_contents`` of its cell), ``binding`` being (the dict or cell, the name):
        a tracked copy of a container, the replacement of a patched function, a recorded file, a
        C object's stand-in, a counter traced as a value; else ``v`` itself."""
        if _needs_copy(v):
            return self._copy(v, self._child(site(), via, key, v), label)
        patched = self._patched.get(id(v))
        if patched is not None and patched[0] is v:
            return self._swapped.setdefault(id(v), patched[1](v))
        if isinstance(v, io.IOBase):  # a file: its writes made on every call
            return self._swapped.setdefault(id(v), RecordedFile(v))
        if self.stand_in_for(v, label) is not None:  # (c_objects.py, iterators.py)
            return self._swapped[id(v)]
        counter = counter_key(*binding)
        if is_counter(v) and counter in self.inputs.dynamic:
            # a counter the function rebinds (``global n; n += 1``, ``nonlocal n``): an input,
            # traced as a value
            put = self.inputs.dynamic_number(v, counter, Unpack(site(), via, key))
            self._counters.append((*binding, put))
            return put
        return v

    def undone(self) -> list[str]:
        """What the traced code wrote before its trace failed, all put back by ``restore``: the
        globals and closure variables it rebound, the containers it wrote into."""
        out = [f"{name}" for _, name, _, _ in self.rebound]
        out += [c.fx.label for c in self.order if c.fx.ops and c.fx.label]
        return out

    def taken_locks(self) -> tuple:
        """The locks the traced code took (``c_objects.HeldLock``)."""
        return tuple(taken_locks(self._swapped.values()))

    def stand_in_for(self, v, label: str):
        """The stand-in of a C object whose writes are refused (``c_objects.py``), made once per
        object, or None."""
        known = self._swapped.get(id(v))
        if known is not None:
            return known if is_stand_in(known) else None
        put = stand_in(v, label)
        if put is not None:
            self._swapped[id(v)] = put
            self._keep.append(v)
        return put

    def restore(self) -> str | None:
        """Put every binding back as the call began (also when the trace failed); note the
        rebindings the code made. Returns a binding that cannot be written back, or None."""
        refused = next((w for w in map(written, self._swapped.values()) if w is not None), None)
        for g, before in self._globals:
            for name, old in before.items():
                now = g.get(name, _MISSING)
                put = (
                    self.copies.get(id(old), self._swapped.get(id(old), old))
                    if old is not _MISSING
                    else _MISSING
                )
                put = next((d for g2, n2, d in self._counters if g2 is g and n2 == name), put)
                if now is not put:
                    self.rebound.append((g, name, old, now))
                    holder = self._site(g, f"g_{g.get('__name__', 'globals')}")
                    self.writes.append(
                        DelItem(holder, name) if now is _MISSING else SetItem(holder, name, now)
                    )
                if old is _MISSING:
                    g.pop(name, None)
                else:
                    g[name] = old
        for cell, name, old, put in self._cells:
            try:
                now = cell.cell_contents
            except ValueError:
                now = _MISSING
            if now is not put:
                self.rebound.append((cell, name, old, now))
                if now is _MISSING:
                    refused = refused or f"the closure variable {name} (deleted)"
                else:
                    self.writes.append(SetAttr(self._site(cell, f"cell_{name}"), "cell_contents", now))
            cell.cell_contents = old
        for obj, before in self._slotted:  # written in place: put back, written by the epilogue
            h = self._site(obj, f"obj_{type(obj).__name__}")
            for name, old in before.items():
                now = getattr(obj, name, _MISSING)
                if now is old:
                    continue
                self.writes.append(DelAttr(h, name) if now is _MISSING else SetAttr(h, name, now))
                if old is _MISSING:
                    object.__delattr__(obj, name)
                else:
                    object.__setattr__(obj, name, old)
        for fn, defaults, kwdefaults in self._defaults:
            if fn.__defaults__ is not self._put_defaults.get(id(fn), defaults) or (
                fn.__kwdefaults__ is not self._put_kwdefaults.get(id(fn), kwdefaults)
            ):
                refused = refused or f"the default arguments of {fn.__qualname__} (replaced)"
            fn.__defaults__, fn.__kwdefaults__ = defaults, kwdefaults
        return refused

    def object_writes(self, raw: list[HolderWrite]) -> None:
        """The writes into plain objects (``ObjectState.restore``: their holders the objects
        themselves) for the epilogue: the object by its own name (the prologue checks the binding
        it came from by identity), a container it holds and the code changed in place by its
        path (``obj.items``)."""
        for w in raw:
            obj = w.holder
            h = self._site(obj, f"obj_{type(obj).__name__}")
            if isinstance(w, ReplaceContents):  # ``label``: the attribute holding the container
                if type(w.contents) in C_BUFFERS:  # (put back by ObjectState.restore)
                    raise buffer_write_refusal(
                        w.contents, f"the attribute {w.label} of the {type(obj).__qualname__} object"
                    )
                container = object.__getattribute__(obj, "__dict__")[w.label]
                self.writes.append(
                    ReplaceContents(self._child(h, ATTR, w.label, container), None, w.contents)
                )
            else:
                self.writes.append(dataclasses.replace(w, holder=h))

    def guard_slots(self) -> None:
        """The prologue checks the slots of the objects with slots, as they were when the call
        began: by value (literals) or identity (the state of objects with a ``__dict__`` is
        checked by ``guards.ObjectState``)."""
        checks = self.inputs.checks
        for obj, before in self._slotted:
            h = self._site(obj, f"obj_{type(obj).__name__}")
            for name, old in before.items():
                if old is _MISSING:
                    self.inputs.guard_absent(h, name)
                elif isinstance(old, LITERAL_TYPES):
                    self.inputs.guard_attr(h, name, old)
                else:  # by identity, against the object itself (a printed copy is another object)
                    was = self._site(old, f"was_{type(old).__name__}")
                    checks.add_check(pyops.check_is, self._child(h, ATTR, name, old), was, always=True)

    def finish(self) -> None:
        """The writes of the tracked copies, for the epilogue."""
        for c in self.order:
            fx = c.fx
            if fx.read:
                if fx.ops or not self._unchanged(c):
                    self.writes.append(ReplaceContents(fx.holder, fx.label, contents(c)))
            else:
                for name, args, where in fx.ops:
                    self.writes.append(
                        ContainerCall(fx.holder, type(fx.original), name, fx.label, where, tuple(args))
                    )

    def _unchanged(self, c) -> bool:
        """The tracked copy ``c`` holds what its original holds (its own copies for theirs)."""
        now, old = contents(c), c.fx.original
        if isinstance(old, dict):
            return list(now) == list(old) and all(now[k] is self.copies.get(id(x), x) for k, x in old.items())
        if isinstance(old, set):
            return now == old
        return len(now) == len(old) and all(a is self.copies.get(id(b), b) for a, b in zip(now, old))

    def relax(self, checks: dict, reads) -> None:
        """The prologue's checks of the values read: a container the code did not read is
        checked by identity (its contents change with every call's own writes), and a counter
        traced as a value is checked as an input (its type), not by its value."""
        for g, name, _ in self._counters:
            check = checks.get(id(g))
            if check is not None and name in check.names:
                kept = [(n, v) for n, v in zip(check.names, check.values) if n != name]
                check.__init__([n for n, _ in kept], [v for _, v in kept])
        if not self.copies:
            return
        for g, _ in reads.globals.values():
            check = checks.get(id(g))
            if check is not None:
                check.values = tuple(self._relaxed(g[n], v) for n, v in zip(check.names, check.values))
        for cell, _, _ in reads.cells:
            check = checks.get(id(cell))
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if check is not None:
                check.values = (self._relaxed(v, check.values[0]),)
        for fn, _ in reads.defaults:
            check = checks.get(id(fn))
            if check is not None:
                now = {"__defaults__": fn.__defaults__, "__kwdefaults__": fn.__kwdefaults__}
                check.values = tuple(self._relaxed(now[n], v) for n, v in zip(check.names, check.values))

    def _relaxed(self, v, snap):
        """``snap`` (the snapshot of ``v``) with the containers the code did not read as
        themselves (identity), the read ones as their contents."""
        c = self.copies.get(id(v))
        if c is not None:
            if self._unread(v):
                return v
            if type(v) is list:
                return [self._relaxed(x, snapshot(x)) for x in v]
            if type(v) is dict:
                return {k: self._relaxed(x, snapshot(x)) for k, x in v.items()}
            return snap
        if type(v) is tuple and _needs_copy(v):
            return tuple(self._relaxed(x, snapshot(x)) for x in v)
        return snap
