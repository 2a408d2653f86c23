"""Version counters of the tensors a traced program writes in place, as eager's autograd has them.

Eager PyTorch counts the in-place writes into each storage (a tensor and all its views share
one counter). An op that saves a tensor for its backward notes the counter, and ``backward()``
raises when the counter has moved since: the saved value was overwritten. In a trace every
in-place write is functional (``y.add_(1)`` is ``t1 = ltorch.add(y, 1)`` and ``y`` is ``t1``
from then on), so the trace alone cannot tell; acquisition records here, per value, the
storage it lives in and the storage's version it holds, and per storage its writes in order.

``Versions.overwritten(value, reader_outputs, reader_args)`` answers the question of
``thunder/transforms/saved_versions.py``: which writes into ``value``'s storage happened after
the op that made ``reader_outputs`` read (or made) ``value``. The value an in-place op reads
of the tensor it writes is never overwritten: eager saves a copy of it (``x.mul_(w)`` saves
the old ``x`` for ``w``'s gradient, and neither this write nor a later one reaches the copy),
unless the op reads that tensor twice (``a.mul_(a)`` saves ``a`` itself as the other operand,
and eager raises).
"""

from __future__ import annotations

import dataclasses

from thunder.core.source import SourceLocation


@dataclasses.dataclass(frozen=True)
class Write:
    """One in-place write: ``op`` (``torch.Tensor.add_``) at ``source`` replaced ``target``
    (a value of ``storage``), moving the storage to ``version``; ``made``: the values that
    computing the write recorded."""

    op: str
    source: SourceLocation | None
    storage: str
    version: int
    target: str
    made: frozenset[str]


class Versions:
    """Storages and versions of the values of one trace (see the module docstring)."""

    def __init__(self):
        self._of: dict[str, tuple[str, int]] = {}  # value -> (storage, version); else its own, 0
        self.writes: dict[str, list[Write]] = {}  # storage -> its writes, in order
        self._made_by: dict[str, Write] = {}
        # the write being made: (storage, version, target, op, source, values bound)
        self._open: tuple | None = None

    def of(self, name: str) -> tuple[str, int]:
        return self._of.get(name, (name, 0))

    def view(self, view: str, base: str) -> None:
        """``view`` aliases ``base``: it shares its storage, at the version it has now."""
        self._of[view] = self.of(base)

    @property
    def writing(self) -> bool:
        return self._open is not None

    def begin(self, target: str, op: str, source: SourceLocation | None) -> None:
        storage, _ = self.of(target)
        version = len(self.writes.get(storage, ())) + 1
        self._open = (storage, version, target, op, source, [])

    def bind(self, name: str, made: bool) -> None:
        """The write gave its target the value ``name``. A value the write ``made`` holds (part of)
        the storage, at its new version; one it did not make (an op that gave back an existing
        value) keeps its own storage, and the write still moves the target's counter."""
        storage, version, *_ = self._open
        if made:
            self._of[name] = (storage, version)
        self._open[5].append(name)

    def cancel(self) -> None:
        """Close the write without counting it: an in-place op that changed no value (a tensor
        subclass whose dispatch writes only a temporary of its own)."""
        self._open = None

    def end(self, made: set[str]) -> None:
        """Close the write; ``made``: every value recorded since the op began."""
        storage, version, target, op, source, bound = self._open
        self._open = None
        if not bound:  # the target kept its value (``x.copy_(x)``)
            return
        w = Write(op, source, storage, version, target, frozenset(made))
        self.writes.setdefault(storage, []).append(w)
        for n in made:
            self._made_by.setdefault(n, w)

    def overwritten(self, value: str, reader_outputs: tuple[str, ...], reader_args: list[str]) -> list[Write]:
        """The writes into ``value``'s storage after the op that output ``reader_outputs``
        (and read ``reader_args``) read or made ``value``."""
        storage, version = self.of(value)
        writes = self.writes.get(storage)
        if not writes:
            return []
        own = next((self._made_by[n] for n in reader_outputs if n in self._made_by), None)
        if own is not None and own.target == value and reader_args.count(value) == 1:
            return []  # eager saves a copy of the old value (``original_self``): no write reaches it
        return [w for w in writes if w.version > version]
