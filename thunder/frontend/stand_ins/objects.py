"""Object inputs: transparent wrappers that record what the traced function reads and writes.

An input that is neither a tensor, a literal nor a plain container (a KV cache, a config, a
dataclass) reaches the user's code as an ``ObjectWrapper``:

- ``isinstance(w, StaticCache)`` holds (``__class__`` answers the real class; the wrapper's
  own type copies the dataclass markers, so ``dataclasses.fields``/``is_dataclass`` work);
- an attribute read (``w.keys``) is recorded with its provenance (``Unpack(holder, ATTR,
  "keys")``), which the prologue unpacks and checks (``t_cache_keys = cache.keys``), and
  answers a proxy (tensors), the value (literals, specialised), or a wrapper (objects);
  reading it twice answers the same proxy, so in-place writes find their input;
- methods and properties run with the wrapper as ``self`` (looked up statically on the
  class, as ``inspect.getattr_static`` does), so their reads and writes are recorded too;
- writes (``w.x = v``, ``setattr(w, "x", v)`` and ``object.__setattr__(w, "x", v)``) land in
  the wrapper's own ``__dict__``, which is the side table the epilogue writes back from,
  every attribute with its final value, in order. ``del w.x`` is recorded the same way.

The user's object is never touched while tracing, so a failed trace leaves it as it was.
Known limits: ``type(w)`` is the wrapper type (with the real class's name), ``vars(w)`` and
``w.__dict__`` are snapshots (writes into them are not recorded), ``copy``/``pickle`` see the
wrapper, and dunder methods implemented in C by a builtin base class (a ``dict`` subclass's
``__getitem__``) cannot run on a wrapper: such inputs are rejected with a clear error.
"""

from __future__ import annotations

import types
from typing import Any

from thunder.core.errors import UnsupportedValueError
from thunder.frontend.stand_ins.unpack import ATTR, Unpack
from thunder.frontend.stand_ins.writes import DelAttr, SetAttr, Write

_MISSING = object()
_ABSENT_READ = object()  # marks an attribute found missing (and guarded as such)

# Dunder methods Python looks up on the type, not through __getattribute__: the wrapper type
# of a class forwards those the class defines in Python.
_FORWARDED_DUNDERS = (
    "__len__ __getitem__ __setitem__ __delitem__ __iter__ __reversed__ __contains__ __call__ "
    "__eq__ __ne__ __lt__ __le__ __gt__ __ge__ __bool__ __enter__ __exit__ __index__ __int__ "
    "__float__ __add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __neg__ "
    "__str__ __format__ __next__"
).split()


class WrapperMeta:
    """What a wrapper knows about itself (kept in one slot, out of the user's namespace)."""

    __slots__ = ("obj", "cls", "holder", "path", "inputs", "reads", "deleted")

    def __init__(self, obj, holder, path: str, inputs):
        self.obj = obj
        self.cls = type(obj)
        self.holder = holder  # the AnyProxy that names the object in the prologue and epilogue
        self.path = path
        self.inputs = inputs
        self.reads: dict[str, Any] = {}  # attribute -> the value handed to user code
        self.deleted: dict[str, None] = {}  # attributes deleted by the function, in order


def _meta(w) -> WrapperMeta:
    return object.__getattribute__(w, "_thunder_meta")


def _static_lookup(cls: type, name: str):
    """``name`` in the class's MRO dicts, without running descriptors."""
    for klass in cls.__mro__:
        d = klass.__dict__
        if name in d:
            return d[name]
    return _MISSING


def _is_data_descriptor(d) -> bool:
    t = type(d)
    return hasattr(t, "__set__") or hasattr(t, "__delete__")


def _is_python_descriptor(d) -> bool:
    """A descriptor whose ``__get__`` is Python code (property, cached_property, user ones)."""
    return isinstance(d, property) or not isinstance(
        d, (types.MemberDescriptorType, types.GetSetDescriptorType, types.WrapperDescriptorType)
    )


class ObjectWrapper:
    """Stands for one input object while tracing; see the module docstring."""

    __slots__ = ("_thunder_meta", "__dict__", "__weakref__")

    def __getattribute__(self, name: str):
        if name == "__class__":
            return _meta(self).cls
        if name == "_thunder_meta":
            return object.__getattribute__(self, name)
        if name == "__dict__":
            return _snapshot_dict(self)
        if name in _COPY_PROTOCOL:
            _no_copy(self)
        return _getattr(self, name)

    def __setattr__(self, name: str, value) -> None:
        _setattr(self, name, value)

    def __delattr__(self, name: str) -> None:
        _delattr(self, name)

    def __repr__(self) -> str:
        m = _meta(self)
        return f"<traced {m.cls.__qualname__} {m.holder.name}>"

    def __reduce_ex__(self, protocol):
        _no_copy(self)


_COPY_PROTOCOL = frozenset({"__reduce_ex__", "__reduce__", "__copy__", "__deepcopy__", "__getstate__"})


def _no_copy(w):
    m = _meta(w)
    raise TypeError(
        f"thunder: the input {m.path} ({m.cls.__qualname__}) cannot be copied or pickled while it is traced"
    )


_WRAPPER_TYPES: dict[type, type] = {}


def wrapper_type(cls: type) -> type:
    """The wrapper type for instances of ``cls`` (made once per class)."""
    t = _WRAPPER_TYPES.get(cls)
    if t is not None:
        return t
    ns: dict[str, Any] = {"__slots__": (), "__qualname__": cls.__qualname__, "__module__": cls.__module__}
    for marker in ("__dataclass_fields__", "__dataclass_params__", "__match_args__"):
        v = _static_lookup(cls, marker)
        if v is not _MISSING:
            ns[marker] = v
    for name in _FORWARDED_DUNDERS:
        impl = _static_lookup(cls, name)
        if impl is _MISSING or impl is _static_lookup(object, name):
            continue
        ns[name] = _forwarder(cls, name)
    h = _static_lookup(cls, "__hash__")
    if h is None:
        ns["__hash__"] = None  # unhashable, as the real object
    elif h is _MISSING or h is object.__hash__:
        ns["__hash__"] = object.__hash__
    else:
        ns["__hash__"] = _forwarder(cls, "__hash__")
    t = type(cls.__name__, (ObjectWrapper,), ns)
    _WRAPPER_TYPES[cls] = t
    return t


def _forwarder(cls: type, name: str):
    def forward(self, *args, **kwargs):
        return _bound(self, name, _static_lookup(cls, name))(*args, **kwargs)

    forward.__name__ = name
    return forward


def make_wrapper(obj, holder, path: str, inputs) -> ObjectWrapper:
    cls = type(obj)
    for base in (dict, list, tuple, set):
        if isinstance(obj, base):
            raise UnsupportedValueError(
                f"thunder: the input {path or 'argument'} is a {cls.__qualname__}, a subclass of {base.__name__}; "
                "such objects are not supported as inputs (plain tuples, lists and dicts, and objects of "
                "Python classes are)"
            )
    w = object.__new__(wrapper_type(cls))
    object.__setattr__(w, "_thunder_meta", WrapperMeta(obj, holder, path, inputs))
    return w


def is_wrapper(x) -> bool:
    return isinstance(x, ObjectWrapper)


def holder_of(w):
    return _meta(w).holder


# -- reads ------------------------------------------------------------------------------------
def _own(w) -> dict:
    return object.__getattribute__(w, "__dict__")


def _real_dict(obj) -> dict | None:
    try:
        return object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None


def _getattr(w, name: str):
    m = _meta(w)
    cls = m.cls
    descr = _static_lookup(cls, name)
    if descr is not _MISSING and _is_data_descriptor(descr):
        if _is_python_descriptor(descr):
            return descr.__get__(w, cls)  # a property runs with the wrapper as self
        own = _own(w)
        if name in own:  # a slot written by the function
            return own[name]
        return _read(w, m, name, descr.__get__(m.obj, cls))  # a slot: read like an attribute
    own = _own(w)
    if name in own:
        return own[name]
    if name in m.deleted:
        raise AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")
    d = _real_dict(m.obj)
    if d is not None and name in d:
        return _read(w, m, name, d[name])
    if descr is not _MISSING:
        return _bound(w, name, descr)
    ga = _static_lookup(cls, "__getattr__")
    if ga is not _MISSING:
        return _bound(w, "__getattr__", ga)(name)
    if name not in m.reads:  # ``hasattr(obj, "x")`` was False: the prologue checks it stays so
        m.reads[name] = _ABSENT_READ
        m.inputs.guard_absent(m.holder, name)
    raise AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")


def _bound(w, name: str, descr):
    """A class attribute as seen from an instance, with the wrapper as ``self``."""
    m = _meta(w)
    if isinstance(descr, types.FunctionType):
        return types.MethodType(descr, w)
    if isinstance(descr, staticmethod):
        return descr.__func__
    if isinstance(descr, classmethod):
        return types.MethodType(descr.__func__, m.cls)
    if not hasattr(type(descr), "__get__"):
        return descr  # a plain class attribute (a constant: the type check guards it)
    if _is_python_descriptor(descr) and not isinstance(
        descr, (types.BuiltinFunctionType, types.MethodDescriptorType, types.ClassMethodDescriptorType)
    ):
        return descr.__get__(w, m.cls)
    # a method implemented in C by a builtin base class: it needs the real object
    raise UnsupportedValueError(
        f"thunder: {m.cls.__qualname__}.{name} is implemented in C and cannot run on the traced input "
        f"{m.path}; it is not supported while tracing"
    )


def _read(w, m: WrapperMeta, name: str, value):
    """The value user code sees for the attribute ``name`` read from the real object."""
    if name in m.reads and m.reads[name] is not _ABSENT_READ:
        return m.reads[name]
    v = m.inputs.value(value, f"{m.path}_{name}", Unpack(m.holder, ATTR, name), tensor_prefix="t_")
    m.reads[name] = v
    return v


def _snapshot_dict(w) -> dict:
    """``w.__dict__``: the attributes as the function sees them now (a copy)."""
    m = _meta(w)
    out = {}
    d = _real_dict(m.obj) or {}
    for k in d:
        if k not in m.deleted:
            out[k] = _getattr(w, k)
    out.update(_own(w))
    return out


# -- writes ------------------------------------------------------------------------------------
def _setattr(w, name: str, value) -> None:
    m = _meta(w)
    cls = m.cls
    descr = _static_lookup(cls, name)
    if descr is not _MISSING and _is_data_descriptor(descr) and _is_python_descriptor(descr):
        descr.__set__(w, value)  # a property setter runs with the wrapper as self
        return
    custom = _static_lookup(cls, "__setattr__")
    if custom is not object.__setattr__ and isinstance(custom, types.FunctionType):
        custom(w, name, value)  # ends in object.__setattr__(w, ...), which lands in the side table
        if name in _own(w):
            m.deleted.pop(name, None)
        return
    if custom is not object.__setattr__:
        raise UnsupportedValueError(
            f"thunder: {cls.__qualname__}.__setattr__ is implemented in C; setting {m.path}.{name} while "
            "tracing is not supported"
        )
    m.deleted.pop(name, None)
    object.__setattr__(w, name, value)


def _delattr(w, name: str) -> None:
    m = _meta(w)
    own = _own(w)
    custom = _static_lookup(m.cls, "__delattr__")
    if custom is not object.__delattr__ and isinstance(custom, types.FunctionType):
        custom(w, name)  # ends in object.__delattr__(w, name) for what the side table holds
        if name in own:
            return
    if name in own:
        del own[name]
        if _has_real(m, name):
            m.deleted[name] = None
        return
    if name in m.deleted or not _has_real(m, name):
        raise AttributeError(f"'{m.cls.__name__}' object has no attribute '{name}'")
    m.deleted[name] = None


def _has_real(m: WrapperMeta, name: str) -> bool:
    d = _real_dict(m.obj)
    return d is not None and name in d


def writes(w, holder) -> list[Write]:
    """What the function did to the object, in order, as writes into ``holder``.

    Setting an attribute to the very value it was read as (``self.x = self.x.to(same)``) is
    no write at all.
    """
    m = _meta(w)
    out: list[Write] = []
    for name in m.deleted:
        out.append(DelAttr(holder, name))
    for name, value in _own(w).items():
        if name in m.reads and m.reads[name] is value:
            continue
        out.append(SetAttr(holder, name, value))
    return out
