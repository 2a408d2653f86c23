"""thunder: a compact tracing JIT compiler for PyTorch programs.

``thunder.jit(fn)`` traces ``fn`` into a prologue (input checks), a computation and an
epilogue (building the result), runs passes and executes the result, cached.
"""

import thunder.ops.ltorch  # noqa: F401  (registers the torch language)
from thunder.executors import torchex as _torchex

_torchex.register_ltorch_claims()

from thunder.core.trace import Trace  # noqa: E402
from thunder.jit import (  # noqa: E402
    ThunderFunction,
    ThunderModule,
    compile_stats,
    jit,
    last_backward_traces,
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
    "last_epilogue_traces",
    "last_prologue_traces",
    "last_traces",
]
