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


DIFFERENCES: list[Difference] = []


def declared(entry: str, phase: str, index: int, sample) -> Difference | None:
    for d in DIFFERENCES:
        if d.entry == entry and d.phase == phase and d.samples(index, sample):
            return d
    return None
