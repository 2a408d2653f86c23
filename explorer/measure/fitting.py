"""Which cache entry a measurement runs: the one whose prologue takes the user's inputs.

A jitted function's last entry is not always the one that fits this call: a module's counter
moved since (``self.calls`` is a different literal), the inputs are of another size, or nothing
was compiled yet. ``entry_for`` tries the entries' prologues (checks only: nothing runs) from the
most recent back (for ``explorer.memory``, which runs an entry in the grad mode it was traced in,
in the other grad mode too), and when none takes the inputs it compiles one by calling the function once
with the user's state saved before and put back after (``hands_off.Snapshot``), so that asking
the explorer never moves a counter, writes an input or draws a random number.
"""

from __future__ import annotations

import torch

import thunder
from explorer.measure.hands_off import Snapshot


def entry_for(
    jfn, args: tuple, kwargs: dict | None, entry: int | None = None, *, either_grad_mode: bool = False
) -> int:
    """``entry`` when given; else the index of the most recent cache entry of ``jfn`` whose
    prologue accepts ``args`` and ``kwargs``, compiled for them first when there is none.
    ``either_grad_mode``: an entry traced in the other grad mode does too (a measurement that
    runs each entry in the grad mode it was traced in: ``explorer.memory``)."""
    if entry is not None:
        return entry
    kwargs = kwargs or {}
    found = _fitting(jfn, args, kwargs, either_grad_mode)
    if found is not None:
        return found
    with Snapshot.kept(jfn, args, kwargs):
        jfn(*args, **kwargs)
    found = _fitting(jfn, args, kwargs, either_grad_mode)
    if found is None:
        raise RuntimeError(
            f"explorer: {getattr(jfn, '__name__', jfn)!s} was called on these inputs, but none of its "
            "cache entries takes them afterwards: the call changes state its checks read"
        )
    return found


def _fitting(jfn, args: tuple, kwargs: dict, either_grad_mode: bool) -> int | None:
    """The most recent entry whose prologue takes the inputs in this grad mode (else, with
    ``either_grad_mode``, in the other one: a program compiled under ``torch.no_grad()`` and
    asked about outside it)."""
    entries = thunder.compile_stats(jfn).entries
    modes = (torch.is_grad_enabled(), not torch.is_grad_enabled())
    for grad in modes if either_grad_mode else modes[:1]:
        with torch.set_grad_enabled(grad):
            for i in range(len(entries) - 1, -1, -1):
                try:
                    entries[i].prologue(*args, **kwargs)
                except Exception:  # a failed check, or inputs it cannot unpack
                    continue
                return i
    return None
