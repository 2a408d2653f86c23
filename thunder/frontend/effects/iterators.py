"""Iterators the traced code did not make: advancing one is refused, never frozen.

An iterator reached through a global, a closure variable or a default argument (``IT =
iter(data)``, ``itertools.count()``, a generator) holds its position in C or in a suspended
frame. ``next(IT)`` while tracing would take one item, once: every cached call would reuse
it (``x * next(COUNTER)`` would multiply by 0 on every call, where eager counts up), and the
iterator would be one step further than eager leaves it after the first call only. Such an
iterator is a ``RefusedIterator`` while tracing (one of the stand-ins of ``c_objects.py``, put
where the code finds it): taking an item from it (``next``, a ``for``
loop, ``send``) is an error naming it and the user's line, before anything is taken, so the
iterator is left where it was. Its other attributes are the iterator's.
"""

from __future__ import annotations

import collections.abc
import io

import torch

from thunder.core.errors import UnsupportedValueError, at
from thunder.core.source import user_location


def is_foreign_iterator(v) -> bool:
    """An iterator that is not a file (``RecordedFile`` stands for those) nor a tensor."""
    return isinstance(v, collections.abc.Iterator) and not isinstance(v, (io.IOBase, torch.Tensor))


class RefusedIterator:
    """Stands for an iterator while the user's code is traced (see the module docstring)."""

    __slots__ = ("_real", "_label")

    def __init__(self, real, label: str):
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_label", label)

    def _refuse(self, how: str):
        raise UnsupportedValueError(
            f"thunder: {how} of {self._label} (a {type(self._real).__qualname__}) inside the compiled function: "
            "taking an item from an iterator the function did not make changes Python state a compiled program "
            "cannot replay (every cached call would get the item taken while tracing); take the item outside and "
            "pass it as an argument" + at(user_location())
        )

    @property
    def __class__(self):  # (``type(IT)`` in the user's code, ``isinstance``: the iterator's)
        return type(self._real)

    def __iter__(self):
        return self

    def __next__(self):
        self._refuse("next()")

    def send(self, value):
        self._refuse("send()")

    def throw(self, *args):
        self._refuse("throw()")

    def __getattr__(self, name):
        return getattr(self._real, name)

    def __setattr__(self, name, value):
        setattr(self._real, name, value)
