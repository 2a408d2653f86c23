"""VJP rules of ``layer_norm`` and ``group_norm``: the kernels' gradients
(``layer_norm_backward``, ``group_norm_backward``: eager's fused backward kernels on the torch
executor), from the mean and 1/std that ``native_layer_norm`` / ``native_group_norm`` kept
where the grad pass used them as the forward (their ``AUGMENTED`` entries, here too), or, for
``layer_norm``, recomputed from the input where it did not.
"""

from __future__ import annotations

import math

from thunder.ops import ltorch
from thunder.ops.meta import LOW_PRECISION_DTYPES, dtype_of, shape_of
from thunder.ops.vjp.table import AUGMENTED, rule_for


def _layer_norm_applies(input) -> bool:
    # bfloat16/float16 layer norms are differentiated through their decomposition
    return dtype_of(input) not in LOW_PRECISION_DTYPES


def _mask(weight, bias) -> tuple[bool, bool, bool]:
    """The gradients the kernels give: the input's, and each parameter's that is given."""
    return True, weight is not None, bias is not None


def _params(grads, weight, bias) -> tuple:
    """(grad weight, grad bias) out of a backward op's outputs (only those it was asked for)."""
    rest = iter(grads[1:])
    return (None if weight is None else next(rest)), (None if bias is None else next(rest))


def _shape(normalized_shape) -> tuple:
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


@rule_for(ltorch.layer_norm)
def _layer_norm(g, out, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """The kernel's gradient, with the mean and 1/std recomputed from the input (where the
    forward is not ``native_layer_norm``, see ``AUGMENTED``)."""
    if not _layer_norm_applies(input):
        return NotImplemented
    ns = _shape(normalized_shape)
    _, mean, rstd = ltorch.native_layer_norm(input, ns, None, None, eps)
    grads = ltorch.layer_norm_backward(g, input, ns, mean, rstd, weight, bias, _mask(weight, bias))
    return grads[0], None, *_params(grads, weight, bias), None


def _statistics_gradient(g_mean, g_rstd, x, mean, rstd, n: int):
    """The input's gradient through the mean and 1/std a kernel returned (over groups of ``n``
    values, ``x`` shaped so that ``mean`` and ``rstd`` broadcast against it): a backward that is
    itself differentiated (a Hessian-vector product) reads them. ``mean``'s is ``g / n`` for each
    value, ``rstd = (var + eps) ** -0.5``'s is ``-g * rstd**3 * (x - mean) / n``; None for none."""
    out = None
    if g_mean is not None:
        out = ltorch.expand(ltorch.div(g_mean, n), shape_of(x))
    if g_rstd is not None:
        scale = ltorch.div(ltorch.mul(g_rstd, ltorch.pow(rstd, 3)), -n)
        term = ltorch.mul(ltorch.sub(x, mean), scale)
        out = term if out is None else ltorch.add(out, term)
    return out


@rule_for(ltorch.native_layer_norm)
def _native_layer_norm(g, out, input, normalized_shape, weight, bias, eps):
    """The kernel's gradient from the mean and 1/std the forward kept (eager's way), and the
    gradient through those statistics where a backward that is differentiated reads them."""
    if not _layer_norm_applies(input):
        return NotImplemented
    g_out, g_mean, g_rstd = g
    _, mean, rstd = out
    ns = tuple(normalized_shape)
    through = _statistics_gradient(g_mean, g_rstd, input, mean, rstd, math.prod(ns))
    if g_out is None:
        return through, None, None, None, None
    grads = ltorch.layer_norm_backward(g_out, input, ns, mean, rstd, weight, bias, _mask(weight, bias))
    g_input = grads[0] if through is None else ltorch.add(grads[0], through)
    return g_input, None, *_params(grads, weight, bias), None


def _layer_norm_keeping_statistics(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if not _layer_norm_applies(input):
        return None
    return ltorch.native_layer_norm(input, _shape(normalized_shape), weight, bias, eps)


AUGMENTED[ltorch.layer_norm] = _layer_norm_keeping_statistics


@rule_for(ltorch.native_group_norm)
def _native_group_norm(g, out, input, weight, bias, N, C, HxW, group, eps):
    """The kernel's gradient from the mean and 1/std the forward kept (eager's way), and the
    gradient through those statistics where a backward that is differentiated reads them."""
    g_out, g_mean, g_rstd = g
    _, mean, rstd = out
    through = None
    if g_mean is not None or g_rstd is not None:  # (per group: [N, G] against [N, G, C/G * HxW])
        grouped = ltorch.reshape(input, (N, group, -1))
        as_stat = lambda v: None if v is None else ltorch.reshape(v, (N, group, 1))  # noqa: E731
        through = _statistics_gradient(
            as_stat(g_mean), as_stat(g_rstd), grouped, as_stat(mean), as_stat(rstd), (C // group) * HxW
        )
        through = ltorch.reshape(through, shape_of(input))
    if g_out is None:
        return through, *(None,) * 7
    grads = ltorch.group_norm_backward(
        g_out, input, mean, rstd, weight, N, C, HxW, group, _mask(weight, bias)
    )
    g_input = grads[0] if through is None else ltorch.add(grads[0], through)
    return g_input, *_params(grads, weight, bias), None, None, None, None, None


def _group_norm_keeping_statistics(input, num_groups, weight=None, bias=None, eps=1e-5):
    """``native_group_norm``, as eager's ``F.group_norm`` runs it; None for a bias without a
    weight (eager's backward kernel needs the weight for the bias's gradient: its autograd
    fails there, the decomposition differentiates it)."""
    if weight is None and bias is not None:
        return None
    s = shape_of(input)
    return ltorch.native_group_norm(input, weight, bias, s[0], s[1], math.prod(s[2:]), num_groups, eps)


AUGMENTED[ltorch.group_norm] = _group_norm_keeping_statistics
