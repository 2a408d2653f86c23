"""thunder: a compact tracing JIT compiler for PyTorch programs.

``thunder.jit(fn)`` traces ``fn`` into a prologue (input checks), a computation and an
epilogue (building the result), runs passes and executes the result, cached.
"""

import thunder.ops.aten  # noqa: F401  (declares the aten operators)
import thunder.ops.ltorch  # noqa: F401  (declares the torch language)
from thunder.core.trace import Trace
from thunder.jit import (
    ThunderFunction,
    ThunderModule,
    compile_stats,
    jit,
    last_backward_traces,
    last_double_backward_traces,
    last_epilogue_traces,
    last_prologue_traces,
    last_traces,
)

__all__ = [
    "Trace",
    "ThunderFunction",
    "ThunderModule",
    "compile_stats",
    "jit",
    "last_backward_traces",
    "last_double_backward_traces",
    "last_epilogue_traces",
    "last_prologue_traces",
    "last_traces",
]
