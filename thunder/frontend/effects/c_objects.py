"""Objects implemented in C that the traced code reaches through its globals, closure cells,
default arguments and module attributes, and whose writes a compiled program cannot make
again on every call: an ``array.array``, a ``bytearray``, a ``memoryview``, an ``mmap.mmap``, a
``socket.socket``.

While the trace runs, the code finds a stand-in there (``frontend/effects/recorder.py`` puts it where
it puts tracked copies and ``RecordedFile``, ``frontend/modules/shadows.py`` in a module's shadow):
reading is as reading the object (``len(A)``, ``A[0]``, ``bytes(B)``; the prologue checks their
contents); a write is an error that names the object, the method and the user's line, raised
before anything is written, so the user's object is as it was:

    A = array.array("i")
    def g(x):
        A.append(3)  # thunder: the traced code writes into the array.array object the global A (append) ...
        return x * 2

An ``array.array`` or a ``bytearray`` stand-in is a copy of the object (a subclass: the buffer
protocol works, ``torch.frombuffer(B)``); a write C code makes through its buffer is found when
the trace ends (``written``) and refused the same way, as is one into such an object a plain
object holds (``guards.ObjectState`` puts it back). A socket's sends and receives and an mmap's
writes and file position cannot be undone: every use of them but the descriptive ones is
refused, before it happens; so are reads of the contents of a memoryview or an mmap (they
change without the object being replaced, which no check of the object sees). A stand-in's
``__class__`` is the object's (``type(A)`` in the user's code: ``type_reads.py``). An iterator
the function did not make gets its stand-in here too (``iterators.py``): taking an item from it
is refused the same way. A lock's stand-in (``HeldLock``) takes the lock and notes it: the
compiled program holds it on every call.
"""

from __future__ import annotations

import array
import contextlib
import mmap
import socket
import threading

from thunder.core.errors import UnsupportedValueError, at
from thunder.core.source import user_location
from thunder.frontend.effects.iterators import RefusedIterator, is_foreign_iterator

# what a write would be: each class's methods that change the object (or its position)
_WRITES = {
    array.array: frozenset(
        "append extend fromlist frombytes fromfile fromunicode insert pop remove reverse byteswap "
        "__setitem__ __delitem__ __iadd__ __imul__".split()
    ),
    bytearray: frozenset(
        "append extend insert pop remove reverse clear __setitem__ __delitem__ __iadd__ __imul__".split()
    ),
}
# what may be read of the objects that are wrapped, not copied (no state of theirs changes)
_READS = {
    memoryview: frozenset(
        "format itemsize nbytes ndim shape strides suboffsets readonly c_contiguous f_contiguous contiguous "
        "__len__".split()
    ),
    mmap.mmap: frozenset("size closed __len__".split()),
    socket.socket: frozenset(
        "family type proto fileno getsockname getpeername gettimeout getblocking timeout".split()
    ),
}
# reads of the contents of a memoryview or an mmap: they change without the object being
# replaced (another view, the file), which no check of the object sees
_CONTENT_READS = frozenset(
    "tobytes tolist hex obj count index cast toreadonly find rfind tell read readline read_byte "
    "__getitem__ __iter__".split()
)


def _refusal(obj, label: str, what: str, name: str) -> UnsupportedValueError:
    t = type(obj)
    kind = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    if name in _CONTENT_READS:
        why = (
            "its contents can change between calls without the object being replaced, which the compiled "
            "program's checks cannot see. Pass the data in as an argument (torch.frombuffer)"
        )
    else:
        why = (
            "a compiled program cannot make this again on every call as eager does, so it was not made (the "
            "object is as it was). Make it outside the compiled function, or keep the values in a list (its "
            "appends are made on every call)"
        )
    return UnsupportedValueError(
        f"thunder: the traced code {what} the {kind} object {label} ({name}); {why}" + at(user_location())
    )


def _copy_class(base: type) -> type:
    """``base`` with its writes refused (see the module docstring)."""
    writes = _WRITES[base]

    def refusing(name: str):
        def method(self, *args, **kwargs):
            raise _refusal(self.original, self.label, "writes into", name)

        method.__name__ = name
        return method

    ns = {name: refusing(name) for name in writes}
    ns.update(
        {"__slots__": ("original", "label"), "__module__": base.__module__, "__qualname__": base.__qualname__}
    )
    ns["__class__"] = property(lambda self: base)
    return type(base.__name__, (base,), ns)


_COPIES = {base: _copy_class(base) for base in _WRITES}


class RefusedObject:
    """Stands for a ``memoryview``, ``mmap.mmap`` or ``socket.socket`` while the user's code is
    traced: its descriptive reads pass through, everything else is refused."""

    __slots__ = ("original", "label")

    def __init__(self, original, label: str):
        object.__setattr__(self, "original", original)
        object.__setattr__(self, "label", label)

    @property
    def __class__(self):  # (``isinstance(s, socket.socket)`` as for the object)
        return type(self.original)

    def _allowed(self, name: str) -> bool:
        return any(isinstance(self.original, t) and name in names for t, names in _READS.items())

    def __getattr__(self, name: str):
        if self._allowed(name):
            return getattr(self.original, name)
        raise _refusal(self.original, self.label, "reads" if name in _CONTENT_READS else "uses", name)

    def __setattr__(self, name: str, value) -> None:
        raise _refusal(self.original, self.label, "sets an attribute of", name)

    def __getitem__(self, key):
        if not self._allowed("__getitem__"):
            raise _refusal(self.original, self.label, "reads", "__getitem__")
        return self.original[key]

    def __setitem__(self, key, value) -> None:
        raise _refusal(self.original, self.label, "writes into", "__setitem__")

    def __len__(self) -> int:
        return len(self.original)

    def __iter__(self):
        return self.__getattr__("__iter__")()

    def __enter__(self):
        raise _refusal(self.original, self.label, "enters", "with")

    def __exit__(self, *exc):
        return None


class HeldLock:
    """Stands for a ``threading.Lock`` or ``RLock`` while the user's code is traced: taking it
    (``with LOCK:``, ``LOCK.acquire()``) takes the lock itself and notes it, and every call of
    the compiled program then runs holding it (``thunder/runtime/jit.py``), as the code in the
    ``with`` block did. What would depend on another thread (a non-blocking or timed acquire,
    ``locked()``) is refused: its outcome would be fixed at trace time."""

    __slots__ = ("original", "label", "taken")

    def __init__(self, original, label: str):
        object.__setattr__(self, "original", original)
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "taken", False)

    @property
    def __class__(self):
        return type(self.original)

    def _take(self) -> None:
        object.__setattr__(self, "taken", True)

    def _held(self) -> bool:  # (by the call being traced: ``holding``)
        return id(self.original) in _holding_ids()

    def __enter__(self):
        self._take()
        return self if self._held() else self.original.__enter__()

    def __exit__(self, *exc):
        return None if self._held() else self.original.__exit__(*exc)

    def acquire(self, blocking: bool = True, timeout: float = -1):
        if not blocking or timeout != -1:
            raise _refusal(self.original, self.label, "acquires without waiting", "acquire")
        self._take()
        return True if self._held() else self.original.acquire()

    def release(self) -> None:
        if not self._held():
            self.original.release()

    def locked(self):
        raise _refusal(self.original, self.label, "reads", "locked")

    def __getattr__(self, name: str):
        raise _refusal(self.original, self.label, "uses", name)


_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


_THREAD = threading.local()


def _holding_ids() -> set:
    ids = getattr(_THREAD, "ids", None)
    if ids is None:
        ids = _THREAD.ids = set()
    return ids


@contextlib.contextmanager
def holding(locks):
    """Hold ``locks`` (in order) around a call of a compiled program whose code takes them;
    a trace made meanwhile finds them held by this call and does not take them again."""
    ids = _holding_ids()
    with contextlib.ExitStack() as stack:
        for lock in locks:
            if id(lock) not in ids:
                stack.enter_context(lock)
                ids.add(id(lock))
                stack.callback(ids.discard, id(lock))
        yield


def taken_locks(stand_ins) -> list:
    """The locks the traced code took, among the stand-ins it was given."""
    return [s.original for s in stand_ins if type(s) is HeldLock and s.taken]


def stand_in(v, label: str):
    """The stand-in for ``v`` while tracing (``label``: what it is to the user, ``the global
    A``), or None when ``v`` is none of those objects."""
    t = type(v)
    if t in _COPIES:
        out = _COPIES[t](v.typecode, v) if t is array.array else _COPIES[t](v)
        out.original, out.label = v, label
        return out
    if isinstance(v, (memoryview, mmap.mmap, socket.socket)):
        return RefusedObject(v, label)
    if is_foreign_iterator(v):  # ``next(IT)``: refused too, not frozen (iterators.py)
        return RefusedIterator(v, label)
    if isinstance(v, _LOCK_TYPES):
        return HeldLock(v, label)
    return None


# the objects whose writes a copy of them catches (any other C object's, through a wrapper)
C_BUFFERS = frozenset(_COPIES)


def buffer_write_refusal(v, label: str) -> UnsupportedValueError:
    """The error for a write found after the trace into the ``array.array`` or ``bytearray``
    ``label`` (held by an object: put back as it was)."""
    return _refusal(v, label, "writes into", "changed in place")


def is_stand_in(v) -> bool:
    return type(v) in _STAND_IN_TYPES


_STAND_IN_TYPES = frozenset({*_COPIES.values(), RefusedObject, RefusedIterator, HeldLock})


def written(v) -> str | None:
    """What a write C code made through the buffer of the copy ``v`` changed (its object as the
    user knows it), or None."""
    if type(v) not in _COPIES.values() or v == v.original:
        return None
    return f"the {type(v.original).__qualname__} object {v.label} (written through its buffer)"
