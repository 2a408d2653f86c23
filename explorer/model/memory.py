"""Where the memory goes: the bytes each line of a trace allocates and frees, as plain data.

``memory_of(model, kind)`` walks the top-level lines of one trace (its final pass by default)
and keeps a table of storages::

    t0 = torch.nn.functional.linear(x, w, b)   # allocates t0: numel * itemsize bytes
    t1 = torch.transpose(t0, 0, 1)             # a view: shares t0's storage, allocates nothing
    del t0                                     # t0's storage stays alive: t1 still names it
    t2 = torch.relu(t1)                        # allocates t2
    del t1                                     # frees the storage t0 and t1 shared

Sizes come from the proxies' shapes and dtypes. A line whose symbol (or the one op it stands
for) is a shape op is run on ``meta`` tensors with the strides its inputs have, which says
whether torch returns a view (no bytes) or a copy (a ``reshape`` of a transposed tensor
does). An input's strides are those the prologue checks (acquisition checks the layout of
every input a view-or-copy decision rested on: ``x.flatten()`` of a transposed ``x`` copies);
an input whose layout the trace did not depend on is taken as contiguous. A line that is not a
shape op but reads a value laid out otherwise (``x.t() + 1`` keeps the transposed layout) is run
on meta too, so a later reshape of its result is judged on the layout torch gives it. In-place ops and outputs that are inputs allocate nothing. The trace's inputs are not
freed by the program (the caller holds them): their bytes are reported apart
(``input_bytes``) and are not in the live figures, which count what the program itself
allocated. A trace without ``del`` lines (a pass before ``del_last_used``) frees each value
after its last use, as that pass would (the peak counts a line's outputs beside the values it
reads for the last time), and says so in ``note``.

Measured figures: ``explorer.measure.memory``. Views: ``explorer.views.memory``;
``explorer.memory(jfn)`` is the entry point.
"""

from __future__ import annotations

import dataclasses

from explorer.model.passes import PassModel
from explorer.model.storage import DEL, ELEMENTWISE, INPLACE, PLAIN, VIEW, Kinds, MetaViews
from explorer.model.traces import TraceModel, collector_paused
from thunder.core.proxies import TensorProxy, proxies_in
from thunder.core.subclass import SubclassProxy
from thunder.core.symbolic import hint_of, hints
from thunder.ops import python as python_ops

# prologue checks that pin an input's layout -> its strides from the check's arguments
_LAYOUT_CHECKS = {python_ops.check_strides: lambda args: (args[0], args[1])}


# -- what the compiler recorded (``thunder.core.passinfo``) -------------------------------------
def _saved_for_backward(trace) -> list[str]:
    """Names of the values the forward saves for the backward."""
    return list(trace.info.saved_for_backward or [])


def _rematerialized(trace) -> list[str]:
    """Names of the values rematerialization recomputes in the backward instead of saving."""
    return list(trace.info.rematerialized or [])


def _recomputes(bsym) -> tuple[str, ...]:
    """Names of the values a recomputed backward line recomputes."""
    return tuple(bsym.info.recomputes or ())


# -- sizes ------------------------------------------------------------------------------------
def tensor_bytes(p) -> int:
    """Bytes of a tensor proxy's data (a tensor subclass: its inner tensors); 0 for others."""
    if isinstance(p, SubclassProxy):
        return sum(tensor_bytes(v) for v in p.inner.values())
    if not isinstance(p, TensorProxy):
        return 0
    n = 1
    for s in p.meta_shape:  # (a symbolic size: at the size of the call traced)
        n *= s if type(s) is int else hint_of(s)
    return n * p.meta_dtype.itemsize


def fmt_bytes(n: int | float | None) -> str:
    """``1.5 MiB``, ``512 B``; a dash for None."""
    if n is None:
        return "-"
    sign, n = ("-" if n < 0 else ""), abs(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{sign}{n:.0f} {unit}" if unit == "B" else f"{sign}{n:.1f} {unit}"
        n /= 1024
    return f"{sign}{n:.1f} GiB"


# -- computing --------------------------------------------------------------------------------
def memory_of(
    model: TraceModel,
    kind: str = "computation",
    index: int = -1,
    *,
    strides: dict[str, tuple[int, ...]] | None = None,
) -> MemoryProfile:
    """The computed memory of one trace of ``model`` (default: the final computation trace;
    ``"forward"`` names it too when there is a backward). A compilation with a backward also
    gets its saved-for-backward values and what rematerialization recomputes instead.
    ``strides``: the layouts of the computation's inputs in a real call (input name -> strides,
    ``explorer.measure.memory.input_layouts``), beside those the prologue checks."""
    if kind == "forward" and "forward" not in model.series and "backward" in model.series:
        kind = "computation"  # after the split, the computation trace is the forward
    if kind not in model.series:
        raise ValueError(
            f"explorer: no {kind} trace here to measure memory on; "
            f"there are: {', '.join(model.series) or 'none'}"
        )
    s = model.series[kind]
    p = s.passes[index]
    layouts = {}
    if kind == "computation":
        prologue = model.series.get("prologue")
        layouts = {**(input_strides(prologue.final.trace) if prologue is not None else {}), **(strides or {})}
    prof = compute(p, kind, layouts)
    if "backward" in model.series and kind in ("computation", "backward"):
        forward = model.series["computation"].final
        backward = model.series["backward"].final
        prof.saved, prof.rematerialized, prof.saved_to_recompute = _saved_and_recomputed(forward, backward)
    return prof


def input_strides(prologue) -> dict[str, tuple[int, ...]]:
    """Input name -> the strides a prologue checks it has (at the traced call's sizes)."""
    found: dict[str, tuple[int, ...]] = {}
    for b in prologue.bound_symbols if prologue is not None else ():
        x = b
        while x.sym not in _LAYOUT_CHECKS and len(x.subsymbols) == 1:
            x = x.subsymbols[0]
        read = _LAYOUT_CHECKS.get(x.sym)
        if read is not None:
            p, strides = read(x.args)
            found[p.name] = tuple(int(s) for s in hints(tuple(strides)))
    return found


@collector_paused()
def compute(
    p: PassModel, kind: str = "computation", strides: dict[str, tuple[int, ...]] | None = None
) -> MemoryProfile:
    """Bytes allocated, freed and live after each top-level line of one pass; ``strides``: the
    layout of inputs that are not contiguous (``input_strides`` of the prologue)."""
    trace = p.trace
    if trace is None:
        raise ValueError("explorer: this pass has no trace to compute memory from (a model read from JSON?)")
    bsyms = trace.bound_symbols
    of: dict[str, int] = {}  # live name -> storage
    size: dict[int, int] = {}  # storage -> bytes
    refs: dict[int, int] = {}  # storage -> live names on it
    made: dict[int, int] = {}  # storage -> the row that allocated it (inputs: absent)
    freed_at: dict[int, int] = {}  # storage -> the row that freed it
    inputs: set[int] = set()
    input_bytes = 0
    for a in proxies_in(trace.args):
        if a.name in of or not isinstance(a, TensorProxy):
            continue
        sid = len(size)
        of[a.name], size[sid], refs[sid] = sid, tensor_bytes(a), 1
        inputs.add(sid)
        input_bytes += size[sid]
    kinds = Kinds()
    classes = [kinds.of(b) for b in bsyms]
    has_del = DEL in classes
    free_after: dict[int, list[str]] = {}
    if not has_del:  # free at last use, as del_last_used would
        keep = {q.name for q in proxies_in(trace.output)} | set(of)
        last: dict[str, int] = {}
        for i, b in enumerate(bsyms):
            for q in proxies_in((b.args, b.kwargs)):
                last[q.name] = i
            for q in proxies_in(b.output):
                last.setdefault(q.name, i)
        for name, i in last.items():
            if name not in keep:
                free_after.setdefault(i, []).append(name)
    views = MetaViews(strides)
    rows: list[MemoryRow] = []
    live = peak = 0
    peak_index = -1

    def drop(name: str, row: int) -> int:
        sid = of.pop(name, None)
        if sid is None:
            return 0
        refs[sid] -= 1
        if refs[sid] or sid in inputs:
            return 0
        freed_at[sid] = row
        return size[sid]

    for i, (b, node, what) in enumerate(zip(bsyms, p.nodes, classes)):
        alloc = freed = 0
        if what == DEL:
            for q in proxies_in((b.args, b.kwargs)):
                freed += drop(q.name, i)
        else:
            out = b.output
            outs = [out] if type(out) is TensorProxy else proxies_in(out)
            new = [q for q in outs if q.name not in of and isinstance(q, TensorProxy)]
            plain = what in (PLAIN, ELEMENTWISE)
            if new and plain and views.strided(b):
                views.follow(b, outs, what == ELEMENTWISE)
            if new:
                alias: list[str | None] = [None] * len(outs)
                if not plain:
                    first = next(
                        (q.name for q in proxies_in((b.args, b.kwargs)) if isinstance(q, TensorProxy)), None
                    )
                    found = views.aliases(b, outs) if what != INPLACE else None
                    if found is not None:
                        alias = found
                    elif what in (INPLACE, VIEW):
                        alias = [first] * len(outs)
                by_name = dict(zip((q.name for q in outs), alias))
                for q in new:
                    src = by_name.get(q.name)
                    if src is not None and src in of:
                        sid = of[q.name] = of[src]
                        refs[sid] += 1
                        continue
                    sid = len(size)
                    of[q.name], size[sid], refs[sid], made[sid] = sid, tensor_bytes(q), 1, i
                    alloc += size[sid]
            for name in free_after.get(i, ()):
                freed += drop(name, i)
        if live + alloc > peak or peak_index < 0:  # (a line's inputs are alive while it runs)
            peak, peak_index = live + alloc, i
        live += alloc - freed
        rows.append(MemoryRow(i, node.id, alloc, freed, live, _scope(b), _node=node))
    at_peak = [
        sid for sid, row in made.items() if row <= peak_index and freed_at.get(sid, len(bsyms)) >= peak_index
    ]
    by_module: dict[str, int] = {}
    for sid in at_peak:
        scope = rows[made[sid]].scope
        key = scope if scope is not None else ""
        by_module[key] = by_module.get(key, 0) + size[sid]
    output_bytes = sum(
        size[of[q.name]] for q in proxies_in(trace.output) if q.name in of and of[q.name] not in inputs
    )
    return MemoryProfile(
        kind=kind,
        pass_index=p.index,
        pass_name=p.name,
        rows=rows,
        peak=peak,
        peak_index=peak_index,
        input_bytes=input_bytes,
        output_bytes=output_bytes,
        modules=sorted(by_module.items(), key=lambda kv: -kv[1]),
        has_scopes=any(r.scope is not None for r in rows),
        pass_model=p,
        note=""
        if has_del or not free_after
        else "this trace has no del lines (it comes before del_last_used): "
        "values are freed after their last use",
    )


def _scope(b) -> str | None:
    s = getattr(b, "scope", None)
    return s.path if s is not None else None


def _saved_and_recomputed(forward: PassModel, backward: PassModel):
    """The values the final forward saves for the backward (size, the line that made each),
    those rematerialization recomputes in the backward instead, and the inputs it saved for that."""
    fw = forward.trace
    proxies, maker = {}, {}
    for q in proxies_in(fw.args):
        proxies.setdefault(q.name, q)
    for b, node in zip(fw.bound_symbols, forward.nodes):
        for q in proxies_in(b.output):
            proxies.setdefault(q.name, q)
            maker.setdefault(q.name, node)
    saved = []
    for name in _saved_for_backward(fw):
        q = proxies.get(name)
        node = maker.get(name)
        saved.append(
            SavedValue(
                name,
                tensor_bytes(q) if q is not None else 0,
                node.line if node else None,
                node.id if node else None,
                name not in maker,
            )
        )
    recompute_line = {}
    for b, node in zip(backward.trace.bound_symbols, backward.nodes):
        stack = [(b, node)]
        while stack:
            x, n = stack.pop()
            for name in _recomputes(x):
                recompute_line.setdefault(name, n)
            stack.extend(zip(x.subsymbols, n.children) if x.subsymbols else ())
    recomputed = []
    for name in _rematerialized(fw):
        q = proxies.get(name)
        node = recompute_line.get(name)
        recomputed.append(
            RecomputedValue(
                name,
                tensor_bytes(q) if q is not None else 0,
                node.line if node else None,
                node.id if node else None,
                maker[name].line if name in maker else None,
            )
        )
    saved.sort(key=lambda v: (-v.extra_bytes, -v.bytes))  # what costs memory first; the inputs last
    extra = list(fw.info.saved_to_recompute or [])
    return saved, recomputed, extra


# -- plain data ---------------------------------------------------------------------------------
@dataclasses.dataclass(slots=True)
class MemoryRow:
    """One top-level line: bytes it allocates and frees, bytes live after it (computed), and
    the measured live bytes when measured. ``text`` is how the line prints."""

    index: int
    node_id: str
    allocated: int
    freed: int
    live: int
    scope: str | None = None
    measured: int | None = None
    _node: object = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def text(self) -> str:
        return self._node.line if self._node is not None else self.node_id

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "text": self.text,
            "allocated": self.allocated,
            "freed": self.freed,
            "live": self.live,
            "measured": self.measured,
            "scope": self.scope,
        }


@dataclasses.dataclass
class SavedValue:
    """A value the forward saves for the backward: its size and the forward line that made
    it (``is_input``: an input of the forward, saved at no extra cost)."""

    name: str
    bytes: int
    line: str | None
    node_id: str | None
    is_input: bool

    @property
    def extra_bytes(self) -> int:
        """The bytes saving it keeps alive beyond the forward's inputs (0 for an input)."""
        return 0 if self.is_input else self.bytes


@dataclasses.dataclass
class RecomputedValue:
    """A value rematerialization no longer saves: its size (the bytes not kept from the
    forward to the backward), the backward line that recomputes it, the forward line that made it."""

    name: str
    bytes: int
    line: str | None
    node_id: str | None
    forward_line: str | None


@dataclasses.dataclass
class MemoryProfile:
    """The memory of one trace: ``rows`` (one per top-level line), the computed ``peak`` and
    the row it occurs at, and where measured (``measured_on``) the measured figures per row.
    ``modules`` splits the bytes live at the peak by the module that allocated them."""

    kind: str
    pass_index: int
    pass_name: str
    rows: list[MemoryRow]
    peak: int
    peak_index: int
    input_bytes: int
    output_bytes: int
    modules: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    has_scopes: bool = False
    note: str = ""
    measured_on: str | None = None
    saved: list[SavedValue] = dataclasses.field(default_factory=list)
    rematerialized: list[RecomputedValue] = dataclasses.field(default_factory=list)
    saved_to_recompute: list[str] = dataclasses.field(default_factory=list)
    pass_model: PassModel | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def measured(self) -> bool:
        return self.measured_on is not None

    @property
    def peak_line(self) -> str | None:
        return self.rows[self.peak_index].text if self.rows else None

    @property
    def measured_peak(self) -> int | None:
        if not self.measured:
            return None
        return max((r.measured for r in self.rows), default=0)

    @property
    def measured_peak_index(self) -> int | None:
        if not self.measured or not self.rows:
            return None
        return max(range(len(self.rows)), key=lambda i: (self.rows[i].measured, -i))

    @property
    def saved_bytes(self) -> int:
        return sum(v.bytes for v in self.saved if not v.is_input)

    @property
    def rematerialized_bytes(self) -> int:
        return sum(v.bytes for v in self.rematerialized)

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "pass": self.pass_index,
            "pass_name": self.pass_name,
            "rows": [r.to_dict() for r in self.rows],
            "peak": self.peak,
            "peak_index": self.peak_index,
            "peak_line": self.peak_line,
            "measured": self.measured,
            "measured_on": self.measured_on,
            "measured_peak": self.measured_peak,
            "input_bytes": self.input_bytes,
            "output_bytes": self.output_bytes,
            "modules": [list(m) for m in self.modules],
            "note": self.note,
            "saved": [dataclasses.asdict(v) for v in self.saved],
            "rematerialized": [dataclasses.asdict(v) for v in self.rematerialized],
            "saved_to_recompute": self.saved_to_recompute,
        }

    def __repr__(self) -> str:
        how = f"measured on {self.measured_on}" if self.measured else "computed"
        return (
            f"<MemoryProfile {self.kind} pass {self.pass_index}: {len(self.rows)} lines, peak "
            f"{fmt_bytes(self.peak)} at line {self.peak_index} ({how})>"
        )
