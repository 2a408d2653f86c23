"""Functions replaced process-wide while any thread traces, and put back when none does.

Some calls must be seen while user code is traced: ``print`` and a logger's records (made per
call by the epilogue, ``frontend/effects/python_calls.py``), host randomness and clocks (refused,
``frontend/effects/host_state.py``). They are looked up by the user's code as module or class
attributes, so the attribute itself is replaced. Several threads may trace at once: the first
trace to begin installs the replacements, the last to end puts the real functions back. Each
replacement decides per call (by a thread-local) whether this thread is tracing.

    PATCHES = ProcessPatches(lambda: [(builtins, "print", recording_print)])
    with PATCHES:
        ...  # builtins.print is recording_print, in every thread

A patched function the user's code holds under another name (``from time import time``, a
closure's ``clock = time.perf_counter``) is not reached through its owner: ``replacements()``
gives the replacement for such a reference, which acquisition puts in the user's globals and
closures for the trace (``frontend/effects/recorder.py``) and puts back after.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

_INSTANCES: list[ProcessPatches] = []


def replacements() -> dict[int, tuple[object, Callable]]:
    """id(real function) -> (the function, what makes its replacement), over every patch."""
    out: dict[int, tuple[object, Callable]] = {}
    for patches in _INSTANCES:
        if not patches.references:
            continue
        with patches._lock:
            saved = {(id(o), a): real for o, a, real in patches._saved}
            for owner, attr, wrap in patches._targets():
                real = saved.get((id(owner), attr), vars(owner).get(attr))
                if real is not None:
                    out[id(real)] = (real, wrap)
    return out


class ProcessPatches:
    """``targets()`` gives ``(owner, attribute, wrap)``: the attribute becomes ``wrap(real)``;
    an attribute the owner lacks is left out. ``references``: a reference the user's code holds
    to the real value under another name is replaced too (``replacements``); not for a value
    that is an object the code may hold for itself (``OUT = sys.stdout`` stays that stream)."""

    def __init__(
        self, targets: Callable[[], Iterable[tuple[object, str, Callable]]], *, references: bool = True
    ):
        self._targets = targets
        self.references = references
        self._lock = threading.Lock()
        self._active = 0  # traces in progress, over all threads
        self._saved: list[tuple[object, str, object]] = []
        _INSTANCES.append(self)

    def __enter__(self) -> ProcessPatches:
        with self._lock:
            if self._active == 0:
                for owner, attr, wrap in self._targets():
                    real = vars(owner).get(attr)
                    if real is None:
                        continue
                    self._saved.append((owner, attr, real))
                    setattr(owner, attr, wrap(real))
            self._active += 1
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._active -= 1
            if self._active == 0:
                for owner, attr, real in reversed(self._saved):
                    setattr(owner, attr, real)
                self._saved.clear()
