"""Margin, ranking and distance losses, and the distances they use: margin_ranking,
hinge_embedding, soft_margin, multilabel_soft_margin, multi_margin, multilabel_margin,
cosine_embedding, triplet_margin, poisson_nll, gaussian_nll,
``pairwise_distance`` and ``pdist``.

``triplet_margin_with_distance_loss`` is no op of its own: its distance function is user code,
which is traced through as ``torch.nn.functional``'s Python calls it.

Compositions of torch-language ops, written as torch's own formulas (``aten`` or
``torch.nn.functional``) so values and gradients match eager's, ties and zeros included.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from thunder.core.tags import Tag
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch import casts, factories, indexing, matrix, reductions, scans, shape
from thunder.ops.ltorch import elementwise as ew
from thunder.ops.ltorch.losses import legacy_reduction
from thunder.ops.meta import ShapeError, device_of, dtype_of, is_tensor, shape_of

_LOSS = (Tag.LOSS,)


def _reduced(loss, reduction: str, op: str):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return reductions.mean(loss)
    if reduction == "sum":
        return reductions.sum(loss)
    raise ShapeError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


@torchsymbol(
    F.margin_ranking_loss,
    torch.margin_ranking_loss,
    torch_impl="torch.nn.functional.margin_ranking_loss",
    tags=_LOSS,
)
def margin_ranking_loss(
    input1, input2, target, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"
):
    """``max(0, -target * (input1 - input2) + margin)``."""
    loss = ew.clamp_min(ew.add(ew.mul(ew.neg(target), ew.sub(input1, input2)), margin), 0)
    return _reduced(loss, legacy_reduction(size_average, reduce, reduction), "F.margin_ranking_loss")


@torchsymbol(
    F.hinge_embedding_loss,
    torch.hinge_embedding_loss,
    torch_impl="torch.nn.functional.hinge_embedding_loss",
    tags=_LOSS,
)
def hinge_embedding_loss(
    input, target, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"
):
    """``input`` where the target is 1, ``max(0, margin - input)`` where it is -1 (aten's sum
    of the two masked terms, so another target value gets both)."""
    at_margin = ew.where(ew.ne(target, 1), ew.clamp_min(ew.rsub(input, margin), 0), 0)
    at_self = ew.where(ew.ne(target, -1), input, 0)
    return _reduced(
        ew.add(at_margin, at_self),
        legacy_reduction(size_average, reduce, reduction),
        "F.hinge_embedding_loss",
    )


@torchsymbol(F.soft_margin_loss, torch_impl="torch.nn.functional.soft_margin_loss", tags=_LOSS)
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """``log(1 + exp(-target * input))``."""
    loss = ew.log1p(ew.exp(ew.mul(ew.neg(target), input)))
    return _reduced(loss, legacy_reduction(size_average, reduce, reduction), "F.soft_margin_loss")


@torchsymbol(
    F.multilabel_soft_margin_loss, torch_impl="torch.nn.functional.multilabel_soft_margin_loss", tags=_LOSS
)
def multilabel_soft_margin_loss(
    input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"
):
    """The binary logistic loss of each class, averaged over the classes (the last dim)."""
    loss = ew.neg(
        ew.add(ew.mul(target, ew.logsigmoid(input)), ew.mul(ew.rsub(target, 1), ew.logsigmoid(ew.neg(input))))
    )
    if weight is not None:
        loss = ew.mul(loss, weight)
    n = len(shape_of(input))
    class_dim = n - 1 if n else 0
    classes = shape_of(input)[class_dim] if n else 1
    loss = ew.div(reductions.sum(loss, class_dim) if n else loss, classes)
    return _reduced(loss, legacy_reduction(size_average, reduce, reduction), "F.multilabel_soft_margin_loss")


def _rows(input, target, op: str):
    """``input`` as (N, C) and ``target`` as (N,) or (N, C), and whether to drop the batch dim."""
    s = shape_of(input)
    if len(s) > 2:
        raise ShapeError(f"{op}: input must be 0-, 1- or 2-dimensional, got shape {s}")
    if len(s) == 2:
        return input, target, False
    x = shape.reshape(input, (1, s[0] if s else 1))
    t = shape.reshape(target, (1,) + shape_of(target)[len(shape_of(target)) - (len(shape_of(target)) > 0) :])
    return x, t, True


@torchsymbol(F.multi_margin_loss, torch_impl="torch.nn.functional.multi_margin_loss", tags=_LOSS)
def multi_margin_loss(
    input,
    target,
    p: int = 1,
    margin: float = 1.0,
    weight=None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
):
    """``sum_{i != y} max(0, margin - x[y] + x[i]) ** p / C`` per sample (times ``weight[y]``)."""
    op = "F.multi_margin_loss"
    if p not in (1, 2):
        raise ShapeError(f"{op}: p must be 1 or 2, got {p}")
    x, t, squeeze = _rows(input, target, op)
    t = shape.reshape(t, (shape_of(x)[0],))
    n, c = shape_of(x)
    x_y = indexing.gather(x, 1, shape.unsqueeze(t, 1))  # (N, 1)
    z = ew.clamp_min(ew.add(ew.sub(x, x_y), margin), 0)
    if p == 2:
        z = ew.mul(z, z)
    if weight is not None:
        z = ew.mul(z, shape.unsqueeze(indexing.index_select(weight, 0, t), 1))
    cls = factories.arange(c, device=device_of(t))
    z = ew.where(ew.eq(shape.unsqueeze(cls, 0), shape.unsqueeze(t, 1)), 0, z)  # not the target itself
    loss = ew.div(reductions.sum(z, 1), c)
    if squeeze and not shape_of(target):  # a 0-dim target: a 0-dim loss (a (1,) target keeps (1,))
        loss = shape.reshape(loss, ())
    return _reduced(loss, legacy_reduction(size_average, reduce, reduction), op)


@torchsymbol(F.multilabel_margin_loss, torch_impl="torch.nn.functional.multilabel_margin_loss", tags=_LOSS)
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """``sum_{j, i} max(0, 1 - (x[y_j] - x[i])) / C`` over the target classes ``y_j`` (those
    before the first -1 in ``target``) and the classes ``i`` that are not targets."""
    op = "F.multilabel_margin_loss"
    x, t, squeeze = _rows(input, target, op)
    n, c = shape_of(x)
    t = shape.reshape(t, (n, c))
    valid = scans.cumprod(casts.to(ew.ne(t, -1), torch.int64), 1)  # before the first -1
    valid_f = casts.to(valid, dtype_of(x))
    safe = ew.where(ew.eq(valid, 1), t, 0)
    x_y = indexing.gather(x, 1, safe)  # (N, C): x at each target slot
    cls = factories.arange(c, device=device_of(t))
    # is_target[n, i]: class i is one of the valid targets of row n
    hits = ew.logical_and(
        ew.eq(shape.unsqueeze(safe, 2), shape.reshape(cls, (1, 1, c))), ew.eq(shape.unsqueeze(valid, 2), 1)
    )
    is_target = reductions.any(hits, 1)
    pair = ew.clamp_min(ew.add(ew.rsub(shape.unsqueeze(x_y, 2), 1), shape.unsqueeze(x, 1)), 0)  # (N, j, i)
    keep = ew.mul(shape.unsqueeze(valid_f, 2), shape.unsqueeze(ew.logical_not(is_target), 1))
    loss = ew.div(reductions.sum(ew.mul(pair, keep), (1, 2)), c)
    if squeeze:
        loss = shape.reshape(loss, ())
    return _reduced(loss, legacy_reduction(size_average, reduce, reduction), op)


@torchsymbol(
    F.cosine_embedding_loss,
    torch.cosine_embedding_loss,
    torch_impl="torch.nn.functional.cosine_embedding_loss",
    tags=_LOSS,
)
def cosine_embedding_loss(
    input1, input2, target, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"
):
    """``1 - cos`` where the target is 1, ``max(0, cos - margin)`` where it is -1 (aten's
    formula: the squared magnitudes each get 1e-12 before the square root)."""
    eps = 1e-12
    d = len(shape_of(input1)) - 1
    prod = reductions.sum(ew.mul(input1, input2), d)
    m1 = ew.add(reductions.sum(ew.mul(input1, input1), d), eps)
    m2 = ew.add(reductions.sum(ew.mul(input2, input2), d), eps)
    cos = ew.div(prod, ew.sqrt(ew.mul(m1, m2)))
    pos = ew.where(ew.eq(target, 1), ew.rsub(cos, 1), 0)
    neg = ew.where(ew.eq(target, -1), ew.clamp_min(ew.sub(cos, margin), 0), 0)
    return _reduced(
        ew.add(pos, neg), legacy_reduction(size_average, reduce, reduction), "F.cosine_embedding_loss"
    )


@torchsymbol(
    F.pairwise_distance,
    torch.pairwise_distance,
    torch_impl="torch.nn.functional.pairwise_distance",
    tags=_LOSS,
)
def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """The p-norm of ``x1 - x2 + eps`` over the last dim."""
    n = max(len(shape_of(x1)), len(shape_of(x2)))
    diff = ew.add(ew.sub(x1, x2), eps)
    if n == 0:
        return reductions.vector_norm(diff, p, None, keepdim)
    return reductions.vector_norm(diff, p, n - 1, keepdim)


@torchsymbol(F.pdist, torch.pdist, torch_impl="torch.nn.functional.pdist", tags=_LOSS)
def pdist(input, p: float = 2.0):
    """The p-norm distance of every pair of rows ``i < j``, in row-major order."""
    s = shape_of(input)
    if len(s) != 2:
        raise ShapeError(f"F.pdist: input must be 2-dimensional, got shape {s}")
    n = s[0]
    if n < 2:
        return shape.narrow(shape.flatten(input), 0, 0, 0)  # no pairs: empty, in the input's graph
    idx = matrix.triu_indices(n, n, 1, device=device_of(input))
    rows = indexing.index_select(input, 0, shape.select(idx, 0, 0))
    cols = indexing.index_select(input, 0, shape.select(idx, 0, 1))
    return reductions.vector_norm(ew.sub(rows, cols), p, 1)


@torchsymbol(
    F.triplet_margin_loss,
    torch.triplet_margin_loss,
    torch_impl="torch.nn.functional.triplet_margin_loss",
    tags=_LOSS,
)
def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
):
    """``max(0, margin + d(a, p) - d(a, n))`` with the pairwise distance (``swap``: the
    smaller of d(a, n) and d(p, n))."""
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = ew.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    loss = ew.clamp_min(ew.sub(ew.add(d_ap, margin), d_an), 0)
    return _reduced(loss, legacy_reduction(size_average, reduce, reduction), "F.triplet_margin_loss")


@torchsymbol(
    F.poisson_nll_loss, torch.poisson_nll_loss, torch_impl="torch.nn.functional.poisson_nll_loss", tags=_LOSS
)
def poisson_nll_loss(
    input,
    target,
    log_input: bool = True,
    full: bool = False,
    size_average=None,
    eps: float = 1e-8,
    reduce=None,
    reduction: str = "mean",
):
    """``exp(input) - target * input`` (``log_input``) or ``input - target * log(input + eps)``;
    ``full`` adds Stirling's term where the target exceeds 1."""
    if log_input:
        loss = ew.sub(ew.exp(input), ew.mul(target, input))
    else:
        loss = ew.sub(input, ew.mul(target, ew.log(ew.add(input, eps))))
    if full:
        safe = ew.where(ew.gt(target, 1), target, 1)
        stirling = ew.add(
            ew.sub(ew.mul(safe, ew.log(safe)), safe), ew.mul(ew.log(ew.mul(safe, 2 * math.pi)), 0.5)
        )
        loss = ew.add(loss, ew.where(ew.gt(target, 1), stirling, 0))
    return _reduced(loss, legacy_reduction(size_average, reduce, reduction), "F.poisson_nll_loss")


@torchsymbol(F.gaussian_nll_loss, torch_impl="torch.nn.functional.gaussian_nll_loss", tags=_LOSS)
def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
    """``(log(var) + (input - target)**2 / var) / 2`` (``full``: plus ``log(2 pi) / 2``), the
    variance clamped to ``eps`` as F's ``no_grad`` clamp does: its gradient passes unchanged."""
    op = "F.gaussian_nll_loss"
    si = shape_of(input)
    if not is_tensor(var):
        var = factories.full_like(input, var)
    sv = shape_of(var)
    if sv != si:
        if si[:-1] == sv:
            var = shape.unsqueeze(var, -1)
        elif not (si[:-1] == sv[:-1] and sv and sv[-1] == 1):
            raise ShapeError(f"{op}: var of shape {sv} does not fit the input's shape {si}")
    clamped = ew.clamp_min(casts.detach(var), eps)
    var = ew.add(var, ew.sub(clamped, casts.detach(var)))
    loss = ew.mul(ew.add(ew.log(var), ew.div(ew.square(ew.sub(input, target)), var)), 0.5)
    if full:
        loss = ew.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduced(loss, reduction, op)
