"""VJP rules of linear algebra, convolution and pooling: ``matmul``, ``linear`` and
``grouped_mm`` as matmuls of the cotangent, and the convolution and pooling prims through
their backward kernels (prims too, declared non-differentiable in ``table``).
"""

from __future__ import annotations

import math

import torch

from thunder.ops import ltorch, prims
from thunder.ops.meta import device_of, dtype_of, is_tensor, shape_of
from thunder.ops.vjp.table import AUGMENTED, AUGMENTED_VIEWS, rule_for, swap_last


# -- linear algebra -------------------------------------------------------------------------
def _unsqueeze(a, dim: int):
    s = shape_of(a)
    d = dim % (len(s) + 1)
    out = s[:d] + (1,) + s[d:]
    return prims.broadcast_in_dim(a, out, tuple(i for i in range(len(out)) if i != d))


@rule_for(prims.matmul)
def _matmul(g, out, a, b):
    """As torch's matmul: a 1-d argument is a row (left) or a column (right) that is dropped
    from the result; batch dims broadcast (the grad pass sums them back)."""
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) == 1 and len(sb) == 1:
        return prims.mul(g, b), prims.mul(g, a)
    a2 = _unsqueeze(a, 0) if len(sa) == 1 else a
    b2 = _unsqueeze(b, -1) if len(sb) == 1 else b
    g2 = _unsqueeze(g, -2) if len(sa) == 1 else g
    g2 = _unsqueeze(g2, -1) if len(sb) == 1 else g2
    ga = prims.matmul(g2, swap_last(b2))
    gb = prims.matmul(swap_last(a2), g2)
    if len(sa) == 1:
        ga = prims.reshape(ga, shape_of(ga)[:-2] + shape_of(ga)[-1:])
    if len(sb) == 1:
        gb = prims.reshape(gb, shape_of(gb)[:-1])
    return ga, gb


@rule_for(ltorch.batched_matmul)
def _batched_matmul(g, out, a, b):
    """The matmuls of eager's ``BmmBackward``, on the 3-dim operands the forward kept: the
    cotangent made 3-dim once for both (a gradient reaching the operands' 3-dim forms too, in
    a backward of the backward, joins theirs)."""
    g_out, g_a3, g_b3 = g
    _, a3, b3 = out
    ga = gb = None
    if g_out is not None:
        g3 = prims.reshape(g_out, (shape_of(a3)[0], *shape_of(g_out)[-2:]))
        ga, gb = prims.matmul(g3, swap_last(b3)), prims.matmul(swap_last(a3), g3)
    ga = _joined(ga, g_a3)
    gb = _joined(gb, g_b3)
    return (
        None if ga is None else prims.reshape(ga, shape_of(a)),
        None if gb is None else prims.reshape(gb, shape_of(b)),
    )


def _joined(x, y):
    return y if x is None else x if y is None else prims.add(x, y)


def _matmul_keeping_operands(a, b):
    """``batched_matmul`` where it applies (4 or more dims, the same batch dims), else None."""
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) < 4 or sa[:-2] != sb[:-2]:
        return None
    return ltorch.batched_matmul(a, b)


AUGMENTED[ltorch.matmul] = _matmul_keeping_operands
AUGMENTED_VIEWS[ltorch.batched_matmul] = {1: 0, 2: 1}


@rule_for(prims.linear)
def _linear(g, out, a, w, bias):
    """out = a @ w.T + bias over the last dim; the weight's gradient sums every leading dim."""
    sa, sw = shape_of(a), shape_of(w)
    gb = g if is_tensor(bias) else None
    if len(sw) == 1:  # a weight vector: out has a's leading dims
        ge = _unsqueeze(g, -1)
        return prims.mul(ge, w), prims.mul(ge, a), gb
    ga = prims.matmul(g, w)
    if len(sa) == 1:
        gw = prims.mul(_unsqueeze(g, -1), _unsqueeze(a, 0))
    else:
        lead = math.prod(sa[:-1])
        g2 = prims.reshape(g, (lead, sw[0])) if len(sa) != 2 else g
        a2 = prims.reshape(a, (lead, sa[-1])) if len(sa) != 2 else a
        gw = prims.matmul(swap_last(g2), a2)
    return ga, gw, gb


def _runs(offs, n: int, dtype):
    """(G, n): 1 where index i of the ragged dimension is in run g (``offs``: the runs' ends),
    and (n,): whether i is in any run."""
    g = shape_of(offs)[0]
    dev = device_of(offs)
    ends = prims.broadcast_in_dim(offs, (n, g), (1,))
    idx = prims.broadcast_in_dim(
        prims.iota(n, start=0, step=1, dtype=dtype_of(offs), device=dev), (n, g), (0,)
    )
    run = prims.sum(prims.convert_element_type(prims.le(ends, idx), torch.int64), (1,))  # runs ended before i
    groups = prims.iota(g, start=0, step=1, dtype=torch.int64, device=dev)
    mask = prims.eq(prims.broadcast_in_dim(groups, (g, n), (0,)), prims.broadcast_in_dim(run, (g, n), (1,)))
    return prims.convert_element_type(mask, dtype), prims.lt(run, g)


@rule_for(prims.grouped_mm)
def _grouped_mm(g, out, a, b, offs):
    """(M, K) x (G, K, N): dA = dO B[g]^T per run (zero after the last run), dB[g] = A_g^T dO_g,
    both grouped matmuls. (M, K) x (K, N) with runs along K: each run's share of dO B^T and
    A^T dO, selected by a mask of the runs."""
    sa, sb = shape_of(a), shape_of(b)
    if len(sb) == 3:
        _, valid = _runs(offs, sa[0], dtype_of(a))
        ga = prims.where(prims.broadcast_in_dim(valid, sa, (0,)), prims.grouped_mm(g, swap_last(b), offs), 0)
        return ga, prims.grouped_mm(swap_last(a), g, offs), None
    groups = shape_of(offs)[0]
    mask, _ = _runs(offs, sa[1], dtype_of(a))  # (G, K)
    ga = prims.mul(
        prims.matmul(g, swap_last(b)), prims.broadcast_in_dim(mask, (groups, sa[0], sa[1]), (0, 2))
    )
    gb = prims.mul(
        prims.matmul(swap_last(a), g), prims.broadcast_in_dim(mask, (groups, sb[0], sb[1]), (0, 1))
    )
    return prims.sum(ga, (0,)), prims.sum(gb, (0,)), None


# -- convolution and pooling ----------------------------------------------------------------
@rule_for(prims.convolution)
def _convolution(g, out, a, weight, bias, stride, padding, dilation, groups):
    grads = prims.convolution_backward(g, a, weight, is_tensor(bias), stride, padding, dilation, groups)
    gb = grads[2] if is_tensor(bias) else None
    return grads[0], grads[1], gb, None, None, None, None


@rule_for(prims.max_pool)
def _max_pool(g, out, a, *params):
    return (prims.max_pool_backward(g, a, *params),) + (None,) * len(params)


@rule_for(prims.avg_pool)
def _avg_pool(g, out, a, *params):
    return (prims.avg_pool_backward(g, a, *params),) + (None,) * len(params)


@rule_for(prims.adaptive_avg_pool)
def _adaptive_avg_pool(g, out, a, output_size):
    return prims.adaptive_avg_pool_backward(g, a, output_size), None
