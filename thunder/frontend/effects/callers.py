"""Whose print, warning or log record it is, while tracing: the program's (made again on every
call by the epilogue, ``frontend/effects/python_calls.py``) or the runtime's (made as it is, once).

Eager makes a print every call whether the user's code or a library it calls (transformers,
a helper package) makes it, so both are the program's. Two kinds are not:

- those thunder or torch make (``torch/*``, ``thunder/*``: a deprecation warning of torch's,
  thunder's own log records), also through the standard library, which belong to tracing, not
  to the program;
- those made under a caching function (transformers' ``logger.warning_once`` is an
  ``functools.lru_cache``-wrapped function): eager makes them once, and so does tracing.

    def helper(x):            # a library's
        print("helper", x)    # the program's: printed on every call
        logger.warning_once("slow path")  # under a cache: once
"""

from __future__ import annotations

import os
import sysconfig
import types

import torch

from thunder.core.source import THUNDER_DIR
from thunder.frontend.prologue.code_reads import is_user_code

_RUNTIME_DIRS = (THUNDER_DIR, os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), ""))
_PATHS = sysconfig.get_paths()
_STDLIB_DIRS = tuple(os.path.join(_PATHS[k], "") for k in ("stdlib", "platstdlib") if k in _PATHS)
_PACKAGE_DIRS = tuple(os.path.join(_PATHS[k], "") for k in ("purelib", "platlib") if k in _PATHS)


def _is_runtime(code: types.CodeType) -> bool:
    return not is_user_code(code) and os.path.abspath(code.co_filename).startswith(_RUNTIME_DIRS)


def _is_thunder(code: types.CodeType) -> bool:
    return os.path.abspath(code.co_filename).startswith(THUNDER_DIR)


def _is_stdlib(code: types.CodeType) -> bool:
    path = os.path.abspath(code.co_filename)
    return path.startswith(_STDLIB_DIRS) and not path.startswith(_PACKAGE_DIRS)


def made_by_the_program(frame: types.FrameType | None) -> bool:
    """``frame`` (the code that prints, warns or logs) is the user's or a library's, and no
    caching function lies between it and the thunder code that runs it (the trace's start).
    The standard library's code is the program's when the program called it, the runtime's when
    torch or thunder did (``warnings.showwarning`` showing torch's warning)."""
    f = frame
    while f is not None and _is_stdlib(f.f_code):
        f = f.f_back
    if f is None or _is_runtime(f.f_code):
        return False
    f = frame
    while f is not None and not _is_thunder(f.f_code):
        if _is_cached(f):
            return False
        f = f.f_back
    return True


def _is_cached(frame: types.FrameType) -> bool:
    """The function running in ``frame``, found by its qualified name in its module (a method
    through its class), is a cache's (``functools.lru_cache``: it has ``cache_info``)."""
    code = frame.f_code
    names = [n for n in getattr(code, "co_qualname", code.co_name).split(".") if n != "<locals>"]
    fn = frame.f_globals.get(names[0])
    for name in names[1:]:
        fn = getattr(fn, name, None) if isinstance(fn, type) else None
    if fn is None and code.co_name != names[0]:
        fn = frame.f_globals.get(code.co_name)  # (``Logger.warning_once = warning_once``)
    for _ in range(8):  # (decorators over decorators; a ``__wrapped__`` cycle ends here)
        if fn is None:
            break
        if hasattr(fn, "cache_info") and getattr(getattr(fn, "__wrapped__", None), "__code__", None) is code:
            return True
        fn = getattr(fn, "__wrapped__", None)
    return False
