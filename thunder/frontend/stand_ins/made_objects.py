"""Objects made inside the traced function (a transformers ``DynamicCache`` and its layers):
which ones the epilogue can rebuild, their state, and where one that cannot was made.

While tracing, such an object is a real object of its class holding proxies (its ``__init__``
and methods ran natively), so ``isinstance`` and methods work on it. The caller never gets
it: the epilogue builds a new one from the real tensors, as ``cls.__new__`` would allocate it
(no ``__init__``) with the recorded attributes set in order (``thunder.frontend.epilogue.outputs``).

An object can be rebuilt when its class is written in Python over ``object`` (instance state
in ``__dict__`` or ``__slots__``). A C object (a lock, a file, a generator), an instance of
a subclass of a builtin container, or an ``nn.Module`` made inside cannot. Objects the
function did not make but read from a module attribute or a global (``preexisting``) are not
copied: the caller gets the object itself, as in eager.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Iterator
from typing import Any

import torch

from thunder.core.proxies import TensorProxy
from thunder.core.source import SourceLocation, frame_location

_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class written in Python


def is_python_instance(v) -> bool:
    """An instance of a class written in Python (not a class, function or module itself)."""
    t = type(v)
    return bool(t.__flags__ & _HEAPTYPE) and not isinstance(v, (type, types.FunctionType, types.ModuleType))


def refusal(v) -> str | None:
    """Why ``v`` (an object made inside the function) cannot be rebuilt; None when it can."""
    t = type(v)
    if isinstance(v, torch.nn.Module):
        return f"the module {t.__qualname__} made inside the function (modules are supported as inputs only)"
    if inspect.isgenerator(v) or inspect.iscoroutine(v) or inspect.isasyncgen(v):
        code = getattr(v, "gi_code", None) or getattr(v, "cr_code", None) or getattr(v, "ag_code", None)
        where = f" of {code.co_name} ({code.co_filename}:{code.co_firstlineno})" if code else ""
        return f"{_a(t.__name__)} object{where}"
    if not _python_layout(t):
        return f"{_a(_type_name(t))} object, implemented in C (its state is not Python attributes)"
    for base in t.__mro__[1:]:
        if base is not object and not _python_layout(base):
            return (
                f"an instance of {_type_name(t)}, a subclass of {_type_name(base)} implemented in C "
                "(its state is not Python attributes)"
            )
    if getattr(t, "__abstractmethods__", None):
        return f"an instance of the abstract class {_type_name(t)}"
    return None


def _python_layout(cls: type) -> bool:
    """``cls`` is written in Python: a class statement's type, whose instances add to their
    base's memory only the ``__slots__``, ``__dict__`` and ``__weakref__`` it declares (a C
    type made from a spec, such as ``_thread.lock``, is a heap type too, with C fields)."""
    if not cls.__flags__ & _HEAPTYPE or cls.__base__ is None:
        return False
    own = cls.__dict__
    declared = sum(isinstance(d, types.MemberDescriptorType) for d in own.values())
    declared += ("__dict__" in own) + ("__weakref__" in own)
    return cls.__basicsize__ - cls.__base__.__basicsize__ <= declared * _POINTER


_POINTER = object.__sizeof__(object()) // 2  # the size of one slot (object() is two pointers)


def attributes(v) -> list[tuple[str, Any]]:
    """The instance state of ``v`` in order: ``__dict__`` items, then set ``__slots__``."""
    try:
        d = object.__getattribute__(v, "__dict__")
    except AttributeError:
        d = {}
    out = list(d.items())
    for name in _slot_names(type(v)):
        try:
            out.append((name, object.__getattribute__(v, name)))
        except AttributeError:
            pass  # an unset slot stays unset
    return out


def _slot_names(cls: type) -> Iterator[str]:
    seen = set()
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__") or name in seen:
                continue
            seen.add(name)
            if name.startswith("__") and not name.endswith("__"):
                name = f"_{klass.__name__.lstrip('_')}{name}"  # a private slot is stored mangled
            yield name


def _a(name: str) -> str:
    return f"an {name}" if name[0].lower() in "aeiou" else f"a {name}"


def _type_name(t: type) -> str:
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


# -- objects the function read rather than made ------------------------------------------------
_WALK_LIMIT = 20_000  # objects visited at most when collecting what already existed


def preexisting(modules: list, fn) -> set[int]:
    """Ids of the objects reachable from the modules' attributes and ``fn``'s globals and
    closure: objects that existed before the call (the tracer never copies them)."""
    roots: list = []
    for m in modules:
        roots += [x for k, x in m.__dict__.items() if k not in ("_parameters", "_buffers", "_modules")]
    code_fn = getattr(type(fn), "forward", None) if isinstance(fn, torch.nn.Module) else fn
    code_fn = getattr(code_fn, "__func__", code_fn)
    if isinstance(code_fn, types.FunctionType):
        roots += list(code_fn.__globals__.values())
        roots += [c.cell_contents for c in code_fn.__closure__ or () if _cell_set(c)]
    seen: set[int] = set()
    stack = [r for r in roots if _walkable(r)]
    while stack and len(seen) < _WALK_LIMIT:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        stack += [c for c in _children(x) if _walkable(c)]
    return seen


def _cell_set(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _walkable(x) -> bool:
    if isinstance(x, (torch.Tensor, torch.nn.Module, type, types.ModuleType, types.FunctionType)):
        return False
    t = type(x)
    return t in (list, tuple, dict, set, frozenset) or bool(t.__flags__ & _HEAPTYPE)


def _children(x) -> list:
    if isinstance(x, dict):
        return list(x.values())
    if isinstance(x, (list, tuple, set, frozenset)):
        return list(x)
    return [v for _, v in attributes(x)]


# -- values that would carry proxies out of the trace -----------------------------------------
def captured_traced(value, is_traced) -> str | None:
    """What in ``value`` is traced (a proxy, an input wrapper), described: for a function or a
    ``functools.partial`` made while tracing, a captured value; for an object, an attribute.
    None when there is none."""
    import functools

    if is_python_instance(value) and not isinstance(value, functools.partial):
        for name, attr in attributes(value):
            if _holds(attr, is_traced, set()):
                return f"its attribute {name!r}"
        return None
    if isinstance(value, functools.partial):
        for i, a in enumerate((value.func, *value.args, *value.keywords.values())):
            if _holds(a, is_traced, set()):
                return f"its bound argument {i}"
        return None
    if isinstance(value, types.FunctionType):
        for name, cell in zip(value.__code__.co_freevars, value.__closure__ or ()):
            if _cell_set(cell) and _holds(cell.cell_contents, is_traced, set()):
                return f"the variable {name!r} it captures"
        for d in (value.__defaults__ or ()) + tuple((value.__kwdefaults__ or {}).values()):
            if _holds(d, is_traced, set()):
                return "a default argument"
    return None


def _holds(x, is_traced, seen: set, depth: int = 0) -> bool:
    if is_traced(x) or isinstance(x, TensorProxy):
        return True
    if depth > 8 or id(x) in seen or not _walkable(x):
        return False
    seen.add(id(x))
    return any(_holds(c, is_traced, seen, depth + 1) for c in _children(x))


# -- where an object was made (on the error path only) ------------------------------------------
class CreationSites:
    """While active, remembers where each object whose ``__init__`` runs was made: the
    innermost frame outside thunder and torch that called it. A profile hook costs about as
    much as the trace itself, so acquisition uses it only to explain an error."""

    def __init__(self):
        self.sites: dict[int, SourceLocation] = {}
        self._keep: list = []  # ids stay valid while the sites are looked up
        self._old = None

    def __enter__(self) -> CreationSites:
        self._old = sys.getprofile()
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc) -> None:
        sys.setprofile(self._old)

    def _hook(self, frame, event, arg) -> None:
        if event != "call" or frame.f_code.co_name != "__init__" or not frame.f_code.co_argcount:
            return
        obj = frame.f_locals.get(frame.f_code.co_varnames[0])
        if obj is None or id(obj) in self.sites:
            return  # ``super().__init__()``: the first (most derived) call names the maker
        loc = frame_location(frame.f_back)
        if loc is not None:
            self.sites[id(obj)] = loc
            self._keep.append(obj)

    def of(self, obj) -> SourceLocation | None:
        return self.sites.get(id(obj))
