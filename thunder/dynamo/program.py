"""``thunderfx(fn, **jit_options)``: ``torch.compile`` with the thunder backend, in one call.

The callable it returns runs ``fn`` as ``torch.compile`` does and keeps what a user wants to
look at: the pieces (the graphs Dynamo extracted, each with the thunder function that runs
it), the graph breaks between them with their reasons and source lines, the pieces that fell
back to eager and why, and ``last_run``: the pieces and breaks of the last call in the order
they happened (a data-dependent branch runs different pieces on different calls).
"""

from __future__ import annotations

import functools

import torch
import torch._dynamo.trace_rules
import torch._dynamo.utils as dynamo_utils

from thunder.dynamo.breaks import GraphBreak, SkippedFrame, skipped_frame
from thunder.dynamo.compiler import Fallback, Piece, ThunderCompiler
from thunder.runtime.jit import ThunderFunction
from thunder.runtime.module import ThunderModule


def _dynamo_skips_thunder() -> None:
    """Dynamo does not trace into thunder's own code: a ``thunder.jit`` function or module
    called inside a program Dynamo compiles (a jitted submodule of a thunderfx model) is a
    graph break that runs its own compiled program, rather than thunder's runtime (its
    prologue, its RNG replay) traced into a graph; and the frames below a jitted call (the
    user's code thunder traces, thunder's generated programs) are not compiled by Dynamo."""
    torch._dynamo.trace_rules.add("thunder")
    try:  # (torch's internal switch; without it Dynamo compiles those frames too, more slowly)
        from torch._dynamo.eval_frame import set_code_exec_strategy
        from torch._dynamo.types import FrameAction, FrameExecStrategy
    except ImportError:
        return
    skip = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)  # (this frame and every frame below)
    for call in (ThunderFunction.__call__, ThunderModule.__call__):
        set_code_exec_strategy(call.__code__, skip)


_dynamo_skips_thunder()


class ThunderFX:
    """``thunderfx(fn)``: call it as ``fn``; read ``pieces``, ``breaks``, ``fallbacks``,
    ``last_run`` and ``summary()``."""

    def __init__(self, fn, **jit_options):
        if not callable(fn):
            raise TypeError(f"thunderfx expects a function or an nn.Module, got {type(fn).__qualname__}")
        self.fn = fn
        self.backend = ThunderCompiler(**jit_options)
        # ``dynamic=True``: Dynamo's graphs are symbolic too (sizes as int arguments, which
        # thunder takes as symbols), so each piece compiles once for every size
        self.compiled = torch.compile(fn, backend=self.backend, dynamic=jit_options.get("dynamic"))
        self.calls = 0
        self._last: list[int] = []
        self._skipped: dict[tuple, SkippedFrame] = {}
        name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
        self.__name__ = name
        self.__wrapped__ = fn
        functools.update_wrapper(self, fn, assigned=("__doc__",), updated=())

    def __call__(self, *args, **kwargs):
        log: list[int] = []
        self.backend._run_log = log
        record = getattr(dynamo_utils, "_compilation_metrics", None)  # Dynamo's record of compilations
        seen = record[-1] if record else None
        try:
            return self.compiled(*args, **kwargs)
        finally:
            self.backend._run_log = None
            self.calls += 1
            self._last = log
            if record and record[-1] is not seen:
                self._note_skipped(record, seen)

    def _note_skipped(self, record, seen) -> None:
        """The frames Dynamo failed to compile during this call (newest records back to ``seen``)."""
        new = []
        for metrics in reversed(record):
            if metrics is seen:
                break
            new.append(metrics)
        for metrics in reversed(new):
            frame = skipped_frame(metrics)
            if frame is not None:
                self._skipped.setdefault((frame.filename, frame.lineno, frame.reason), frame)

    @property
    def pieces(self) -> list[Piece]:
        """Every graph Dynamo extracted, in the order it compiled them."""
        return list(self.backend.pieces)

    @property
    def breaks(self) -> list[GraphBreak]:
        return self.backend.breaks

    @property
    def fallbacks(self) -> list[Fallback]:
        return self.backend.fallbacks

    @property
    def skipped(self) -> list[SkippedFrame]:
        """Functions (or their rest after a break) Dynamo gave up on: plain Python, eager ops."""
        return list(self._skipped.values())

    @property
    def last_run(self) -> list[Piece | GraphBreak]:
        """The last call's pieces in the order they ran, each followed by the graph break that
        ended it (where the Python between the pieces ran)."""
        steps: list[Piece | GraphBreak] = []
        for i in self._last:
            piece = self.backend.pieces[i]
            steps.append(piece)
            if piece.break_after is not None:
                steps.append(piece.break_after)
        return steps

    def summary(self) -> str:
        """The last call, step by step, as text."""
        if not self.calls:
            return f"thunderfx({self.__name__}): not called yet"
        lines = [
            f"thunderfx({self.__name__}): {len(self.pieces)} pieces compiled, {self.calls} calls; last call:"
        ]
        for step in self.last_run:
            if isinstance(step, GraphBreak):
                lines.append(f"  -- {step}")
            else:
                lines.append(f"  {step.describe()}")
                if step.fallback is not None:
                    lines.append(f"     {step.fallback}")
        if not self._last:
            lines.append("  (no graph ran: Dynamo ran the whole call as Python)")
        for frame in self.skipped:
            lines.append(f"  !! {frame}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<thunderfx of {self.__name__}: {len(self.pieces)} pieces, {len(self.breaks)} graph breaks>"

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(self.summary())


def thunderfx(fn, **jit_options) -> ThunderFX:
    """``torch.compile(fn, backend=ThunderCompiler(**jit_options))``, with the pieces, the graph
    breaks and the fallbacks kept on the returned callable."""
    return ThunderFX(fn, **jit_options)
