"""Loss functions: mse, l1, smooth_l1, huber, binary cross entropy, kl_div, nll, cross entropy.

Compositions of prims and other torch-language ops; each names the torch function that
computes the whole loss (``torch_impl``) for the torch executor.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch import reductions as red
from thunder.ops.ltorch import shape as sh
from thunder.ops.ltorch.nn import _channel_view, _expand_to
from thunder.ops.meta import ShapeError, broadcast_shapes, device_of, dtype_of, shape_of

T = torch.Tensor


# -- losses ---------------------------------------------------------------------------------
def legacy_reduction(size_average, reduce, reduction: str) -> str:
    """torch's legacy ``size_average``/``reduce`` arguments, read as a reduction string."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def _reduce_loss(loss, reduction: str, op: str, weight=None):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return red.sum(loss)
    if reduction == "mean":
        return red.mean(loss) if weight is None else prims.div(red.sum(loss), red.sum(weight))
    raise ShapeError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def _pointwise_loss(input, target, weight, reduction, op, fn):
    shape = broadcast_shapes(shape_of(input), shape_of(target), op=op)
    loss = fn(_expand_to(input, shape), _expand_to(target, shape))
    if weight is not None:
        if shape_of(weight) != shape_of(input):
            raise ShapeError(
                f"{op}: weight {shape_of(weight)} and input {shape_of(input)} must have the same size"
            )
        loss = prims.mul(loss, weight)
    return _reduce_loss(loss, reduction, op, weight)


@torchsymbol(F.mse_loss, torch_impl="torch.nn.functional.mse_loss", tags=(Tag.LOSS,))
def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    def fn(a, b):
        d = prims.sub(a, b)
        return prims.mul(d, d)

    return _pointwise_loss(
        input, target, weight, legacy_reduction(size_average, reduce, reduction), "F.mse_loss", fn
    )


@torchsymbol(F.l1_loss, torch_impl="torch.nn.functional.l1_loss", tags=(Tag.LOSS,))
def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    fn = lambda a, b: prims.abs(prims.sub(a, b))  # noqa: E731
    return _pointwise_loss(
        input, target, weight, legacy_reduction(size_average, reduce, reduction), "F.l1_loss", fn
    )


def _huber(a, b, delta, scale_down: bool):
    d = prims.abs(prims.sub(a, b))
    quad = prims.mul(prims.mul(d, d), 0.5)
    lin = prims.mul(prims.sub(d, 0.5 * delta), delta)
    if scale_down:  # smooth_l1 = huber / beta
        quad, lin = prims.div(quad, delta), prims.div(lin, delta)
    return prims.where(prims.lt(d, delta), quad, lin)


@torchsymbol(F.smooth_l1_loss, torch_impl="torch.nn.functional.smooth_l1_loss", tags=(Tag.LOSS,))
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
    if beta == 0:
        return l1_loss(input, target, size_average, reduce, reduction)
    fn = lambda a, b: _huber(a, b, beta, True)  # noqa: E731
    return _pointwise_loss(
        input, target, None, legacy_reduction(size_average, reduce, reduction), "F.smooth_l1_loss", fn
    )


@torchsymbol(F.huber_loss, torch_impl="torch.nn.functional.huber_loss", tags=(Tag.LOSS,))
def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None):
    fn = lambda a, b: _huber(a, b, delta, False)  # noqa: E731
    return _pointwise_loss(input, target, weight, reduction, "F.huber_loss", fn)


@torchsymbol(F.binary_cross_entropy, torch_impl="torch.nn.functional.binary_cross_entropy", tags=(Tag.LOSS,))
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    # torch clamps the logs at -100 so that 0 * log(0) stays finite
    log_p = prims.maximum(prims.log(input), -100)
    log_1mp = prims.maximum(prims.log(prims.sub(1, input)), -100)
    loss = prims.neg(prims.add(prims.mul(target, log_p), prims.mul(prims.sub(1, target), log_1mp)))
    if weight is not None:
        loss = prims.mul(loss, weight)
    return _reduce_loss(loss, reduction, "F.binary_cross_entropy")


@torchsymbol(
    F.binary_cross_entropy_with_logits,
    torch_impl="torch.nn.functional.binary_cross_entropy_with_logits",
    tags=(Tag.LOSS,),
)
def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None
):
    reduction = legacy_reduction(size_average, reduce, reduction)
    # log(sigmoid(x)) = -softplus(-x), computed stably as -(max(-x, 0) + log1p(exp(-|x|)))
    log_sig_neg = prims.add(
        prims.maximum(prims.neg(input), 0), prims.log1p(prims.exp(prims.neg(prims.abs(input))))
    )
    if pos_weight is not None:
        log_weight = prims.add(prims.mul(prims.sub(pos_weight, 1), target), 1)
        loss = prims.add(prims.mul(prims.sub(1, target), input), prims.mul(log_weight, log_sig_neg))
    else:
        loss = prims.add(prims.mul(prims.sub(1, target), input), log_sig_neg)
    if weight is not None:
        loss = prims.mul(loss, weight)
    return _reduce_loss(loss, reduction, "F.binary_cross_entropy_with_logits")


@torchsymbol(F.kl_div, torch_impl="torch.nn.functional.kl_div", tags=(Tag.LOSS,))
def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
    reduction = legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = prims.mul(prims.exp(target), prims.sub(target, input))
    else:  # target * (log(target) - input), 0 where target is 0
        xlogx = prims.where(prims.eq(target, 0), 0, prims.mul(target, prims.log(target)))
        loss = prims.sub(xlogx, prims.mul(target, input))
    if reduction == "batchmean":
        n = shape_of(input)[0] if shape_of(input) else 1
        return prims.div(red.sum(loss), n)
    return _reduce_loss(loss, reduction, "F.kl_div")


def _class_dim(input) -> int:
    return 1 if len(shape_of(input)) >= 2 else 0


def _nll(logp, target, weight, ignore_index: int, reduction: str, op: str):
    cd = _class_dim(logp)
    si, st = shape_of(logp), shape_of(target)
    if si[:cd] + si[cd + 1 :] != st:
        raise ShapeError(f"{op}: input {si} and target {st} do not match")
    ignored = prims.eq(target, ignore_index)
    safe = prims.where(ignored, 0, target)
    picked = prims.squeeze(prims.take_along_axis(logp, sh.unsqueeze(safe, cd), cd), (cd,))
    if weight is None:
        w = prims.where(ignored, 0, prims.full((), 1, dtype=dtype_of(logp), device=device_of(logp)))
        w = _expand_to(w, st)
    else:
        w = prims.where(ignored, 0, prims.take(weight, safe, 0))
    loss = prims.neg(prims.mul(picked, w))
    if reduction == "mean":
        return prims.div(red.sum(loss), red.sum(w))
    return _reduce_loss(loss, reduction, op)


@torchsymbol(F.nll_loss, torch_impl="torch.nn.functional.nll_loss", tags=(Tag.LOSS,))
def nll_loss(
    input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None, reduction="mean"
):
    return _nll(
        input, target, weight, ignore_index, legacy_reduction(size_average, reduce, reduction), "F.nll_loss"
    )


@torchsymbol(F.cross_entropy, torch_impl="torch.nn.functional.cross_entropy", tags=(Tag.LOSS,))
def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
):
    """Class-index targets (with ``ignore_index``) or class-probability targets; label smoothing."""
    op = "F.cross_entropy"
    reduction = legacy_reduction(size_average, reduce, reduction)
    cd = _class_dim(input)
    n_classes = shape_of(input)[cd]
    logp = red.log_softmax(input, cd)
    wview = None if weight is None else _channel_view(weight, len(shape_of(input)), cd)
    if dtype_of(target).is_floating_point:  # class probabilities
        if label_smoothing > 0:
            target = prims.add(prims.mul(target, 1 - label_smoothing), label_smoothing / n_classes)
        prod = prims.mul(logp, target)
        if wview is not None:
            prod = prims.mul(prod, wview)
        if reduction == "none":
            return prims.neg(red.sum(prod, cd))
        total = prims.neg(red.sum(prod))
        if reduction == "sum":
            return total
        return prims.div(total, math.prod(shape_of(input)) // n_classes)
    nll = _nll(logp, target, weight, ignore_index, reduction, op)
    if label_smoothing == 0:
        return nll
    ignored = prims.eq(target, ignore_index)
    smooth = prims.neg(red.sum(prims.mul(logp, wview) if wview is not None else logp, cd))
    smooth = prims.where(ignored, 0, smooth)
    if reduction == "mean":
        if weight is None:
            denom = red.sum(prims.logical_not(ignored))
        else:
            denom = red.sum(prims.where(ignored, 0, prims.take(weight, prims.where(ignored, 0, target), 0)))
        smooth = prims.div(red.sum(smooth), denom)
    else:
        smooth = _reduce_loss(smooth, reduction, op)
    return prims.add(prims.mul(nll, 1 - label_smoothing), prims.mul(smooth, label_smoothing / n_classes))
