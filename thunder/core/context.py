"""The current trace: the ``Trace`` being recorded on this thread, which calling a Symbol
appends to (``None``: symbols run eagerly).

It lives apart from ``thunder.core.trace`` because ``Symbol.__call__`` reads it on every op
recorded, and ``Trace`` itself is built from Symbols: this module imports nothing of thunder.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager


class _Local(threading.local):
    trace = None  # a class default: no AttributeError on a thread's first read


_local = _Local()
# (read as ``tracing.trace`` where a function call's cost matters: a cached call's first test)
tracing = _local


def current_trace():
    """The ``Trace`` being recorded on this thread, or ``None``."""
    return _local.trace


@contextmanager
def tracectx(trace):
    """Make ``trace`` (a ``Trace``, or ``None``: run symbols eagerly) the current trace."""
    prev = _local.trace
    _local.trace = trace
    try:
        yield trace
    finally:
        _local.trace = prev
