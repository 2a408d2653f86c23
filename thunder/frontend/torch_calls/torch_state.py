"""Global torch state the traced function sets (``torch.set_grad_enabled(False)`` as a call,
``torch.set_default_dtype(torch.float64)``): it takes effect while tracing, at its point in
the function (ops recorded after a grad-mode switch are tagged to run under it, factories read
the default dtype), and the state the function leaves is a side effect of every call.

``TorchState`` snapshots the state as the trace begins and as the function returns; the state
is then put back as it began (the prologue checks it, the program runs under it) and the
epilogue sets what the function left on every call: ``prims.set_torch_state('grad_enabled',
False)``.
"""

from __future__ import annotations

import torch

from thunder.core.errors import UnsupportedOpError, at, describe
from thunder.core.proxies import TensorProxy, proxies_in
from thunder.core.source import user_location
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import Tag
from thunder.ops import python as pyops


def _snapshot() -> dict:
    return {"grad_enabled": torch.is_grad_enabled(), "default_dtype": torch.get_default_dtype()}


def _restore(state: dict) -> None:
    torch._C._set_grad_enabled(state["grad_enabled"])
    torch.set_default_dtype(state["default_dtype"])


_functorch = torch._C._functorch


def _autocast_states() -> list[tuple[str, bool, torch.dtype]]:
    return [(d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in _AUTOCAST_DEVICES]


_AUTOCAST_DEVICES = ("cpu", "cuda")


class TorchState:
    """Use as a context manager around the traced call; ``changes()`` afterwards. A trace that
    fails part-way (inside a functorch transform's levels, an autocast region a Dynamo graph
    enters with ``_enter_autocast``) leaves those as they were before it, so the eager run that
    may follow (thunderfx's fallback) runs where the caller's code runs."""

    def __init__(self):
        self.before = _snapshot()
        self.after = dict(self.before)
        self._depth = _functorch.get_dynamic_layer_stack_depth()
        self._autocast = _autocast_states()

    def __enter__(self):
        return self

    def __exit__(self, kind, *exc) -> None:
        self.after = _snapshot()
        if self.after != self.before:
            _restore(self.before)
        if kind is not None:
            if _functorch.get_dynamic_layer_stack_depth() > self._depth:
                _functorch.pop_dynamic_layer_stack_and_undo_to_depth(self._depth)
            for device, enabled, dtype in self._autocast:
                torch.set_autocast_enabled(device, enabled)
                torch.set_autocast_dtype(device, dtype)

    def writebacks(self) -> list[BoundSymbol]:
        """The epilogue's BoundSymbols that leave the state as the function did."""
        return [
            BoundSymbol(pyops.set_torch_state, (name, value), {}, None, tags=frozenset({Tag.WRITEBACK}))
            for name, value in self.after.items()
            if self.before[name] is not value
        ]


def default_dtype_read(mode, func, target, args, kwargs, result):
    """After ``torch.set_default_dtype`` inside the function, an op whose result takes the new
    default dtype from no tensor of its own read the default while tracing, which the program
    (run under the default the call began with) would not: a factory is recorded again with the
    dtype given (``torch.ones(2, dtype=torch.float64)``); any other such op is refused."""
    dtype = torch.get_default_dtype()
    leaves = [v for v in proxies_in(result) if isinstance(v, TensorProxy)]
    if not any(v.dtype in (dtype, _COMPLEX.get(dtype)) for v in leaves):
        return result
    if any(
        v.dtype in (dtype, _COMPLEX.get(dtype))
        for v in proxies_in((args, kwargs))
        if isinstance(v, TensorProxy)
    ):
        return result
    recording = mode.state.computation.recording
    if (
        Tag.FACTORY in getattr(target, "tags", ())
        and kwargs.get("dtype") is None
        and leaves[0].dtype is dtype
    ):
        if recording and recording[-1].output is result:
            recording.pop()
        return mode._call(func, target, args, {**kwargs, "dtype": dtype})
    raise UnsupportedOpError(
        f"thunder: {describe(func)} takes its result's dtype {dtype} from the default dtype, which the function "
        "changed with torch.set_default_dtype; the compiled program runs under the default the call began "
        "with: pass dtype= explicitly, or set the default dtype before calling" + at(user_location())
    )


_COMPLEX = {torch.float64: torch.complex128, torch.float32: torch.complex64, torch.float16: torch.complex32}
