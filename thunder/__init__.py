"""thunder: a compact tracing JIT compiler for PyTorch programs.

``thunder.jit(fn)`` traces ``fn`` into a prologue (input checks), a computation and an
epilogue (building the result), runs passes and executes the result, cached: a function
becomes a ``ThunderFunction`` (``thunder/runtime/jit.py``), a module a ``ThunderModule`` around one
(``thunder/runtime/module.py``); ``thunder.last_traces`` and friends read what they compiled
(``thunder/runtime/inspection.py``).
"""

from collections.abc import Callable, Sequence

import torch

import thunder.ops.aten  # noqa: F401  (declares the aten operators)
import thunder.ops.ltorch  # noqa: F401  (declares the torch language)
from thunder.core.trace import Trace
from thunder.executors.base import Executor
from thunder.executors.registry import all_executors as get_all_executors
from thunder.executors.registry import default_executors as get_default_executors
from thunder.executors.registry import get_executor, register_executor
from thunder.runtime.cache import DEFAULT_CACHE_SIZE
from thunder.runtime.inspection import (
    compile_stats,
    last_backward_traces,
    last_double_backward_traces,
    last_epilogue_traces,
    last_prologue_traces,
    last_traces,
)
from thunder.runtime.jit import ThunderFunction
from thunder.runtime.module import ThunderModule

__all__ = [
    "Trace",
    "ThunderFunction",
    "ThunderModule",
    "compile_stats",
    "get_all_executors",
    "get_default_executors",
    "get_executor",
    "jit",
    "last_backward_traces",
    "last_double_backward_traces",
    "last_epilogue_traces",
    "last_prologue_traces",
    "last_traces",
    "register_executor",
]


# (defined here, after the imports: importing thunder.jit binds the module to this name first)
def jit(
    fn: Callable | torch.nn.Module,
    *,
    executors: Sequence[str | Executor] | None = None,
    cache_size: int = DEFAULT_CACHE_SIZE,
    dynamic: bool | None = None,
):
    """Compile ``fn`` (a function or an ``nn.Module``); see ``thunder.last_traces``.

    ``cache_size``: how many compiled entries are kept; beyond it the least recently used
    one is dropped (a call that needs it again traces again).

    ``dynamic``: sizes that change between calls. ``None`` (default): the first call is
    specialised; when a call misses only because a tensor's size differs, that dimension is a
    symbol (``s0``) in the new entry, which then serves every size the prologue's relations
    allow. ``True``: every dimension is a symbol from the first call. ``False``: every size is
    specialised. Sizes 0 and 1 always are.
    """
    if isinstance(fn, torch.nn.Module):
        return ThunderModule(fn, executors=executors, cache_size=cache_size, dynamic=dynamic)
    if not callable(fn):
        raise TypeError(f"thunder.jit expects a function or an nn.Module, got {type(fn).__qualname__}")
    return ThunderFunction(fn, executors=executors, cache_size=cache_size, dynamic=dynamic)
