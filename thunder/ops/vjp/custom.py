"""The VJP rule of a custom operator (``thunder/ops/custom.py`` registers one per operator):
the operator's own autograd formula, run by the backward on the saved arguments.
"""

from __future__ import annotations

from collections.abc import Callable

from thunder.ops import prims
from thunder.ops.meta import dtype_of, is_tensor


def custom_op_rule(path: str) -> Callable:
    """The rule of the custom operator ``path`` (``thunder/ops/custom.py``): its floating-point
    tensor arguments get the gradients of the operator's own autograd formula, which the
    backward runs on the saved arguments (``prims.custom_op_backward``)."""

    def rule(g, out, *args, **kwargs):
        grads = g if isinstance(g, tuple) else (g,)
        wanted = tuple(i for i, a in enumerate(args) if is_tensor(a) and dtype_of(a).is_floating_point)
        got = prims.custom_op_backward(path, grads, args, kwargs, wanted)
        by_position = dict(zip(wanted, got))
        return tuple(by_position.get(i) for i in range(len(args)))

    return rule
