"""VJP rules of the shape ops: the prims that broadcast, reshape, transpose, flip, slice and
concatenate (each gradient is the inverse movement of ``g``), the torch-language
``split``/``chunk`` (the pieces' gradients put side by side) and the write through a
detached view (the gradient passes to the base unchanged).
"""

from __future__ import annotations

from thunder.ops import ltorch, prims
from thunder.ops.meta import shape_of
from thunder.ops.vjp.table import VJPS, rule_for, zeros_like


@rule_for(prims.broadcast_in_dim)
def _broadcast_in_dim(g, out, a, shape, broadcast_dims):
    sa = shape_of(a)
    summed = {i for i in range(len(shape)) if i not in broadcast_dims}
    summed |= {bd for d, bd in zip(sa, broadcast_dims) if d == 1 and shape[bd] != 1}
    r = prims.sum(g, tuple(sorted(summed))) if summed else g
    # the dims left are a's, in output order: put them back in a's order
    left = [list(broadcast_dims).index(k) for k in range(len(shape)) if k not in summed]
    if left != sorted(left):
        r = prims.transpose(r, tuple(sorted(range(len(left)), key=lambda i: left[i])))
    return (prims.reshape(r, sa) if shape_of(r) != sa else r), None, None


@rule_for(prims.reshape, prims.squeeze)
def _reshape(g, out, a, shape):
    return prims.reshape(g, shape_of(a)), None


@rule_for(prims.transpose)
def _transpose(g, out, a, permutation):
    inverse = tuple(sorted(range(len(permutation)), key=lambda i: permutation[i]))
    return prims.transpose(g, inverse), None


@rule_for(prims.flip)
def _flip(g, out, a, dims):
    return prims.flip(g, dims), None


@rule_for(prims.slice_prim)
def _slice(g, out, a, start_indices, end_indices, strides=None):
    sa = shape_of(a)
    strides = strides or (1,) * len(sa)
    cur = list(shape_of(g))
    for d, (lo, hi, st) in enumerate(zip(start_indices, end_indices, strides)):
        if cur[d] != sa[d]:
            cur[d] = sa[d]
            g = ltorch.slice_backward(g, tuple(cur), d, lo, hi, st)
    return g, None, None, None


@rule_for(prims.cat)
def _cat(g, out, tensors, dim):
    s = shape_of(g)
    d = dim % len(s)
    grads, start = [], 0
    for t in tensors:
        n = shape_of(t)[d]
        lo, hi = [0] * len(s), list(s)
        lo[d], hi[d] = start, start + n
        grads.append(prims.slice_prim(g, tuple(lo), tuple(hi), (1,) * len(s)))
        start += n
    return grads, None


# -- torch-language ops with rules of their own ---------------------------------------------
def _split_rule(g, out, a, *args):
    """split/chunk: the pieces' gradients side by side (zeros for a piece without one)."""
    dim = args[-1] % len(shape_of(a))
    pieces = [gi if gi is not None else zeros_like(o) for gi, o in zip(g, out)]
    return (prims.cat(pieces, dim) if len(pieces) > 1 else pieces[0],) + (None,) * len(args)


VJPS[ltorch.split] = _split_rule
VJPS[ltorch.chunk] = _split_rule


@rule_for(ltorch.write_through_detach)
def _write_through_detach(g, out, base, value):
    return g, None
