"""Prints, log records and warnings of the traced code: made on every call, not once.

While the user's code is traced, ``print``, ``warnings.warn`` and a logger's records (``Logger._log``,
which ``logger.info`` and ``logging.warning`` end in) called by the program's code (the user's or
a library's it calls; not torch's or thunder's, nor under a cache such as transformers'
``logger.warning_once``: ``frontend/effects/callers.py``) are not made but recorded, in order, with
their arguments; the epilogue makes them on every call with that call's values (a tensor the
program computed is printed with its values, ``pythonex.python_call(builtins.print, 'loss',
loss)``). A logger's level is checked when the record is made, as in eager (of a library's
records, those its logger shows while tracing: ``isEnabledFor`` answers it as it is), and the
record names the line that logged. A warning is made from the line that warned (its
stacklevel's), so Python's filters show it as often as eager's. A tensor formatted into the text of a print, log record or warning while tracing
(``print(f"{y}")``) has no value yet: an error names the line (a log record its logger does not
show at the trace's level is dropped instead).

``print(..., file=f)`` prints to ``f`` on every call: ``sys.stdout`` and ``sys.stderr`` are read
again at each call (as eager's ``file=sys.stdout`` reads them), another file is that file, an
input object the file each call passes; a print inside a ``redirect_stdout`` the traced code
makes goes to that redirect's target (``with redirect_stdout(io.StringIO()): noisy(x)`` stays
silent).

A file object the traced code reaches through a global or a closure variable (``LOG =
open(...)``, an ``io.StringIO``) is a ``RecordedFile`` while tracing: its ``write``,
``writelines`` and ``flush`` are recorded and made on every call like a print; reading its state
(``read``, ``tell``, ``seek``, ``sys.stdout.buffer``) would give the trace-time answer forever
and is an error naming it. ``sys.stdout`` and ``sys.stderr`` are ``RecordedStream`` while any
thread traces: the program's writes go to the stream ``sys`` holds at each call.

Only this thread's tracing records; another thread printing meanwhile prints.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import functools
import logging
import sys
import threading
import types
import warnings

import torch

from thunder.core.errors import DataDependentError, UnsupportedValueError, at
from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.pytree import tree_map
from thunder.core.source import user_location
from thunder.frontend.effects.c_objects import is_stand_in
from thunder.frontend.effects.callers import made_by_the_program
from thunder.frontend.effects.patches import ProcessPatches
from thunder.frontend.prologue.code_reads import is_user_code
from thunder.frontend.prologue.value_kinds import LITERAL_TYPES
from thunder.frontend.stand_ins.containers import is_tracked, untracked
from thunder.frontend.stand_ins.made_objects import refusal
from thunder.frontend.stand_ins.objects import ObjectWrapper

_LOCAL = threading.local()


def _recording(depth: int = 2) -> list | None:
    """The list to record into when this thread traces and the caller is the program's code
    (``callers.made_by_the_program``)."""
    calls = getattr(_LOCAL, "calls", None)
    if calls is None:
        return None
    return calls if made_by_the_program(sys._getframe(depth)) else None


def _has_proxy_text(*values) -> bool:
    return any(isinstance(v, str) and "<TensorProxy " in v for v in values)


def _no_proxy_text(*values) -> None:
    """A string made from a traced tensor (``f"{y}"``) would be printed as it was at trace time."""
    for v in values:
        if isinstance(v, str) and "<TensorProxy " in v:
            raise DataDependentError(
                "thunder: a tensor is formatted as text (str, repr, an f-string) for a print, log record or "
                "warning inside the compiled function; its values are only known when the program runs. Pass "
                "the tensor itself as an argument (print, a logger's %-arguments): it is printed with each "
                "call's values" + at(user_location())
            )


def _as_recorded(v):
    """``v`` as a print shows it at this point of the program: a tracked container (a global
    list the code also appends to) as its contents now, and marked read, so the prologue checks
    those contents (a call that finds others traces again) instead of the epilogue printing the
    container after the function's later writes."""
    if is_stand_in(v):  # (an array, a bytearray the code cannot write: printed as it is then)
        return v.original
    if is_tracked(v):
        items = untracked(v)
        v = collections.deque(items) if type(v.fx.original) is collections.deque else items
    t = type(v)
    if t in (list, tuple, set, collections.deque):
        return t(_as_recorded(x) for x in v)
    if t is dict:
        return {k: _as_recorded(x) for k, x in v.items()}
    return v


def _print(real):
    def print(*args, **kwargs):  # noqa: A001 - stands for the builtin while tracing
        calls = _recording()
        if calls is None:
            return real(*args, **kwargs)
        file = kwargs.pop("file", None)
        _no_proxy_text(*args, *kwargs.values())
        args = tuple(_now(_as_recorded(a)) for a in args)
        if isinstance(file, ObjectWrapper):  # an input: the file each call passes
            kwargs["file"], file = file, None
        calls.append(_with_constants(_printer(real, file), args, kwargs))

    return print


# what the epilogue rebuilds itself (containers may hold traced values; tensors are traced)
_REBUILT = (
    *LITERAL_TYPES,
    *(list, tuple, dict, set, frozenset, collections.deque, collections.OrderedDict, collections.defaultdict),
    *(bytes, range, type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType),
)


def _with_constants(fn, args: tuple, kwargs: dict) -> tuple:
    """``(fn, args, kwargs)`` for the epilogue, with the arguments implemented in C that hold no
    traced value (a NumPy array, ``object()``) bound to ``fn`` as the objects they are, as a
    print of them shows them: the epilogue rebuilds only what it knows."""
    constants = {
        i: a
        for i, a in enumerate(args)
        if not isinstance(a, (torch.Tensor, Proxy, *_REBUILT)) and refusal(a) is not None
    }
    if not constants:
        return fn, args, kwargs
    rest = tuple(a for i, a in enumerate(args) if i not in constants)
    return functools.partial(_call_with, fn, constants), rest, kwargs


def _call_with(fn, constants: dict, *args, **kwargs):
    full = list(args)
    for i in sorted(constants):
        full.insert(i, constants[i])
    return fn(*full, **kwargs)


_STREAM_PRINTERS: dict[tuple[int, str], object] = {}


def _printer(real, file):
    """What the epilogue calls for ``print(..., file=file)``: ``sys.stdout`` and ``sys.stderr``
    as they were when the trace began are read again on every call, as eager's print reads them
    (a ``redirect_stdout`` or pytest's capture between calls is honoured); another file is bound
    (a global's, a ``RecordedFile``'s real file, or the target of a ``redirect_stdout`` the traced
    code made: the print goes where it went while tracing)."""
    began = getattr(_LOCAL, "streams", {})
    if file is None:
        file = sys.stdout
        if file is began.get("stdout"):
            return real
    for name in ("stdout", "stderr"):
        if file is began.get(name):
            printer = _STREAM_PRINTERS.get((id(real), name))
            if printer is None:
                printer = _STREAM_PRINTERS[(id(real), name)] = _stream_printer(real, name)
            return printer
    if isinstance(file, RecordedFile):
        file = object.__getattribute__(file, "_real")
    return functools.partial(real, file=file)


def _stream_printer(real, name: str):
    def printer(*args, **kwargs):
        return real(*args, file=getattr(sys, name), **kwargs)

    printer.__name__ = printer.__qualname__ = f"print_to_{name}"
    printer.__module__ = __name__
    return printer


def _warn(real):
    def warn(message, category=None, stacklevel=1, source=None, **kwargs):
        calls = _recording()
        if calls is None:
            return real(message, category, stacklevel + 1, source, **kwargs)
        _no_proxy_text(str(message))
        # made on each call as from the line that warned (its module's registry: shown once
        # per line under the default filter, as eager's)
        f = sys._getframe(1)
        for _ in range(max(stacklevel, 1) - 1):
            f = f.f_back if f.f_back is not None else f
        if isinstance(message, Warning):
            category = type(message)
        registry = f.f_globals.setdefault("__warningregistry__", {})
        where = (f.f_code.co_filename, f.f_lineno)
        module = f.f_globals.get("__name__", "<string>")
        explicit = functools.partial(
            warnings.warn_explicit, module=module, registry=registry, module_globals=f.f_globals
        )
        calls.append((explicit, (message, category or UserWarning, *where), {}))

    return warn


def _logging_caller(depth: int = 2):
    """``(the list to record into, the code that logs)`` when this thread traces and the logging
    call (``logger.info``, ``logging.warning``) comes from the program's code, else None."""
    calls = getattr(_LOCAL, "calls", None)
    if calls is None:
        return None
    f = sys._getframe(depth)
    while f is not None and f.f_code.co_filename == logging.__file__:
        f = f.f_back
    return (calls, f) if made_by_the_program(f) else None


def _log(real):
    def _log(self, level, msg, args, exc_info=None, extra=None, stack_info=False, stacklevel=1):
        caller = _logging_caller()
        if caller is None or exc_info or stack_info:
            return real(self, level, msg, args, exc_info, extra, stack_info, stacklevel)
        calls, f = caller
        if not _shown(self, level) and _has_proxy_text(msg, *args):
            return None  # (a debug record formatting a tensor, not shown at this level: dropped)
        _no_proxy_text(msg, *args)
        args = tuple(_now(_as_recorded(a)) for a in args)
        for _ in range(max(stacklevel, 1) - 1):  # (the line logging's own findCaller names)
            f = f.f_back if f.f_back is not None else f
        emit = functools.partial(_emit, self, (f.f_code.co_filename, f.f_lineno, f.f_code.co_name))
        calls.append(_with_constants(emit, (level, msg, *args), {} if extra is None else {"extra": extra}))

    return _log


def _emit(logger: logging.Logger, where: tuple, level: int, msg, *args, extra=None) -> None:
    """``logger.log(level, msg, *args)`` on each call, the record naming the line that logged
    while tracing (``%(lineno)d``, ``%(funcName)s``) rather than the epilogue's."""
    if not logger.isEnabledFor(level):
        return
    filename, lineno, function = where
    logger.handle(
        logger.makeRecord(logger.name, level, filename, lineno, msg, args, None, function, extra, None)
    )


def _shown(logger: logging.Logger, level: int) -> bool:
    """``logger.isEnabledFor(level)`` as the real method answers it (the patched one says yes
    while the program's records are recorded)."""
    if logger.disabled or logger.manager.disable >= level:
        return False
    return level >= logger.getEffectiveLevel()


def _enabled(real):
    def isEnabledFor(self, level):  # noqa: N802 - logging's name
        # the user's records are all recorded: the logger's level is checked on each call. A
        # library's are recorded when shown at the trace's level (its ``if
        # logger.isEnabledFor(DEBUG):`` branches may compute what a trace cannot: ``.item()``)
        caller = _logging_caller()
        if caller is not None and is_user_code(caller[1].f_code):
            return True
        return real(self, level)

    return isEnabledFor


class RecordedFile:
    """Stands for a file object (``io.IOBase``) while the user's code is traced (see the module
    docstring); outside tracing it is the file."""

    __slots__ = ("_real",)
    _DESCRIPTIVE = frozenset({"name", "mode", "encoding", "errors", "newlines", "closed", "fileno", "isatty"})

    def __init__(self, real):
        object.__setattr__(self, "_real", real)

    @property
    def __class__(self):  # (``isinstance(f, io.TextIOBase)`` as for the file)
        return type(object.__getattribute__(self, "_real"))

    def _target(self, method: str):
        """What the epilogue calls for ``method``: the file's own method."""
        return getattr(self._real, method)

    def write(self, s):
        calls = _recording()
        if calls is None:
            return self._real.write(s)
        _no_proxy_text(s)
        calls.append((self._target("write"), (s,), {}))
        return len(s)

    def writelines(self, lines):
        calls = _recording()
        if calls is None:
            return self._real.writelines(lines)
        lines = list(lines)
        _no_proxy_text(*lines)
        calls.append((self._target("writelines"), (lines,), {}))
        return None

    def flush(self):
        calls = _recording()
        if calls is None:
            return self._real.flush()
        calls.append((self._target("flush"), (), {}))
        return None

    def __getattr__(self, name):
        if name in self._DESCRIPTIVE or _recording() is None:
            return getattr(self._real, name)
        raise UnsupportedValueError(
            f"thunder: {name} of the file {self._real!r} inside the compiled function: its answer depends on the "
            "file's state when the program runs, which a compiled program cannot replay (writes, writelines and "
            "flush are made on every call)" + at(user_location())
        )

    def __setattr__(self, name, value):
        setattr(self._real, name, value)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def __iter__(self):
        return self.__getattr__("__iter__")()


class RecordedStream(RecordedFile):
    """``sys.stdout`` or ``sys.stderr`` while any thread traces: the program's writes are made on
    every call to the stream ``sys`` then holds (``sys.stdout.write("step\\n")``, as eager's code
    reads ``sys.stdout`` when it writes); other threads' and the runtime's writes go through."""

    __slots__ = ("_name",)

    def __init__(self, real, name: str):
        super().__init__(real)
        object.__setattr__(self, "_name", name)

    def _target(self, method: str):
        key = (self._name, method)
        found = _STREAM_CALLS.get(key)
        if found is None:
            found = _STREAM_CALLS[key] = _stream_call(self._name, method)
        return found


_STREAM_CALLS: dict[tuple[str, str], object] = {}


def _stream_call(name: str, method: str):
    def call(*args):
        return getattr(getattr(sys, name), method)(*args)

    call.__name__ = call.__qualname__ = f"{method}_to_{name}"
    call.__module__ = __name__
    return call


_STREAMS = ProcessPatches(
    lambda: [(sys, name, functools.partial(RecordedStream, name=name)) for name in ("stdout", "stderr")],
    references=False,
)


_TARGETS = ((builtins, "print", _print), (warnings, "warn", _warn), (logging.Logger, "_log", _log),
            (logging.Logger, "isEnabledFor", _enabled))  # fmt: skip


_PATCHES = ProcessPatches(lambda: _TARGETS)


@contextlib.contextmanager
def python_calls(calls: list, current=None):
    """While this thread traces, the user's prints, warnings and log records go to ``calls``;
    ``current(p)``: the value a tensor holds at this point of the program (an in-place write
    since gives a new one), which a print shows."""
    with _PATCHES, _STREAMS:
        outer = (
            getattr(_LOCAL, "calls", None),
            getattr(_LOCAL, "streams", {}),
            getattr(_LOCAL, "current", None),
        )
        _LOCAL.calls, _LOCAL.streams = calls, {"stdout": sys.stdout, "stderr": sys.stderr}
        _LOCAL.current = current
        try:
            yield
        finally:
            _LOCAL.calls, _LOCAL.streams, _LOCAL.current = outer


def _now(v):
    """``v`` with each tensor as the value it holds now (``print(x); x.add_(1); print(x)``:
    the second print shows the value written)."""
    current = getattr(_LOCAL, "current", None)
    if current is None:
        return v
    return tree_map(lambda x: current(x) if isinstance(x, TensorProxy) else x, v)
