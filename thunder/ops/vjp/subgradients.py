"""VJP rules where eager picks one subgradient among several, so that thunder's gradient is
eager's exactly on inputs built to hit the choice:

- ``max``/``min`` of a whole tensor spread the gradient evenly over the elements equal to the
  result, NaNs equal to a NaN result (eager's ``evenly_distribute_backward``; ``amax``'s
  rule counts none there);
- a selecting reduction (``max``/``min`` with ``dim``, ``kthvalue``, ``median`` with ``dim``)
  gives each row's gradient to the element its index output names, as eager's
  ``value_selecting_reduction_backward`` does. The index is the op's own output, so where the
  torch executor runs the op whole its kernel's choice among ties is the one used (a backward
  that recomputed the index from a stable sort picked another tied element);
- ``clamp`` (``clamp_min``, ``clamp_max``, ``clip``) passes the gradient where the input lies
  within the bounds, ends included, and a tensor bound gets it where it was chosen (eager's
  ``clamp_backward`` and ``clamp_backward_min_max``); ``hardtanh`` and ``relu6`` pass it
  strictly inside their bounds (``hardtanh_backward``). The decompositions, through
  ``maximum``/``minimum``, halved it at the bounds;
- ``fmax``/``fmin`` give a tie's gradient to the first operand (eager's formula), where
  ``maximum``'s rule halves it.

Without these rules the torch-language ops are differentiated through their decompositions.
"""

from __future__ import annotations

from thunder.ops import ltorch
from thunder.ops.meta import is_tensor, shape_of
from thunder.ops.vjp.indexing import _scatter_back
from thunder.ops.vjp.table import rule_for


def _selected_back(g, out, a, dim, keepdim):
    """The values' gradient into a zero tensor like ``a`` at the indices ``out[1]`` along ``dim``."""
    gv = g[0]
    if gv is None:
        return None
    if not shape_of(a):  # (a 0-dim input's value is the input)
        return gv
    d = dim % len(shape_of(a))
    index = out[1]
    if not keepdim:
        gv, index = ltorch.unsqueeze(gv, d), ltorch.unsqueeze(index, d)
    return _scatter_back(gv, a, d, index)


def _extremum(g, out, a, dim=None, keepdim=False):
    if is_tensor(dim):  # (the elementwise form: maximum's rule)
        return NotImplemented
    if dim is None:  # the whole tensor's: spread over the elements equal to it, NaN equal to NaN
        tie = ltorch.where(ltorch.isnan(out), ltorch.isnan(a), ltorch.eq(a, out))
        count = ltorch.sum(tie)
        return ltorch.where(tie, ltorch.div(g, count), 0), None, None
    return _selected_back(g, out, a, dim, keepdim), None, None


rule_for(ltorch.max, ltorch.min)(_extremum)


@rule_for(ltorch.kthvalue)
def _kthvalue(g, out, a, k, dim=-1, keepdim=False):
    return _selected_back(g, out, a, dim, keepdim), None, None, None


@rule_for(ltorch.median)
def _median(g, out, a, dim=None, keepdim=False):
    if dim is None:  # (the whole tensor's median: spread over its ties, as eager's)
        return NotImplemented
    return _selected_back(g, out, a, dim, keepdim), None, None


@rule_for(ltorch.clamp)
def _clamp(g, out, a, min=None, max=None):
    inside = None
    if min is not None:
        inside = ltorch.ge(a, min)
    if max is not None:
        below = ltorch.le(a, max)
        inside = below if inside is None else ltorch.logical_and(inside, below)
    g_min = g_max = None
    if is_tensor(min):  # (chosen where a is below it, unless it is above max: max wins then)
        chosen = ltorch.lt(a, min)
        if max is not None:
            chosen = ltorch.logical_and(chosen, ltorch.lt(min, max))
        g_min = ltorch.where(chosen, g, 0)
    if is_tensor(max):
        chosen = ltorch.gt(a, max)
        if min is not None:
            chosen = ltorch.logical_or(chosen, ltorch.lt(max, min))
        g_max = ltorch.where(chosen, g, 0)
    return ltorch.where(inside, g, 0), g_min, g_max


def _strictly_inside(g, a, low, high):
    return ltorch.where(ltorch.logical_or(ltorch.le(a, low), ltorch.ge(a, high)), 0, g)


@rule_for(ltorch.hardtanh)
def _hardtanh(g, out, a, min_val=-1.0, max_val=1.0, inplace=False):
    return _strictly_inside(g, a, min_val, max_val), None, None, None


@rule_for(ltorch.relu6)
def _relu6(g, out, a, inplace=False):
    return _strictly_inside(g, a, 0, 6), None


def _nan_ignoring(first_wins):
    def rule(g, out, a, b):
        # the first operand's where it is chosen on a tie too, or where b is NaN
        to_a = ltorch.logical_or(first_wins(a, b), ltorch.isnan(b))
        return ltorch.where(to_a, g, 0), ltorch.where(to_a, 0, g)

    return rule


rule_for(ltorch.fmax)(_nan_ignoring(ltorch.ge))
rule_for(ltorch.fmin)(_nan_ignoring(ltorch.le))
