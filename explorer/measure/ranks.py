"""The traces of every rank of a distributed run, in one notebook.

Each worker process saves its compilation (and, given inputs, the measured time of each
line) to a file of its own; the notebook loads them all::

    # in each worker, after the jitted model has run (torch.distributed initialised)
    explorer.save_rank(jmodel, "traces/", args=(x,))      # traces/rank3.json on rank 3

    # in the notebook
    ranks = explorer.load_ranks("traces/")                 # a RankSet
    ranks[0]                                               # rank 0's TraceModel (loaded)
    ranks.timings("computation")                           # each line's time on each rank
    ranks                                                  # shows the comparison, each rank's traces
    ranks.explore()                                        # the explorer, with a rank switch

Lines are matched across ranks by node id (the names of what they make: every rank traces
the same program and names it the same way); a line one rank does not have has no time
there. The slowest rank of each line is how a straggler shows up, and a collective that
takes long on every rank but one is the others waiting for that one. The views are in
``explorer.views.columns.ranks``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import socket

from explorer.model.traces import TraceModel

RANK_FILE = "rank{rank}.json"
_RANK_FILE = re.compile(r"^rank(\d+)\.json$")


class RankFilesError(ValueError):
    pass


def save_rank(
    obj,
    path_dir: str,
    rank: int | None = None,
    *,
    args: tuple | None = None,
    kwargs: dict | None = None,
    entry: int | None = None,
    world_size: int | None = None,
) -> str:
    """Write this process's compilation of ``obj`` (a jitted function or module, or a
    TraceModel) to ``path_dir/rank<rank>.json``; returns the file's path.

    ``rank`` and ``world_size`` default to torch.distributed's (initialised); 0 and 1 without
    it. With ``args`` (and ``kwargs``) the cached entry's final traces are run on them first and
    every line is timed (``explorer.measure.runner.measure``): every rank must do the same, as the
    program's collectives wait for all of them.
    """
    from explorer.model.compilation import model_of

    rank, world_size = _rank_and_size(rank, world_size)
    if (args is not None or kwargs is not None) and not isinstance(obj, TraceModel):
        from explorer.measure.fitting import entry_for

        entry = entry_for(obj, tuple(args or ()), kwargs, entry)
    model = model_of(obj, entry=entry)
    if args is not None or kwargs is not None:
        from explorer.measure.runner import measure

        measure(obj, tuple(args or ()), kwargs, entry=entry).attach(model)
    os.makedirs(path_dir, exist_ok=True)
    path = os.path.join(path_dir, RANK_FILE.format(rank=rank))
    data = {"rank": rank, "world_size": world_size, "host": socket.gethostname(), "model": model.to_dict()}
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)  # a notebook reading the folder never sees half a file
    return path


def _rank_and_size(rank: int | None, world_size: int | None) -> tuple[int, int]:
    import torch.distributed as dist

    on = dist.is_available() and dist.is_initialized()
    if rank is None:
        rank = dist.get_rank() if on else 0
    if world_size is None:
        world_size = dist.get_world_size() if on else 1
    return rank, world_size


@dataclasses.dataclass(eq=False)
class RankSet:
    """The loaded TraceModel of each rank (``models[rank]``), with where each was saved."""

    models: dict[int, TraceModel]
    world_size: int | None = None
    hosts: dict[int, str] = dataclasses.field(default_factory=dict)
    files: dict[int, str] = dataclasses.field(default_factory=dict)

    @property
    def ranks(self) -> list[int]:
        return sorted(self.models)

    @property
    def missing(self) -> list[int]:
        """The ranks of the run with no file (when the world size is known)."""
        return [r for r in range(self.world_size or 0) if r not in self.models]

    def __getitem__(self, rank: int) -> TraceModel:
        try:
            return self.models[rank]
        except KeyError:
            raise KeyError(f"explorer: no rank {rank} here; loaded ranks: {self.ranks}") from None

    def __iter__(self):
        return iter(self.ranks)

    def __len__(self) -> int:
        return len(self.models)

    def timings(self, kind: str = "computation") -> RankTimings:
        """Each line's measured time on each rank, the slowest rank of each line."""
        return rank_timings(self, kind)

    def __repr__(self) -> str:
        return f"<RankSet of ranks {self.ranks}{f' of {self.world_size}' if self.world_size else ''}>"


def load_ranks(path_dir: str) -> RankSet:
    """Every ``rank<N>.json`` that ``save_rank`` wrote in ``path_dir``, loaded."""
    if not os.path.isdir(path_dir):
        raise RankFilesError(
            f"explorer: {path_dir!r} is not a folder; save_rank(jfn, {path_dir!r}) writes one"
        )
    found = sorted(
        (int(m[1]), name) for name in os.listdir(path_dir) if (m := _RANK_FILE.match(name)) is not None
    )
    if not found:
        raise RankFilesError(
            f"explorer: no rank<N>.json in {path_dir!r}; each worker writes its own with "
            f"explorer.save_rank(jfn, {path_dir!r})"
        )
    out = RankSet({})
    sizes = set()
    for _, name in found:
        path = os.path.join(path_dir, name)
        with open(path, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as e:
                raise RankFilesError(
                    f"explorer: {path} is not JSON ({e}); was its worker stopped while writing?"
                ) from e
        if not isinstance(data, dict) or "model" not in data or "rank" not in data:
            raise RankFilesError(
                f"explorer: {path} was not written by explorer.save_rank (no 'rank' and 'model')"
            )
        rank = data["rank"]
        if rank in out.models:
            raise RankFilesError(f"explorer: rank {rank} is saved twice: in {out.files[rank]} and {path}")
        out.models[rank] = TraceModel.from_dict(data["model"])
        out.files[rank] = path
        out.hosts[rank] = data.get("host") or "?"
        if data.get("world_size") is not None:
            sizes.add(data["world_size"])
    if len(sizes) > 1:
        raise RankFilesError(
            f"explorer: the files in {path_dir!r} come from runs of different sizes {sorted(sizes)}; "
            "keep one run's files per folder"
        )
    out.world_size = sizes.pop() if sizes else None
    return out


@dataclasses.dataclass
class LineTimes:
    """One line of the trace and its measured seconds on each rank (None: not measured there,
    or the rank has no such line)."""

    id: str
    line: str
    seconds: dict[int, float | None]
    collective: str | None = None  # the collective's kind, for a collective's line

    @property
    def slowest(self) -> int | None:
        """The rank on which the line took longest."""
        have = {r: t for r, t in self.seconds.items() if t is not None}
        return max(have, key=lambda r: (have[r], -r)) if have else None

    @property
    def spread(self) -> float:
        """The slowest rank's time less the fastest's (0 with fewer than two ranks measured)."""
        have = [t for t in self.seconds.values() if t is not None]
        return max(have) - min(have) if len(have) > 1 else 0.0


@dataclasses.dataclass
class RankTimings:
    """Per line of one trace kind's final pass, the time on each rank, in trace order (the
    lines of the lowest rank first, then lines only other ranks have); ``totals`` per rank."""

    kind: str
    ranks: list[int]
    lines: list[LineTimes]
    totals: dict[int, float | None]
    devices: dict[int, str | None]

    @property
    def measured(self) -> bool:
        return any(t is not None for t in self.totals.values())

    @property
    def slowest_rank(self) -> int | None:
        have = {r: t for r, t in self.totals.items() if t is not None}
        return max(have, key=lambda r: (have[r], -r)) if have else None

    def by_spread(self, limit: int | None = None) -> list[LineTimes]:
        """The lines whose time differs most between ranks first: stragglers and waits."""
        out = sorted(self.lines, key=lambda x: -x.spread)
        return out[:limit] if limit is not None else out

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def rank_timings(ranks: RankSet, kind: str = "computation") -> RankTimings:
    """Each line of ``kind``'s final pass with its time on each rank (see ``RankTimings``)."""
    order: dict[str, LineTimes] = {}
    totals: dict[int, float | None] = {}
    devices: dict[int, str | None] = {}
    for r in ranks.ranks:
        m = ranks[r]
        s = m.series.get(kind)
        times = m.timings.get(kind) or {}
        totals[r] = sum(times.values()) if times else None
        devices[r] = m.timing_device
        if s is None:
            continue
        for n in s.final.nodes:
            if "del" in n.tags:
                continue
            row = order.get(n.id)
            if row is None:
                call = n.collective
                row = order[n.id] = LineTimes(n.id, n.line, {}, call["kind"] if call else None)
            row.seconds[r] = times.get(n.id)
    for row in order.values():
        row.seconds = {r: row.seconds.get(r) for r in ranks.ranks}
    return RankTimings(kind, ranks.ranks, list(order.values()), totals, devices)
