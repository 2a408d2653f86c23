"""The cache of one jitted function: bounded, least recently used entry evicted, and safe
to call from several threads.

A call tries first the entry of the last hit (``Cache.last``: a call like the one before costs one
prologue), then the entries most recently used first (``Cache.order``, a tuple replaced as a
whole, so a reader never sees it half changed); a hit on an entry that is not the most
recent one moves it to the end. With more than a few entries a call tries only those made for
calls of its key (``call_key``: what every prologue checks of the arguments first, their types,
and a tensor's dtype, device, rank and requires_grad), so looking up does not grow with the
number of entries; an entry a call of another key fits (found before compiling, by trying the
others) is filed under that key too. Compiling a new entry happens under ``Cache.lock``: two
threads that miss together compile once, and tracing never shows another thread anything
(acquisition does not touch the user's modules, see ``thunder/frontend/modules/shadows.py``).
``entries`` keeps the compile order (what ``thunder.last_traces`` and the explorer read).
"""

from __future__ import annotations

import threading
from collections import Counter

import torch

# Entries kept per jitted function unless ``thunder.jit(fn, cache_size=...)`` says otherwise.
# A decoding loop with a cache that grows makes one entry per sequence length: 64 keeps a
# 64-token generation compiled once per length (fewer would evict each length before its
# next use, and every later step would compile again).
DEFAULT_CACHE_SIZE = 64
# Every this many compilations of one function, a warning says which check keeps failing.
RECOMPILE_WARNING = 8
# Up to this many entries a call tries them all; beyond, only those of its key.
KEYED_FROM = 4
_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def call_key(args: tuple, kwargs: dict) -> tuple:
    """What every entry's prologue checks first of a call's arguments, exactly: each one's
    type, and a plain tensor's dtype, device, rank and requires_grad; the keyword names."""
    key = tuple(map(_arg_key, args))
    if kwargs:
        key += (tuple(kwargs), *map(_arg_key, kwargs.values()))
    return key


def _arg_key(v):
    t = type(v)
    if t in _PLAIN_TENSORS:
        return (v.dtype, v.device, v.dim(), v.requires_grad)
    return t


class Cache:
    def __init__(self, limit: int = DEFAULT_CACHE_SIZE):
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"thunder: cache_size must be a positive int, got {limit!r}")
        self.limit = limit
        self.entries: list = []  # in compile order
        self.order: tuple = ()  # most recently used last
        self.last = None  # the entry of the last hit or the last one added
        self.keyed: dict[tuple, tuple] = {}  # call key -> its entries, most recently used last
        self._keys: dict[int, set] = {}  # id(entry) -> its keys
        self.lock = threading.RLock()
        self.evicted = 0

    def candidates(self, args: tuple, kwargs: dict) -> tuple:
        """The entries a call tries, most recently used last: all of them, or (beyond
        ``KEYED_FROM``) those filed under its key."""
        order = self.order
        if len(order) <= KEYED_FROM:
            return order
        return self.keyed.get(call_key(args, kwargs), ())

    def touch(self, entry) -> None:
        """``entry`` was just used: it becomes the most recent."""
        with self.lock:
            if entry in self.order:
                self.order = tuple(e for e in self.order if e is not entry) + (entry,)
                for key in self._keys.get(id(entry), ()):
                    self.keyed[key] = tuple(e for e in self.keyed[key] if e is not entry) + (entry,)

    def file(self, entry, args: tuple, kwargs: dict) -> None:
        """File ``entry`` under the key of a call it fits."""
        key = call_key(args, kwargs)
        with self.lock:
            keys = self._keys.setdefault(id(entry), set())
            if key not in keys and any(e is entry for e in self.order):
                keys.add(key)
                self.keyed[key] = self.keyed.get(key, ()) + (entry,)

    def add(self, entry, args: tuple = (), kwargs: dict | None = None) -> list:
        """Add a new entry (the most recent), made for a call of ``args`` and ``kwargs``; evict
        the least recently used ones beyond the limit and return them."""
        with self.lock:
            self.entries.append(entry)
            order = self.order + (entry,)
            evicted = list(order[: max(0, len(order) - self.limit)])
            self.order = order[len(evicted) :]
            for e in evicted:
                self.entries.remove(e)
                for key in self._keys.pop(id(e), ()):
                    left = tuple(x for x in self.keyed[key] if x is not e)
                    if left:
                        self.keyed[key] = left
                    else:
                        del self.keyed[key]
            self.evicted += len(evicted)
            self.last = entry
            self.file(entry, args, kwargs or {})
            return evicted


def keeps_failing(reasons: list[tuple[str, str]]) -> str:
    """The check that rejected the most entries, from ``(check line, full reason)`` pairs:
    its full reason as last seen."""
    if not reasons:
        return "of new inputs"
    counts = Counter(check for check, _ in reasons)
    top = max(counts.values())
    for check, full in reversed(reasons):
        if counts[check] == top:
            return full
    return reasons[-1][1]
