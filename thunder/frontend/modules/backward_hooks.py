"""Module backward hooks: those of the compiled module itself run as in eager; others are refused.

``register_full_backward_hook`` and ``register_full_backward_pre_hook`` on a module make eager
wrap the module's inputs and outputs in identity autograd nodes (``torch.utils.hooks.
BackwardHook``) whose backward calls the hooks with the gradients of the module's outputs and
inputs. thunder runs a program's backward as one autograd node, so there is no point inside it
where a submodule's gradients exist as tensors to hand to a hook.

- **The compiled module's own hooks** (``thunder.jit(m)`` where ``m`` has them): the trace
  leaves them out (``backward_hooks_outside``) and each call wraps the compiled program's inputs
  and outputs in eager's own ``BackwardHook`` (``call_with_backward_hooks``): the hooks see the
  gradients eager gives them, on every call, with the module as their first argument.
- **A submodule's hooks, a module argument's, the global ones**
  (``register_module_full_backward_hook``) and the deprecated non-full
  ``register_backward_hook``: an error naming the module and saying where the hook can go.
"""

from __future__ import annotations

import torch
from torch.nn.modules import module as module_module
from torch.utils.hooks import BackwardHook

from thunder.core.errors import UnsupportedValueError
from thunder.ops import python as pyops

_TABLES = ("_backward_hooks", "_backward_pre_hooks")


def backward_hooks_outside(mod: torch.nn.Module, path: str, jitted: bool) -> tuple[str, ...]:
    """The hook tables of ``mod`` the trace leaves to ``call_with_backward_hooks`` (those of the
    compiled module itself, ``jitted``); an error for backward hooks anywhere else."""
    d = mod.__dict__
    if not (d.get("_backward_hooks") or d.get("_backward_pre_hooks")):
        return ()
    what = type(mod).__qualname__ + (f" at '{path}'" if path else "")
    if d.get("_backward_hooks") and mod._is_full_backward_hook is not True:
        raise UnsupportedValueError(
            f"thunder: the {what} module has a hook from register_backward_hook (deprecated in torch, and "
            "not supported by thunder); register it with register_full_backward_hook on the compiled module"
        )
    if not jitted:
        raise UnsupportedValueError(
            f"thunder: the {what} module has a backward hook (register_full_backward_hook or "
            "register_full_backward_pre_hook): thunder runs the backward of the compiled program as one "
            "autograd node, so no gradient of this module exists on its own to pass to the hook; register it on "
            "the module given to thunder.jit (it runs around the whole program, as in eager), or on a tensor "
            "outside the compiled function"
        )
    return _TABLES


def refuse_global_backward_hooks() -> None:
    """``register_module_full_backward_hook`` (every module's backward): refused, as a
    submodule's hooks are."""
    for name in ("_global_backward_hooks", "_global_backward_pre_hooks"):
        if any(h not in pyops.TRACING_HOOKS for h in getattr(module_module, name, {}).values()):
            raise UnsupportedValueError(
                "thunder: a global module backward hook is registered (register_module_full_backward_hook or "
                "register_module_full_backward_pre_hook): thunder runs the backward of the compiled program as "
                "one autograd node, so no module's gradients exist on their own to pass to it; register a "
                "full backward hook on the module given to thunder.jit instead"
            )


def has_backward_hooks(module: torch.nn.Module) -> bool:
    d = module.__dict__
    return bool(d.get("_backward_hooks") or d.get("_backward_pre_hooks"))


def call_with_backward_hooks(module: torch.nn.Module, call, args: tuple, kwargs: dict):
    """``call(*args, **kwargs)`` with ``module``'s full backward hooks and backward pre-hooks
    around it, as ``nn.Module.__call__`` puts them around a forward."""
    full, _ = module._get_backward_hooks()
    pre = module._get_backward_pre_hooks()
    hook = BackwardHook(module, full, pre)
    args = hook.setup_input_hook(args)
    return hook.setup_output_hook(call(*args, **kwargs))
