"""What if another executor ran it: the same function compiled with each list of executors.

``compare(jfn, args, executors=[["torch"], ["torchcompile", "torch"]])`` makes a new
``thunder.jit`` of the function (or module) behind ``jfn`` for each list, so the user's own
cached entries are not touched, and runs it on fresh copies of the same inputs: the first
call's time (tracing, passes and compiling included), the fastest of ``repeat`` later calls
(after ``warmup`` calls once Inductor's background compilations are loaded),
the peak memory of the final computation trace (computed, and measured where it can be: the
profiler on CPU, the CUDA allocator on CUDA), the number of fusion regions, and whether the
outputs match those of the first list. A list that cannot compile or run gets its error in
its row. Module state the function writes (buffers) is not put back between lists. The view
is ``explorer.views.whatif``; ``explorer.compare`` is the entry point.
"""

from __future__ import annotations

import dataclasses
import time

import torch

import thunder
from explorer.measure.memory import attach_measurement, measure_memory
from explorer.model.compilation import model_of
from explorer.model.memory import memory_of
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


def target_of(obj):
    """The function or module a jitted function was made from (``obj`` itself when it was not jitted)."""
    model = getattr(obj, "_model", None)
    if isinstance(model, torch.nn.Module):
        return model
    fn = getattr(obj, "fn", None)
    if callable(fn) and hasattr(obj, "executors"):
        return fn
    return obj


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


def _difference(a, b) -> tuple[bool, float | None, str]:
    """Whether two outputs match (as ``torch.testing.assert_close`` judges, float32 tolerances
    loosened for fused arithmetic), their largest absolute difference, and why not."""
    la, lb = tree_leaves(a), tree_leaves(b)
    if len(la) != len(lb):
        return False, None, f"{len(la)} output values against {len(lb)}"
    worst = 0.0
    for x, y in zip(la, lb):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype:
                return False, None, f"{x.dtype}{list(x.shape)} against {y.dtype}{list(y.shape)}"
            if x.numel():
                d = (x.detach().double() - y.detach().double()).abs().max().item()
                worst = max(worst, d)
            try:
                torch.testing.assert_close(x.detach(), y.detach(), rtol=1e-4, atol=1e-5, equal_nan=True)
            except AssertionError as e:
                return False, worst, str(e).splitlines()[0]
        elif x != y:
            return False, None, f"{x!r} against {y!r}"
    return True, worst, ""


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
    reference = None
    device = "cpu"
    for names in lists:
        row = WhatIfRow(names)
        rows.append(row)
        a, k = _fresh(args, kwargs)
        try:
            jx = thunder.jit(target, executors=names)
            t0 = time.perf_counter()
            out = jx(*a, **k)
            _sync(out)
            row.first_call_seconds = time.perf_counter() - t0
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
        except Exception as e:
            row.error = f"{type(e).__name__}: {e}"
            continue
        if any(isinstance(t, torch.Tensor) and t.is_cuda for t in tree_leaves(out)):
            device = torch.cuda.get_device_name()
        m = model_of(jx)
        final = m.series["computation"].final
        row.fusion_regions = _fusion_regions(final.trace)
        row.lines = sum(1 for n in final.nodes if "del" not in n.tags)
        prof = memory_of(m, "computation")
        row.peak_bytes = prof.peak
        if measure:
            try:
                live, where = measure_memory(jx, a, k, "computation")
                attach_measurement(prof, live, where)
                row.measured_peak_bytes = prof.measured_peak
            except Exception as e:
                row.note = f"memory not measured: {type(e).__name__}: {e}"
        if reference is None:
            reference = out
            row.matched, row.max_abs_diff = True, 0.0
        else:
            row.matched, row.max_abs_diff, why = _difference(reference, out)
            if why:
                row.note = "; ".join(x for x in (row.note, why) if x)
    title = getattr(target, "__qualname__", None) or type(target).__qualname__
    return Comparison(title, rows, max(repeat, 1), device)


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
    matched: bool | None = None
    max_abs_diff: float | None = None
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
