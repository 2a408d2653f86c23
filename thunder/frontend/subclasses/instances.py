"""Tensor wrapper subclass values while tracing: subclass inputs, instances user code builds
around traced tensors, and the values they hold.

A subclass input becomes a ``SubclassProxy`` (thunder/core/subclass.py) whose inner tensors
are proxies; user code gets a real instance of the subclass built around them with the
class's own ``__tensor_unflatten__``. The prologue checks the outer metadata, the class, the
names and flatten context ``__tensor_flatten__`` gives, and every inner tensor. A subclass
built inside the function from plain tensors is recorded as ``unflatten_tensor_subclass``
where it is first used; an inner tensor user code uses by itself is read from its value
(``unpack_attr``), a read the flattening pass drops.

A subclass value may hold another (a ScaleTensor whose data is a TwoTensor): its inner
proxy is a subclass proxy in turn, the prologue unpacks and checks every level, and values
are flattened and rebuilt level by level.

``Subclasses`` holds the subclass values of one acquisition. Torch calls on them are its
methods from thunder/frontend/subclasses/ops.py (``__torch_dispatch__`` resolved at trace
time); in-place ops on them are thunder/frontend/subclasses/writes.py's.
"""

from __future__ import annotations

import torch

from thunder.core.errors import UnsupportedValueError, at
from thunder.core.proxies import TensorProxy
from thunder.core.source import user_location
from thunder.core.subclass import SubclassProxy, attach, is_plain_tensor, proxy_of
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import Tag
from thunder.frontend.subclasses.ops import SubclassOps, _is_subclass_value
from thunder.frontend.subclasses.symbols import _ACTIVE
from thunder.frontend.subclasses.writes import Writes
from thunder.ops import python as pyops


def _defines(cls: type, name: str) -> bool:
    """``cls`` (or a base below torch.Tensor) defines ``name`` itself."""
    return any(name in vars(k) for k in cls.__mro__ if not issubclass(torch.Tensor, k))


_PROTOCOL = ("__tensor_flatten__", "__tensor_unflatten__", "__torch_dispatch__")


def is_traceable(cls: type) -> bool:
    """A wrapper subclass thunder can trace: it flattens, unflattens and dispatches."""
    return all(_defines(cls, m) for m in _PROTOCOL)


def _require_traceable(cls: type, what: str) -> None:
    if is_traceable(cls):
        return
    if issubclass(cls, torch.nn.parameter.UninitializedTensorMixin):
        raise UnsupportedValueError(
            f"thunder: {what} is a {cls.__qualname__}: a lazy module (nn.LazyLinear, ...) makes its "
            "parameters on its first call, which thunder does not trace; call the module once eagerly "
            "before thunder.jit"
        )
    missing = [m for m in _PROTOCOL if not _defines(cls, m)]
    raise UnsupportedValueError(
        f"thunder: {what} is a {cls.__qualname__}, a tensor subclass without {', '.join(missing)}; thunder "
        "traces wrapper subclasses (made with torch.Tensor._make_wrapper_subclass) that define "
        "__tensor_flatten__, __tensor_unflatten__ and __torch_dispatch__"
    )


# -- inputs ---------------------------------------------------------------------------------
def subclass_input(inputs, t: torch.Tensor, name: str, unpack) -> torch.Tensor:
    """The instance user code sees for the subclass input ``t`` (named ``name``), built around
    inner proxies; records what the prologue checks and flattens."""
    _require_traceable(type(t), f"the input {name}")
    p, instance = _input_value(inputs, t, name)
    inputs.sources[name] = (p, unpack, t)
    inputs.tensor_inputs.append(p)
    return instance


def _input_value(inputs, t: torch.Tensor, name: str) -> tuple[SubclassProxy, torch.Tensor]:
    """The proxy and the instance of the subclass value ``t``; an inner tensor that is a
    subclass value itself (a ScaleTensor of a TwoTensor) is one in turn, flattened after it."""
    cls = type(t)
    names, ctx = t.__tensor_flatten__()
    inner, parts = {}, {}
    for attr in names:
        it = getattr(t, attr)
        iname = inputs._name(f"{name}_{attr}", "t")
        if is_plain_tensor(it):
            inner[attr] = parts[attr] = TensorProxy(
                iname, tuple(it.shape), it.dtype, it.device, it.requires_grad
            )
        elif isinstance(it, torch.Tensor):
            _require_traceable(type(it), f"the inner tensor {attr} of the input {name}")
            inner[attr], parts[attr] = _input_value(inputs, it, iname)
        else:
            raise UnsupportedValueError(
                f"thunder: the input {name} is a {cls.__qualname__} whose __tensor_flatten__ lists {attr}, a "
                f"{type(it).__qualname__}: inner tensors must be tensors"
            )
    p = SubclassProxy(name, cls, inner, ctx, tuple(t.shape), t.dtype, t.device, t.requires_grad, t.stride())
    inputs.inner_owner.update((ip.name, p) for ip in inner.values())
    instance = cls.__tensor_unflatten__(parts, ctx, tuple(t.shape), tuple(t.stride()))
    if (tuple(instance.shape), instance.dtype, instance.device) != (tuple(t.shape), t.dtype, t.device):
        raise UnsupportedValueError(
            f"thunder: the input {name}: {cls.__qualname__}.__tensor_unflatten__ of its inner tensors gives a "
            f"tensor of shape {tuple(instance.shape)}, {instance.dtype}, {instance.device}, but the input is "
            f"{tuple(t.shape)}, {t.dtype}, {t.device}"
        )
    if instance.requires_grad is not t.requires_grad:
        instance.requires_grad_(t.requires_grad)
    attach(instance, p)
    # the prologue checks the class, the outer metadata and the flatten context (the check
    # of a subclass proxy), then flattens it and checks each inner tensor it makes
    inputs.checks.of_values.append(
        BoundSymbol(pyops.flatten_tensor_subclass, (p,), {}, tuple(inner.values()))
    )
    # the dispatch's aten ops may depend on each inner tensor's layout (a view): checked too
    for attr, ip in inner.items():
        if isinstance(ip, SubclassProxy):
            continue
        it = getattr(t, attr)
        inputs.inner_layouts[ip.name] = torch.empty(0, dtype=it.dtype, device="meta").as_strided(
            it.shape, it.stride(), it.storage_offset()
        )
        inputs.checks.of_values.append(BoundSymbol(pyops.check_strides, (ip, tuple(it.stride())), {}, None))
    return p, instance


class Subclasses(SubclassOps):
    """Tensor-subclass values of one acquisition (``state.subclasses``); the torch calls on
    them are ``SubclassOps``'s."""

    def __init__(self, state):
        self.state = state
        self._keepalive: list = []
        # inner tensors not defined at the top level of the computation (an input's, or made
        # by a dispatch): name -> (the subclass value, its attribute)
        self.owner: dict[str, tuple[SubclassProxy, str]] = {}
        self._exposed: set[str] = set()
        # real tensors a dispatch used (scalars torch wrapped, tensors the subclass holds):
        # inputs of the computation, though only subsymbols name them
        self.captured_inside: set[str] = set()
        # every subclass instance of the trace (inputs', built, made by ops): an in-place write
        # into tensors they hold changes their value (thunder/frontend/subclasses/writes.py)
        self.instances: list = []
        self.writes = Writes(self)

    def add_input(self, p: SubclassProxy) -> None:
        """A subclass input: its inner tensors are reached through it."""
        self.own(p)
        self.instances += [q.instance for q in p.nested()]

    def own(self, p: SubclassProxy, names=None) -> None:
        """``p``'s inner tensors (those in ``names``) are reached through ``p``; an inner
        subclass value's through it in turn."""
        for attr, t in p.inner.items():
            mine = names is None or t.name in names or isinstance(t, SubclassProxy)
            if mine and t.name not in self.owner:
                self.owner[t.name] = (p, attr)
            if isinstance(t, SubclassProxy):
                self.own(t, names)

    def expose(self, t) -> None:
        """User code uses an inner tensor by itself (``x._scale * 2``): read it from its
        subclass value at the top level (``x__scale = prims.unpack_attr(x, '_scale')``),
        a read the flattening pass drops, since there the inner tensor is a value itself."""
        if getattr(_ACTIVE, "call", None) is not None:  # inside a dispatch: flattened there
            return
        name = getattr(t, "name", None)
        entry = self.owner.get(name)
        if entry is None or name in self._exposed:
            return
        self._exposed.add(name)
        p, attr = entry
        self.expose(p)  # an inner tensor of an inner subclass value: that value first
        self.state.computation.add_bsym(
            BoundSymbol(
                pyops.unpack_attr,
                (p, attr),
                {},
                t,
                tags=frozenset({Tag.FLATTEN_TENSOR_SUBCLASS}),
                source=user_location(),
            )
        )

    def input_owners(self, proxies) -> list[SubclassProxy]:
        """The subclass inputs whose inner tensors are among ``proxies`` (their metadata was read)."""
        inputs = self.state.inputs.sources
        out = []
        for t in proxies:
            entry = self.owner.get(t.name)
            if entry is not None and entry[0].name in inputs and all(entry[0] is not o for o in out):
                out.append(entry[0])
        return out

    @staticmethod
    def involved(args, kwargs) -> bool:
        """Whether a subclass value is among the arguments (looked at two levels deep:
        ``torch.cat([a, b])``)."""
        for group in (args, kwargs.values()):
            for a in group:
                if isinstance(a, torch.Tensor):
                    if type(a) is not TensorProxy and not is_plain_tensor(a):
                        return True
                elif type(a) is list or type(a) is tuple:
                    for b in a:
                        if (
                            isinstance(b, torch.Tensor)
                            and type(b) is not TensorProxy
                            and not is_plain_tensor(b)
                        ):
                            return True
        return False

    # -- values -----------------------------------------------------------------------------
    def made_here(self, t) -> SubclassProxy | None:
        """The proxy of a subclass value made while tracing: an input's or an op's instance,
        or one user code built from traced tensors (recorded now as an unflatten). None for
        a real subclass tensor from outside (a closure or a global: an input of its own)."""
        if proxy_of(t) is not None:
            return self.current_value(t)
        if not _holds_traced(t):
            # a real subclass tensor: an input of its own (refused there if it must be), whose
            # value user code's in-place ops may have changed since it was captured
            traced = self._captured_instance(t)
            return None if traced is None else self.current_value(traced)
        return self._unflatten(t, top_level=True)

    def _captured_instance(self, t):
        """The instance built for the real subclass tensor ``t`` from a closure, a global or an
        object, once it is an input (None before)."""
        inputs = getattr(self.state, "inputs", None)
        if inputs is None:
            return None
        traced = inputs.captured.get(id(t))
        if traced is None:
            traced = inputs.seen.get(id(t))
        return traced if isinstance(traced, torch.Tensor) and proxy_of(traced) is not None else None

    def traced_instance(self, t):
        """The instance whose tensors hold the value of the subclass tensor ``t``: ``t`` itself
        (an argument's, or made while tracing), or the one built for a real instance from
        outside (an input of its own)."""
        return t if proxy_of(t) is not None else self._captured_instance(t)

    def current_value(self, t) -> SubclassProxy:
        """The value the subclass instance ``t`` of the trace holds now: after in-place ops on
        it, and after writes into the tensors it holds made by plain ops (``x._x.mul_(2)``:
        its value is rebuilt around them here, ``thunder/frontend/subclasses/writes.py``)."""
        p = self.state.inplace.value_of(proxy_of(t))
        if getattr(_ACTIVE, "call", None) is not None:
            return p
        if self.writes.stale(t, p):
            changed: list = []
            p = self.writes.snapshot(t, p, top_level=True, changed=changed)
            for x, new in changed:
                self.state.inplace.rebind_value(proxy_of(x), new)
        self.expose(p)  # (an inner value of a subclass value, used by itself)
        return p

    def captured_inner(self, cls, n: str, x) -> TensorProxy:
        """The inner tensor ``n`` of a ``cls`` instance built while tracing, when it is not a
        value of the trace: a real tensor (captured as an input), or an error naming what it is."""
        if isinstance(x, torch.Tensor):
            p = self.state.capture(x)
            self.captured_inside.add(p.name)
            return p
        raise UnsupportedValueError(
            f"thunder: a {cls.__qualname__}'s __tensor_flatten__ lists {n}, a {type(x).__qualname__}: "
            "inner tensors must be tensors" + at(user_location())
        )

    def _unflatten(self, t, *, top_level: bool = False) -> SubclassProxy:
        """Record ``unflatten_tensor_subclass`` for an instance built around traced tensors
        (an inner subclass value built with it first)."""
        state = self.state
        cls = type(t)
        names, ctx = t.__tensor_flatten__()
        inner = {}
        for n in names:
            x = getattr(t, n)
            if isinstance(x, TensorProxy):
                inner[n] = state.inplace.current(x)
            elif _is_subclass_value(x):
                if proxy_of(x) is not None:  # a value of the trace held by a new one
                    inner[n] = self.current_value(x) if top_level else state.inplace.value_of(proxy_of(x))
                elif is_traceable(type(x)):
                    inner[n] = self._unflatten(x, top_level=top_level)
                else:
                    _require_traceable(type(x), f"the {cls.__qualname__}'s inner tensor {n}")
            else:
                inner[n] = self.captured_inner(cls, n, x)
        trc = state.computation
        rg = t.requires_grad
        p = SubclassProxy(
            trc.make_name("t"), cls, inner, ctx, tuple(t.shape), t.dtype, t.device, rg, tuple(t.stride())
        )
        attach(t, p)
        self._keepalive.append(t)
        self.instances.append(t)
        if top_level and rg:  # built around tensors that require grad: a leaf, as in eager
            self.writes.leaves.add(p.name)
        trc.add_bsym(
            BoundSymbol(
                pyops.unflatten_tensor_subclass,
                (cls, dict(inner), ctx, tuple(t.shape), tuple(t.stride())),
                {},
                p,
                source=user_location() if top_level else None,
                scope=trc.scope,
            )
        )
        return p


def _holds_traced(t) -> bool:
    """A traceable subclass instance holding traced tensors (proxies, values of the trace),
    directly or through an inner subclass instance."""
    if not is_traceable(type(t)):
        return False
    names, _ = t.__tensor_flatten__()
    for n in names:
        x = getattr(t, n)
        if (
            isinstance(x, TensorProxy)
            or proxy_of(x) is not None
            or (_is_subclass_value(x) and _holds_traced(x))
        ):
            return True
    return False
