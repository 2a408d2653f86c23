"""Where a recorded operation came from in the user's program: ``SourceLocation``, and finding
the user's source line (cheap: a frame walk)."""

from __future__ import annotations

import dataclasses
import linecache
import os
import sys

import torch

# thunder's own folder (this file is thunder/core/source.py), with a trailing separator
THUNDER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SKIP = (
    THUNDER_DIR,
    os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,
)


@dataclasses.dataclass(frozen=True)
class SourceLocation:
    """Where in the user's program a BoundSymbol came from."""

    filename: str
    lineno: int
    function: str

    def line(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} in {self.function}"


def _wrapper_files() -> frozenset[str]:
    """Modules that only wrap the user's call on its way to torch (``typing_extensions.deprecated``
    around ``torch.distributed.all_gather_into_tensor``, functools' and contextlib's wrappers)."""
    import contextlib
    import functools

    files = {contextlib.__file__, functools.__file__}
    te = sys.modules.get("typing_extensions")
    if te is not None and getattr(te, "__file__", None):
        files.add(te.__file__)
    return frozenset(os.path.abspath(f) for f in files)


_WRAPPERS = _wrapper_files()


def _skipped(filename: str) -> bool:
    return filename.startswith(_SKIP) or filename.startswith("<frozen") or filename in _WRAPPERS


def is_user_file(filename: str) -> bool:
    """Code of the user's (or a library's other than thunder and torch)."""
    return not _skipped(filename)


def user_location(depth: int = 1) -> SourceLocation | None:
    """The innermost frame that is neither thunder's nor torch's."""
    return frame_location(sys._getframe(depth))


def frame_location(f) -> SourceLocation | None:
    """The first frame from ``f`` outwards that is neither thunder's nor torch's."""
    while f is not None:
        code = f.f_code
        if not _skipped(code.co_filename):
            return SourceLocation(code.co_filename, f.f_lineno, code.co_name)
        f = f.f_back
    return None


def user_stacklevel() -> int:
    """``warnings.warn``'s ``stacklevel`` that names the innermost frame neither thunder's nor
    torch's, counted from the function calling this (1 where it is itself the user's)."""
    f, level = sys._getframe(1), 1
    while f is not None and _skipped(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    return level
