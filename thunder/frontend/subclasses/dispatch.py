"""Ops on tensor-subclass values met after tracing (a backward's), resolved by their
``__torch_dispatch__`` into the current trace as acquisition resolves them:
``t5 = ScaleTensor.prims.mul(g_t4, 2)``, its subsymbols the aten ops of the dispatch.

The grad pass gets ``dispatchable`` and ``dispatch_op`` through the pass context
(``SubclassDispatch``, thunder/core/passinfo.py). After tracing there are no in-place writes
to follow and no inputs to add: a real tensor the dispatch uses is named in the trace's
``ctx_objects``.
"""

from __future__ import annotations

import torch

from thunder.core.context import current_trace
from thunder.core.errors import UnsupportedOpError, UnsupportedValueError
from thunder.core.proxies import TensorProxy
from thunder.core.pytree import tree_map
from thunder.core.subclass import SubclassProxy, attach, is_plain_tensor, proxy_of
from thunder.core.symbol import EAGER_IMPLS, Symbol
from thunder.frontend.subclasses.instances import Subclasses


def dispatchable(sym: Symbol, args, kwargs) -> bool:
    """Whether ``sym`` runs whole on tensors here (else its decomposition is resolved op by op)."""
    if sym.torch_impl is not None:
        return sym.impl_check is None or bool(sym.impl_check(*args, **kwargs))
    return sym.meta is not None and sym in EAGER_IMPLS


class _NoWrites:
    """After tracing there are no in-place writes to follow: a value is what it holds."""

    log: list = []

    def current(self, p):
        return p

    value_of = current

    def mark_op_start(self) -> None:
        pass

    def rebind(self, target, value, op: str):
        raise UnsupportedOpError(
            f"thunder: {op} writes in place inside a tensor subclass's __torch_dispatch__ run by a backward; "
            "thunder traces such writes only in the function itself"
        )


class _AfterTracing:
    """What ``Subclasses`` reads of an acquisition, for ops resolved after it: the trace they
    are recorded in. A real tensor the dispatch uses (a number torch wrapped into a tensor, a
    tensor the subclass holds) is the object itself, named in the trace's ``ctx_objects``:
    there are no new inputs, and it is read when the trace runs, as eager reads it then."""

    inputs = None

    def __init__(self, trace):
        self.computation = trace
        self.inplace = _NoWrites()

    def capture(self, t):
        p = proxy_of(t)
        if p is not None:
            return p
        if not is_plain_tensor(t):
            raise UnsupportedValueError(
                f"thunder: a {type(t).__qualname__} that is not a value of the trace is used by an op of a backward"
            )
        trace = self.computation
        p = TensorProxy(trace.add_name("held"), tuple(t.shape), t.dtype, t.device)
        trace.ctx_objects = {**trace.ctx_objects, p.name: t}
        return p


def instance_of(p: SubclassProxy) -> torch.Tensor:
    """The instance of the subclass value ``p`` (built around its inner proxies if new)."""
    if p.instance is None:
        inner = {k: instance_of(v) if isinstance(v, SubclassProxy) else v for k, v in p.inner.items()}
        attach(p.subclass.__tensor_unflatten__(inner, p.ctx, p.meta_shape, p.outer_stride), p)
    return p.instance


def dispatch_op(sym: Symbol, args, kwargs):
    """``sym`` on subclass values after tracing, as their ``__torch_dispatch__`` resolves it:
    one BoundSymbol in the current trace (``t5 = ScaleTensor.prims.mul(g_t4, 2)``, its
    subsymbols the aten ops of the dispatch). Returns its output proxies."""
    subclasses = Subclasses(_AfterTracing(current_trace()))
    rargs, rkwargs = tree_map(
        lambda v: instance_of(v) if isinstance(v, SubclassProxy) else v, (tuple(args), dict(kwargs))
    )
    out = subclasses.call(sym, rargs, rkwargs, None)

    def proxy(v):
        p = proxy_of(v) if isinstance(v, torch.Tensor) else None
        return v if p is None else p

    return tree_map(proxy, out)
