"""``isinstance(x, torch.nn.Parameter)`` while tracing: answered for the tensor the proxy stands
for (an input that is a Parameter, a module's own parameter), and checked by the prologue,
since a later call may pass a plain tensor where a Parameter was (``check_is_param(x, True)``).
Values computed while tracing are never parameters."""

from __future__ import annotations

from contextlib import contextmanager

from thunder.core import proxies
from thunder.ops import python as pyops


@contextmanager
def param_reads(state):
    """While tracing: ``isinstance(proxy, torch.nn.Parameter)`` of an input is remembered."""
    reads = state.param_reads

    def hook(p):
        src = state.inputs.sources.get(p.name)
        if src is not None and src[0] is p:  # an input of this trace
            reads[p.name] = p

    old = proxies.param_read_hook
    proxies.param_read_hook = hook
    try:
        yield
    finally:
        proxies.param_read_hook = old


def guard_param_reads(state) -> None:
    for p in state.param_reads.values():
        state.inputs.checks.add_check(
            pyops.check_is_param, p, p.__dict__.get("_thunder_is_param", False), always=True
        )
