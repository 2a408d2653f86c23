"""Calls that would be fixed at trace time without a trace of them: refused while tracing.

A traced program replays its tensor ops; Python code around them ran once, while tracing.
A value drawn from Python's or NumPy's random generator there (``random.random() < p`` as a
layer drop, ``np.random.rand()`` as a scale) would be the same on every cached call, and
``torch.manual_seed(...)`` / ``torch.set_rng_state(...)`` called by the traced code would reseed
only the trace, not the calls: each would be silently wrong, so each is an error naming the
call and the line. Only this thread's tracing is affected: another thread calling them
meanwhile gets the real functions.
"""

from __future__ import annotations

import contextlib
import functools
import random
import sys
import threading

import torch

from thunder.core.source import user_location
from thunder.frontend.errors import UnsupportedOpError, at

_LOCAL = threading.local()
_LOCK = threading.Lock()
_ACTIVE = 0  # traces in progress, over all threads: the functions are patched while > 0
_SAVED: list[tuple[object, str, object]] = []

_TORCH_SEEDING = (
    "seed the generator before calling the compiled function (thunder replays random ops from it)"
)
_HOST_RANDOM = (
    "its value would be fixed at trace time and reused by every cached call; draw it with torch "
    "(torch.rand) inside, or pass it as an argument"
)


def _targets() -> list[tuple[object, str, str]]:
    """(owner, attribute, what to do instead) for every function refused while tracing."""
    found = [(torch, n, _TORCH_SEEDING) for n in ("manual_seed", "seed", "set_rng_state")]
    found += [(torch.random, n, _TORCH_SEEDING) for n in ("manual_seed", "seed", "set_rng_state")]
    names = "random uniform randint randrange choice choices shuffle sample gauss normalvariate seed"
    found += [(random, n, _HOST_RANDOM) for n in names.split()]
    np_random = getattr(sys.modules.get("numpy"), "random", None)  # only when the program uses NumPy
    if np_random is not None:
        names = "rand randn random random_sample randint uniform normal choice permutation shuffle seed"
        found += [(np_random, n, _HOST_RANDOM) for n in names.split() if hasattr(np_random, n)]
    return found


def _refusing(fn, name: str, instead: str):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if getattr(_LOCAL, "tracing", 0):
            raise UnsupportedOpError(
                f"thunder: {name} inside the compiled function: {instead}" + at(user_location())
            )
        return fn(*args, **kwargs)

    return call


@contextlib.contextmanager
def refuse_host_state():
    """While this thread traces, the functions of ``_targets()`` raise."""
    global _ACTIVE
    with _LOCK:
        if _ACTIVE == 0:
            for owner, attr, instead in _targets():
                fn = getattr(owner, attr, None)
                if fn is None:
                    continue
                module = getattr(owner, "__name__", "")
                _SAVED.append((owner, attr, fn))
                setattr(owner, attr, _refusing(fn, f"{module}.{attr}", instead))
        _ACTIVE += 1
    _LOCAL.tracing = getattr(_LOCAL, "tracing", 0) + 1
    try:
        yield
    finally:
        _LOCAL.tracing -= 1
        with _LOCK:
            _ACTIVE -= 1
            if _ACTIVE == 0:
                for owner, attr, fn in reversed(_SAVED):
                    setattr(owner, attr, fn)
                _SAVED.clear()
