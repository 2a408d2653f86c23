"""The ``torch._foreach_*`` ops optimizers use: one elementwise op over each tensor of a list
(``_foreach_add(tensors, other)``: ``other`` a list of tensors or numbers, one number, or one
tensor), returning a tuple as eager does. Their in-place forms (``_foreach_add_``) are these,
written back into each tensor by the frontend. ``_foreach_norm`` (clip_grad_norm_'s foreach
path) is each tensor's ``vector_norm``, with its gradient.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from thunder.core.tags import Tag
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch import elementwise as ew
from thunder.ops.ltorch import reductions, shape
from thunder.ops.meta import ShapeError, shape_of


def _spread(operand, n: int, op: str, what: str) -> list:
    """``operand`` as one value per tensor: a list or tuple is taken as is, anything else repeated."""
    if isinstance(operand, (list, tuple)):
        if len(operand) != n:
            raise ShapeError(f"{op}: {what} has {len(operand)} entries, the tensor list {n}")
        return list(operand)
    return [operand] * n


def _per_tensor_scalars(scalars, n: int, op: str, what: str) -> list:
    """One number per tensor: a number, a list of numbers, or (as AdamW's foreach step passes
    them) a 1-D tensor of ``n`` values, whose ``i``-th element is taken as a 0-d tensor."""
    if not isinstance(scalars, torch.Tensor):
        return _spread(scalars, n, op, what)
    if len(shape_of(scalars)) != 1 or shape_of(scalars)[0] != n:
        raise ShapeError(
            f"{op}: {what} given as a tensor must be 1-D with one value per tensor ({n}), got shape "
            f"{tuple(shape_of(scalars))}"
        )
    return [shape.select(scalars, 0, i) for i in range(n)]


def _foreach(
    name: str,
    fn: Callable,
    n_operands: int,
    scalar: str | None = None,
    number_first: bool = False,
    number_operands: tuple[int | str, ...] = (),
):
    """``ltorch.foreach_<name>`` for ``torch._foreach_<name>``: ``fn`` over each tensor and
    the matching entries of the ``n_operands`` operands after the list; ``scalar`` names a
    trailing number argument that may also be a list of numbers, one per tensor
    (``_foreach_addcdiv(params, a, b, step_sizes)``); ``number_first``: a number may come
    first and the list second (``_foreach_pow(2.0, tensors)``); ``number_operands``: where a
    number traced as a value (a learning rate) passes on as one (``langs.torchsymbol``)."""
    torch_fn = getattr(torch, f"_foreach_{name}")
    op = f"torch._foreach_{name}"

    def impl(tensors, *operands, **kwargs):
        if number_first and not isinstance(tensors, (list, tuple)) and operands:
            # ``_foreach_pow(2.0, [a, b])``: the number with each tensor
            return tuple(fn(tensors, t) for t in operands[0])
        if scalar is not None and len(operands) == n_operands + 1:
            *operands, kwargs[scalar] = operands
        if len(operands) != n_operands:
            raise ShapeError(
                f"{op}: expected {n_operands} operand(s) after the tensor list, got {len(operands)}"
            )
        tensors = list(tensors)
        spread = [_spread(o, len(tensors), op, f"operand {i + 1}") for i, o in enumerate(operands)]
        per_tensor = {}
        if scalar is not None and scalar in kwargs:
            per_tensor = {scalar: _per_tensor_scalars(kwargs.pop(scalar), len(tensors), op, scalar)}
        return tuple(
            fn(t, *(s[i] for s in spread), **kwargs, **{k: v[i] for k, v in per_tensor.items()})
            for i, t in enumerate(tensors)
        )

    impl.__name__ = f"foreach_{name}"
    impl.__doc__ = f"{op}: torch.{name} over each tensor"
    return torchsymbol(
        torch_fn,
        torch_impl=f"torch._foreach_{name}",
        tags=(Tag.ELEMENTWISE,),
        name=f"foreach_{name}",
        number_operands=number_operands,
    )(impl)


foreach_add = _foreach(
    "add",
    lambda t, o, alpha=1: ew.add(t, o, alpha=alpha) if alpha != 1 else ew.add(t, o),
    1,
    number_operands=(1, "alpha"),
)
foreach_sub = _foreach(
    "sub",
    lambda t, o, alpha=1: ew.sub(t, o, alpha=alpha) if alpha != 1 else ew.sub(t, o),
    1,
    number_operands=(1, "alpha"),
)
foreach_mul = _foreach("mul", ew.mul, 1, number_operands=(1,))
foreach_div = _foreach("div", ew.div, 1, number_operands=(1,))
foreach_maximum = _foreach(
    "maximum", lambda t, o: ew.maximum(t, o) if isinstance(o, torch.Tensor) else ew.clamp_min(t, o), 1
)
foreach_minimum = _foreach(
    "minimum", lambda t, o: ew.minimum(t, o) if isinstance(o, torch.Tensor) else ew.clamp_max(t, o), 1
)
foreach_clamp_min = _foreach("clamp_min", ew.clamp_min, 1)
foreach_clamp_max = _foreach("clamp_max", ew.clamp_max, 1)
foreach_pow = _foreach("pow", ew.pow, 1, number_first=True)
foreach_lerp = _foreach("lerp", ew.lerp, 2)
foreach_addcmul = _foreach("addcmul", ew.addcmul, 2, scalar="value", number_operands=(3, "value"))
foreach_addcdiv = _foreach("addcdiv", ew.addcdiv, 2, scalar="value", number_operands=(3, "value"))
foreach_sqrt = _foreach("sqrt", ew.sqrt, 0)
foreach_neg = _foreach("neg", ew.neg, 0)
foreach_abs = _foreach("abs", ew.abs, 0)
foreach_exp = _foreach("exp", ew.exp, 0)
foreach_reciprocal = _foreach("reciprocal", ew.reciprocal, 0)
foreach_sign = _foreach("sign", ew.sign, 0)


@torchsymbol(
    torch._foreach_norm, torch_impl="torch._foreach_norm", tags=(Tag.REDUCTION,), name="foreach_norm"
)
def foreach_norm(tensors, ord=2, dtype=None):
    """torch._foreach_norm: the vector norm of each tensor (0-d each), as a tuple."""
    return tuple(reductions.vector_norm(t, ord, dtype=dtype) for t in tensors)
