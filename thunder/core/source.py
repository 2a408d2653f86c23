"""Finding the user's source line for a recorded operation (cheap: a frame walk)."""

from __future__ import annotations

import os
import sys

import torch

from thunder.core.symbol import SourceLocation

_SKIP = (
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,  # thunder/
    os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,
)


def _skipped(filename: str) -> bool:
    return filename.startswith(_SKIP) or filename.startswith("<frozen")


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
