"""What if another executor ran it: the same function compiled with each list of executors.

``compare(jfn, args, executors=[["torch"], ["torchcompile", "torch"]])`` makes a new
``thunder.jit`` of the function (or module) behind ``jfn`` for each list, so the user's own
cached entries are not touched, and runs it on fresh copies of the same inputs: the first
call's time (tracing, passes and compiling included), the fastest of ``repeat`` later calls
(after ``warmup`` calls once Inductor's background compilations are loaded) with their median
and slowest (calls that differ by more than ``NOISY`` times are flagged as noisy), the peak memory of the final computation trace (computed, and measured where it can be: the
profiler on CPU, the CUDA allocator on CUDA), the number of fusion regions, and whether the
outputs match those of the first list (the first value that does not is named by its path,
``explorer.measure.outputs``). A list that cannot compile or run gets its error in its row.

Hands off: every list starts from the user's state and RNG state as they were
(``explorer.measure.hands_off``: inputs, parameters, buffers such as running statistics, the
module's attributes, the RNGs), so each list draws the same random numbers, and all of it is
put back at the end. Each list runs twice from that state: outputs that differ between the
two are random, and so are outputs that differ from the first list's where either program
draws random numbers (dropout: an executor may draw them its own way); neither is a mismatch.
``progress`` reports each list's phases as they start. The view is ``explorer.views.whatif``
(``explorer.notebook.whatif`` shows the progress in a notebook); ``explorer.compare`` is the
entry point.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable

import torch

import thunder
from explorer.measure.hands_off import Snapshot, target_of
from explorer.measure.memory import attach_measurement, input_layouts, measure_memory
from explorer.measure.outputs import Difference, difference, leaves
from explorer.model.compilation import model_of
from explorer.model.memory import memory_of
from thunder.core.proxies import proxies_in
from thunder.core.pytree import tree_leaves, tree_map
from thunder.core.tags import Tag
from thunder.executors.fusion import FusionExecutor
from thunder.executors.registry import all_executors, find_executor

NOISY = 1.5  # timed calls whose slowest over fastest exceeds this are flagged


def default_executor_lists() -> list[list[str]]:
    """The executor lists compared when none are given: those that run every prim (torch)
    alone, then each fusion executor available here before them (``[["torch"],
    ["torchcompile", "torch"]]`` on a CPU)."""
    base = [e.name for e in all_executors() if e.runs_every_prim]
    fusers = [e for e in all_executors() if isinstance(e, FusionExecutor) and e.unavailable_reason() is None]
    return [base] + [[f.name, *base] for f in fusers]


def _fresh(args, kwargs):
    """Copies of the tensor inputs (the same values, their own storage and requires_grad)."""

    def copy(x):
        if isinstance(x, torch.Tensor):
            return x.detach().clone().requires_grad_(x.requires_grad)
        return x

    return tree_map(copy, (tuple(args), dict(kwargs)))


def _sync(values) -> None:
    if any(isinstance(t, torch.Tensor) and t.is_cuda for t in tree_leaves(values)):
        torch.cuda.synchronize()


def _finish_regions(jx) -> None:
    """Wait for the background compilations of ``jx``'s own fusion regions (not those other
    compiled functions started) and load them, so that the next calls run them."""
    e = thunder.compile_stats(jx).entries[-1]
    for traces in (e.computation_traces, getattr(e, "backward_traces", None) or []):
        for b in traces[-1].bound_symbols if traces else ():
            executor = find_executor(getattr(b.sym, "executor", None))
            if Tag.FUSION in b.sym.tags and isinstance(executor, FusionExecutor):
                executor.finish_region(b.sym.impl)


def _fusion_regions(trace) -> int:
    return sum(1 for b in trace.bound_symbols if Tag.FUSION in b.tags or Tag.FUSION in b.sym.tags)


def _draws(trace) -> str | None:
    """The first line of ``trace`` that draws random numbers (dropout), as it prints; None."""
    for b in trace.bound_symbols:
        if b.draws():
            return f"{b.sym.name} ({', '.join(p.name for p in proxies_in(b.output))})"
    return None


def _run(row: WhatIfRow, target, args, kwargs, snapshot: Snapshot, repeat: int, warmup: int, step):
    """Compile ``target`` with ``row``'s executors and run it: the first call, the timed calls,
    and a second call from the same state and RNG that says whether its outputs are random.
    Every run that is compared starts from the user's state (``snapshot``) and RNG state.
    ``step(phase, message)`` reports progress."""
    step(0, "compiling and running the first call")
    snapshot.restore()
    a, k = _fresh(args, kwargs)
    jx = thunder.jit(target, executors=row.executors)
    t0 = time.perf_counter()
    out = jx(*a, **k)
    _sync(out)
    row.first_call_seconds = time.perf_counter() - t0
    first = leaves(out)
    t0 = time.perf_counter()
    _finish_regions(jx)  # its regions Inductor compiles in the background
    row.background_compile_seconds = time.perf_counter() - t0
    n = max(repeat, 1)
    step(1, f"timing {n} call{'s' if n != 1 else ''}")
    for _ in range(warmup):  # (a region's first compiled calls load it and start its threads)
        _sync(jx(*a, **k))
    for _ in range(n):
        t0 = time.perf_counter()
        again = jx(*a, **k)
        _sync(again)
        row.times.append(time.perf_counter() - t0)
    row.seconds = min(row.times)
    step(2, "checking its outputs")
    snapshot.restore()  # the same state, inputs and RNG as the first call: the same outputs?
    a, k = _fresh(args, kwargs)
    second = leaves(jx(*a, **k))
    same = difference(first, second)
    if not same.matched:
        row.random = True
        row.note = _join(row.note, f"two runs from the same inputs and RNG state differ ({same.describe()})")
    snapshot.restore()
    a, k = _fresh(args, kwargs)
    return jx, first, a, k


_PHASES = 4  # compiling and the first call, timing, checking the outputs, memory


def _stepper(progress, i: int, n: int, label: str):
    """``step(phase, message)`` for list ``i`` of ``n``: ``progress`` at that fraction of the whole."""
    if progress is None:
        return lambda phase, message: None
    return lambda phase, message: progress((i + phase / _PHASES) / n, f"{label} ({i + 1} of {n}): {message}")


def _layouts(jx, args, kwargs) -> dict | None:
    """The inputs' strides in this call, for the computed memory; None where the prologue rejects them."""
    try:
        return input_layouts(jx, args, kwargs)
    except Exception:
        return None


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def compare(
    obj,
    args: tuple = (),
    kwargs: dict | None = None,
    *,
    executors=None,
    repeat: int = 5,
    warmup: int = 2,
    measure: bool = True,
    progress: Callable[[float, str], None] | None = None,
) -> Comparison:
    """One row per executor list (see the module docstring). ``progress(fraction, message)`` is
    called as each list goes through its phases (compiling, timing, checking, memory) and with
    1.0 at the end: a notebook shows it, so a long comparison is not a silent kernel."""
    kwargs = kwargs or {}
    lists = [list(e) for e in (default_executor_lists() if executors is None else executors)]
    if not lists:
        raise ValueError("explorer: compare needs at least one list of executors, e.g. [['torch']]")
    target = target_of(obj)
    rows: list[WhatIfRow] = []
    reference: tuple[WhatIfRow, list] | None = None
    device = "cpu"
    with Snapshot.kept(obj, args, kwargs) as snapshot:
        for i, names in enumerate(lists):
            row = WhatIfRow(names)
            rows.append(row)
            step = _stepper(progress, i, len(lists), row.label)
            try:
                jx, out, a, k = _run(row, target, args, kwargs, snapshot, repeat, warmup, step)
            except Exception as e:
                row.error = f"{type(e).__name__}: {e}"
                continue
            if any(isinstance(t, torch.Tensor) and t.is_cuda for _, t in out):
                device = torch.cuda.get_device_name()
            m = model_of(jx)
            final = m.series["computation"].final
            row.fusion_regions = _fusion_regions(final.trace)
            row.lines = sum(1 for n in final.nodes if "del" not in n.tags)
            row.draws = _draws(final.trace)
            prof = memory_of(m, "computation", strides=_layouts(jx, a, k))
            row.peak_bytes = prof.peak
            if measure:
                step(3, "measuring its memory")
                try:
                    live, where = measure_memory(jx, a, k, "computation")
                    attach_measurement(prof, live, where)
                    row.measured_peak_bytes = prof.measured_peak
                except Exception as e:
                    row.note = _join(row.note, f"memory not measured: {type(e).__name__}: {e}")
            if reference is None:
                reference = (row, out)
                row.matched, row.max_abs_diff = (None, None) if row.random else (True, 0.0)
                continue
            _judge(row, reference[0], difference(reference[1], out))
    if progress is not None:
        progress(1.0, f"compared {len(lists)} executor list{'s' if len(lists) != 1 else ''}")
    title = getattr(target, "__qualname__", None) or type(target).__qualname__
    return Comparison(title, rows, max(repeat, 1), device)


def _judge(row: WhatIfRow, first: WhatIfRow, d: Difference) -> None:
    """Whether ``row``'s outputs match the first list's: values that differ where either
    program draws random numbers (or either list's own runs differ) are random, not a mismatch."""
    row.max_abs_diff = d.max_abs
    if d.matched:
        row.matched = True
        return
    random = row.random or first.random or row.draws or first.draws
    if random and d.abs_error is not None:  # (the same shapes and dtypes, other numbers)
        row.matched, row.random = None, True
        why = f"the program draws random numbers ({random})" if isinstance(random, str) else "the runs differ"
        row.note = _join(row.note, f"outputs are random: {why}; {d.describe()}")
        return
    row.matched, row.difference = False, d


# -- plain data -------------------------------------------------------------------------------
@dataclasses.dataclass
class WhatIfRow:
    """One executor list: seconds (fastest later call), first call seconds, peak bytes
    (computed; measured where measured), fusion regions and lines in the final computation,
    whether the outputs match the first list's (None when it did not run) and by how much."""

    executors: list[str]
    seconds: float | None = None  # the fastest of ``times``
    times: list[float] = dataclasses.field(default_factory=list)  # each timed call, in order
    first_call_seconds: float | None = None
    background_compile_seconds: float | None = None  # waiting for Inductor's helper after the first call
    peak_bytes: int | None = None
    measured_peak_bytes: int | None = None
    fusion_regions: int | None = None
    lines: int | None = None
    matched: bool | None = None  # None: not run, or its outputs are random
    max_abs_diff: float | None = None
    difference: Difference | None = None  # where the outputs first differ from the first list's
    random: bool = False  # outputs that depend on random numbers drawn (not a mismatch)
    draws: str | None = None  # the first line of its final computation that draws random numbers
    error: str | None = None
    note: str = ""

    @property
    def label(self) -> str:
        return " + ".join(self.executors)

    @property
    def median_seconds(self) -> float | None:
        return statistics.median(self.times) if self.times else None

    @property
    def max_seconds(self) -> float | None:
        return max(self.times) if self.times else None

    @property
    def spread(self) -> float | None:
        """The slowest timed call over the fastest (1.0: every call alike)."""
        if not self.times or min(self.times) <= 0:
            return None
        return max(self.times) / min(self.times)

    @property
    def noisy(self) -> bool:
        """The timed calls differ by more than ``NOISY`` times: the machine was busy, or the
        calls do different work; the fastest is then a rough figure."""
        return self.spread is not None and self.spread > NOISY


@dataclasses.dataclass
class Comparison:
    """The rows of ``compare``, the first list's outputs being the reference."""

    title: str
    rows: list[WhatIfRow]
    repeat: int
    device: str

    def to_dict(self) -> dict:
        rows = []
        for r in self.rows:
            d = dataclasses.asdict(r)
            d.update(median_seconds=r.median_seconds, max_seconds=r.max_seconds, noisy=r.noisy)
            rows.append(d)
        return {"title": self.title, "repeat": self.repeat, "device": self.device, "rows": rows}

    def __repr__(self) -> str:
        parts = [f"{r.label}: {'error' if r.error else f'{r.seconds * 1e3:.3f} ms'}" for r in self.rows]
        return f"<Comparison of {self.title}: {'; '.join(parts)}>"
