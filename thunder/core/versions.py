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
        self._made_by: dict[str, tuple[Write, ...]] = {}  # value -> the writes of the op that made it
        # the writes being made, one per storage an op writes (``torch._foreach_add_`` writes
        # each tensor of its list): [storage, version, target, op, source, values bound]
        self._open: list[list] = []

    def of(self, name: str) -> tuple[str, int]:
        return self._of.get(name, (name, 0))

    def view(self, view: str, base: str) -> None:
        """``view`` aliases ``base``: it shares its storage, at the version it has now."""
        self._of[view] = self.of(base)

    @property
    def writing(self) -> bool:
        return bool(self._open)

    def begin(self, target: str | list[str], op: str, source: SourceLocation | None) -> None:
        """Open the write of ``target`` (or one write of each of several targets)."""
        self._open = []
        for t in [target] if isinstance(target, str) else target:
            storage, _ = self.of(t)
            version = len(self.writes.get(storage, ())) + 1
            self._open.append([storage, version, t, op, source, []])

    def bind(self, name: str, made: bool, target: str | None = None) -> None:
        """The write gave its target the value ``name``. A value the write ``made`` holds (part of)
        the storage, at its new version; one it did not make (an op that gave back an existing
        value) keeps its own storage, and the write still moves the target's counter. Of an op
        writing several targets, ``target`` says which (the first one otherwise)."""
        entry = next((e for e in self._open if e[2] == target), self._open[0])
        storage, version, *_ = entry
        if made:
            self._of[name] = (storage, version)
        entry[5].append(name)

    def cancel(self) -> None:
        """Close the write without counting it: an in-place op that changed no value (a tensor
        subclass whose dispatch writes only a temporary of its own)."""
        self._open = []

    def end(self, made: set[str]) -> None:
        """Close the write; ``made``: every value recorded since the op began."""
        opened, self._open = self._open, []
        ws = []
        for storage, version, target, op, source, bound in opened:
            if not bound:  # the target kept its value (``x.copy_(x)``)
                continue
            ws.append(Write(op, source, storage, version, target, frozenset(made)))
            self.writes.setdefault(storage, []).append(ws[-1])
        for n in made if ws else ():
            self._made_by.setdefault(n, tuple(ws))

    def overwritten(self, value: str, reader_outputs: tuple[str, ...], reader_args: list[str]) -> list[Write]:
        """The writes into ``value``'s storage after the op that output ``reader_outputs``
        (and read ``reader_args``) read or made ``value``."""
        storage, version = self.of(value)
        writes = self.writes.get(storage)
        if not writes:
            return []
        own = next((self._made_by[n] for n in reader_outputs if n in self._made_by), ())
        if any(w.target == value for w in own) and reader_args.count(value) == 1:
            return []  # eager saves a copy of the old value (``original_self``): no write reaches it
        return [w for w in writes if w.version > version]
