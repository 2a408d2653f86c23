"""The forward and the backward of a compilation as a pair: what crosses the cut, and which
forward op each backward BoundSymbol differentiates.

The grad pass splits the joint trace into a forward that returns the outputs and the values
saved for backward, and a backward that takes those values and the outputs' cotangents
(``thunder/transforms/split.py``). Both traces list the saved names in
``info.saved_for_backward``; each backward BoundSymbol names the forward op it
differentiates by that op's outputs in ``info.differentiates`` (one it recomputes, in
``info.recomputes``). Names are kept from pass to pass, so a backward pass is paired with
the forward pass the same pass made (``Transform for execution`` with ``Transform for
execution``), and a link resolves at any step after the split::

    pair = pair_of(model)                   # the final forward and backward, or None
    pair.saved                              # ["x", "w", "t1", "t4"]
    pair.target(bw_node)                    # "t1": the forward node it differentiates
    pair.sources("t1")                      # ["t11", "t12", ...]: the backward nodes that do

Links are read off the BoundSymbols (not their printed lines). A node inside a fusion region
links on its own; the region's line lists the forward ops of its parts. Lines that only delete
values are left out of the pair views (see ``shown``).

``model.pair(backward_index)`` is ``pair_of`` kept on the model, one pair per backward pass:
this module sets that method on ``TraceModel``, since the model imports no module above it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from explorer.model.nodes import Node
from explorer.model.passes import PassModel, TraceSeries
from explorer.model.traces import TraceModel


@dataclasses.dataclass(eq=False)
class Pair:
    """One forward pass and the backward pass made by the same pass. Its views are set on it by
    the modules that make them, as the model imports no view: ``text()`` and ``graph()`` by
    ``explorer.views.columns.pair``, its notebook display (``_repr_mimebundle_``) by ``explorer.views.html``."""

    forward: PassModel
    backward: PassModel
    forward_series: TraceSeries
    backward_series: TraceSeries
    saved: list[str]  # in the order the forward returns them and the backward takes them
    _producer: dict[str, str] | None = dataclasses.field(default=None, repr=False)
    _sources: dict[str, list[str]] | None = dataclasses.field(default=None, repr=False)

    @property
    def cotangents(self) -> list[str]:
        """The backward's inputs after the saved values: one cotangent per differentiable output."""
        return self.backward.args[len(self.saved) :]

    @property
    def recomputed(self) -> list[str]:
        """Ids of the backward's nodes that recompute a forward value instead of reading it saved."""
        return [n.id for n in walk_shown(self.backward) if "recomputed" in n.tags]

    def saved_in(self, n: Node) -> list[str]:
        """The saved values a node makes (forward) or reads (backward), in the saved order."""
        names = set(n.inputs) | set(n.outputs)
        return [s for s in self.saved if s in names]

    def target(self, n: Node) -> str | None:
        """The id of the forward node a backward node differentiates or recomputes (None:
        it records neither, or that op is not in the forward)."""
        key = differentiated(n) or recomputed_from(n)
        if not key:
            return None
        producer = self.producer()
        return next((producer[name] for name in key if name in producer), None)

    def targets(self, n: Node) -> list[str]:
        """What ``target`` gives for the node, or for a fusion region, for each of its parts."""
        t = self.target(n)
        if t is not None:
            return [t]
        if "fusion" not in n.tags:
            return []
        return list(dict.fromkeys(t for c in n.children if (t := self.target(c)) is not None))

    def sources(self, forward_id: str) -> list[str]:
        """Ids of the backward nodes (fusion parts included) that differentiate or recompute
        the forward node of that id, in backward order."""
        if self._sources is None:
            self._sources = {}
            for n in walk_shown(self.backward):
                t = self.target(n)
                if t is not None:
                    self._sources.setdefault(t, []).append(n.id)
        return self._sources.get(forward_id, [])

    def producer(self) -> dict[str, str]:
        """Forward value name -> the id of the forward node that makes it (a fusion region's
        part rather than the region)."""
        if self._producer is None:
            self._producer = {name: n.id for n in walk_shown(self.forward) for name in n.outputs}
        return self._producer

    def summary(self) -> str:
        """One line: the passes paired, what is saved and what is recomputed."""
        rec = self.recomputed
        return (
            f"forward pass {self.forward.index} ({self.forward.name}) and backward pass "
            f"{self.backward.index} ({self.backward.name}); {len(self.saved)} saved for backward"
            + (f", {len(rec)} recomputed in the backward" if rec else "")
        )

    def to_dict(self) -> dict:
        """Plain data: the passes paired, the saved names, and every link."""
        return {
            "forward": self.forward.index,
            "backward": self.backward.index,
            "saved": list(self.saved),
            "cotangents": self.cotangents,
            "recomputed": self.recomputed,
            "links": {n.id: t for n in walk_shown(self.backward) if (t := self.target(n)) is not None},
        }


def differentiated(n: Node) -> tuple[str, ...]:
    """The outputs of the forward op a backward node differentiates (() when none is recorded)."""
    return tuple(n.bsym_info.differentiates or ())


def recomputed_from(n: Node) -> tuple[str, ...]:
    """The outputs of the forward op a backward node recomputes (() when it recomputes none)."""
    return tuple(n.bsym_info.recomputes or ())


def shown(nodes: list[Node]) -> list[Node]:
    """The nodes a pair view shows: all but the lines that only delete values."""
    return [n for n in nodes if "del" not in n.tags]


def walk_shown(p: PassModel) -> Iterator[Node]:
    """The top-level nodes of a pass a pair view shows, each followed by the parts of a fusion
    region (what a link can name)."""
    for n in shown(p.nodes):
        yield n
        if "fusion" in n.tags:
            yield from shown(n.children)


def pair_of(model: TraceModel, backward_index: int = -1) -> Pair | None:
    """The forward and backward of ``model`` (None when it has no backward): the backward
    pass ``backward_index`` and the forward pass the same pass made."""
    fs, bs = model.series.get("computation"), model.series.get("backward")
    if fs is None or bs is None or not bs.passes:
        return None
    b = bs.passes[backward_index]
    offset = len(fs.passes) - len(bs.passes)
    f = fs.passes[offset + b.index] if offset >= 0 else fs.final
    if _saved_names(f) is None or _pass_kind(f.name) != _pass_kind(b.name):
        f = fs.final
    saved = _saved_names(f)
    if saved is None:
        saved = _saved_names(b) or []
    return Pair(f, b, fs, bs, list(saved))


def _pair(self: TraceModel, backward_index: int = -1) -> Pair | None:
    """The forward and backward passes as a pair: the backward pass ``backward_index`` and the
    forward pass the same pass made (made once, then kept); None without a backward."""
    bs = self.series.get("backward")
    if bs is None:
        return None
    index = range(len(bs.passes))[backward_index]
    if index not in self._pairs:
        self._pairs[index] = pair_of(self, index)
    return self._pairs[index]


# ``model.pair()``: set here, as the model imports no module above it
TraceModel.pair = _pair


def _saved_names(p: PassModel) -> list[str] | None:
    return p.saved_for_backward


def _pass_kind(name: str) -> str:
    """``Split: forward`` and ``Split: backward`` are the same pass on either side."""
    return name.split(":", 1)[0]
