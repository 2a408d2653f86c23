"""VJP rules of ``layer_norm``: the kernel's gradient, from the mean and 1/std that
``native_layer_norm`` kept where the grad pass used it as the forward (its ``AUGMENTED``
entry, here too) or recomputed from the input where it did not.
"""

from __future__ import annotations

from thunder.ops import ltorch
from thunder.ops.meta import LOW_PRECISION_DTYPES, dtype_of
from thunder.ops.vjp.table import AUGMENTED, rule_for


@rule_for(ltorch.layer_norm)
def _layer_norm(g, out, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """The kernel's gradient, with the mean and 1/std recomputed from the input (where the
    forward is not ``native_layer_norm``, see ``AUGMENTED``)."""
    if weight is None or bias is None or dtype_of(input) in LOW_PRECISION_DTYPES:
        return NotImplemented
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    _, mean, rstd = ltorch.native_layer_norm(input, ns, None, None, eps)
    gi, gw, gb = ltorch.layer_norm_backward(g, input, ns, mean, rstd, weight, bias, (True, True, True))
    return gi, None, gw, gb, None


@rule_for(ltorch.native_layer_norm)
def _native_layer_norm(g, out, input, normalized_shape, weight, bias, eps):
    """The kernel's gradient from the mean and 1/std the forward kept (eager's way)."""
    if weight is None or bias is None or dtype_of(input) in LOW_PRECISION_DTYPES:
        return NotImplemented
    g_out = g[0]
    if g_out is None:  # (the statistics are not differentiable)
        return None, None, None, None, None
    _, mean, rstd = out
    ns = tuple(normalized_shape)
    gi, gw, gb = ltorch.layer_norm_backward(g_out, input, ns, mean, rstd, weight, bias, (True, True, True))
    return gi, None, gw, gb, None


def _layer_norm_keeping_statistics(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if weight is None or bias is None or dtype_of(input) in LOW_PRECISION_DTYPES:
        return None
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    return ltorch.native_layer_norm(input, ns, weight, bias, eps)


AUGMENTED[ltorch.layer_norm] = _layer_norm_keeping_statistics
