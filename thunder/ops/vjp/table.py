"""The tables the VJP rules fill and the helpers rules of several families share: ``VJPS``
(a rule per op, registered with ``rule_for``), ``AUGMENTED`` (forwards that keep what their
backward needs), ``NON_DIFFERENTIABLE`` (the prims declared to have no gradient), and the
zeros, the broadcast of a reduced gradient back to its input's shape and the transpose of
the last two dims that rules build their gradients from.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from thunder.core.symbol import Symbol, SymbolTable
from thunder.ops import prims
from thunder.ops.meta import device_of, dtype_of, shape_of

VJPS = SymbolTable(
    "the VJP rules",
    hint="add a rule to its family's module in thunder/ops/vjp/, or declare the prim in "
    "NON_DIFFERENTIABLE in thunder/ops/vjp/table.py",
)


# Forwards that also compute what their backward needs, used by the grad pass in place of the
# op where a gradient flows through it: ``make(*args, **kwargs)`` records one op whose first
# output is the original op's (or returns None to keep the op). ``F.layer_norm`` becomes
# ``native_layer_norm``, which keeps the mean and 1/std as eager's autograd does, instead of
# a backward that normalises the input again to get them.
AUGMENTED = SymbolTable("the forwards that keep what their backward needs")
# Of such a forward, the outputs that eager's backward node saves as views of the op's
# arguments ({output index: argument index}): an in-place write into the argument after the
# op overwrites them for eager's version check, as a write into a saved argument does
# (``thunder/transforms/saved_versions.py``). ``batched_matmul``'s 3-dim operands are eager's
# ``reshape`` of matmul's operands, a view where the batch dims merge.
AUGMENTED_VIEWS = SymbolTable("the outputs of augmented forwards that are views of their arguments")


# Prims whose outputs never carry a gradient: comparisons, bit operations, indices, values
# made from nothing or at random, the write of a value into an input (the grad pass moves
# write-backs out of the forward; the caller copies with autograd on), and the windowed ops'
# backward kernels (a backward of a backward: double backward is refused). The tests check
# that every other prim has a rule.
NON_DIFFERENTIABLE = frozenset(
    {
        prims.bitwise_not, prims.isnan, prims.isinf, prims.isfinite, prims.signbit,
        prims.logical_not, prims.bitwise_and, prims.bitwise_or, prims.bitwise_xor,
        prims.bitwise_left_shift, prims.bitwise_right_shift, prims.eq, prims.ne, prims.lt,
        prims.le, prims.gt, prims.ge, prims.logical_and, prims.logical_or, prims.logical_xor,
        prims.argmax, prims.argmin, prims.full, prims.iota, prims.uniform, prims.copy_, prims.bernoulli,
        prims.convolution_backward, prims.max_pool_backward, prims.avg_pool_backward,
        prims.adaptive_avg_pool_backward, prims.custom_op_backward,
        prims.bitcast,  # (eager's view(dtype) is outside the autograd graph)
    }
)  # fmt: skip


def rule_for(*syms: Symbol):
    """Registers the decorated function as the VJP rule of each of ``syms``."""

    def deco(fn: Callable) -> Callable:
        for s in syms:
            VJPS[s] = fn
        return fn

    return deco


def zeros_like(a, dtype: torch.dtype | None = None):
    return prims.full(shape_of(a), 0, dtype=dtype or dtype_of(a), device=device_of(a))


def expand_back(g, shape, kept_dims):
    """``g`` (the reduction of a tensor of ``shape`` over every dim not in ``kept_dims``)
    broadcast back to ``shape``."""
    if shape_of(g) == tuple(shape):
        return g
    return prims.broadcast_in_dim(g, tuple(shape), tuple(kept_dims))


def kept_dims(shape, dims) -> tuple[int, ...]:
    return tuple(i for i in range(len(shape)) if i not in dims)


def swap_last(a):
    n = len(shape_of(a))
    perm = list(range(n))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return prims.transpose(a, tuple(perm))
