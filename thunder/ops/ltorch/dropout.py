"""Dropout: ``F.dropout``, channel-wise ``F.dropout1d/2d/3d``, ``F.alpha_dropout`` and
``F.feature_alpha_dropout`` (and their ``torch.*`` spellings).

A keep mask is drawn as eager draws its noise: ``prims.bernoulli`` of probability ``1 - p``
in the input's dtype (``empty(...).bernoulli_(1 - p)``, one draw per element or per channel),
and kept values are scaled by ``1 / (1 - p)`` rounded as eager rounds it (in the input's
dtype), so with the same generator state thunder drops the same elements with the same
values, also when the decomposition runs (a gradient, fusion executors other than nvFuser,
whose generator is its own); outside training, or with ``p == 0``, the input passes through
unchanged. The op database checks the pattern (kept values scaled, dropped ones zero).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import alias, torchsymbol
from thunder.ops.meta import ShapeError, device_of, dtype_of, shape_of

# -selu's alpha * scale: the value alpha dropout gives a dropped element (before the affine fix)
_ALPHA = 1.7580993408473766


def _check_p(p: float, op: str) -> None:
    if not 0 <= p <= 1:
        raise ShapeError(f"{op}: dropout probability has to be between 0 and 1, got {p}")


def _keep(shape, p: float, like):
    """A bool mask of ``shape``: True with probability ``1 - p``."""
    noise = prims.bernoulli(tuple(shape), 1 - p, dtype=dtype_of(like), device=device_of(like))
    return prims.ne(noise, 0)


def _scale(p: float, dtype: torch.dtype) -> float:
    """``1 / (1 - p)`` as eager's dropout computes it, in ``dtype`` (``noise.div_(1 - p)``)."""
    with torch._C.DisableTorchFunction():
        return torch.ones((), dtype=dtype).div_(1 - p).item()


def _channel_shape(s, batched: bool):
    """The noise shape of channel-wise dropout: one draw per (batch, channel), or per channel."""
    lead = 2 if batched else 1
    return tuple(s[:lead]) + (1,) * (len(s) - lead)


def _scaled_keep(input, p: float, shape):
    keep = _keep(shape, p, input)
    return prims.where(keep, prims.mul(input, _scale(p, dtype_of(input))), 0)


@torchsymbol(F.dropout, torch_impl="torch.nn.functional.dropout", tags=(Tag.RANDOM,))
def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p)."""
    _check_p(p, "F.dropout")
    if not training or p == 0:
        return input
    if p == 1:  # as torch: input * 0 (nan stays nan, and the result is in the graph)
        return prims.mul(input, 0)
    return _scaled_keep(input, p, shape_of(input))


alias(lambda input, p, train: dropout(input, p, train), torch.dropout)


def _feature_dropout(n: int | None):
    """``F.dropout{n}d``: whole channels zeroed. ``n`` None: torch.feature_dropout, any rank."""
    op = f"F.dropout{n}d" if n else "torch.feature_dropout"

    def fn(input, p: float = 0.5, training: bool = True, inplace: bool = False):
        _check_p(p, op)
        s = shape_of(input)
        if n == 1 and len(s) not in (2, 3):
            raise ShapeError(f"{op}: expected a 2-D or 3-D input, got shape {s}")
        if len(s) < 2:
            raise ShapeError(f"{op}: channel-wise dropout needs at least 2 dimensions, got shape {s}")
        if not training or p == 0:
            return input
        if p == 1:
            return prims.mul(input, 0)
        # dropout1d and dropout3d read an input without its batch dim as (channels, ...);
        # dropout2d reads a 3-D input as (batch, channels, length), as torch does
        batched = n is None or n == 2 or len(s) == n + 2
        return _scaled_keep(input, p, _channel_shape(s, batched))

    fn.__name__ = f"dropout{n}d" if n else "feature_dropout"
    fns = [getattr(F, f"dropout{n}d")] if n else [torch.feature_dropout]
    impl = f"torch.nn.functional.dropout{n}d" if n else "torch.feature_dropout"
    return torchsymbol(*fns, torch_impl=impl, tags=(Tag.RANDOM,))(fn)


dropout1d, dropout2d, dropout3d, feature_dropout = (_feature_dropout(n) for n in (1, 2, 3, None))


def _alpha(shape_fn, op: str):
    def fn(input, p: float = 0.5, training: bool = False, inplace: bool = False):
        """Dropped elements take selu's negative saturation value, then an affine map keeps
        the mean and variance: kept x -> a * x + a * alpha * p, dropped -> a * alpha * (p - 1)."""
        _check_p(p, op)
        if not training or p == 0:
            return input
        if p == 1:
            return prims.mul(input, 0)
        s = shape_of(input)
        if shape_fn is not None and len(s) < 2:
            raise ShapeError(f"{op}: channel-wise dropout needs at least 2 dimensions, got shape {s}")
        a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
        keep = _keep(s if shape_fn is None else shape_fn(s, True), p, input)
        return prims.where(keep, prims.add(prims.mul(input, a), _ALPHA * a * p), _ALPHA * a * (p - 1))

    return fn


alpha_dropout = torchsymbol(
    F.alpha_dropout, torch_impl="torch.nn.functional.alpha_dropout", tags=(Tag.RANDOM,), name="alpha_dropout"
)(_alpha(None, "F.alpha_dropout"))
feature_alpha_dropout = torchsymbol(
    F.feature_alpha_dropout,
    torch_impl="torch.nn.functional.feature_alpha_dropout",
    tags=(Tag.RANDOM,),
    name="feature_alpha_dropout",
)(_alpha(_channel_shape, "F.feature_alpha_dropout"))
alias(lambda input, p, train: alpha_dropout(input, p, train), torch.alpha_dropout)
alias(lambda input, p, train: feature_alpha_dropout(input, p, train), torch.feature_alpha_dropout)
