"""``F.embedding`` and ``F.embedding_bag`` with ``max_norm``, as eager runs them: the rows the
input looks up whose norm exceeds ``max_norm`` are scaled down in the weight itself, in place
and without grad, then looked up. The acquisition mode (``mode.py``) runs ``renormed_lookup``
with itself active, so its torch calls are recorded: the write reaches the parameter through
the epilogue and the parameter keeps its gradient (a write under no_grad is no part of the
graph, ``Acquisition._rebind``)."""

from __future__ import annotations

import inspect

import torch
import torch.nn.functional as F


def _renorm_rows(weight, input, max_norm, norm_type) -> None:
    """Eager's ``max_norm`` for ``F.embedding`` and ``F.embedding_bag``: the rows ``input``
    picks whose norm exceeds ``max_norm`` are scaled down in the weight itself (in place,
    without grad: the epilogue writes the parameter, whose gradient is kept)."""
    with torch.no_grad():
        w = weight.detach()
        picked = torch.zeros(w.shape[0], dtype=torch.bool, device=w.device).index_fill(
            0, input.reshape(-1), True
        )
        norms = torch.linalg.vector_norm(w, norm_type, dim=1, keepdim=True)
        too_long = picked.unsqueeze(1) & (norms > max_norm)
        w.mul_(torch.where(too_long, max_norm / (norms + 1e-7), torch.ones_like(norms)))


_EMBEDDING_ARGS = {
    F.embedding: inspect.signature(F.embedding),
    F.embedding_bag: inspect.signature(F.embedding_bag),
}


def max_norm_call(func, args, kwargs):
    """The call's arguments by name when it is ``F.embedding``/``F.embedding_bag`` with a
    ``max_norm``, else None."""
    sig = _EMBEDDING_ARGS.get(func)
    if sig is None:
        return None
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return None
    return bound.arguments if bound.arguments.get("max_norm") is not None else None


def renormed_lookup(func, arguments: dict):
    """``func`` with ``max_norm``, as eager runs it: the rows renormed, then looked up."""
    _renorm_rows(
        arguments["weight"], arguments["input"], arguments["max_norm"], arguments.get("norm_type", 2.0)
    )
    return func(**{**arguments, "max_norm": None})
