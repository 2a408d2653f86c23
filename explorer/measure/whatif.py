"""What if another executor ran it: the same function compiled with each list of executors.

``compare(jfn, args, executors=[["torch"], ["torchcompile", "torch"]])`` makes a new
``thunder.jit`` of the function (or module) behind ``jfn`` for each list, so the user's own
cached entries are not touched, and runs it on fresh copies of the same inputs: the first
call's time (tracing, passes and compiling included), the fastest of ``repeat`` later calls
(after ``warmup`` calls once Inductor's background compilations are loaded),
the peak memory of the final computation trace (computed, and measured where it can be: the
profiler on CPU, the CUDA allocator on CUDA), the number of fusion regions, and whether the
outputs match those of the first list (the first value that does not is named by its path,
``explorer.measure.outputs``). A list that cannot compile or run gets its error in its row.

Hands off: every list starts from the user's state and RNG state as they were
(``explorer.measure.hands_off``: inputs, parameters, buffers such as running statistics, the
module's attributes, the RNGs), so each list draws the same random numbers, and all of it is
put back at the end. Each list runs twice from that state: outputs that differ between the
two are random, and so are outputs that differ from the first list's where either program
draws random numbers (dropout: an executor may draw them its own way); neither is a mismatch.
The view is ``explorer.views.whatif``; ``explorer.compare`` is the entry point.
"""

from __future__ import annotations

import dataclasses
import time

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


def _run(row: WhatIfRow, target, args, kwargs, snapshot: Snapshot, repeat: int, warmup: int):
    """Compile ``target`` with ``row``'s executors and run it: the first call, the timed calls,
    and a second call from the same state and RNG that says whether its outputs are random.
    Every run that is compared starts from the user's state (``snapshot``) and RNG state."""
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
    for _ in range(warmup):  # (a region's first compiled calls load it and start its threads)
        _sync(jx(*a, **k))
    best = float("inf")
    for _ in range(max(repeat, 1)):
        t0 = time.perf_counter()
        again = jx(*a, **k)
        _sync(again)
        best = min(best, time.perf_counter() - t0)
    row.seconds = best
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
) -> Comparison:
    """One row per executor list (see the module docstring)."""
    kwargs = kwargs or {}
    lists = [list(e) for e in (default_executor_lists() if executors is None else executors)]
    if not lists:
        raise ValueError("explorer: compare needs at least one list of executors, e.g. [['torch']]")
    target = target_of(obj)
    rows: list[WhatIfRow] = []
    reference: tuple[WhatIfRow, list] | None = None
    device = "cpu"
    snapshot = Snapshot.of(obj, args, kwargs)
    try:
        for names in lists:
            row = WhatIfRow(names)
            rows.append(row)
            try:
                jx, out, a, k = _run(row, target, args, kwargs, snapshot, repeat, warmup)
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
    finally:
        snapshot.restore()
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
    seconds: float | None = None
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


@dataclasses.dataclass
class Comparison:
    """The rows of ``compare``, the first list's outputs being the reference."""

    title: str
    rows: list[WhatIfRow]
    repeat: int
    device: str

    def to_dict(self) -> dict:
        return {
            "title": self.title,
            "repeat": self.repeat,
            "device": self.device,
            "rows": [dataclasses.asdict(r) for r in self.rows],
        }

    def __repr__(self) -> str:
        parts = [f"{r.label}: {'error' if r.error else f'{r.seconds * 1e3:.3f} ms'}" for r in self.rows]
        return f"<Comparison of {self.title}: {'; '.join(parts)}>"
