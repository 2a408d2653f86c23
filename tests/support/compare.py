"""Running an op database sample and comparing with eager: the tolerances, a sample's tensors
as jit inputs, the comparison of results (values, or metadata and the entry's check), and
gradients for a seeded cotangent. Used by the tests of both op databases (``support.opdb``,
``support.aten_opdb``) and by the gradient, rematerialisation and executor tests."""

from __future__ import annotations

import torch
from support.opdb import OpInfo, S

from thunder.core.pytree import tree_flatten, tree_unflatten

TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-7, 1e-7), torch.bfloat16: (1e-2, 1.6e-2)}


def tolerance(info: OpInfo, dtype) -> dict:
    atol, rtol = (info.tol or {}).get(dtype) or TOL.get(dtype, (0, 0))
    return {"atol": atol, "rtol": rtol}


def split_tensors(sample: S):
    """(tensors, rebuild): the sample's tensors become jit inputs; the rest stays constant."""
    leaves, spec = tree_flatten((sample.args, sample.kwargs))
    pos = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]

    def rebuild(tensors):
        filled = list(leaves)
        for i, t in zip(pos, tensors):
            filled[i] = t
        return tree_unflatten(filled, spec)

    return [leaves[i] for i in pos], rebuild


def compare(info: OpInfo, dtype, sample: S, got, expected, what: str) -> None:
    if info.values:
        torch.testing.assert_close(
            got, expected, equal_nan=True, **tolerance(info, dtype), msg=lambda m: f"{what}: {m}"
        )
        return
    for g, e in zip(tree_flatten(got)[0], tree_flatten(expected)[0]):
        assert (g.shape, g.dtype, g.device) == (e.shape, e.dtype, e.device), what
    if info.check is not None:
        assert info.check(got, sample), f"{what}: the values fail the op's check"


def grads_of(fn, tensors, rebuild, cotangent_seed: int):
    """The gradients of ``fn`` (on ``rebuild(tensors)``) for a random cotangent seeded by
    ``cotangent_seed``, one per floating-point tensor; None when no output needs a gradient."""
    leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in tensors]
    args, kwargs = rebuild(leaves)
    out = [o for o in tree_flatten(fn(*args, **kwargs))[0] if isinstance(o, torch.Tensor) and o.requires_grad]
    if not out:
        return None
    gen = torch.Generator().manual_seed(cotangent_seed)
    total = sum((o * torch.randn(o.shape, generator=gen, dtype=o.dtype)).sum() for o in out)
    total.backward()
    return [t.grad for t in leaves if t.requires_grad]
