"""Module scopes: which ``nn.Module`` call each recorded op comes from.

While a function is traced, torch's global module hooks keep a stack of the module calls in
progress; the computation trace's ``scope`` is the innermost one, and every BoundSymbol
recorded meanwhile carries it (``BoundSymbol.scope``). A module is named by its path from the
jitted module (``model.layers.0.mlp.up_proj``) or from the argument that holds it; one met
only while tracing (made inside ``forward``) is named by its class below its caller.

The hooks are process-wide but act only in the thread that is tracing.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import torch

from thunder.core.symbol import ModuleScope
from thunder.core.trace import Trace
from thunder.ops.python import TRACING_HOOKS

_local = threading.local()


class _Scopes:
    def __init__(self, trace: Trace, paths: dict[int, str]):
        self.trace = trace
        self.paths = paths  # id(module) -> its path
        self.stack: list[ModuleScope | None] = []

    def enter(self, module) -> None:
        parent = self.trace.scope
        path = self.paths.get(id(module))
        cls = type(module).__name__
        if path is None:  # not reachable from the inputs: named below its caller
            path = f"{parent.path}.<{cls}>" if parent is not None and parent.path else f"<{cls}>"
        self.stack.append(parent)
        self.trace.scope = ModuleScope(path, cls, parent)

    def leave(self) -> None:
        if self.stack:
            self.trace.scope = self.stack.pop()


def _pre_hook(module, args):
    s = getattr(_local, "scopes", None)
    if s is not None:
        s.enter(module)


def _post_hook(module, args, output):
    s = getattr(_local, "scopes", None)
    if s is not None:
        s.leave()


TRACING_HOOKS.update((_pre_hook, _post_hook))  # not the user's: the prologue ignores them


@contextmanager
def module_scopes(trace: Trace, paths: dict[int, str]):
    """Record module scopes on ``trace`` while the body runs (in this thread)."""
    _local.scopes = _Scopes(trace, paths)
    pre = torch.nn.modules.module.register_module_forward_pre_hook(_pre_hook)
    post = torch.nn.modules.module.register_module_forward_hook(_post_hook, always_call=True)
    try:
        yield
    finally:
        pre.remove()
        post.remove()
        _local.scopes = None
        trace.scope = None
