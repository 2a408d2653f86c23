"""Errors raised while tracing; each names the op, the value and the user's source line.

An op is named as the user wrote it (``describe``: ``torch.Tensor.add_``,
``torch.nn.functional.gelu``, ``torch.ops.aten.add.Tensor``), not where torch implements it
(``torch._C._nn``, ``TensorBase``)."""

from __future__ import annotations

import torch

from thunder.core.source import SourceLocation


class ThunderError(RuntimeError):
    """Base class of thunder's tracing errors."""


class UnsupportedOpError(ThunderError):
    """An op thunder cannot trace. Not a ``NotImplementedError``: a library whose
    ``__torch_function__`` or ``__torch_dispatch__`` falls back on that exception (torchao's NF4
    calls itself again) would swallow the error that says which op is missing."""


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


def describe(func) -> str:
    """``torch.Tensor.add_``, ``torch.nn.functional.gelu``, ``torch.sin``."""
    if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return f"torch.ops.{func}"
    qual = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    mod = getattr(func, "__module__", None)
    if "<locals>" in qual:  # made by a factory (F.max_pool2d is boolean_dispatch.<locals>.fn)
        qual = getattr(func, "__name__", qual)
    if qual.startswith("TensorBase.") or qual.startswith("_TensorBase."):
        return "torch.Tensor." + qual.split(".", 1)[1]
    name = getattr(func, "__name__", qual)
    for cmod, public in (
        ("torch._C._fft", "fft"),
        ("torch._C._linalg", "linalg"),
        ("torch._C._special", "special"),
    ):
        if mod == cmod:
            return f"torch.{public}.{name.removeprefix(public + '_')}"
    if mod in (None, "torch._C._nn", "torch._C._VariableFunctions") or qual.startswith(
        "_VariableFunctionsClass"
    ):
        return {"torch._C._nn": "torch.nn.functional."}.get(mod, "torch.") + name
    if qual.startswith("Tensor."):
        return "torch." + qual
    if "<locals>" in qual:  # a function made by a factory (F.adaptive_max_pool2d's boolean_dispatch)
        qual = name
    return f"{mod}.{qual}"
