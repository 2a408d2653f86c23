"""``torch.einsum``: the equation parsed into index letters, each operand's own indices summed
out, and the operands contracted pair by pair as batched matrix products."""

from __future__ import annotations

import math

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.meta import ShapeError, shape_of


def _einsum_parse(equation: str, shapes):
    """Per operand its index letters, and the output's; ``...`` becomes letters of its own."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ShapeError(f"torch.einsum: {equation!r} names {len(terms)} operands, got {len(shapes)}")
    used = set(eq) - set(".,->")
    spare = iter(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used)
    ell_len = max(
        (len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t), default=0
    )
    ell = "".join(next(spare) for _ in range(ell_len))
    out_terms = []
    for t, shp in zip(terms, shapes):
        if "..." in t:
            n = len(shp) - len(t.replace("...", ""))
            t = t.replace("...", ell[ell_len - n :])
        if len(t) != len(shp):
            raise ShapeError(f"torch.einsum: {t!r} has {len(t)} indices for an operand of shape {tuple(shp)}")
        if len(set(t)) != len(t):
            raise ShapeError(
                f"torch.einsum: repeated indices in one operand ({t!r}, a diagonal) are not supported"
            )
        out_terms.append(t)
    if arrow:
        out = rhs.replace("...", ell)
    else:  # implicit output: the ellipsis, then the letters seen once, sorted
        letters = "".join(out_terms)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    return out_terms, out


def _einsum_sum_out(x, term: str, keep: set):
    """Sum the letters of ``term`` that are not in ``keep``."""
    dims = tuple(i for i, c in enumerate(term) if c not in keep)
    if not dims:
        return x, term
    return prims.sum(x, dims), "".join(c for c in term if c in keep)


def _einsum_pair(a, ta: str, b, tb: str, keep: set):
    """a (ta) times b (tb), summed over the shared letters not in ``keep``, as one matmul."""
    sizes = {**dict(zip(ta, shape_of(a))), **dict(zip(tb, shape_of(b)))}
    batch = [c for c in ta if c in tb and c in keep]
    contract = [c for c in ta if c in tb and c not in keep]
    left = [c for c in ta if c not in tb]
    right = [c for c in tb if c not in ta]

    def arrange(x, term, order, shape):
        perm = [term.index(c) for c in order]
        if perm != list(range(len(term))):
            x = prims.transpose(x, tuple(perm))
        return prims.reshape(x, shape) if tuple(shape) != shape_of(x) else x

    n = lambda cs: math.prod(sizes[c] for c in cs)  # noqa: E731
    a3 = arrange(a, ta, batch + left + contract, (n(batch), n(left), n(contract)))
    b3 = arrange(b, tb, batch + contract + right, (n(batch), n(contract), n(right)))
    out = prims.matmul(a3, b3)
    term = "".join(batch + left + right)
    return prims.reshape(out, tuple(sizes[c] for c in term)), term


@torchsymbol(torch.einsum, torch_impl="torch.einsum", tags=(Tag.MATMUL,))
def einsum(equation: str, *operands):
    """Pairwise, left to right: letters no later operand or the output needs are summed away
    (within one operand first), shared ones are contracted by a matmul."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    terms, out = _einsum_parse(equation, [shape_of(o) for o in operands])
    acc, acc_term = None, ""
    for i, (x, t) in enumerate(zip(operands, terms)):
        later = set(out).union(*terms[i + 1 :])
        x, t = _einsum_sum_out(x, t, later | set(acc_term))
        if acc is None:
            acc, acc_term = x, t
        else:
            acc, acc_term = _einsum_pair(acc, acc_term, x, t, later)
        acc, acc_term = _einsum_sum_out(acc, acc_term, later)
    perm = [acc_term.index(c) for c in out]
    return prims.transpose(acc, tuple(perm)) if perm != list(range(len(perm))) else acc
