"""Tensor wrapper subclasses while tracing: subclass inputs, and ``__torch_dispatch__``
resolved at trace time.

A subclass input becomes a ``SubclassProxy`` (thunder/core/subclass.py) whose inner tensors
are proxies; user code gets a real instance of the subclass built around them with the
class's own ``__tensor_unflatten__``. The prologue checks the outer metadata, the class, the
names and flatten context ``__tensor_flatten__`` gives, and every inner tensor.

When a torch call meets a subclass value, the call itself runs (the acquisition mode is
inactive inside its own handler): torch sends it through the subclass's
``__torch_function__`` to its ``__torch_dispatch__``, whose aten calls on the inner proxies
reach ``TensorProxy.__torch_dispatch__`` and are recorded as aten symbols
(thunder/ops/aten.py). The call is one BoundSymbol::

    t0 = ScaleTensor.torch.add(x, 1)  # t0: "ScaleTensor[cpu f32[2, 2]] (_x: cpu f32[2, 2], _scale: cpu f32[])"
      # (x__x, x__scale) = prims.flatten_tensor_subclass(x)
      # t1 = aten.mul.Tensor(x__x, x__scale)
      # t2 = aten.add.Tensor(t1, 1)
      # t3 = aten.div.Tensor(t2, x__scale)
      # t0 = prims.unflatten_tensor_subclass(ScaleTensor, {'_x': t3, '_scale': x__scale}, None, (2, 2), (2, 1))

Its outputs are subclass proxies again or plain tensor proxies, with their shapes, so
metadata can drive Python control flow. A subclass built inside the function from plain
tensors is recorded as ``unflatten_tensor_subclass`` where it is first used. The flattening
pass (thunder/transforms/flatten_subclasses.py) later keeps only the aten ops.

A subclass value may hold another (a ScaleTensor whose data is a TwoTensor): its inner
proxy is a subclass proxy in turn, the prologue unpacks and checks every level, the
subclass's dispatch reaches the inner one's, and values are flattened and rebuilt level by
level. In-place ops on subclass values are thunder/frontend/subclass_writes.py's.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import threading

import torch

from thunder.core.context import current_trace
from thunder.core.errors import (
    DataDependentError,
    ThunderError,
    UnsupportedOpError,
    UnsupportedValueError,
    at,
)
from thunder.core.printing import output_str, type_comment
from thunder.core.proxies import TensorProxy, dispatch_hook
from thunder.core.pytree import tree_flatten, tree_leaves, tree_map, tree_unflatten
from thunder.core.source import SourceLocation, user_location
from thunder.core.subclass import SubclassProxy, ViewLink, attach, is_plain_tensor, proxy_of, subclass_name
from thunder.core.symbol import EAGER_IMPLS, BoundSymbol, Symbol, register
from thunder.core.tags import Tag
from thunder.frontend.mode import (
    _DATA_DEPENDENT,
    _METADATA_METHODS,
    _METADATA_PROPERTIES,
    _PASSTHROUGH,
    autocast_on,
)
from thunder.frontend.numbers import DynamicNumber
from thunder.frontend.subclass_writes import Writes
from thunder.frontend.torch_names import describe
from thunder.frontend.views import View
from thunder.ops import python as pyops
from thunder.ops.aten import ADD_AN_OP, ATEN, out_value, written_value
from thunder.ops.langs import TORCH_TO_THUNDER, resolve_path
from thunder.ops.meta import ShapeError, differentiable

T = torch.Tensor
A = torch.ops.aten

# Python's operators on a tensor reach the mode as these methods (``x + 1`` as ``Tensor.add``),
# which are the same op as the torch function: a subclass op prints as the function
# (``ScaleTensor.torch.add``) and runs it.
_OPERATORS = {
    getattr(T, name): getattr(torch, name)
    for name in (
        "add", "sub", "mul", "div", "matmul", "neg", "pow", "abs", "eq", "ne", "lt", "le", "gt", "ge",
        "floor_divide", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    )
}  # fmt: skip
_INPLACE_OPERATORS = {
    "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
    "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imatmul__", "__setitem__",
}  # fmt: skip
# aten ops that need a tensor's value (``if t.sum() > 0:`` and ``.item()`` inside a dispatch)
_DATA_DEPENDENT_ATEN = {
    A._local_scalar_dense, A.is_nonzero, A.item, A.equal, A.nonzero, A.masked_select,
    A._unique2, A.unique_consecutive, A.unique_dim,
}  # fmt: skip


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
        inputs.inner_layouts[ip.name] = torch.empty_strided(
            it.shape, it.stride(), dtype=it.dtype, device="meta"
        )
        inputs.checks.of_values.append(BoundSymbol(pyops.check_strides, (ip, tuple(it.stride())), {}, None))
    return p, instance


# -- the symbols of subclass ops ------------------------------------------------------------
_SYMBOLS: dict[tuple[type, str], Symbol] = {}
_MODULE_NAMES: dict[type, str] = {}


def _module_name(cls: type) -> str:
    """A name for ``cls`` unique in this process (the symbols' ids); printing uses the class's
    own name, made unique per trace."""
    name = _MODULE_NAMES.get(cls)
    if name is None:
        base, name, i = cls.__name__, cls.__name__, 1
        taken = set(_MODULE_NAMES.values())
        while name in taken:
            i += 1
            name = f"{base}_{i}"
        _MODULE_NAMES[cls] = name
    return name


def _torch_path(func) -> tuple[str, object, bool]:
    """(how ``func`` prints, what runs, whether the printed path resolves to it)."""
    if isinstance(func, Symbol):  # a thunder op of a backward (``ScaleTensor.prims.mul``)
        return func.id, _runnable(func), False
    func = _OPERATORS.get(func, func)
    if getattr(func, "__name__", None) == "__get__" and hasattr(func, "__self__"):  # a property
        return f"torch.Tensor.{func.__self__.__name__}.__get__", func, True
    path = describe(func)
    try:
        resolves = resolve_path(path) is func
    except (AttributeError, KeyError):
        resolves = False
    return path, func, resolves


def _print_op(cls: type, path: str, bsym, printer) -> str:
    call = printer.call(f"{subclass_name(printer, cls)}.{path}", bsym.args, bsym.kwargs)
    out = output_str(printer, bsym.output)
    line = f"{out} = {call}" if out else call
    comment = type_comment(tree_leaves(bsym.output))
    return f"{line}  # {comment}" if comment else line


def subclass_symbol(cls: type, func, *, writes: bool = False) -> Symbol:
    """``ScaleTensor.torch.add``: ``func`` on values of ``cls``, resolved by its dispatch.
    ``writes``: an in-place op (``TwoTensor.torch.Tensor.add_``), whose output is the value
    its first argument holds afterwards; never run whole (it would write its argument)."""
    path, fn, resolves = _torch_path(func)
    sym = _SYMBOLS.get((cls, path, writes))
    if sym is None:
        # (``F.relu(x, inplace=True)`` is a symbol apart from ``F.relu(x)``)
        in_place_name = path.endswith("_") or path.rsplit(".", 1)[-1] in _INPLACE_OPERATORS
        sym = _SYMBOLS[(cls, path, writes)] = register(
            Symbol(
                f"{path}.inplace" if writes and not in_place_name else path,
                _module_name(cls),
                decomposition=functools.partial(_decompose, fn),
                impl=fn,
                tags=(Tag.TENSOR_SUBCLASS,),
                printer=functools.partial(_print_op, cls, path),
                # the torch executor may run it whole on real instances (when autograd must
                # see the subclass op itself)
                torch_impl=path if resolves and not writes else None,
                doc=f"{path} on {cls.__qualname__} values, as its __torch_dispatch__ resolves it",
            )
        )
    return sym


class _Call:
    """One subclass op being traced."""

    def __init__(self, subclasses, fn, cls, loc, rargs, rkwargs, pleaves, writes=None):
        self.subclasses = subclasses
        self.writes = writes  # an in-place op: the object it writes (an instance or a proxy)
        self.changed: list = []  # of an in-place op: (instance, its new value) for each value it wrote
        self.fn = fn
        self.cls = cls
        self.loc = loc  # the user's line
        self.rargs = rargs  # what ``fn`` runs on: instances and proxies
        self.rkwargs = rkwargs
        self.inputs = pleaves  # the proxies of the call's arguments
        self.recorded = 0  # aten ops recorded by the dispatch
        self.produced: set[str] = set()  # the names of their outputs
        self.result = None  # what the dispatch returned (instances), for user code
        self.what = f"{describe(fn)} on a {cls.__qualname__}"


_ACTIVE = threading.local()


class _Unchanged(Exception):
    """The call gave back one of its subclass arguments without running any aten op."""


def _decompose(fn, *args, **kwargs):
    call = getattr(_ACTIVE, "call", None)
    if call is None:
        raise RuntimeError(
            "thunder: subclass ops are recorded by the acquisition mode, not called in a trace"
        )
    return call.subclasses._run(call, args, kwargs)


class Subclasses:
    """Tensor-subclass values of one acquisition (``state.subclasses``)."""

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
        # into tensors they hold changes their value (thunder/frontend/subclass_writes.py)
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
        its value is rebuilt around them here, ``thunder/frontend/subclass_writes.py``)."""
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

    # -- ops --------------------------------------------------------------------------------
    def handle(self, mode, func, args, kwargs):
        """A torch call with a subclass value among its arguments."""
        name = getattr(func, "__name__", "")
        prop = func.__self__.__name__ if name == "__get__" and hasattr(func, "__self__") else None
        if (prop in _METADATA_PROPERTIES) or (
            prop is None and (func in _METADATA_METHODS or func in _DATA_DEPENDENT or func in _PASSTHROUGH)
        ):
            # metadata comes from the instance; the trace relied on it, so the prologue checks it
            for a in args[:1]:
                p = self.state.capture(a) if isinstance(a, torch.Tensor) and not is_plain_tensor(a) else None
                if p is not None:
                    self.state.touched[id(p)] = p
            with torch._C.DisableTorchFunction():
                return mode._handle(func, args, kwargs)
        loc = user_location()
        if autocast_on():
            raise UnsupportedOpError(
                f"thunder: {describe(func)} runs under torch.autocast, which thunder does not support yet"
                + at(loc)
            )
        self.state.inplace.mark_op_start()
        if kwargs.get("out") is not None:  # ``torch.add(a, b, out=x)``: a write into x
            return self.writes.write(func, args, kwargs, loc, kwargs["out"])
        inplace = (name.endswith("_") and not name.endswith("__")) or name in _INPLACE_OPERATORS
        if inplace or kwargs.get("inplace") is True:
            return self.writes.write(func, args, kwargs, loc, args[0] if args else None)
        return self.call(func, args, kwargs, loc)

    def call(self, func, args, kwargs, loc: SourceLocation | None, writes=None):
        """Record ``func(*args, **kwargs)`` as one BoundSymbol resolved by the dispatch
        (``writes``: the object an in-place op writes, see ``Writes.write``)."""
        state = self.state
        leaves, spec = tree_flatten((args, kwargs))
        pleaves, rleaves, cls = [], [], None
        for v in leaves:
            if isinstance(v, TensorProxy):
                v = state.inplace.current(v)
                pleaves.append(v)
                rleaves.append(v)
            elif isinstance(v, torch.Tensor):
                p = state.capture(v)  # a subclass value's proxy, or a real tensor made an input
                pleaves.append(p)
                if isinstance(p, SubclassProxy):
                    cls = cls or p.subclass
                    # the instance user code holds: its tensors hold ``p``'s inner values
                    traced = self.traced_instance(v)
                    rleaves.append(p.instance if traced is None else traced)
                else:
                    rleaves.append(p)
            elif isinstance(v, DynamicNumber):
                pleaves.append(v.concrete())
                rleaves.append(pleaves[-1])
            else:
                pleaves.append(v)
                rleaves.append(v)
        pargs, pkwargs = tree_unflatten(pleaves, spec)
        rargs, rkwargs = tree_unflatten(rleaves, spec)
        sym = subclass_symbol(cls, func, writes=writes is not None)
        if writes is not None:
            self.writes.declare(sym, func, kwargs)
        call = _Call(self, sym.impl, cls, loc, rargs, rkwargs, pleaves, writes)
        prev = getattr(_ACTIVE, "call", None)
        _ACTIVE.call = call
        try:
            state.computation.record(sym, pargs, pkwargs)
        except _Unchanged:
            pass
        except ThunderError:
            raise
        except Exception as e:  # the subclass's own code failed: say where it was called from
            e.add_note(f"thunder: while tracing {call.what}" + at(loc))
            raise
        finally:
            _ACTIVE.call = prev
        for t, new in call.changed:  # (an in-place op's) the values written hold them from here on
            state.inplace.rebind_value(proxy_of(t), new)
        if writes is None:
            _link_view(func, pargs, pkwargs, call.result)
        return call.result

    def _run(self, call: _Call, pargs, pkwargs):
        """The decomposition of a subclass op: flatten its subclass arguments, run the call
        (recording the aten ops its dispatch reaches), unflatten its subclass results."""
        flattened: set[str] = set()
        for p in tree_leaves((pargs, pkwargs)):
            for q in p.nested() if isinstance(p, SubclassProxy) else ():
                if q.name not in flattened:
                    flattened.add(q.name)
                    pyops.flatten_tensor_subclass(q)
        grad = torch.is_grad_enabled()
        start = self.writes.begin()
        # the dispatch runs below autograd, as in eager: inner results never require grad
        with (
            self.state.computation.below_autograd(),
            dispatch_hook(functools.partial(self._record_aten, call)),
        ):
            out = call.fn(*call.rargs, **call.rkwargs)
        inputs = [x for x in call.inputs if isinstance(x, torch.Tensor)]
        if call.writes is not None:  # eager's autograd returns the written tensor: the values written
            written = self.writes.written(call, start, grad and any(_requires_grad(x) for x in inputs))
            if written is None:
                raise _Unchanged  # (the dispatch wrote only temporaries of its own)
            return written
        self.writes.refuse_writes(call, start)
        call.result = out
        if isinstance(out, torch.Tensor) and any(self._value(out) is p for p in inputs):
            if call.recorded == 0:
                raise _Unchanged  # ``x.contiguous()``: nothing was computed
            raise UnsupportedOpError(
                f"thunder: {call.what} returns its own argument after running aten ops, though it is not an "
                "in-place op; this is not supported" + at(call.loc)
            )
        if type(out) is not tuple and isinstance(out, tuple) and not hasattr(type(out), "_fields"):
            out = tuple(out)  # torch.return_types (max, min, ...): a plain tuple in the trace
        leaves, spec = tree_flatten(out)
        rg = grad and any(_requires_grad(x) for x in inputs)
        results = []
        for v in leaves:
            if isinstance(v, TensorProxy):
                if any(v is x for x in inputs):
                    raise UnsupportedOpError(
                        f"thunder: {call.what} returns its argument {v.name} unchanged; ops on tensor "
                        "subclasses that return a plain argument as it is are not supported yet"
                        + at(call.loc)
                    )
                if rg and differentiable(v.meta_dtype) and not v.meta_requires_grad:
                    # a plain result of a differentiable op: autograd runs above the dispatch in
                    # eager, so it requires grad whatever class the dispatch returns
                    with torch._C.DisableTorchFunction():
                        T.requires_grad_(v)
                results.append(v)
            elif isinstance(v, torch.Tensor):
                p = self._value(v)
                if p is None:
                    if is_plain_tensor(v):
                        raise UnsupportedOpError(
                            f"thunder: {call.what} returns a tensor it did not compute from its arguments "
                            "(a tensor made inside __torch_dispatch__); this is not supported" + at(call.loc)
                        )
                    p = self._unflatten(v)
                    self.own(p, call.produced)
                    if rg and differentiable(p.meta_dtype) and not p.meta_requires_grad:
                        # the op is differentiable at the subclass level, as eager's autograd sees it
                        with torch._C.DisableTorchFunction():
                            T.requires_grad_(p)
                            T.requires_grad_(v)
                elif any(p is x for x in inputs):
                    raise UnsupportedOpError(
                        f"thunder: {call.what} returns one of its arguments among other results; this is not "
                        "supported yet" + at(call.loc)
                    )
                results.append(p)
            else:
                results.append(v)
        return tree_unflatten(results, spec)

    def _value(self, t) -> SubclassProxy | None:
        """The value a subclass instance of the trace holds now (None for a new instance)."""
        p = proxy_of(t)
        return None if p is None else self.state.inplace.value_of(p)

    def _record_aten(self, call: _Call, func, args, kwargs):
        """An aten op the dispatch runs on proxies: record its symbol (the dispatch hook)."""
        where = _where(call)
        packet = getattr(func, "overloadpacket", None)
        if packet in _DATA_DEPENDENT_ATEN:
            raise DataDependentError(
                f"thunder: {call.cls.__qualname__}.__torch_dispatch__ calls {func}, which needs the value of a "
                "tensor; that is not known while tracing (data-dependent Python control flow such as "
                "`if t.sum() > 0:` or `.item()` inside the dispatch); express it with tensor ops such as "
                "torch.where" + where
            )
        writes = func._schema.is_mutable
        # ``aten.add.out(a, b, out=o)`` writes what ``aten.add.Tensor(a, b)`` gives into ``o``
        into = out_value(func) if writes else None
        if into is not None and isinstance(kwargs.get(into[1]), TensorProxy):
            return self._record_out(call, func, into, args, kwargs, where)
        if into is not None and _is_subclass_value(kwargs.get(into[1])):
            return NotImplemented  # (torch asked the proxy first: the subclass's turn, as below)
        sym = written_value(func) if writes else ATEN.get(func)
        if sym is None:
            raise UnsupportedOpError(
                f"thunder: {call.cls.__qualname__}.__torch_dispatch__ calls {func}, which thunder has no symbol "
                f"for; {ADD_AN_OP}" + where
            )
        if writes:
            written = [a.alias_info is not None and a.alias_info.is_write for a in func._schema.arguments]
            # (``aten._foreach_add_.Scalar`` writes each tensor of its first argument, a list)
            each = args[0] if args and isinstance(args[0], (list, tuple)) else args[:1]
            if (
                sum(written) != 1
                or not written[0]
                or not each
                or not all(isinstance(a, TensorProxy) for a in each)
            ):
                raise UnsupportedOpError(
                    f"thunder: {call.cls.__qualname__}.__torch_dispatch__ calls {func}, which writes into "
                    + ("an argument other than its first (or into several)" if args else "its output")
                    + "; in-place aten ops inside a dispatch are supported when they write their first argument, "
                    "an inner tensor" + where
                )
        state = self.state
        target = args[0] if writes else None
        if isinstance(target, (list, tuple)) and _in_order(list(target), args[1:], kwargs):
            # eager's foreach kernel writes the tensors one after the other: a later one reads
            # the new value of an earlier one (``_foreach_addcmul_([y, z], [w, w], [z, y])``)
            for i in range(len(target)):
                each, kw = _element_of(args, kwargs, i)
                self._record_aten(call, func, tuple(each), kw)
            return None
        leaves, spec = tree_flatten((args, kwargs))
        for i, v in enumerate(leaves):
            if isinstance(v, TensorProxy):
                leaves[i] = state.inplace.current(v)
            elif isinstance(v, torch.Tensor):
                if not is_plain_tensor(v):
                    # torch asked the proxy first (the leftmost argument with a dispatch of its
                    # own); in eager a plain tensor has none: the subclass's turn
                    return NotImplemented
                leaves[i] = state.capture(v)  # a tensor made or held by the subclass: an input
                self.captured_inside.add(leaves[i].name)
        args, kwargs = tree_unflatten(leaves, spec)
        try:
            out = sym(*args, **kwargs)
        except (ShapeError, ValueError, IndexError, TypeError) as e:
            if isinstance(e, ThunderError):
                raise
            raise type(e)(f"thunder: {func}: {e}" + where) from e
        call.recorded += 1
        call.produced.update(p.name for p in tree_leaves(out) if isinstance(p, TensorProxy))
        if writes:  # recorded as the value written, which the written proxy holds from now on
            if isinstance(target, (list, tuple)):
                for t, v in zip(target, out, strict=True):
                    state.inplace.rebind(t, v, call.what)
                return None  # (as the foreach op returns nothing)
            state.inplace.rebind(target, out, call.what)
            return target  # (an in-place aten op returns its argument)
        if Tag.VIEW in sym.tags:
            self._view_layout(func, args, kwargs, where)
            views = getattr(state, "views", None)  # (None: after tracing)
            if views is not None and isinstance(args[0], TensorProxy):
                # a write into the view (by a later aten op of a dispatch) reaches its base
                for i, leaf in enumerate(tree_leaves(out)):
                    if isinstance(leaf, TensorProxy) and leaf is not args[0]:
                        views.add(View(args[0], sym, tuple(args[1:]), dict(kwargs), i, leaf, func))
        return out

    def _record_out(self, call: _Call, func, into: tuple, args, kwargs, where: str):
        """``aten.add.out(a, b, out=o)`` run by a dispatch: the functional overload's value,
        which the written inner tensor ``o`` holds from now on (of the same shape: eager's
        resizing of ``o`` is not traced)."""
        twin, name = into
        kwargs = dict(kwargs)
        target = kwargs.pop(name)
        out = self._record_aten(call, twin, args, kwargs)
        if out is NotImplemented:
            return out
        if not isinstance(out, TensorProxy) or out.meta_shape != target.meta_shape:
            raise UnsupportedOpError(
                f"thunder: {call.cls.__qualname__}.__torch_dispatch__ calls {func} with {name}= of shape "
                f"{tuple(target.meta_shape)} for a result of shape "
                f"{tuple(getattr(out, 'meta_shape', ()))}: eager resizes {name}, which is not supported"
                + where
            )
        self.state.inplace.rebind(target, out, call.what)
        return target  # (an out= aten op returns the tensor written)

    def _view_layout(self, func, args, kwargs, where: str) -> None:
        """A view the dispatch takes of an inner tensor of an input: taken of a meta tensor
        laid out as the caller's, so a view that layout cannot give (``view`` of a transposed
        tensor) raises eager's error. (Of computed values thunder knows no layout: the dispatch
        ran on the outer layout torch chose from the trace's, so none is checked.)"""
        inputs = getattr(self.state, "inputs", None)  # (None: the grad pass's dispatch, after tracing)
        if inputs is None or not args or not isinstance(args[0], TensorProxy):
            return
        layout = inputs.inner_layouts.get(args[0].name)
        if layout is None or any(isinstance(a, torch.Tensor) for a in tree_leaves((args[1:], kwargs))):
            return
        try:
            func(layout, *args[1:], **kwargs)
        except RuntimeError as e:
            raise RuntimeError(f"thunder: {func}: {e}" + where) from e


def _element_of(args, kwargs, i: int) -> tuple[list, dict]:
    """The ``i``-th tensor's part of a foreach aten op's arguments: each list's entry (as a
    one-entry list), other values as they are."""

    def one(v):
        return [v[i]] if isinstance(v, (list, tuple)) else v

    return [one(v) for v in args], {n: one(v) for n, v in kwargs.items()}


def _in_order(tensors: list, args, kwargs) -> bool:
    """Whether an in-place foreach aten op over ``tensors`` runs tensor by tensor, as eager's
    kernel does, to give eager's values: it writes one tensor twice, or reads one as another's
    operand after writing it."""
    if len({id(t) for t in tensors}) != len(tensors):
        return True
    for i in range(1, len(tensors)):
        before = {id(t) for t in tensors[:i]}
        for v in (*args, *kwargs.values()):
            if id(v[i] if isinstance(v, (list, tuple)) else v) in before:
                return True
    return False


def _link_view(func, pargs, pkwargs, result) -> None:
    """A view user code took of a subclass value (``v = y[0]``): noted on the view's value,
    for the gradient of a later write through it (``thunder/frontend/subclass_writes.py``)."""
    try:
        op = TORCH_TO_THUNDER.get(_OPERATORS.get(func, func))
    except TypeError:  # an unhashable callable
        return
    if Tag.VIEW not in getattr(op, "tags", ()) or not pargs or not isinstance(pargs[0], SubclassProxy):
        return
    p = proxy_of(result) if isinstance(result, torch.Tensor) else None
    if p is not None and p is not pargs[0]:
        p.view_of = ViewLink(pargs[0], op, tuple(pargs[1:]), dict(pkwargs))


def _is_subclass_value(a) -> bool:
    return isinstance(a, torch.Tensor) and type(a) is not TensorProxy and not is_plain_tensor(a)


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


def _requires_grad(x) -> bool:
    if isinstance(x, TensorProxy):
        return x.meta_requires_grad
    return isinstance(x, torch.Tensor) and x.requires_grad


_THUNDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_TORCH = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def _subclass_location(cls: type) -> SourceLocation | None:
    """The line of the subclass's own code running now: the innermost frame, up to its
    ``__torch_dispatch__``, that is in the subclass's file or outside torch and thunder."""
    dispatch = getattr(getattr(cls.__torch_dispatch__, "__func__", None), "__code__", None)
    try:
        home = os.path.abspath(inspect.getsourcefile(cls) or "")
    except (TypeError, OSError):  # a class of __main__ (a notebook cell's) has no source file to find
        home = os.path.abspath(dispatch.co_filename) if dispatch is not None else ""
    found = None
    f = sys._getframe(2)
    while f is not None:
        name = os.path.abspath(f.f_code.co_filename)
        if found is None and (name == home or not (name.startswith((_THUNDER, _TORCH)) or "<frozen" in name)):
            found = SourceLocation(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
        if f.f_code is dispatch:
            return found
        f = f.f_back
    return None  # the aten op was not called by the dispatch (torch decomposed the op itself)


def _where(call: _Call) -> str:
    """The user's line and the subclass's line, for errors inside a dispatch."""
    inside = _subclass_location(call.cls)
    text = at(call.loc)
    if inside is not None:
        code = inside.line()
        text += (
            f"\n  in {call.cls.__qualname__}.__torch_dispatch__ at {inside.filename}:{inside.lineno} in "
            f"{inside.function}" + (f": {code}" if code else "")
        )
    return text


# -- ops on subclass values met after tracing (a backward's) --------------------------------
def _runnable(sym: Symbol):
    """What computes the thunder op ``sym`` on tensors: the torch callable of a torch-language
    op, or a prim's eager implementation."""
    if sym.torch_impl is not None:
        return resolve_path(sym.torch_impl)
    return sym.eager


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
