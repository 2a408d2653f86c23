"""VJP rules of the torch-language activations (``relu``, ``gelu``, ``silu``, ``hardsigmoid``,
``hardswish``) and of ``softmax``, ``log_softmax`` and ``softmin``: each through torch's own
backward op, as eager, rather than through the decomposition.
"""

from __future__ import annotations

from thunder.ops import ltorch, prims
from thunder.ops.meta import dtype_of, shape_of
from thunder.ops.vjp.table import VJPS, rule_for


@rule_for(ltorch.relu)
def _relu(g, out, a, inplace=False):
    # from the output, as torch does: one kernel, and the output is what the next op saves
    return ltorch.threshold_backward(g, out, 0), None


@rule_for(ltorch.gelu)
def _gelu(g, out, a, approximate="none"):
    return ltorch.gelu_backward(g, a, approximate=approximate), None


@rule_for(ltorch.silu)
def _silu(g, out, a, inplace=False):
    return ltorch.silu_backward(g, a), None


@rule_for(ltorch.hardsigmoid)
def _hardsigmoid(g, out, a, inplace=False):
    return ltorch.hardsigmoid_backward(g, a), None


@rule_for(ltorch.hardswish)
def _hardswish(g, out, a, inplace=False):
    return ltorch.hardswish_backward(g, a), None


def _softmax_rule(backward):
    def rule(g, out, a, dim=None, _stacklevel=3, dtype=None):
        if not shape_of(a):
            return NotImplemented
        d = dim % len(shape_of(a))
        return backward(g, out, d, dtype_of(out)), None, None, None

    return rule


VJPS[ltorch.softmax] = _softmax_rule(ltorch.softmax_backward)
VJPS[ltorch.log_softmax] = _softmax_rule(ltorch.log_softmax_backward)


@rule_for(ltorch.softmin)
def _softmin(g, out, a, dim=None, _stacklevel=3, dtype=None):
    """softmax's gradient of ``-a``: from the result, as torch's (softmax(-a), saving it)."""
    if dim is None:
        return NotImplemented
    grads = VJPS[ltorch.softmax](g, out, a, dim, _stacklevel, dtype)
    return grads if grads is NotImplemented else (prims.neg(grads[0]), *grads[1:])
