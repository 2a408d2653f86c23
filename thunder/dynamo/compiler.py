"""``ThunderCompiler``: a torch.compile backend that runs each Dynamo graph with thunder.

Dynamo calls the backend once per FX ``GraphModule`` it extracts (a program with graph breaks
gives several) and calls what the backend returns with the graph's inputs. Each graph becomes a
``Piece``: ``thunder.jit(gm, **jit_options)`` (the GraphModule's ``forward`` is plain Python, so
thunder traces it like any module; its inputs that require grad get thunder's own backward).
A graph thunder cannot compile (an op with no thunder op, ...) runs eagerly instead, and the
reason is kept (``Piece.fallback``); the rest of the program is unaffected.

A piece with static shapes is guarded by Dynamo on every input's metadata; after its one
compilation it runs that entry with a prologue that only unpacks (``frontend/prologue/state_checks.py``), so a cached
call checks nothing twice.
"""

from __future__ import annotations

import dataclasses
import inspect
import types

import torch
import torch._dynamo.eval_frame as eval_frame

import thunder
from thunder.autograd import function as autograd_bridge
from thunder.dynamo.breaks import GraphBreak, break_after
from thunder.dynamo.guards import has_static_inputs, without_dynamo_checks
from thunder.dynamo.lines import SourceLine, point_at_user_lines, source_lines, user_line_of
from thunder.executors.registry import resolve_executors


@dataclasses.dataclass(frozen=True)
class Fallback:
    """A piece thunder did not compile: it runs eagerly. ``error``: thunder's error (it names
    the op); ``user_line``: the user's source line of the graph node it failed on, when known."""

    piece: int
    error: str
    user_line: str | None = None

    def __str__(self) -> str:
        at = f" (your line: {self.user_line})" if self.user_line else ""
        return f"piece {self.piece} runs eagerly: {self.error}{at}"


class Piece:
    """One graph Dynamo extracted, and the thunder function that runs it (``jfn``;
    ``thunder.last_traces(piece)`` is ``thunder.last_traces(piece.jfn)``)."""

    def __init__(self, index: int, gm: torch.fx.GraphModule, example_inputs, compiler: ThunderCompiler):
        self.index = index
        self.gm = gm
        self.compiler = compiler
        compile_id = gm.meta.get("dynamo_compile_id") if hasattr(gm, "meta") else None
        self.compile_id = str(compile_id) if compile_id is not None else None
        self.break_after: GraphBreak | None = break_after(gm)
        self.lines: list[SourceLine] = source_lines(gm)
        self.static = has_static_inputs(gm, example_inputs)
        self.fallback: Fallback | None = None
        self.calls = 0
        # the prologue the cached calls run (``frontend/prologue/state_checks.py``), once thunder has compiled the piece
        self.dynamo_prologue: thunder.Trace | None = None
        self._fast = None
        _compile_lazily_made_code(gm)
        self.jfn = thunder.jit(gm, **compiler.jit_options)

    @property
    def name(self) -> str:
        return f"piece {self.index}"

    def describe(self) -> str:
        """``piece 0 (f, lines 12-13): 4 ops, thunder`` (or ``eager``)."""
        where = ""
        if self.lines:
            fns = list(dict.fromkeys(s.function for s in self.lines))
            nums = sorted({s.lineno for s in self.lines})
            span = f"line {nums[0]}" if len(nums) == 1 else f"lines {nums[0]}-{nums[-1]}"
            where = f" ({', '.join(fns)}, {span})"
        ops = sum(1 for n in self.gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))
        how = "eager (fallback)" if self.fallback is not None else "thunder"
        return f"{self.name}{where}: {ops} ops, {how}"

    def __repr__(self) -> str:
        return f"<{self.describe()}>"

    def __call__(self, *args):
        log = self.compiler._run_log
        if log is not None:
            log.append(self.index)
        self.calls += 1
        if self._fast is not None:
            return self._fast(*args)
        if self.fallback is not None:
            return self.gm(*args)
        stats = thunder.compile_stats(self.jfn)
        misses, last = stats.cache_misses, stats.entries[-1] if stats.entries else None
        try:
            out = self.jfn(*args)
        except Exception as e:
            compiled = stats.entries[-1] if stats.entries else None
            if stats.cache_misses == misses or compiled is not last:
                raise  # the compiled program raised, not the compilation: as eager would
            self.fallback = Fallback(self.index, f"{type(e).__name__}: {e}", user_line_of(self.gm, e))
            return self.gm(*args)
        if stats.cache_misses != misses and stats.entries:  # a new compilation: its traces name
            point_at_user_lines(self.gm, stats.entries[-1])  # the user's lines, not the graph's
        if self.static and len(stats.entries) == 1 and stats.cache_misses == 1:
            self._fast = self._run_entry(stats.entries[0], stats)
        return out

    def _run_entry(self, entry, stats):
        """A call of ``entry`` with the prologue less what Dynamo's guards check."""
        self.dynamo_prologue = without_dynamo_checks(entry.prologue_traces[-1])
        prologue = self.dynamo_prologue.python_callable()
        computation, epilogue = entry.computation, entry.epilogue

        def run(*args):
            stats.calls += 1
            cargs, eargs = prologue(*args)
            out = computation(*cargs)
            return out[0] if epilogue is None else epilogue(*out, *eargs)

        return run


class ThunderCompiler:
    """``torch.compile(fn, backend=ThunderCompiler(**jit_options))``: every graph Dynamo
    extracts is compiled by ``thunder.jit(graph, **jit_options)``; ``pieces`` lists them in
    the order Dynamo compiled them."""

    def __init__(self, **jit_options):
        try:
            inspect.signature(thunder.jit).bind(None, **jit_options)
        except TypeError as e:
            raise TypeError(
                f"ThunderCompiler: {e} (thunder.jit's options: executors, cache_size, dynamic)"
            ) from None
        resolve_executors(jit_options.get("executors"))  # an unknown or unavailable executor: now
        self.jit_options = jit_options
        self.pieces: list[Piece] = []
        self._run_log: list[int] | None = None  # set by ThunderFX for the duration of one call

    def __call__(self, gm: torch.fx.GraphModule, example_inputs) -> Piece:
        piece = Piece(len(self.pieces), gm, example_inputs, self)
        self.pieces.append(piece)
        return piece

    @property
    def breaks(self) -> list[GraphBreak]:
        """The graph breaks, in compile order, each once (pieces on both sides of a branch
        can end at the same break)."""
        found = {}
        for p in self.pieces:
            b = p.break_after
            if b is not None:
                found.setdefault((b.filename, b.lineno, b.reason), b)
        return list(found.values())

    @property
    def fallbacks(self) -> list[Fallback]:
        return [p.fallback for p in self.pieces if p.fallback is not None]


def _nested_code(code: types.CodeType, name: str) -> list[types.CodeType]:
    found = []
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            found += [c] if c.co_name == name else _nested_code(c, name)
    return found


def _keep_dynamo_out_of_thunder_backward() -> None:
    """A piece's backward runs when the program calls ``loss.backward()``, a graph break: Dynamo
    runs that call as Python with its frame hook on, so it would compile thunder's backward (the
    ``backward`` of the autograd.Function thunder makes for a compiled entry) and every frame it
    calls as new graphs. Those frames are thunder's own compiled code: skip them, and all they
    call (as AOTAutograd's backward is kept out of Dynamo)."""
    strategy = eval_frame.FrameExecStrategy(eval_frame.FrameAction.SKIP, eval_frame.FrameAction.SKIP)
    codes = _nested_code(autograd_bridge._backward.__code__, "backward")
    if not codes:
        raise RuntimeError(
            "thunder.dynamo: no `backward` function inside thunder.autograd_bridge._backward; Dynamo would "
            "compile thunder's backward as new graphs (the autograd bridge changed: update thunder/dynamo)"
        )
    for code in codes:
        eval_frame.set_code_exec_strategy(code, strategy)


_keep_dynamo_out_of_thunder_backward()


def _compile_lazily_made_code(gm) -> None:
    """Dynamo's graphs are ``_LazyGraphModule``s that write their generated code onto
    themselves on the first call; done now, the trace sees no such writes."""
    recompile = getattr(gm, "real_recompile", None)
    if recompile is not None:
        recompile()
