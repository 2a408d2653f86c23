"""Why a cache entry does not take a call: the prologue line that failed with its message (what
a recompilation names, what the explorer shows for each miss), and whether the miss was a
float's value that changed (a learning rate a schedule sets: a value from the next trace on)."""

from __future__ import annotations

import traceback
from collections.abc import Callable

from thunder.core.printing import Printer, bsym_line
from thunder.core.proxies import NumberProxy
from thunder.core.symbol import BoundSymbol
from thunder.executors.python.checks import PrologueCheckFailed
from thunder.ops import python as pyops
from thunder.ops.python import tensor_check_line


def changed_float(failed: BoundSymbol | None) -> bool:
    """Whether the failed check ``failed`` is of a float input's value (``check_literal(lr,
    0.1)``): a number that changes between calls, traced as a value by the next trace, as a
    size that changed becomes symbolic."""
    if failed is not None and failed.sym.executor is not None and len(failed.subsymbols) == 1:
        failed = failed.subsymbols[0]  # (the op an executor claimed)
    if failed is None or failed.sym is not pyops.check_literal or len(failed.args) < 2:
        return False
    return isinstance(failed.args[0], NumberProxy) and type(failed.args[1]) is float


def check_text(bsym: BoundSymbol) -> str:
    """The printed line of the prologue check ``bsym``."""
    return bsym_line(bsym, Printer())


def failed_check(fn: Callable, exc: BaseException) -> BoundSymbol | None:
    """The BoundSymbol of the compiled trace ``fn`` whose line raised ``exc`` (by the line map)."""
    program = getattr(fn, "__thunder_program__", None)
    if program is None:
        return None
    lineno = None
    for frame, line in traceback.walk_tb(exc.__traceback__):
        if frame.f_code is fn.__code__:
            lineno = line
    return program.bsym_at(lineno) if lineno is not None else None


def rejection(bsym: BoundSymbol, e: Exception) -> tuple[str, str]:
    """The prologue line ``bsym`` that raised ``e``, and ``e``'s message; for one tensor of a
    ``check_tensors`` line, that tensor's own ``check_tensor`` line and what differs."""
    i = getattr(e, "tensor", None)
    if i is not None and bsym.sym.id.endswith("check_tensors"):
        return tensor_check_line(bsym, i, Printer()), str(e).partition(": ")[2]
    return bsym_line(bsym, Printer()), str(e)


def miss_reason(entry, args, kwargs) -> tuple[str, BoundSymbol | None]:
    """Why ``entry`` does not fit these inputs: the prologue's failing line with its message,
    and that line's BoundSymbol."""
    try:
        entry.prologue(*args, **kwargs)
    except PrologueCheckFailed as e:
        bsym = failed_check(entry.prologue, e)
        if bsym is None:
            return str(e), None
        line, message = rejection(bsym, e)
        return f"{line}: {message}", bsym
    except Exception as e:  # a prologue that cannot even unpack these inputs
        return f"{type(e).__name__}: {e}", failed_check(entry.prologue, e)
    return "the inputs fit (this entry was bypassed)", None
