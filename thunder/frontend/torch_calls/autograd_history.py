"""``t.is_leaf`` and ``t.grad_fn`` while tracing, as eager answers them: a value computed in
the function is a leaf, without a ``grad_fn``, exactly when it does not require grad; an input's
answer is its tensor's, which the prologue checks on every call (a tensor made by an op and a
leaf both require grad). The proxies themselves are always leaves, so reading torch's answer
off them took every computed value for a leaf."""

from __future__ import annotations

from thunder.core.errors import UnsupportedOpError, at
from thunder.core.proxies import TensorProxy
from thunder.core.source import user_location


def history(state, name: str, t: TensorProxy):
    """``t.is_leaf`` (``name``) or ``t.grad_fn`` of the value ``t`` (a current proxy)."""
    src = state.inputs.sources.get(t.name)
    if src is not None:
        leaf = bool(src[2].is_leaf)
        state.inputs.guard_attr(t, "is_leaf", leaf)
    else:
        state.touched[id(t)] = t
        leaf = not t.requires_grad
    if name == "is_leaf":
        return leaf
    return None if leaf else TracedGradFn(t.name)


class TracedGradFn:
    """What ``t.grad_fn`` of a value computed while tracing answers where eager's is a node of
    its autograd graph: thunder's backward differentiates the whole program, so there is no
    node per op; ``is not None`` tests and ``name()`` work, anything else says so."""

    __slots__ = ("of",)

    def __init__(self, of: str):
        self.of = of

    def name(self) -> str:
        return "ThunderBackward"

    def __repr__(self) -> str:
        return f"<thunder's backward of {self.of}>"

    def __getattr__(self, attr):
        raise UnsupportedOpError(
            f"thunder: {attr!r} of the grad_fn of {self.of}: a value computed in a thunder.jit function has no "
            "autograd node of its own (thunder differentiates the whole program); only `grad_fn is None` tests "
            "and grad_fn.name() are supported" + at(user_location())
        )
