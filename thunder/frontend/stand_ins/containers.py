"""Tracked copies of the user's lists, dicts (``OrderedDict``, ``defaultdict``, ``Counter``), sets and deques, which the traced code uses in
place of the real ones (``thunder/frontend/effects/recorder.py`` puts them where the code finds them).

A tracked copy behaves as its class (it is a subclass) and notes, on its ``fx`` record,
what the code did with it:

- writes whose outcome does not depend on the contents (``append``, ``extend``, ``d[k] = v``,
  ``update``, ``add``, ``discard``, ``clear``, ``appendleft``) are logged in order, as
  ``(method, args)``: the epilogue calls them again on the real container on every call;
- anything else (an item or the length read, iteration, ``in``, ``pop``, ``insert``, ``sort``,
  a comparison, ``repr``) marks the container *read*: the prologue then checks its contents,
  and the epilogue gives it its final contents. Reading a dict's key that holds a container
  (``acts[name].append(o)``) is no read of the dict: the epilogue reaches that container by
  its path (``acts[name]``), as the code does.

So a list the code only appends to is checked by identity only, and each call appends its own
values, as in eager. A set counts as read always (C code reads a set's items without calling
its methods: ``set(s)``, ``t.update(s)``), and torch calls get a tracked copy's items
(``torch.cat(L)``, ``frontend/torch_calls/mode.py``), read. Containers inside a tracked copy are tracked copies too (made when the
copy is made, one per original, so aliasing is kept).
"""

from __future__ import annotations

import collections
import dataclasses
import types
from typing import Any

from thunder.core.source import user_location


@dataclasses.dataclass(eq=False)
class Track:
    """What the traced code did with one tracked copy."""

    original: Any
    holder: Any = None  # the AnyProxy the prologue unpacks the original as (by its path)
    label: str = ""  # what it is to the user (``the global L``), for errors
    read: bool = False
    keys: set = dataclasses.field(default_factory=set)  # keys of a dict read for the container held there
    ops: list = dataclasses.field(default_factory=list)  # (method name, args, the user's line), in order


# methods that never read the contents and never fail on them: logged and replayed
_LOGGED = {
    list: ("append", "extend", "clear", "__iadd__"),
    dict: ("__setitem__", "update", "clear", "__ior__"),
    set: ("add", "discard", "update", "clear", "__ior__"),
    collections.deque: ("append", "appendleft", "extend", "extendleft", "clear", "__iadd__"),
}
# methods that neither read nor write (object machinery)
_NEUTRAL = frozenset(
    "__new__ __init__ __getattribute__ __setattr__ __delattr__ __class_getitem__ __init_subclass__ "
    "__subclasshook__ __hash__ __dir__ __class__ __copy__ __deepcopy__ fromkeys".split()
)
# arguments consumed once (an iterator): materialised before they are logged
_ITERABLE_ARG = frozenset({"extend", "extendleft", "__iadd__", "update", "__ior__"})


def _reading(impl):
    def method(self, *args, **kwargs):
        self.fx.read = True
        return impl(self, *args, **kwargs)

    method.__name__ = impl.__name__
    return method


def _logged(impl, name: str, base: type, real: type):
    counts = real is collections.Counter  # (``Counter.update`` counts an iterable's items)

    def method(self, *args, **kwargs):
        if any(a is self for a in args):  # ``L.extend(L)`` reads it
            self.fx.read = True
            return impl(self, *args, **kwargs)
        if name in _ITERABLE_ARG and args:
            if base is dict:
                args = (list(args[0]) if counts and not isinstance(args[0], dict) else dict(args[0]),)
            elif base is set:
                args = (set().union(*args),)
            else:
                args = (list(args[0]),)
        if base is dict and name == "update" and kwargs:
            args, kwargs = ({**(args[0] if args else {}), **kwargs},), {}
        self.fx.ops.append((name, args, user_location()))
        return impl(self, *args, **kwargs)

    method.__name__ = name
    return method


def _tracked_class(base: type, real: type) -> type:
    ns: dict[str, Any] = {
        "__slots__": ("fx",),
        "__module__": real.__module__,
        "__qualname__": real.__qualname__,
    }
    logged = _LOGGED[base]
    for klass in real.__mro__:  # (a subclass's own methods first: ``OrderedDict.popitem``, not dict's)
        if klass is object:
            continue
        for name, impl in vars(klass).items():
            if name in _NEUTRAL or not callable(impl) or name in ns:
                continue
            ns[name] = _logged(impl, name, base, real) if name in logged else _reading(impl)
    if base is list:
        list_setitem, list_delitem = list.__setitem__, list.__delitem__

        def __setitem__(self, key, value):  # ``L[:] = values``: clear and extend
            if type(key) is slice and key == slice(None):
                values = list(value)
                where = user_location()
                self.fx.ops += [("clear", (), where), ("extend", (values,), where)]
                return list_setitem(self, key, values)
            self.fx.read = True
            return list_setitem(self, key, value)

        def __delitem__(self, key):
            if type(key) is slice and key == slice(None):
                self.fx.ops.append(("clear", (), user_location()))
            else:
                self.fx.read = True
            return list_delitem(self, key)

        ns["__setitem__"], ns["__delitem__"] = __setitem__, __delitem__
    if base is dict:
        dict_getitem = dict.__getitem__

        def __getitem__(self, key):  # ``d[k].append(x)``: a container held at a key, by its path
            v = dict.get(self, key, _NOTHING)
            if type(v) in _TRACKED:
                self.fx.keys.add(key)
                return v
            self.fx.read = True
            return dict_getitem(self, key)

        ns["__getitem__"] = __getitem__
    if base in (list, collections.deque):

        def __radd__(self, other):  # ``[x] + L``: list.__add__ reads ``L``'s items in C
            self.fx.read = True
            return NotImplemented

        ns["__radd__"] = __radd__
    # ``type(x)`` is the tracked class; ``x.__class__`` the real one
    ns["__class__"] = property(lambda self: real)
    return type(real.__name__, (real,), ns)


_BASES = {
    list: list,
    dict: dict,
    set: set,
    collections.deque: collections.deque,
    collections.defaultdict: dict,
    collections.OrderedDict: dict,
    collections.Counter: dict,
}
_CLASSES: dict[type, type] = {}
_NOTHING = object()
_TRACKED: set[type] = set()  # the tracked classes


def trackable(v) -> bool:
    return type(v) in _BASES


def tracked_copy(v, fx: Track):
    """A tracked copy of ``v`` (its items as they are; see ``copy_tree``)."""
    t = type(v)
    cls = _CLASSES.get(t)
    if cls is None:
        cls = _CLASSES[t] = _tracked_class(_BASES[t], t)
        _TRACKED.add(cls)
    if t is collections.defaultdict:
        out = cls(v.default_factory)
        dict.update(out, v)
    elif t is collections.deque:
        out = cls(v, v.maxlen)
    elif t is dict:
        out = cls()
        dict.update(out, v)
    elif t is collections.OrderedDict:  # (its own order kept by its own methods)
        out = cls.__new__(cls)
        out.fx = fx
        collections.OrderedDict.__init__(out)
        for k, x in v.items():
            collections.OrderedDict.__setitem__(out, k, x)
    elif t is collections.Counter:  # (``Counter.__init__`` calls ``update``: no call is logged)
        out = cls.__new__(cls)
        dict.update(out, v)
    else:
        out = cls(v)
    # (a set is read by C code that never calls its methods, ``set(s)``, ``t.update(s)``: its
    # contents are always checked, its writes replayed)
    fx.read = fx.read or t is set
    out.fx = fx
    return out


def is_container_method(v) -> bool:
    """A method of a list, dict, set or deque bound to it (``rec.append``)."""
    return type(v) is types.BuiltinMethodType and trackable(getattr(v, "__self__", None))


def is_tracked(v) -> bool:
    return type(v) in _TRACKED


def untracked(v):
    """``v``'s items in a plain container of its class when it is a tracked copy (which torch's
    C argument parsing reads without calling its methods): the copy is marked read."""
    if type(v) not in _TRACKED:
        return v
    v.fx.read = True
    items = contents(v)
    t = type(v.fx.original)
    return t(items) if t in (list, set, dict) else items


def contents(v):
    """The items of a tracked copy as a plain container of its real class."""
    t = type(v.fx.original)
    if t is collections.OrderedDict:
        return collections.OrderedDict(collections.OrderedDict.items(v))
    if t is collections.defaultdict or t is collections.Counter:
        return dict(dict.items(v))
    if t is dict:
        return dict(dict.items(v))
    if t is list:
        return list(list.__iter__(v))
    if t is set:
        return set(set.__iter__(v))
    return list(collections.deque.__iter__(v))
