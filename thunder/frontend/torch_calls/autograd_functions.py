"""Custom ``torch.autograd.Function`` calls: the forward traced as one BoundSymbol, the
backward traced at the same time and kept on it for the grad pass.

While tracing, ``Function.apply`` is routed here (``traced_functions``). Without gradients
(grad mode off, or no input that requires grad) the forward is traced through like any code.
Otherwise the call is recorded as one BoundSymbol of the class (``_Square.apply``) whose
subsymbols are the forward's ops, and the class's ``backward`` is run at once on new cotangent
proxies, its ops recorded aside in ``bsym.info.recorded_backward``: the grad pass puts
them in the backward with the real cotangents (``thunder/transforms/grad.py``), so the
Function's own backward is what computes the gradients, as in eager. The cotangents are
contiguous (a backward may ask: torchao's float8 linear keeps ``grad_output.stride()``), as
eager's engine passes them after most ops (``layout_queries.Layouts.assume``).

    class _Square(torch.autograd.Function):          t2 = __main__._Square.apply(x)
        @staticmethod                                  # t2 = ltorch.mul(x, x)
        def forward(ctx, x):
            ctx.save_for_backward(x)                   backward (recorded): t4 = ltorch.mul(g_t2, 2)
            return x * x                                                    t5 = ltorch.mul(t4, x)
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x
"""

from __future__ import annotations

import contextlib
import threading

import torch
import torch.utils.checkpoint

from thunder.core.errors import UnsupportedOpError, at
from thunder.core.proxies import TensorProxy
from thunder.core.pytree import tree_flatten, tree_leaves
from thunder.core.source import user_location
from thunder.core.symbol import SYMBOLS, Symbol, register
from thunder.core.tags import Tag
from thunder.ops.meta import device_of, dtype_of, requires_grad_of, shape_of

_ORIGINAL_APPLY = torch.autograd.Function.__dict__["apply"]
_CheckpointFunction = torch.utils.checkpoint.CheckpointFunction
_ACTIVE = threading.local()
_SYMBOLS: dict[type, Symbol] = {}
# the code of what ``@once_differentiable`` wraps a backward in (one code object for them all)
_ONCE_DIFFERENTIABLE = torch.autograd.function.once_differentiable(lambda ctx: None).__code__


class FunctionCtx:
    """The ``ctx`` a custom Function's forward and backward see while tracing."""

    def __init__(self, needs_input_grad: tuple[bool, ...]):
        self.needs_input_grad = needs_input_grad
        self.saved_tensors: tuple = ()
        self.non_differentiable: list = []
        self.materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self.non_differentiable += tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value

    def mark_dirty(self, *tensors) -> None:
        raise UnsupportedOpError(
            "thunder: a custom torch.autograd.Function that writes into its inputs (ctx.mark_dirty) is not "
            "supported yet" + at(user_location())
        )


@contextlib.contextmanager
def traced_functions(computation, layouts=None):
    """Route ``Function.apply`` calls of this thread to ``computation`` while tracing; a
    backward's cotangents are laid out in ``layouts`` (``layout_queries.Layouts.assume``)."""
    prev = getattr(_ACTIVE, "trace", None), getattr(_ACTIVE, "layouts", None)
    _ACTIVE.trace, _ACTIVE.layouts = computation, layouts
    patched = torch.autograd.Function.__dict__["apply"] is not _ORIGINAL_APPLY
    if not patched:
        torch.autograd.Function.apply = classmethod(_apply)
    try:
        yield
    finally:
        _ACTIVE.trace, _ACTIVE.layouts = prev
        if not patched:
            torch.autograd.Function.apply = _ORIGINAL_APPLY


def _uses_setup_context(cls) -> bool:
    return cls.setup_context is not torch.autograd.Function.setup_context


def _forward(cls, ctx: FunctionCtx, args, kwargs):
    with torch.no_grad():  # as in eager: the forward records no graph of its own
        if _uses_setup_context(cls):
            out = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, out)
            return out
        return cls.forward(ctx, *args, **kwargs)


def _symbol(cls) -> Symbol:
    """The symbol of ``cls.apply`` (one per class), printed as ``module.Class.apply``."""
    sym = _SYMBOLS.get(cls)
    if sym is None:
        name = f"{cls.__qualname__}.apply".replace("<locals>.", "")
        module = cls.__module__
        if f"{module}.{name}" in SYMBOLS:  # a class of the same name defined again
            name = f"{name}_{len(_SYMBOLS)}"

        def decomposition(*args, **kwargs):
            return _forward(cls, _ACTIVE.ctx, args, kwargs)

        sym = _SYMBOLS[cls] = register(
            Symbol(
                name,
                module,
                decomposition=decomposition,
                tags=(Tag.AUTOGRAD_FUNCTION,),
                imports=(),
                doc=f"the custom torch.autograd.Function {cls.__qualname__}",
            )
        )
    return sym


def _apply(cls, *args, **kwargs):
    trace = getattr(_ACTIVE, "trace", None)
    leaves = tree_flatten((args, kwargs))[0]
    if trace is None or not any(isinstance(x, TensorProxy) for x in leaves):
        return _ORIGINAL_APPLY.__get__(None, cls)(*args, **kwargs)
    needs = tuple(isinstance(a, TensorProxy) and requires_grad_of(a) for a in args)
    ctx = FunctionCtx(needs)
    if not (torch.is_grad_enabled() and any(needs)):
        return _forward(cls, ctx, args, kwargs)
    if cls is _CheckpointFunction:
        # ``checkpoint(fn, *args, use_reentrant=True)``: its backward runs fn again under the
        # autograd engine to save memory; thunder chooses what to keep itself, so the gradient
        # is fn's own (eager's values; without an input that requires grad, the branch above
        # runs the forward under no_grad, as eager's does)
        run_function, _preserve_rng_state, *fn_args = args
        return run_function(*fn_args)
    if cls.backward is torch.autograd.Function.backward:
        raise UnsupportedOpError(
            f"thunder: the custom torch.autograd.Function {cls.__qualname__} has no backward"
            + at(user_location())
        )
    sym = _symbol(cls)
    scope = trace._scopes[-1]
    n = len(scope)
    prev, _ACTIVE.ctx = getattr(_ACTIVE, "ctx", None), ctx
    try:
        out = trace.record(sym, args, kwargs)
    finally:
        _ACTIVE.ctx = prev
    if len(scope) == n:
        raise UnsupportedOpError(
            f"thunder: the custom torch.autograd.Function {cls.__qualname__} returns its input unchanged; "
            "this is not supported yet" + at(user_location())
        )
    bsym = scope[-1]
    outs = [o for o in tree_leaves(out) if isinstance(o, TensorProxy)]
    fixed = {id(t) for t in ctx.non_differentiable}
    with torch._C.DisableTorchFunction():
        for o in outs:
            if id(o) not in fixed and (dtype_of(o).is_floating_point or dtype_of(o).is_complex):
                torch.Tensor.requires_grad_(o)
    bsym.info.recorded_backward = _record_backward(trace, cls, ctx, args, outs, bsym)
    return out


def _record_backward(trace, cls, ctx: FunctionCtx, args, outs: list, bsym) -> dict:
    """Run ``cls.backward`` on new cotangent proxies, laid out contiguous, its ops recorded aside."""
    cotangents = [trace.tensor(shape_of(o), dtype_of(o), device_of(o)) for o in outs]
    layouts = getattr(_ACTIVE, "layouts", None)
    if layouts is not None:
        for c in cotangents:
            layouts.assume(c)
    recorded: list = []
    trace._scopes.append(recorded)
    trace._modes.append(False)
    try:
        with torch.no_grad():
            grads = cls.backward(ctx, *cotangents)
    finally:
        trace._scopes.pop()
        trace._modes.pop()
    grads = grads if isinstance(grads, tuple) else (grads,)
    if len(grads) < len(args):
        raise UnsupportedOpError(
            f"thunder: the backward of the custom torch.autograd.Function {cls.__qualname__} returned "
            f"{len(grads)} gradients for {len(args)} inputs" + at(bsym.source)
        )
    return {
        "outputs": [o.name for o in outs],
        "cotangents": cotangents,
        "bsyms": [b.from_bsym(source=bsym.source, scope=bsym.scope) for b in recorded],
        "grads": [g if isinstance(a, TensorProxy) else None for a, g in zip(args, grads)],
        # a backward whose own gradient eager refuses (transforms/double_backward.py)
        "once_differentiable": getattr(cls.backward, "__code__", None) is _ONCE_DIFFERENTIABLE,
    }
