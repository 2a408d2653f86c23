"""The acquisition mode: a ``TorchFunctionMode`` that turns every torch call on proxies
into thunder ops recorded in the computation trace.

Metadata queries (``x.shape``, ``x.size(0)``, ``len(x)``) are answered from the proxy and
record nothing. Calls that need a tensor's value (``x.item()``, ``if x.sum() > 0:``) and
ops thunder does not know are errors naming the op and the user's line. In-place calls
(``x.add_(1)``, ``x[0] = 1``, ``inplace=True``) are made functional: the out-of-place op is
recorded and the proxy is *rebound* to the result, so later uses see the new value.
The calls handled by a function of their own (metadata, global state, refusals) are in
``handlers.py``.
"""

from __future__ import annotations

import operator
import sys
import types

import torch
from torch.autograd.function import BackwardCFunction
from torch.overrides import TorchFunctionMode

from thunder.core.errors import ThunderError, UnsupportedOpError, at, describe
from thunder.core.proxies import TensorProxy
from thunder.core.pytree import tree_leaves
from thunder.core.source import user_location
from thunder.core.symbolic import hints
from thunder.core.tags import Tag
from thunder.frontend.stand_ins.containers import is_tracked, untracked
from thunder.frontend.stand_ins.counters import traced_operands
from thunder.frontend.stand_ins.unpack import ATTR, Unpack
from thunder.frontend.torch_calls import keywords
from thunder.frontend.torch_calls.autograd_history import history
from thunder.frontend.torch_calls.handlers import _AFTER_RESOLVING, _BEFORE_RESOLVING, _METADATA_PROPERTIES
from thunder.frontend.torch_calls.max_norm import max_norm_call, renormed_lookup
from thunder.frontend.torch_calls.torch_state import default_dtype_read
from thunder.frontend.torch_calls.views import View
from thunder.ops import custom, ltorch
from thunder.ops.autocast import autocast_arguments
from thunder.ops.langs import PROPERTY_TO_THUNDER, TORCH_TO_THUNDER, inplace_base_name, out_of_place
from thunder.ops.ltorch.inplace import COPYING_CALLS, LAYOUT_VIEWS
from thunder.ops.ltorch.shape import PROPERTY_VIEWS
from thunder.ops.meta import ShapeError

T = torch.Tensor


def _reject_autograd_function(func) -> None:
    """Inside the forward of a custom ``torch.autograd.Function`` applied without going through
    ``torch.autograd.Function.apply`` (which ``autograd_functions.py`` records): tracing
    through it would drop its backward, so say so instead."""
    f = sys._getframe(3)  # (above _op and _handle: the mode's __torch_function__)
    for _ in range(64):
        if f is None:
            return
        if f.f_code.co_name == "forward" and isinstance(f.f_locals.get("ctx"), BackwardCFunction):
            fn = type(f.f_locals["ctx"]).__name__.removesuffix("Backward")
            raise UnsupportedOpError(
                f"thunder: {describe(func)} is called inside the forward of the custom torch.autograd.Function "
                f"{fn}, applied without torch.autograd.Function.apply; this is not supported (its backward would be lost)"
                + at(user_location())
            )
        f = f.f_back


_INLINABLE: dict = {}
# answered by the mode itself even where torch writes them in Python (``Tensor.__repr__``)
# Arithmetic that torch also runs on two Python numbers, giving a 0-d tensor
# (``torch.div(seq_len, window, rounding_mode="trunc")`` in transformers' LED)
_NUMBER_ARITHMETIC = {
    torch.add, torch.sub, torch.subtract, torch.mul, torch.multiply, torch.div, torch.divide,
    torch.true_divide, torch.floor_divide,
}  # fmt: skip
# torch's C functions take NumPy's keyword names too (``torch.cat(xs, axis=1)``,
# ``x.sum(axis=0, keepdims=True)``); thunder's ops use torch's own
_C_FUNCTIONS = (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)
_NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim"}


def _numpy_names(kwargs: dict) -> dict:
    return {
        (_NUMPY_NAMES[k] if k in _NUMPY_NAMES and _NUMPY_NAMES[k] not in kwargs else k): v
        for k, v in kwargs.items()
    }


# ``Tensor.type("torch.HalfTensor")``'s names
_LEGACY_TYPES = {
    "DoubleTensor": torch.float64, "FloatTensor": torch.float32, "HalfTensor": torch.float16,
    "BFloat16Tensor": torch.bfloat16, "LongTensor": torch.int64, "IntTensor": torch.int32,
    "ShortTensor": torch.int16, "CharTensor": torch.int8, "ByteTensor": torch.uint8, "BoolTensor": torch.bool,
}  # fmt: skip
_NO_OVERRIDES = {
    "has_torch_function": lambda *a: False,
    "has_torch_function_unary": lambda *a: False,
    "has_torch_function_variadic": lambda *a: False,
}


def _inlinable(func):
    """A copy of a Python-level torch function (``F.multi_head_attention_forward``) whose
    override check is off, so calling it under the mode does not come back here; None for
    builtins and for functions outside torch."""
    if func in _INLINABLE:
        return _INLINABLE[func]
    body = None
    code = getattr(func, "__code__", None)
    if isinstance(func, types.FunctionType) and code is not None and func.__module__.startswith("torch."):
        if "has_torch_function" in "".join(code.co_names):
            body = types.FunctionType(
                code,
                {**func.__globals__, **_NO_OVERRIDES},
                func.__name__,
                func.__defaults__,
                func.__closure__,
            )
            body.__kwdefaults__ = func.__kwdefaults__
    _INLINABLE[func] = body
    return body


# torch reads a Python type given as a dtype as these (``torch.tensor([-1], dtype=int)``)
_PYTHON_DTYPES = {int: torch.int64, float: torch.float64, bool: torch.bool, complex: torch.complex128}


def _python_dtypes(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``dtype=int`` -> ``dtype=torch.int64``, ``x.to(float)`` -> ``x.to(torch.float64)``."""
    if any(type(a) is type for a in args):
        args = tuple(_PYTHON_DTYPES.get(a, a) if type(a) is type else a for a in args)
    d = kwargs.get("dtype")
    if type(d) is type and d in _PYTHON_DTYPES:
        kwargs = {**kwargs, "dtype": _PYTHON_DTYPES[d]}
    return args, kwargs


def autocast_on() -> bool:
    return torch.is_autocast_enabled("cpu") or torch.is_autocast_enabled("cuda")


def _inplace_base(name: str):
    """The out-of-place op for an in-place method: ``add_`` -> ``add``, ``zero_`` -> ``zeros_like``."""
    special = {
        "zero_": ltorch.zeros_like,
        "fill_": ltorch.fill,
        "uniform_": _uniform,
        "normal_": _normal,
    }
    if name in special:  # (a result that requires no grad is kept in the graph by the rebinding)
        return special[name]
    return TORCH_TO_THUNDER.get(getattr(T, inplace_base_name(name) or "", None))


def _uniform(a, from_=0.0, to=1.0, *, generator=None):
    return ltorch.add(ltorch.mul(ltorch.rand_like(a), to - from_), from_)


def _normal(a, mean=0.0, std=1.0, *, generator=None):
    return ltorch.add(ltorch.mul(ltorch.randn_like(a), std), mean)


def _writes_first(func) -> bool:
    """An aten operator that writes into its first argument (``torch.ops.aten.copy_.default``)."""
    if isinstance(func, torch._ops.OpOverload):
        return func._schema.is_mutable
    return (
        isinstance(func, torch._ops.OpOverloadPacket)
        and inplace_base_name(func._qualified_op_name) is not None
    )


class AcquisitionMode(TorchFunctionMode):
    """Routes torch calls made while tracing to thunder ops; ``state`` is the acquisition."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        # the torch functions written in Python being traced through, outermost first: an
        # error inside names what the user called (F.interpolate), not its internals
        self.inlined: list = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if any(map(is_tracked, args)) or any(map(is_tracked, kwargs.values())):
            # a list the code reached through a global (``torch.cat(BUF)``): its items, read
            args, kwargs = tuple(map(untracked, args)), {k: untracked(v) for k, v in kwargs.items()}
        if self.state.subclasses.involved(args, kwargs):  # resolved by the subclass's dispatch
            return self.state.subclasses.handle(self, func, args, kwargs)
        arguments = max_norm_call(func, args, kwargs)
        if arguments is not None:
            with self:  # its torch calls are recorded
                return renormed_lookup(func, arguments)
        if func not in TORCH_TO_THUNDER and func not in _BEFORE_RESOLVING and func not in _AFTER_RESOLVING:
            body = _inlinable(func)
            if body is not None:
                # a torch function written in Python that thunder has no op for: run its body
                # with this mode active again, so the torch calls inside it are recorded
                self.inlined.append(func)
                try:
                    with self:
                        return body(*args, **kwargs)
                finally:
                    self.inlined.pop()
        with torch._C.DisableTorchFunction():
            return self._handle(func, args, kwargs)

    def _handle(self, func, args, kwargs):
        state = self.state
        state.handling = func
        state.inplace.mark_op_start()
        handler = _BEFORE_RESOLVING.get(func)
        if handler is not None:
            return handler(self, func, args, kwargs)
        # properties arrive as a getset descriptor's __get__ (and assignments as its __set__)
        name = getattr(func, "__name__", None)
        if name == "__get__" and hasattr(func, "__self__"):
            return self._property(func.__self__.__name__, args[0])
        if name == "__set__" and hasattr(func, "__self__"):
            return self._set_property(func.__self__.__name__, args)
        return self._op(func, args, kwargs)

    def _op(self, func, args, kwargs):
        """A call that computes: recorded as the thunder op for ``func`` on the current values."""
        state = self.state
        if not torch.is_grad_enabled() and state.computation.grad_enabled:
            _reject_autograd_function(func)
        user = (args[0] if args else None, kwargs.get("out"))  # the objects user code called it on
        if (
            state.inputs.number_inputs
        ):  # a counter the op may take as a value (frontend/stand_ins/counters.py)
            args, kwargs = traced_operands(func, args, kwargs)
        args, kwargs = state.resolve((args, kwargs), sizes=_takes_sizes(func))
        if autocast_on() and func in TORCH_TO_THUNDER:  # eager's casts, recorded (ops/autocast.py)
            args, kwargs = autocast_arguments(TORCH_TO_THUNDER[func], args, kwargs)
        args, kwargs = _python_dtypes(args, kwargs)
        out = kwargs.pop("out", None)
        if out is not None:
            return _same_object(self._into(func, args, kwargs, out), out, user[1])
        return _same_object(self._resolved_op(func, args, kwargs), args[0] if args else None, user[0])

    def _resolved_op(self, func, args, kwargs):
        if ("axis" in kwargs or "keepdims" in kwargs) and isinstance(func, _C_FUNCTIONS):
            kwargs = _numpy_names(kwargs)
        if (
            func in _NUMBER_ARITHMETIC
            and len(args) >= 2
            and not any(isinstance(a, TensorProxy) for a in args[:2])
        ):
            args = (ltorch.tensor(args[0]), *args[1:])
        handler = _AFTER_RESOLVING.get(func)
        if handler is not None:
            return handler(self, func, args, kwargs)
        target = TORCH_TO_THUNDER.get(func)
        if target is not None:
            return self._thunder_op(func, target, args, kwargs)
        return self._without_thunder_op(func, args, kwargs)

    def _thunder_op(self, func, target, args, kwargs):
        state = self.state
        # ``F.relu(x, inplace=True)``: run out of place and rebind; the flag itself is dropped
        inplace = False
        if "inplace" in kwargs:
            kwargs = dict(kwargs)
            inplace = kwargs.pop("inplace") is True
        if inplace or _writes_first(func):
            operands = (state.inplace.read_for_write(args[0]), *args[1:])
            return state.inplace.rebind(args[0], self._call(func, target, operands, kwargs), describe(func))
        result = self._call(func, target, args, kwargs)
        if torch.get_default_dtype() is not state.torch_state.before["default_dtype"]:
            result = default_dtype_read(self, func, target, args, kwargs, result)
        self._track_views(func, target, args, kwargs, result)
        if kwargs.get("requires_grad") is True and isinstance(result, TensorProxy):
            # ``torch.zeros(3, requires_grad=True)``: a leaf that requires grad, as in eager
            self._requires_grad(result, True, describe(func))
        return result

    def _without_thunder_op(self, func, args, kwargs):
        """An in-place method made functional (``x.add_(1)``), a library's operator, or an error."""
        state = self.state
        name = getattr(func, "__name__", "")
        if inplace_base_name(name) is not None:
            base = _inplace_base(name)
            if base is not None:
                result = self._call(func, base, (state.inplace.read_for_write(args[0]), *args[1:]), kwargs)
                return state.inplace.rebind(args[0], result, describe(func))
        if (
            name.startswith("_foreach_")
            and inplace_base_name(name)
            and args
            and isinstance(args[0], (list, tuple))
        ):
            return self._foreach_inplace(func, name, args, kwargs)
        if custom.is_custom_op(func):  # a library's operator: one opaque op (thunder/ops/custom.py)
            return self._call(func, custom.symbol_for(func), args, kwargs)
        if self.inlined and describe(self.inlined[0]) != describe(func):
            raise UnsupportedOpError(
                f"thunder: {describe(self.inlined[0])} is not supported: it calls {describe(func)}, which has no "
                "thunder op (thunder.ops.ltorch lists the supported ones)" + at(user_location())
            )
        raise UnsupportedOpError(
            f"thunder: {describe(func)} is not supported (no thunder op for it; thunder.ops.ltorch lists "
            "the supported ones)" + at(user_location())
        )

    def _set_property(self, name: str, args):
        target = self.state.resolve(args[0])
        if name == "requires_grad" and isinstance(target, TensorProxy):
            self._requires_grad(target, args[1], "setting torch.Tensor.requires_grad")
            return None
        raise UnsupportedOpError(
            f"thunder: setting torch.Tensor.{name} is not supported while tracing" + at(user_location())
        )

    def _into(self, func, args, kwargs, out):
        """``func(..., out=t)``: the op, then its result copied into ``t`` as ``t.copy_`` would
        (a write into an input or a buffer reaches the caller's tensor); returns ``t``, as eager
        does. Only where the result has ``t``'s shape and dtype (eager would resize or cast)."""
        op = f"{describe(func)}(out=...)"
        target = TORCH_TO_THUNDER.get(func)
        if target is None or not isinstance(out, TensorProxy):
            what = "no thunder op for it" if target is None else "out= is a tuple or not a tensor"
            raise UnsupportedOpError(f"thunder: {op} is not supported ({what})" + at(user_location()))
        result = self._call(func, target, args, kwargs)
        if not isinstance(result, TensorProxy) or (result.shape, result.dtype) != (out.shape, out.dtype):
            got = (
                f"{tuple(result.shape)} {result.dtype}"
                if isinstance(result, TensorProxy)
                else type(result).__name__
            )
            raise UnsupportedOpError(
                f"thunder: {op}: the result ({got}) is not of out's shape and dtype ({tuple(out.shape)} "
                f"{out.dtype}), where eager would resize or cast out; not supported, assign the result instead"
                + at(user_location())
            )
        return self.state.inplace.rebind(out, self._call(T.copy_, ltorch.copy_to, (out, result), {}), op)

    def _requires_grad(self, t: TensorProxy, flag: bool, op: str) -> TensorProxy:
        """``t.requires_grad_(flag)``: on a value computed here that requires no grad, the
        value becomes a leaf that requires grad, as in eager (transformers' gradient
        checkpointing does it to the embeddings' output): the ops after it are differentiable;
        its own op passes no gradient on, its inputs requiring none."""
        flag = bool(flag)
        if t.requires_grad == flag:
            return t
        if t.name in self.state.inputs.sources:
            raise UnsupportedOpError(
                f"thunder: {op}({flag}) on {t.name}, an input of the compiled function: it would change the "
                "caller's tensor; set requires_grad before the call" + at(user_location())
            )
        if not flag:
            raise RuntimeError(
                f"thunder: {op}(False) on {t.name}, a value computed from tensors that require grad: "
                "you can only change requires_grad flags of leaf variables (eager raises too); use "
                ".detach()" + at(user_location())
            )
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise RuntimeError(
                f"thunder: {op}(True) on {t.name} of dtype {t.dtype}: only tensors of floating point and "
                "complex dtype can require gradients" + at(user_location())
            )
        torch.Tensor.requires_grad.__set__(t, True)  # (a proxy is a leaf to torch)
        return t

    def _check_view(self, func, args, kwargs) -> None:
        """``t.view(shape)`` where eager's ``t`` (an input as the caller laid it out, or a chain
        of views of one) has strides no view of that shape fits: eager's error (``.reshape``
        copies instead); ``t.view(dtype)`` of another element size likewise (eager's needs a
        last dim of stride 1). The prologue checks the strides it was decided on."""
        shape = args[1:]
        if func is T.view_as:
            shape = (tuple(args[1].shape),) if len(args) > 1 else (tuple(kwargs["other"].shape),)
        elif "dtype" in kwargs:
            shape = (kwargs["dtype"],)
        elif "size" in kwargs:
            shape = (tuple(kwargs["size"]),)
        if any(
            isinstance(d, TensorProxy) or type(d) not in (int, tuple, list, torch.Size, torch.dtype)
            for d in shape
        ):
            return  # sizes given as traced values: left to the op
        if not self.state.views.is_input_view(args[0]):
            # a computed tensor: eager's layout is not always contiguous (an elementwise op keeps
            # a channels_last input's layout), so no view is refused on a guess
            return
        m = self.state.views.meta_of(args[0])
        if m is None:
            return
        try:
            m.view(*shape)
        except RuntimeError as e:
            raise RuntimeError(f"thunder: {describe(func)}: {e}" + at(user_location())) from None

    def _type(self, t, dtype=None, non_blocking: bool = False, **kwargs):
        """``t.type(torch.float16)`` or ``t.type("torch.HalfTensor")``: a cast, as ``t.to``."""
        device = None
        if isinstance(dtype, type(torch.FloatTensor)):  # torch.HalfTensor, torch.cuda.HalfTensor
            dtype = f"{dtype.__module__}.{dtype.__name__}"
        if isinstance(dtype, str):
            name = dtype
            dtype = _LEGACY_TYPES.get(name.removeprefix("torch.cuda.").removeprefix("torch."))
            if dtype is None or not name.startswith("torch."):
                raise UnsupportedOpError(
                    f"thunder: torch.Tensor.type({name!r}): not a tensor type name such as 'torch.FloatTensor'"
                    + at(user_location())
                )
            device = torch.device("cuda") if name.startswith("torch.cuda.") else torch.device("cpu")
        return self._call(T.type, ltorch.to, (t, dtype) if device is None else (t, device, dtype), {})

    def _call(self, func, target, args, kwargs):
        try:
            result = target(*args, **kwargs)
            self.state.layouts.record(func, args, kwargs, result)
            return result
        except (ShapeError, ValueError, IndexError, TypeError) as e:
            if isinstance(e, ThunderError):
                raise
            if isinstance(e, TypeError) and kwargs:
                for a, k in keywords.rebind(func, args, kwargs):  # operands by keyword (``other=t``)
                    try:
                        result = target(*a, **k)
                    except TypeError:
                        continue
                    self.state.layouts.record(func, a, k, result)
                    return result
            raise type(e)(f"thunder: {describe(func)}: {e}" + at(user_location())) from e

    def _foreach_inplace(self, func, name: str, args, kwargs):
        """``torch._foreach_add_(tensors, ...)``: the out-of-place op, each result written back
        into its tensor; the list itself, as eager returns. Where a written tensor is also read
        by a later position (``_foreach_addcmul_([y, z], [w, w], [z, y])``, a tensor listed
        twice), one tensor at a time, in order, as eager's kernel writes them."""
        target = out_of_place(func)
        if target is None:
            raise UnsupportedOpError(
                f"thunder: {describe(func)} is not supported (no thunder op for torch.{inplace_base_name(name)})"
                + at(user_location())
            )
        written = args[0]
        if not _foreach_reads_its_writes(written, args[1:], kwargs, self.state.views.root_of):
            tensors = [self.state.inplace.read_for_write(t) for t in written]
            results = self._call(func, target, (tensors, *args[1:]), kwargs)
            for t, r in zip(written, results):
                self.state.inplace.rebind(t, r, describe(func))
            return written
        n = len(written)

        def at_index(a, i):
            return [a[i]] if isinstance(a, (list, tuple)) and len(a) == n else a

        for i, t in enumerate(written):
            one = [self.state.inplace.read_for_write(self.state.inplace.current(t))]
            # (what the earlier positions wrote: the arguments were resolved before them)
            rest, kw = self.state.resolve(
                (tuple(at_index(a, i) for a in args[1:]), {k: at_index(v, i) for k, v in kwargs.items()})
            )
            (r,) = self._call(func, target, (one, *rest), kw)
            self.state.inplace.rebind(t, r, describe(func))
        return written

    def _property(self, name: str, t):
        if name in _METADATA_PROPERTIES:
            if isinstance(t, TensorProxy):
                self.state.touched[id(t)] = t
            return getattr(torch.Tensor, name).__get__(t)
        if name in ("is_leaf", "grad_fn") and isinstance(t, TensorProxy):
            return history(self.state, name, self.state.resolve(t))
        if name == "grad":
            if isinstance(t, torch.Tensor) and not isinstance(t, TensorProxy):
                t = self.state.capture(t)  # a real tensor reached through an object (an optimizer's params)
            return self._grad(t)
        t = self.state.resolve(t)
        if name in PROPERTY_TO_THUNDER:
            result = PROPERTY_TO_THUNDER[name](t)
            self.state.layouts.record(operator.attrgetter(name), (t,), {}, result)
            view = PROPERTY_VIEWS.get(name)
            if view is not None and isinstance(t, TensorProxy) and result is not t:
                op, args, func = view(t)
                self.state.views.add(View(t, op, args, {}, 0, result, func))
            return result
        if name == "data":  # a view without history, as detach()
            result = ltorch.detach(t)
            self.state.layouts.record(operator.attrgetter(name), (t,), {}, result)
            if result is not t:
                self.state.views.add(View(t, ltorch.detach, (), {}, 0, result, T.detach))
            return result
        raise UnsupportedOpError(
            f"thunder: the tensor property .{name} is not supported" + at(user_location())
        )

    def _grad(self, t):
        """``t.grad``: for an input, its ``.grad`` as the call begins (None, which the prologue
        checks, or a tensor, another input: a function that updates parameters from their
        gradients); None for a value computed here (eager's ``.grad`` of a non-leaf)."""
        inputs = self.state.inputs
        src = inputs.sources.get(t.name) if isinstance(t, TensorProxy) else None
        if src is None:
            return None
        key = (t.name, "grad")
        if key not in self.state.grads:
            real = src[2].grad
            if real is None:
                inputs.guard_attr(t, "grad", None)
                self.state.grads[key] = None
            else:
                p = inputs.tensor(real, f"{t.name}_grad", Unpack(t, ATTR, "grad"))
                inputs.seen.setdefault(id(real), p)
                self.state.grads[key] = p
        grad = self.state.grads[key]
        return None if grad is None else self.state.inplace.current(grad)

    def _setitem(self, a, key, value):
        result = self._call(T.__setitem__, ltorch.setitem, (a, key, value), {})
        self.state.inplace.rebind(a, result, "torch.Tensor.__setitem__")
        return None

    def _eager_views(self, func, args, kwargs, result) -> bool:
        """Whether eager's ``func(*args, **kwargs)`` returns a view (replayed on meta tensors).
        Decided on symbolic sizes whose layout may differ at other sizes, writes into the
        result are refused (the trace is made again with the sizes specialised)."""
        m = self.state.views.meta_of(args[0], pin=False)
        if m is None:
            return True
        if getattr(m, "sized_layout", False):
            for leaf in tree_leaves(result):
                if isinstance(leaf, TensorProxy):
                    self.state.views.guessed_layouts.add(leaf.name)
        try:
            out = func(m, *hints(args[1:]), **hints(kwargs))
        except Exception:  # arguments that are proxies: taken as a view, as before
            return True
        root = m if m._base is None else m._base
        return out._base is root  # (a copy made first, then viewed, has another base)

    def _track_views(self, func, target, args, kwargs, result):
        # ops tagged "view" alias their first argument in eager: later writes must reach them
        if Tag.VIEW in getattr(target, "tags", ()) and args and isinstance(args[0], TensorProxy):
            copies = COPYING_CALLS.get(target)
            if copies is not None and copies(*args, **kwargs):
                return
            if target in LAYOUT_VIEWS and self.state.views.layout_guessed(args[0]):
                for leaf in tree_leaves(result):
                    if isinstance(leaf, TensorProxy):
                        self.state.views.guessed_layouts.add(leaf.name)
            if target in LAYOUT_VIEWS and not self._eager_views(func, args, kwargs, result):
                return  # eager copied (reshape of a non-contiguous tensor)

            for i, leaf in enumerate(tree_leaves(result)):
                if isinstance(leaf, TensorProxy) and leaf is not args[0]:
                    self.state.views.add(View(args[0], target, tuple(args[1:]), dict(kwargs), i, leaf, func))


def _takes_sizes(func) -> bool:
    """Whether the torch op ``func`` takes sizes (a factory, a view or reshape): a counter it
    gets may be a symbolic size (``stand_ins/counters.py``)."""
    target = TORCH_TO_THUNDER.get(func)
    return target is not None and bool({Tag.FACTORY, Tag.SHAPE} & set(getattr(target, "tags", ())))


def _same_object(result, resolved, user):
    """An op that returns the tensor it was called on (an in-place op, ``x.contiguous()`` of a
    contiguous ``x``) returns the very object user code holds, as eager does: ``x.add_(1) is x``,
    and ``x += 1`` leaves ``x`` the caller's tensor, however many writes came before."""
    if result is resolved and resolved is not None and isinstance(user, TensorProxy):
        return user
    return result


def _foreach_reads_its_writes(written, others, kwargs, root_of) -> bool:
    """Whether a tensor a foreach op writes is listed twice, or read by another argument (a
    list's item or a single tensor) at a later position than where it is written; tensors
    count as one where they are views of one value (``root_of``: ``y[0]`` twice)."""
    where = {}
    for i, t in enumerate(written):
        key = root_of(t) if isinstance(t, TensorProxy) else id(t)
        if key in where:
            return True
        where[key] = i
    for a in (*others, *kwargs.values()):
        items = a if isinstance(a, (list, tuple)) else [a] * len(written)
        for j, x in enumerate(items):
            if isinstance(x, TensorProxy) and where.get(root_of(x), j) < j:
                return True
    return False
