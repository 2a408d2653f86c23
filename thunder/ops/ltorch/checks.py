"""Checks in user code that run while tracing: ``torch._assert`` (torchvision's and timm's
models call it on shapes).

A Python condition is checked once, when the function is traced (the prologue's checks of
the shapes and values it came from make every cached call agree); a tensor condition needs
the tensor's value, which is not known while tracing.
"""

from __future__ import annotations

import torch

from thunder.ops.langs import alias
from thunder.ops.meta import ShapeError, is_tensor


def check_assert(condition, message):
    if is_tensor(condition):
        raise ShapeError(
            "the condition is a tensor, whose value is not known while tracing (data-dependent); "
            "assert on shapes or Python values instead"
        )
    if not condition:
        raise AssertionError(message)


alias(check_assert, torch._assert)
