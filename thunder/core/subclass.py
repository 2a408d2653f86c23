"""Tensor wrapper subclasses in traces: the proxy of a subclass value and how its class prints.

A traceable wrapper subclass (made with ``torch.Tensor._make_wrapper_subclass``, defining
``__tensor_flatten__``, ``__tensor_unflatten__`` and ``__torch_dispatch__``) is a tensor whose
value is held by inner tensors. In a trace it is a ``SubclassProxy``: a ``TensorProxy`` for
its outer metadata that also knows the subclass, its inner tensors (by attribute name, as
``__tensor_flatten__`` lists them) and its flatten context::

    # x: "ScaleTensor[cpu f32[2, 2]] (_x: cpu f32[2, 2], _scale: cpu f32[])"

An inner tensor may itself be a subclass value (a ScaleTensor whose data is a TwoTensor): a
``SubclassProxy`` in ``inner``, flattened in turn; ``leaves()`` are the plain tensors below.

User code never sees the proxy: it sees an instance of the subclass built around the inner
proxies (``instance``), so ``isinstance``, the subclass's attributes and methods work.

A subclass prints under its own name (``ScaleTensor.torch.add(x, 1)``,
``prims.unflatten_tensor_subclass(ScaleTensor, ...)``): the name refers to a
``SubclassNamespace``, which reads as the class and also reaches torch (``.torch``), so the
printed trace runs.
"""

from __future__ import annotations

import dataclasses

import torch

from thunder.core.proxies import TensorProxy
from thunder.core.symbol import SymbolTable


class SubclassProxy(TensorProxy):
    """A tensor-subclass value: outer metadata, ``subclass``, ``inner`` (attribute -> proxy),
    ``ctx`` (the flatten context), ``outer_stride``, and the ``instance`` user code holds."""

    @staticmethod
    def __new__(
        cls, name: str, subclass: type, inner: dict, ctx, shape, dtype, device, requires_grad, stride
    ):
        p = TensorProxy.__new__(cls, name, shape, dtype, device, requires_grad)
        p.subclass = subclass
        p.inner = dict(inner)
        p.ctx = ctx
        p.outer_stride = tuple(stride)
        p.instance = None
        p.view_of = None  # a ``ViewLink``: this value is a view user code took of another
        p.written_through = None  # a ``WrittenThrough``: how a write into a view gave this value
        p.replaced = None  # the value an in-place op replaced by this one
        return p

    def leaves(self) -> list[TensorProxy]:
        """The plain tensors holding the value, in flatten order, through nested subclasses
        (a ScaleTensor of a TwoTensor: its TwoTensor's two tensors, then its scale)."""
        out = []
        for t in self.inner.values():
            out += t.leaves() if isinstance(t, SubclassProxy) else [t]
        return out

    def nested(self) -> list[SubclassProxy]:
        """This value and the subclass values inside it, outermost first."""
        out = [self]
        for t in self.inner.values():
            if isinstance(t, SubclassProxy):
                out += t.nested()
        return out

    def type_string(self) -> str:
        inner = ", ".join(f"{k}: {v.type_string()}" for k, v in self.inner.items())
        return f"{self.subclass.__name__}[{super().type_string()}] ({inner})"

    def __repr__(self, *, tensor_contents=None) -> str:  # noqa: ARG002
        return f'<SubclassProxy {self.name}: "{self.type_string()}">'

    __str__ = __repr__


@dataclasses.dataclass(frozen=True, eq=False)  # (compared by identity: fields hold proxies)
class ViewLink:
    """A subclass value that is a view of another: ``op(base, *args, **kwargs)``, ``op`` the
    torch-language view op user code called (``ltorch.getitem`` for ``y[0]``)."""

    base: SubclassProxy
    op: object
    args: tuple
    kwargs: dict
    index: int | None = None  # which output, of a view op with several (``y.hsplit(2)[1]``)


@dataclasses.dataclass(frozen=True, eq=False)
class WrittenThrough:
    """How an in-place op into a view gave another value, for its gradient: a base the view
    was taken of (``link``: how the view was taken of ``old``) holds ``source``, the view's new
    value, written into ``old``; another view of that base (``old``, taken by ``link``) is the
    same view taken of ``source``, the base's new value."""

    into_base: bool  # True: a base written through its view; False: another view of that base
    link: ViewLink
    source: SubclassProxy
    old: SubclassProxy  # the value before the write


# An in-place op on subclass values (``TwoTensor.torch.Tensor.add_``) outputs the value its
# first argument holds afterwards; its gradient is that of this function of the same arguments
# in torch-language ops (``ltorch.add``, then cast to the written tensor's dtype and shape),
# as eager differentiates the write above the dispatch (filled by thunder/frontend/subclasses/writes.py).
WRITTEN_VALUES = SymbolTable(
    "the values in-place ops on tensor subclasses write",
    hint="made by acquisition when it records an in-place op on a tensor subclass",
)


# The proxy of an instance built while tracing is kept on the instance itself: a dict keyed
# by the tensor would hash and compare tensors, which the acquisition mode records.
_PROXY_ATTRIBUTE = "_thunder_subclass_proxy"


def proxy_of(t) -> SubclassProxy | None:
    """The proxy of a subclass instance made while tracing (None for any other value)."""
    if type(t) is TensorProxy or not isinstance(t, torch.Tensor):
        return None
    try:
        return t.__dict__.get(_PROXY_ATTRIBUTE)
    except AttributeError:
        return None


def attach(instance: torch.Tensor, proxy: SubclassProxy) -> None:
    """``instance`` (built around ``proxy.inner``) is what user code sees of ``proxy``."""
    instance.__dict__[_PROXY_ATTRIBUTE] = proxy
    proxy.instance = instance


def is_plain_tensor(t) -> bool:
    return type(t) is torch.Tensor or type(t) is torch.nn.Parameter


def same_context(a, b) -> bool:
    """Whether two flatten contexts (``__tensor_flatten__``'s second result) are the same."""
    if a is b:
        return True
    try:
        return bool(type(a) is type(b) and a == b)
    except Exception:  # a context that cannot be compared: only the same object fits
        return False


class SubclassNamespace:
    """What a subclass's printed name refers to: reads as the class (``ScaleTensor.x``) and
    reaches torch (``ScaleTensor.torch.add``), so ``ScaleTensor.torch.add(x, 1)`` runs."""

    torch = torch

    def __init__(self, subclass: type):
        self.subclass = subclass

    def __getattr__(self, name: str):
        return getattr(self.subclass, name)

    def __repr__(self) -> str:
        return f"<tensor subclass {self.subclass.__qualname__}>"


_NAMESPACES: dict[type, SubclassNamespace] = {}


def namespace(subclass: type) -> SubclassNamespace:
    ns = _NAMESPACES.get(subclass)
    if ns is None:
        ns = _NAMESPACES[subclass] = SubclassNamespace(subclass)
    return ns


def subclass_of(c) -> type:
    """The class a printed subclass name stands for (the class itself or its namespace)."""
    return c.subclass if isinstance(c, SubclassNamespace) else c


def subclass_name(printer, subclass: type) -> str:
    """The name ``subclass`` prints as in this program (``ScaleTensor``)."""
    return printer.name_object(namespace(subclass), subclass.__name__)
