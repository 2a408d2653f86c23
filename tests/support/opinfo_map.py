"""PyTorch's own OpInfo database mapped onto thunder's torch-language ops.

An OpInfo entry (``torch.testing._internal.common_methods_invocations.op_db``) has a thunder
op when its function, its method or one of its aliases is a torch callable that
``torchsymbol``/``alias`` mapped (``thunder.ops.langs.TORCH_TO_THUNDER``), or when the entry
calls it through a lambda and its name (``nn.functional.dropout``, ``T``) resolves to one.

``DIFFERENCES`` declares every sample whose result differs from eager for a known reason;
``RANDOM`` names the entries whose values are random (compared by shape and dtype only).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch
import torch.utils._pytree as pytree

from thunder.ops.langs import PROPERTY_TO_THUNDER, TORCH_TO_THUNDER


def op_db() -> list:
    """PyTorch's OpInfo entries (importing them needs the ``expecttest`` package)."""
    from torch.testing._internal.common_methods_invocations import op_db as db

    return db


def entry_id(info) -> str:
    return f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name


def _mapped(fn):
    try:
        return TORCH_TO_THUNDER.get(fn)
    except TypeError:  # an unhashable callable
        return None


def _by_name(name: str):
    for root in ((torch,), (torch.Tensor,), (torch.nn.functional,)):
        obj = root[0]
        try:
            for part in name.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            continue
        if (target := _mapped(obj)) is not None:
            return target
    return PROPERTY_TO_THUNDER.get(name)


def thunder_op(info) -> Callable | None:
    """The thunder op an OpInfo entry reaches, or ``None``."""
    callables = [info.op, info.method_variant]
    for a in info.aliases:
        callables += [a.op, a.method_variant]
    for fn in callables:
        if fn is not None and (target := _mapped(fn)) is not None:
            return target
    for name in [info.name] + [a.name for a in info.aliases]:
        if (target := _by_name(name)) is not None:
            return target
    return None


# Entries whose values are random or uninitialised: forward compared by shape, dtype and requires_grad only,
# gradients not compared (they depend on the random draw).
RANDOM = {
    "bernoulli",
    "empty",
    "empty_like",
    "new_empty",
    "nn.functional.alpha_dropout",
    "nn.functional.dropout",
    "nn.functional.dropout2d",
    "nn.functional.dropout3d",
    "nn.functional.feature_alpha_dropout.with_train",
    "nn.functional.feature_alpha_dropout.without_train",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
}


@dataclasses.dataclass(frozen=True)
class Difference:
    """Samples of one entry that differ from eager in one phase, and why."""

    entry: str  # ``entry_id``
    phase: str  # "forward", "grad" or "inplace"
    samples: Callable[[int, object], bool]  # (sample index, SampleInput) -> declared?
    reason: str


def _all(i, sample) -> bool:
    return True


def _indices(*idx: int) -> Callable[[int, object], bool]:
    return lambda i, sample: i in idx


def _is_tensor(x) -> bool:
    return isinstance(x, torch.Tensor)


def _arg(sample, i: int, name: str, default=None):
    return sample.args[i] if len(sample.args) > i else sample.kwargs.get(name, default)


def _moves_metadata(method: str) -> Callable[[int, object], bool]:
    """The in-place method changes the tensor's shape or strides (eager's ``x.t_()``)."""

    def pred(i, sample) -> bool:
        x = sample.input.detach().clone()  # as the test passes it (a partial view's memory past it is gone)
        before = (x.shape, x.stride())
        try:
            getattr(x, method)(*sample.args, **sample.kwargs)
        except RuntimeError:  # eager refuses the sample so: nothing is compared
            return False
        return (x.shape, x.stride()) != before

    return pred


def _random_slopes(i, sample) -> bool:
    return sample.kwargs.get("training", False) and bool((sample.input < 0).any())


def _strides_out_of_order(i, sample) -> bool:
    """``as_strided``'s strides are not the result's elements in order (a transposed read)."""
    try:
        out = torch.as_strided(sample.input.detach().clone(), *sample.args, **sample.kwargs)
    except RuntimeError:  # eager refuses the sample as the test passes it: nothing is compared
        return False
    return layout(out) != layout(out.contiguous())


def layout(t: torch.Tensor) -> tuple:
    """``t``'s strides, where they matter (a dimension of size 1 has any stride)."""
    return tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)


_AS_STRIDED_COPY = (
    "thunder's as_strided reads the positions into a tensor of their own (contiguous); eager's is a "
    "view with the strides asked for: the values are eager's, the result's own strides are not"
)

_METADATA_INPLACE = (
    "in-place ops that change the tensor's shape or strides (squeeze_, unsqueeze_, transpose_, t_, as_strided_): "
    "thunder writes values back into the input, never its metadata (refused, or a write that overlaps itself)"
)

DIFFERENCES: list[Difference] = [
    Difference(
        "addbmm",
        "inplace",
        lambda i, s: s.input.shape != (s.args[0].shape[1], s.args[1].shape[2]),
        "eager's addbmm_ resizes a smaller broadcastable input to the result's shape; thunder's in-place "
        "ops never grow a tensor (a clear error)",
    ),
    Difference("squeeze", "inplace", _moves_metadata("squeeze_"), _METADATA_INPLACE),
    Difference("squeeze.multiple", "inplace", _moves_metadata("squeeze_"), _METADATA_INPLACE),
    Difference("unsqueeze", "inplace", _moves_metadata("unsqueeze_"), _METADATA_INPLACE),
    Difference("transpose", "inplace", _moves_metadata("transpose_"), _METADATA_INPLACE),
    Difference("t", "inplace", _moves_metadata("t_"), _METADATA_INPLACE),
    Difference("as_strided", "inplace", _moves_metadata("as_strided_"), _METADATA_INPLACE),
    Difference("as_strided", "forward", _strides_out_of_order, _AS_STRIDED_COPY),
    Difference("as_strided.partial_views", "forward", _strides_out_of_order, _AS_STRIDED_COPY),
    Difference("as_strided.partial_views", "inplace", _moves_metadata("as_strided_"), _METADATA_INPLACE),
    Difference(
        "nn.functional.rrelu",
        "forward",
        _random_slopes,
        "in training the slopes of negative inputs are drawn at random",
    ),
    Difference(
        "nn.functional.rrelu",
        "inplace",
        _random_slopes,
        "in training the slopes of negative inputs are drawn at random",
    ),
    Difference(
        "cov",
        "grad",
        _indices(6, 8, 15, 17, 26, 33, 35, 37, 39),  # samples with aweights (seeded: torch.manual_seed(0))
        "with aweights the normaliser w_sum - correction * sum(w * aweights) / w_sum cancels, so the "
        "gradients agree only to the precision the cancellation leaves (to ~1e-5 relative, or ~1e-6 "
        "absolute where eager's is exactly 0); torch.autograd.gradcheck passes for both",
    ),
    Difference(
        "nn.functional.scaled_dot_product_attention",
        "forward",
        lambda i, s: s.kwargs.get("dropout_p", 0) > 0,
        "attention dropout draws a random mask",
    ),
    Difference(
        "nn.functional.batch_norm",
        "forward",
        lambda i, s: s.input.ndim < 2,
        "a 1-D (empty) input: eager accepts it, thunder's batch_norm needs at least 2 dimensions",
    ),
    Difference(
        "tensor_split",
        "forward",
        lambda i, s: _is_tensor(s.args[0]),
        "split points given as a tensor decide the output shapes (data-dependent): refused",
    ),
    Difference(
        "repeat_interleave",
        "forward",
        lambda i, s: _is_tensor(_arg(s, 0, "repeats")) and _arg(s, 0, "repeats").numel() > 1,
        "repeats given as a tensor decide the output shape (data-dependent): refused",
    ),
    Difference(
        "__getitem__",
        "forward",
        lambda i, s: any(_is_tensor(k) and k.dtype is torch.bool for k in pytree.tree_leaves(s.args)),
        "a boolean mask selects a data-dependent number of elements: refused",
    ),
    Difference(
        "einsum",
        "forward",
        lambda i, s: s.args[0] == "iji->j",
        "a repeated index in one operand that is not reduced away ('iji->j', a diagonal) is refused",
    ),
    Difference(
        "gather",
        "forward",
        lambda i, s: s.args[1].ndim != s.input.ndim and s.args[1].numel() == 0,
        "an empty index of another rank than the input: eager accepts it, thunder's gather needs equal ranks",
    ),
    Difference(
        "tensordot",
        "forward",
        lambda i, s: s.input.shape == (1, 1, 1),
        "eager contracts a size-1 dimension against a larger one (broadcasting it); thunder refuses "
        "contracted dims of different sizes",
    ),
    Difference(
        "norm.nuc",
        "forward",
        _all,
        "torch.norm's p='nuc' is refused (thunder's torch.norm takes vector norms and 'fro'); "
        "torch.linalg.matrix_norm(A, 'nuc') computes it",
    ),
]


def declared(entry: str, phase: str, index: int, sample) -> Difference | None:
    for d in DIFFERENCES:
        if d.entry == entry and d.phase == phase and d.samples(index, sample):
            return d
    return None
