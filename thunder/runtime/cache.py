"""The cache of one jitted function: bounded, least recently used entry evicted, and safe
to call from several threads.

A call tries the entries most recently used first (``Cache.order``, a tuple replaced as a
whole, so a reader never sees it half changed); a hit on an entry that is not the most
recent one moves it to the end. Compiling a new entry happens under ``Cache.lock``: two
threads that miss together compile once, and tracing never shows another thread anything
(acquisition does not touch the user's modules, see ``thunder/frontend/modules/shadows.py``).
``entries`` keeps the compile order (what ``thunder.last_traces`` and the explorer read).
"""

from __future__ import annotations

import threading
from collections import Counter

# Entries kept per jitted function unless ``thunder.jit(fn, cache_size=...)`` says otherwise.
# A decoding loop with a cache that grows makes one entry per sequence length: 64 keeps a
# 64-token generation compiled once per length (fewer would evict each length before its
# next use, and every later step would compile again).
DEFAULT_CACHE_SIZE = 64
# Every this many compilations of one function, a warning says which check keeps failing.
RECOMPILE_WARNING = 8


class Cache:
    def __init__(self, limit: int = DEFAULT_CACHE_SIZE):
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"thunder: cache_size must be a positive int, got {limit!r}")
        self.limit = limit
        self.entries: list = []  # in compile order
        self.order: tuple = ()  # most recently used last
        self.lock = threading.RLock()
        self.evicted = 0

    def touch(self, entry) -> None:
        """``entry`` was just used: it becomes the most recent."""
        with self.lock:
            if entry in self.order:
                self.order = tuple(e for e in self.order if e is not entry) + (entry,)

    def add(self, entry) -> list:
        """Add a new entry (the most recent); evict the least recently used ones beyond the
        limit and return them."""
        with self.lock:
            self.entries.append(entry)
            order = self.order + (entry,)
            evicted = list(order[: max(0, len(order) - self.limit)])
            self.order = order[len(evicted) :]
            for e in evicted:
                self.entries.remove(e)
            self.evicted += len(evicted)
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
