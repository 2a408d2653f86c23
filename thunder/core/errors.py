"""Errors raised while tracing; each names the op, the value and the user's source line."""

from __future__ import annotations

from thunder.core.source import SourceLocation


class ThunderError(RuntimeError):
    """Base class of thunder's tracing errors."""


class UnsupportedOpError(ThunderError, NotImplementedError):
    pass


class DataDependentError(ThunderError):
    pass


class UnsupportedValueError(ThunderError, TypeError):
    pass


class UnrebuildableError(UnsupportedValueError):
    """The epilogue cannot rebuild a value; ``chain``: the values from the result down to it."""

    def __init__(self, message: str, chain: list):
        super().__init__(message)
        self.chain = chain


def at(loc: SourceLocation | None) -> str:
    """``\\n  at file.py:12 in fn: y = x.item()`` (empty when unknown)."""
    if loc is None:
        return ""
    code = loc.line()
    return f"\n  at {loc.filename}:{loc.lineno} in {loc.function}" + (f": {code}" if code else "")
