"""Checks several tests share: what torch's autograd recorded of a compiled call, and that no
proxy is left in an object a compiled call wrote."""

from __future__ import annotations

import torch

from thunder.core.proxies import TensorProxy


def assert_not_recorded_by_torch(outs, leaves) -> None:
    """The outputs hang off thunder's autograd.Function, directly above the inputs: torch's
    autograd recorded none of the forward's ops."""
    ids = {id(t) for t in leaves}
    for o in outs:
        node = o.grad_fn
        assert node is not None and type(node).__name__.startswith("ThunderAutogradFunction_"), node
        for nxt, _ in node.next_functions:
            if nxt is not None:
                assert type(nxt).__name__ == "AccumulateGrad" and id(nxt.variable) in ids, nxt


def no_proxies(obj, seen=None):
    """No proxy anywhere in ``obj``'s attributes and containers."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return True
    seen.add(id(obj))
    if isinstance(obj, TensorProxy) or type(obj).__module__.startswith("thunder"):
        return False
    if isinstance(obj, torch.Tensor):
        return True
    if isinstance(obj, (list, tuple)):
        return all(no_proxies(x, seen) for x in obj)
    if isinstance(obj, dict):
        return all(no_proxies(x, seen) for x in obj.values())
    d = getattr(obj, "__dict__", None)
    return d is None or all(no_proxies(x, seen) for x in d.values())
