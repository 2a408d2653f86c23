"""Calls that would be fixed at trace time without a trace of them: refused while tracing.

A traced program replays its tensor ops; Python code around them ran once, while tracing.
A value drawn from Python's or NumPy's random generator there (``random.random() < p`` as a
layer drop, ``np.random.rand()`` as a scale) or read from a host clock by the user's code
(``time.time()``, ``time.perf_counter()``) would be the same on every cached call, and
``torch.manual_seed(...)`` / ``torch.set_rng_state(...)`` called by the traced code would reseed
only the trace, not the calls: each would be silently wrong, so each is an error naming the
call and the line. ``torch.compile`` called there returns its function as it is: thunder traces
it. Only this thread's tracing is affected: another thread calling them
meanwhile gets the real functions.

A name bound before tracing (``from random import random``, ``from numpy.random import rand``)
reaches the generator without the module attribute: for those, the state of Python's and
NumPy's global generators is compared before and after the trace. A trace that changed one
is refused (``HostRandomUsed``, the generator put back as it was) and traced once more under
a line tracer (``RandomCalls``) that finds the user's line for the error; when that second
trace draws nothing (another thread drew meanwhile), it is the trace.

NumPy loads ``numpy.random`` on first use; it is guarded once loaded. A trace during which it
was loaded (the traced code's ``np.random.rand()`` in a process that had not used it) is
traced once more, with it guarded (``NumpyRandomLoaded``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import sys
import threading
import time

import torch

from thunder.core.errors import UnsupportedOpError, at
from thunder.core.source import SourceLocation, is_user_file, user_location
from thunder.frontend.effects.patches import ProcessPatches
from thunder.frontend.prologue.code_reads import is_user_code

_LOCAL = threading.local()

_TORCH_SEEDING = (
    "seed the generator before calling the compiled function (thunder replays random ops from it)"
)
_HOST_RANDOM = (
    "its value would be fixed at trace time and reused by every cached call; draw it with torch "
    "(torch.rand) inside, or pass it as an argument"
)


_HOST_CLOCK = (
    "its value would be read once, at trace time, and reused by every cached call; time the call "
    "outside the compiled function, or pass the value as an argument"
)


def _targets() -> list[tuple[object, str, str]]:
    """(owner, attribute, what to do instead) for every function refused while tracing."""
    found = [(torch, n, _TORCH_SEEDING) for n in ("manual_seed", "seed", "set_rng_state")]
    found += [(torch.random, n, _TORCH_SEEDING) for n in ("manual_seed", "seed", "set_rng_state")]
    names = "random uniform randint randrange choice choices shuffle sample gauss normalvariate seed"
    found += [(random, n, _HOST_RANDOM) for n in names.split()]
    names = "time time_ns perf_counter perf_counter_ns monotonic monotonic_ns process_time process_time_ns"
    found += [(time, n, _HOST_CLOCK) for n in names.split()]
    np_random = sys.modules.get("numpy.random")  # only once loaded (see ``NumpyRandomLoaded``)
    if np_random is not None:
        names = "rand randn random random_sample randint uniform normal choice permutation shuffle seed"
        found += [(np_random, n, _HOST_RANDOM) for n in names.split() if hasattr(np_random, n)]
    return found


def _refusing(fn, name: str, instead: str):
    # a clock is refused only to the user's code (libraries and torch time themselves)
    user_only = instead is _HOST_CLOCK

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if getattr(_LOCAL, "tracing", 0) and (not user_only or is_user_code(sys._getframe(1).f_code)):
            error = UnsupportedOpError(
                f"thunder: {name} inside the compiled function: {instead}" + at(user_location())
            )
            if sys.exc_info()[1] is None:
                raise error
            # an exception is on its way out (``torch.random.fork_rng()`` restores the state as
            # it unwinds): it is the error to show; the refusal stands should the trace go on
            _LOCAL.deferred = getattr(_LOCAL, "deferred", None) or error
        return fn(*args, **kwargs)

    return call


def _compiling(compile_fn):
    """``torch.compile`` called by the code this thread traces: thunder traces the function
    itself (torch.compile would run it under its own tracer, outside thunder's trace)."""

    @functools.wraps(compile_fn)
    def call(model=None, *args, **kwargs):
        if not getattr(_LOCAL, "tracing", 0):
            return compile_fn(model, *args, **kwargs)
        return (lambda fn: fn) if model is None else model

    return call


class HostRandomUsed(UnsupportedOpError):
    """The trace drew from Python's or NumPy's global random generator through a name bound
    before tracing; ``acquire`` traces again with ``RandomCalls`` to say where."""


class NumpyRandomLoaded(Exception):
    """``numpy.random`` was loaded while tracing (``np.random.rand()`` in the traced code, in a
    process that had not used it): its functions were not refused and its generator's state
    not compared. ``acquire`` traces again, with ``numpy.random`` guarded. (It is not loaded
    for the guard: NumPy loads it lazily, and loading it costs a first compilation ~10 ms.)"""


def _generators() -> list:
    """Python's global generator, and NumPy's legacy global one when NumPy is loaded."""
    found = [random._inst]
    np_random = sys.modules.get("numpy.random")
    rand = getattr(getattr(np_random, "mtrand", None), "_rand", None)
    return found + ([rand] if rand is not None else [])


def _states(generators: list) -> list:
    return [g.getstate() if g is random._inst else g.get_state(legacy=False) for g in generators]


def _same_state(a, b) -> bool:
    if isinstance(a, dict):  # NumPy's: {"state": {"key": array, "pos": int}, "has_gauss": ...}
        key_a, key_b = a["state"]["key"], b["state"]["key"]
        rest = ({**a, "state": {**a["state"], "key": None}}, {**b, "state": {**b["state"], "key": None}})
        return rest[0] == rest[1] and bool((key_a == key_b).all())
    return a == b


def _restore(generators: list, states: list) -> None:
    for g, state in zip(generators, states):
        g.setstate(state) if g is random._inst else g.set_state(state)


class RandomCalls:
    """While active (this thread), finds the line of the user's code after which a global
    generator's state first changed: a line tracer over the frames outside thunder, torch,
    ``random`` and NumPy that compares the states after each line (about as slow as the trace
    again: only to explain an error). NumPy's functions are not Python calls a profile hook
    would see, hence lines."""

    def __init__(self):
        self.site = None
        self._old = None
        self._generators: list = []
        self._before: list = []
        self._last = None
        np = sys.modules.get("numpy")
        skip = [os.path.abspath(random.__file__)]
        self._skip = tuple(skip + ([os.path.dirname(os.path.abspath(np.__file__)) + os.sep] if np else []))

    def __enter__(self) -> RandomCalls:
        self._generators = _generators()
        self._before = _states(self._generators)
        self._old = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(self._old)

    def _call(self, frame, event, arg):
        filename = frame.f_code.co_filename
        if self.site is not None or filename.startswith(self._skip) or not is_user_file(filename):
            return None
        return self._line

    def _line(self, frame, event, arg):
        if self.site is not None:
            return None
        changed = not all(map(_same_state, self._before, _states(self._generators)))
        if changed:
            filename, lineno, name = self._last or (
                frame.f_code.co_filename,
                frame.f_lineno,
                frame.f_code.co_name,
            )
            self.site = SourceLocation(filename, lineno, name)
            return None
        if event == "line":
            self._last = (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
        return self._line


def _patches():
    """(owner, attribute, the replacement's maker): every function refused, and torch.compile."""
    for owner, attr, instead in _targets():
        name = f"{getattr(owner, '__name__', '')}.{attr}"
        yield owner, attr, functools.partial(_refusing, name=name, instead=instead)
    yield torch, "compile", _compiling


_PATCHES = ProcessPatches(_patches)


@contextlib.contextmanager
def refuse_host_state():
    """While this thread traces, the functions of ``_targets()`` raise; a trace that changed
    the state of a global random generator otherwise raises ``HostRandomUsed`` at its end."""
    _PATCHES.__enter__()
    _LOCAL.tracing = getattr(_LOCAL, "tracing", 0) + 1
    deferred, _LOCAL.deferred = getattr(_LOCAL, "deferred", None), None
    generators = _generators()
    before = _states(generators)
    np_random_loaded = "numpy.random" in sys.modules
    try:
        yield
        if not np_random_loaded and "numpy.random" in sys.modules:
            raise NumpyRandomLoaded
        if _LOCAL.deferred is not None:  # refused while an exception unwound, which was caught
            raise _LOCAL.deferred
        after = _states(generators)
        if not all(_same_state(a, b) for a, b in zip(before, after)):
            _restore(generators, before)  # the trace's draws are undone, as every effect of a failed trace
            raise HostRandomUsed(
                "thunder: Python's or NumPy's global random generator was drawn from while tracing "
                f"(through a name bound before the call, such as `from random import random`): {_HOST_RANDOM}"
            )
    finally:
        _LOCAL.tracing -= 1
        _LOCAL.deferred = deferred
        _PATCHES.__exit__()
