"""Measured run times per BoundSymbol: the final traces run line by line with real inputs.

Each final trace (prologue, computation, epilogue, and the backward, run on the forward's
saved values with cotangents of ones) is printed as Python as the compiler does, and a timing call is put after every top-level line; the instrumented functions then
run the cached entry's program on the real inputs, on the device the inputs are on (with
``torch.cuda.synchronize()`` around each line on CUDA, so a line's time includes its
kernels). A fusion region is one line, so it gets one time.

Measuring never changes the user's state: when the program writes (in-place ops into
its inputs, module buffers or captured tensors; epilogue write-backs of attributes, a
BatchNorm's ``num_batches_tracked``), the tensors it writes are saved before and put back
after every run, and so are the attribute dictionaries and containers the epilogue writes;
after the last run everything the call could reach and the RNGs are put back as they were
(``explorer.measure.hands_off``).
"""

from __future__ import annotations

import copy
import dataclasses
import time

import torch

from explorer.measure.hands_off import Snapshot
from explorer.model.traces import TraceModel
from thunder.core.proxies import TensorProxy
from thunder.core.symbolic import concrete
from thunder.core.tags import Tag
from thunder.executors.registry import wait_for_compilations


@dataclasses.dataclass
class Measurement:
    """Seconds per top-level BoundSymbol (by index into the final trace), per trace kind."""

    times: dict[str, list[float]]
    device: str
    runs: int
    note: str = ""

    def attach(self, model: TraceModel) -> TraceModel:
        """Put the times on ``model`` by node id (the final pass's nodes, in trace order; a
        prologue that rejected the inputs has times up to the line that did)."""
        for kind, secs in self.times.items():
            s = model.series.get(kind)
            if s is None or len(s.final.nodes) < len(secs):
                continue
            model.timings[kind] = {n.id: t for n, t in zip(s.final.nodes, secs) if "del" not in n.tags}
        model.timing_device = self.device + (f" ({self.note})" if self.note else "")
        return model


class _Clock:
    """Called after each top-level line: ``clock(i)`` ends line ``i``'s time."""

    def __init__(self, n: int, sync: bool):
        self.times = [float("inf")] * n
        self.sync = sync
        self.last = 0.0
        self.current = [0.0] * n
        self.done = 0  # lines completed in the current run

    def __call__(self, i: int) -> None:
        if self.sync:
            torch.cuda.synchronize()
        now = time.perf_counter()
        if i >= 0:
            self.current[i] = now - self.last
        self.done = i + 1
        self.last = time.perf_counter()

    def stop(self) -> None:
        """The line after the last completed one raised: its time runs until now."""
        if self.done < len(self.current):
            self.current[self.done] = time.perf_counter() - self.last

    def keep_best(self, upto: int | None = None) -> None:
        n = len(self.times) if upto is None else upto
        self.times[:n] = [min(a, b) for a, b in zip(self.times[:n], self.current[:n])]


def instrument(trace, clock: _Clock):
    """The trace's function with ``clock(i)`` after its i-th top-level BoundSymbol.

    Where each BoundSymbol's lines end, and at which indentation (inside a ``with
    torch.no_grad():`` block they are indented once more), comes from the printer's line map.
    """
    program = trace.program()
    inserts = {last: (i, indent) for i, (_, last, indent) in enumerate(program.spans)}
    out = []
    for lineno, line in enumerate(program.source.splitlines(), 1):
        if lineno == program.body_start:
            out.append("  __thx_clock(-1)")
        out.append(line)
        if lineno in inserts:
            i, indent = inserts[lineno]
            out.append("  " * indent + f"__thx_clock({i})")
    ns = program.namespace()
    ns["__thx_clock"] = clock
    exec(compile("\n".join(out) + "\n", f"thunder.{trace.name}.timed", "exec"), ns)
    return ns[trace.name]


def _written_names(trace) -> set[str]:
    """Names of the proxies the writes of ``trace`` (in-place ops, write-backs) touch."""
    names: set[str] = set()
    stack = list(trace.bound_symbols)
    while stack:
        b = stack.pop()
        if b.has_tag(Tag.INPLACE) or b.has_tag(Tag.WRITEBACK):
            names.update(p.name for p in b.flat_proxy_args)
        stack.extend(b.subsymbols)
    return names


class _Saved:
    """What one run of the entry's program writes, saved so that it can be put back: the
    computation's input tensors that it writes in place, and the attributes and items of
    the objects and containers the epilogue receives."""

    def __init__(self, entry, args, kwargs):
        cargs, eargs = entry.prologue(*args, **kwargs)
        comp = entry.computation_traces[-1]
        written = _written_names(comp)
        self.tensors = [
            (t, t.detach().clone())
            for p, t in zip(comp.args, cargs)
            if getattr(p, "name", None) in written and isinstance(t, torch.Tensor)
        ]
        self.dicts = []
        if getattr(entry, "epilogue", None) is not None:
            for obj in eargs:
                if isinstance(obj, torch.Tensor):
                    continue
                if isinstance(obj, (list, dict)):
                    self.dicts.append((obj, copy.copy(obj)))
                d = getattr(obj, "__dict__", None)
                if isinstance(d, dict):
                    self.dicts.append((d, dict(d)))
                    for table in ("_buffers", "_parameters", "_modules"):
                        if isinstance(d.get(table), dict):
                            self.dicts.append((d[table], dict(d[table])))

    def restore(self) -> None:
        with torch.no_grad():
            for t, saved in self.tensors:
                t.copy_(saved)
        for live, saved in self.dicts:
            if isinstance(live, list):
                live[:] = saved
            elif live.keys() != saved.keys() or any(live[k] is not v for k, v in saved.items()):
                live.clear()
                live.update(saved)


def _on_cuda(values) -> bool:
    from thunder.core.pytree import tree_leaves

    return any(isinstance(t, torch.Tensor) and t.is_cuda for t in tree_leaves(values))


def measure(
    jfn, args: tuple = (), kwargs: dict | None = None, *, entry: int = -1, repeat: int = 3
) -> Measurement:
    """Time each top-level line of the cached entry's final traces on ``args``.

    One warm-up run, then ``repeat`` runs; the fastest time of each line is kept. Fusion
    regions Inductor compiles in the background are waited for after the warm-up.
    """
    kwargs = kwargs or {}
    with Snapshot.kept(jfn, args, kwargs):
        return _measure(jfn, args, kwargs, entry, repeat)


def _measure(jfn, args: tuple, kwargs: dict, entry: int, repeat: int) -> Measurement:
    import thunder

    e = thunder.compile_stats(jfn).entries[entry]
    note = ""
    try:
        saved = _Saved(e, args, kwargs)
        if saved.tensors or saved.dicts:
            note = "what the program writes was put back after every run"
    except Exception:  # the prologue rejects these inputs: the timed run below says where
        saved = None
    kinds = [("prologue", e.prologue_traces), ("computation", e.computation_traces)]
    backward = e.backward_traces[-1] if getattr(e, "backward_traces", None) else None
    if backward is not None:  # run on the forward's saved values, with cotangents of ones
        kinds.append(("backward", e.backward_traces))
        if getattr(e, "epilogue", None) is not None:
            # (its arguments are what the autograd Function hands on, not the forward's outputs)
            note = "; ".join(filter(None, (note, "the epilogue of a program with a backward is not timed")))
    elif getattr(e, "epilogue", None) is not None:
        kinds.append(("epilogue", e.epilogue_traces))
    on_cuda = _on_cuda((args, kwargs))
    clocks = {k: _Clock(len(trs[-1].bound_symbols), on_cuda) for k, trs in kinds}
    fns = {k: instrument(trs[-1], clocks[k]) for k, trs in kinds}
    runs = 1 + max(repeat, 1)
    device = "cuda" if on_cuda else "cpu"
    for r in range(runs):
        try:
            cargs, eargs = fns["prologue"](*args, **kwargs)
        except Exception as err:
            return _rejected(e.prologue_traces[-1], clocks["prologue"], device, err)
        try:
            out = fns["computation"](*cargs)
            if backward is not None:  # the forward returns (outputs, saved for backward)
                with torch.no_grad():
                    sizes = {a.name: v for a, v in zip(backward.args, out[1]) if type(v) is int}
                    fns["backward"](*out[1], *_ones(backward.args[len(out[1]) :], sizes))
            if "epilogue" in fns:
                fns["epilogue"](*out, *eargs)
            if on_cuda:
                torch.cuda.synchronize()
        finally:
            if saved is not None:
                saved.restore()
        if r == 0:  # the timed runs use compiled regions, not the torch calls run meanwhile
            wait_for_compilations()
        if r > 0 or runs == 1:
            for c in clocks.values():
                c.keep_best()
    times = {k: c.times for k, c in clocks.items()}
    device = torch.cuda.get_device_name() if on_cuda else "cpu"
    return Measurement(times, device, runs - 1, note)


def _ones(cotangents, sizes: dict[str, int]) -> list:
    """A cotangent of ones for each of the backward's cotangent inputs (its proxies' metadata;
    symbolic sizes at this call's ``sizes``)."""
    return [
        torch.ones(concrete(tuple(p.meta_shape), sizes), dtype=p.meta_dtype, device=p.meta_device)
        if isinstance(p, TensorProxy)
        else None
        for p in cotangents
    ]


def _rejected(prologue, clock: _Clock, device: str, err: Exception) -> Measurement:
    """The prologue rejected the inputs: the lines up to the failing one are timed, and the
    note names that line (the computation did not run)."""
    from thunder.runtime.misses import rejection

    clock.stop()
    failed = clock.done
    clock.keep_best(upto=failed + 1)
    bsym = prologue.bound_symbols[failed] if failed < len(prologue.bound_symbols) else None
    where, message = "", str(err)
    if bsym is not None:
        line, message = rejection(bsym, err)
        where = f" at line {failed} ({line})"
    return Measurement(
        {"prologue": clock.times[: failed + 1]},
        device,
        1,
        f"the prologue rejected the inputs{where}: {message}; the computation did not run",
    )
