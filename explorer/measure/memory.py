"""Memory measured: the final trace of a jitted function run line by line on real inputs.

``measure_memory`` records the change per line: torch's profiler memory figures on CPU
(``profile_memory=True``), and ``torch.cuda.memory_allocated()`` after each line on CUDA (that
path is written for CUDA and tested only where CUDA is present); ``attach_measurement`` puts
them beside the computed figures of a ``MemoryProfile`` (``explorer.model.memory``). The run
leaves the user's state as it was (``explorer.measure.hands_off``): what the program writes in
place (an input, a BatchNorm's running statistics) and the RNGs it draws from are put back.
"""

from __future__ import annotations

import contextlib

import torch

import thunder
from explorer.measure.hands_off import Snapshot
from explorer.measure.runner import instrument
from explorer.model.memory import MemoryProfile
from thunder.core.proxies import proxies_in
from thunder.core.symbolic import concrete
from thunder.executors.python.checks import PrologueCheckFailed


def measure_memory(
    jfn, args: tuple = (), kwargs: dict | None = None, kind: str = "computation", *, entry: int = -1
):
    """Measured bytes live after each top-level line of the final ``kind`` trace (computation
    or backward) of a jitted function's cache entry, run on ``args``: a list of (live bytes
    after the line), and where it was measured. On CPU the figures are torch's profiler's
    (the net change each line's range records); on CUDA ``torch.cuda.memory_allocated()``
    after each line (written for CUDA, run only where it is present). Returns (None, why)
    when there is nothing to measure with."""
    kwargs = kwargs or {}
    with Snapshot.kept(jfn, args, kwargs):
        return _measure(jfn, args, kwargs, kind, entry)


def _measure(jfn, args: tuple, kwargs: dict, kind: str, entry: int):
    e = thunder.compile_stats(jfn).entries[entry]
    cargs = _computation_args(e, args, kwargs)
    on_cuda = any(isinstance(t, torch.Tensor) and t.is_cuda for t in cargs)
    comp = e.computation_traces[-1]
    if kind == "computation":
        target, target_args = comp, cargs
    elif kind == "backward":
        bws = getattr(e, "backward_traces", None) or []
        if not bws:
            return None, "no backward trace"
        with torch.no_grad():
            result = thunder_callable(comp)(*cargs)
        outs, saved = result
        target = bws[-1]
        sizes = {a.name: v for a, v in zip(target.args, saved) if type(v) is int}  # (symbols: this call's)
        grads = [
            torch.ones(concrete(tuple(q.meta_shape), sizes), dtype=q.meta_dtype, device=q.meta_device)
            for q in proxies_in(target.args)[len(saved) :]
        ]
        target_args = [*saved, *grads]
        del outs
    else:
        return None, f"only computation and backward traces are measured, not {kind}"
    marks = _CudaMarks(len(target.bound_symbols)) if on_cuda else _ProfilerMarks(len(target.bound_symbols))
    fn = instrument(target, marks)
    with torch.no_grad():
        if on_cuda:
            torch.cuda.synchronize()
            marks.base = torch.cuda.memory_allocated()
            result = fn(*target_args)
            torch.cuda.synchronize()
            del result
            return marks.live, f"{torch.cuda.get_device_name()} (torch.cuda.memory_allocated after each line)"
        from torch.profiler import ProfilerActivity, profile

        with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            result = fn(*target_args)
            marks.close()
            del result
    changes = [0] * len(target.bound_symbols)
    seen = False
    for ev in prof.events():
        if ev.name.startswith(_MARK):
            i = int(ev.name[len(_MARK) :])
            if 0 <= i < len(changes):
                changes[i] += ev.cpu_memory_usage
                seen = seen or ev.cpu_memory_usage != 0
    if not seen:
        return None, "torch's profiler recorded no memory figures"
    live, total = [], 0
    for c in changes:
        total += c
        live.append(total)
    return live, "cpu (torch.profiler, profile_memory=True)"


@contextlib.contextmanager
def _quiet_stderr():
    """The profiler's own log lines (kineto's start / stop lines, the allocator's note on
    blocks allocated before it started) are written to file descriptor 2 by C++, around every
    run: silenced for the run (Python errors still propagate as exceptions)."""
    import os
    import sys

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real stderr (some embedded interpreters)
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def input_layouts(jfn, args: tuple = (), kwargs: dict | None = None, *, entry: int = -1) -> dict:
    """The strides of the computation's tensor inputs that are not contiguous in a call on
    ``args`` (input name -> strides; the cache entry's prologue unpacks them), for ``memory_of``'s ``strides``: a
    reshape of an input laid out otherwise copies, which the prologue does not always check."""
    e = thunder.compile_stats(jfn).entries[entry]
    cargs = _computation_args(e, args, kwargs or {})
    return {
        p.name: tuple(t.stride())
        for p, t in zip(e.computation_traces[-1].args, cargs)
        if isinstance(t, torch.Tensor)
        and t.layout == torch.strided
        and not t.is_contiguous()
        and hasattr(p, "name")
    }


def thunder_callable(trace):
    """The compiled Python function of a trace, as the compiler runs it."""
    program = trace.program()
    ns = program.namespace()
    exec(compile(program.source, f"thunder.{trace.name}.memory", "exec"), ns)
    return ns[trace.name]


def _computation_args(e, args, kwargs):
    """The computation's arguments from the entry's prologue, under the grad mode it was
    traced with (the prologue checks it)."""

    try:
        return list(e.prologue(*args, **kwargs)[0])
    except PrologueCheckFailed:
        with torch.set_grad_enabled(not torch.is_grad_enabled()):
            return list(e.prologue(*args, **kwargs)[0])


_MARK = "thx_memory_line_"


class _ProfilerMarks:
    """Called after each top-level line: closes that line's profiler range, opens the next."""

    def __init__(self, n: int):
        self.n = n
        self.handle = None

    def __call__(self, i: int) -> None:
        if self.handle is not None:
            torch.ops.profiler._record_function_exit._RecordFunction(self.handle)
            self.handle = None
        if i + 1 < self.n:
            self.handle = torch.ops.profiler._record_function_enter_new(f"{_MARK}{i + 1}", None)

    def close(self) -> None:
        self(self.n)


class _CudaMarks:
    """For CUDA: ``torch.cuda.memory_allocated()`` after each line, less what was allocated before."""

    def __init__(self, n: int):
        self.live = [0] * n
        self.base = 0

    def __call__(self, i: int) -> None:
        if i >= 0:
            self.live[i] = torch.cuda.memory_allocated() - self.base


def attach_measurement(prof: MemoryProfile, live: list[int] | None, where: str) -> MemoryProfile:
    """Put measured live bytes on the rows of ``prof`` (its final pass); a note when there are none."""
    if live is None:
        prof.note = "; ".join(x for x in (prof.note, f"not measured: {where}; the figures are computed") if x)
        return prof
    if len(live) != len(prof.rows):
        raise ValueError(
            f"explorer: {len(live)} measured lines for a trace of {len(prof.rows)}: measure the final pass"
        )
    for r, m in zip(prof.rows, live):
        r.measured = m
    prof.measured_on = where
    return prof
