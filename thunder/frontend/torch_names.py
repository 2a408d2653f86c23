"""The public name of a torch callable, as errors print it (``torch.Tensor.add_``,
``torch.nn.functional.gelu``, ``torch.ops.aten.add.Tensor``): what the user wrote rather than
where torch implements it (``torch._C._nn``, ``TensorBase``)."""

from __future__ import annotations

import torch


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
