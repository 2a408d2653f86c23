"""The collectives of a pass, as plain data: what each moves, on which group, and what
overlaps it.

A collective is a start (``all_reduce``, ``all_gather``, ``reduce_scatter``, ``broadcast``,
``all_to_all_single``) and the ``wait`` that ends it, two lines of the trace (see
``thunder/ops/collectives.py``); the lines between them run while the data is in flight::

    comm = communication_of(pass_model)       # made once per pass, then kept
    comm.collectives                          # [Collective]: each start, in trace order
    c = comm.of("t4")                         # the collective of a start or of its wait
    c.kind, c.bytes, c.group, c.group_size    # "all_reduce", 4096, "0", 8
    c.wait, c.overlap                         # "t9", ["t5", "t6"]: the node ids in between
    comm.summary()                            # count and bytes in all and by kind

A node's own call (kind, arguments, bytes per rank, the group's size) is ``Node.collective``,
read off the BoundSymbol by the model (or off the saved data of a loaded model); this module
pairs starts with their waits by the value the wait reads, at the top level of the pass.
``pairing(nodes, i)`` pairs one start by reading only the lines up to its wait, for views that
show a budgeted part of a long trace.
"""

from __future__ import annotations

import dataclasses
import weakref

from explorer.model.memory import fmt_bytes
from explorer.model.nodes import Node
from explorer.model.passes import PassModel

WAIT = "wait"  # the kind of the line that ends a collective
_COMMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # PassModel -> Communication


@dataclasses.dataclass
class Collective:
    """One collective of a pass. ``id``: its start's node id; ``bytes``: what one rank sends
    or receives (all_reduce, reduce_scatter, all_to_all_single: the input; all_gather: the
    gathered output; broadcast: the tensor); ``wait``: the node id of the wait that ends it
    (None: not ended in this pass); ``overlap``: the node ids of the lines between the start
    and its wait, ``del`` lines left out."""

    id: str
    kind: str
    bytes: int
    group: str | None = None
    group_size: int | None = None
    op: str | None = None  # the reduction
    src: int | None = None  # broadcast's source rank
    wait: str | None = None
    overlap: list[str] = dataclasses.field(default_factory=list)

    @staticmethod
    def of(n: Node) -> Collective | None:
        """The collective a start's node begins (no wait, no overlap yet); None for others."""
        call = n.collective
        if call is None or call["kind"] == WAIT:
            return None
        args = call.get("args") or {}
        return Collective(
            n.id,
            call["kind"],
            int(call.get("bytes") or 0),
            args.get("group"),
            call.get("group_size"),
            args.get("op"),
            args.get("src"),
        )

    def group_label(self) -> str:
        """``group '0' of 8 ranks`` (the size when recorded)."""
        if self.group is None:
            return "group ?"
        size = (
            ""
            if self.group_size is None
            else f" of {self.group_size} rank{'' if self.group_size == 1 else 's'}"
        )
        return f"group {self.group!r}{size}"

    def label(self) -> str:
        """``all_reduce sum, 4.0 KiB per rank, group '0' of 8 ranks``."""
        what = (
            self.kind
            + (f" {self.op}" if self.op else "")
            + (f" from rank {self.src}" if self.src is not None else "")
        )
        return f"{what}, {fmt_bytes(self.bytes)} per rank, {self.group_label()}"

    def in_flight(self, lines: dict[str, str] | None = None, limit: int = 8) -> str:
        """What runs while it is in flight: ``in flight until t9; overlaps 2 lines: ...``
        (``lines``: node id -> line, to name them; at most ``limit``)."""
        if self.wait is None:
            return "not waited for in this trace"
        n = len(self.overlap)
        text = f"in flight until {self.wait}; overlaps {n} line{'' if n == 1 else 's'}"
        if n and lines is not None:
            shown = [lines.get(i, i) for i in self.overlap[:limit]]
            text += ": " + "; ".join(shown) + (f"; ... {n - limit} more" if n > limit else "")
        return text


@dataclasses.dataclass
class KindTotal:
    count: int = 0
    bytes: int = 0


@dataclasses.dataclass
class CommSummary:
    """The collectives of a pass in all (``count``, ``bytes`` per rank) and by kind."""

    count: int
    bytes: int
    by_kind: dict[str, KindTotal]

    def text(self) -> str:
        """``3 collectives, 12.0 KiB per rank: all_reduce 2 (8.0 KiB), all_gather 1 (4.0 KiB)``."""
        if not self.count:
            return "no collectives"
        kinds = ", ".join(f"{k} {t.count} ({fmt_bytes(t.bytes)})" for k, t in self.by_kind.items())
        return f"{self.count} collective{'' if self.count == 1 else 's'}, {fmt_bytes(self.bytes)} per rank: {kinds}"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class Communication:
    """The collectives of one pass's top-level lines, each paired with its wait."""

    def __init__(self, nodes: list[Node]):
        self.collectives: list[Collective] = []
        self._of: dict[str, Collective] = {}  # start or wait id -> its collective
        self._making: dict[str, Collective] = {}  # a start's output name -> its collective
        pending: dict[str, Collective] = {}  # a start's output name -> the collective
        for n in nodes:
            if "communication" not in n.tags:
                if "del" not in n.tags:
                    for c in pending.values():
                        c.overlap.append(n.id)
                continue
            call = n.collective
            if call["kind"] == WAIT:
                c = next((pending.pop(a) for a in n.inputs if a in pending), None)
                if c is not None:
                    c.wait = n.id
                    self._of[n.id] = c
                for other in pending.values():
                    other.overlap.append(n.id)
                continue
            for other in pending.values():
                other.overlap.append(n.id)
            c = Collective.of(n)
            self.collectives.append(c)
            self._of[n.id] = c
            for name in n.outputs:
                pending[name] = self._making[name] = c
        for c in pending.values():
            c.overlap = []  # never waited for here: nothing is known to overlap it

    def of(self, node_id: str) -> Collective | None:
        """The collective a start or a wait (by node id) belongs to."""
        return self._of.get(node_id)

    def making(self, name: str) -> Collective | None:
        """The collective whose start makes the value ``name`` (a start drawn below the
        executor's line that runs it has its own node id, and the same output)."""
        return self._making.get(name)

    def summary(self) -> CommSummary:
        by_kind: dict[str, KindTotal] = {}
        for c in self.collectives:
            t = by_kind.setdefault(c.kind, KindTotal())
            t.count += 1
            t.bytes += c.bytes
        return CommSummary(len(self.collectives), sum(c.bytes for c in self.collectives), by_kind)


def communication_of(p: PassModel) -> Communication:
    """The collectives of ``p`` (read once, kept while ``p`` lives)."""
    comm = _COMMS.get(p)
    if comm is None:
        comm = _COMMS[p] = Communication(p.nodes)
    return comm


def pairing(nodes: list[Node], i: int) -> Collective | None:
    """The collective the start ``nodes[i]`` begins, with its wait and overlap, read from the
    lines after it up to that wait only (None when ``nodes[i]`` is no start)."""
    c = Collective.of(nodes[i])
    if c is None:
        return None
    outs = set(nodes[i].outputs)
    for n in nodes[i + 1 :]:
        call = n.collective if "communication" in n.tags else None
        if call is not None and call["kind"] == WAIT and outs.intersection(n.inputs):
            c.wait = n.id
            return c
        if "del" not in n.tags:
            c.overlap.append(n.id)
    c.overlap = []  # never waited for here: nothing is known to overlap it
    return c
