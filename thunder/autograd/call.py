"""The call around an entry's autograd Function, kept to as few Python frames as it can.

``apply_of`` is ``Function.apply`` without its Python layer (outside functorch transforms);
``entry_call`` puts the outputs that are inputs in place and copies the write-backs into inputs
with autograd on, and for the common entry (every output computed once, nothing written
back) is the apply itself, with no frame around it. Apart from ``thunder/autograd/function.py``
(the Function's forward and backward): this is what every cached call runs before the
Function, where each frame shows in the per-call overhead.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext

import torch
from torch._functorch.utils import unwrap_dead_wrappers

from thunder.autograd.entry import SharedEntry

_function_apply = torch._C._FunctionBase.__dict__["apply"]
_functorch_transforms_active = torch._C._are_functorch_transforms_active
_unwrap_if_dead = torch._C._functorch.unwrap_if_dead


def apply_of(fn: type, tensor_args: bool) -> Callable:
    """``fn.apply`` without its Python layer: what ``Function.apply`` does outside functorch
    transforms (for a Function without ``setup_context``: dead functorch wrappers unwrapped,
    then the C ``apply``); inside one, ``fn.apply`` itself. ``tensor_args``: every argument is
    a tensor (each one unwrapped without asking)."""
    apply, general = _function_apply.__get__(None, fn), fn.apply

    if not tensor_args:

        def some_tensors(*args):
            if _functorch_transforms_active():
                return general(*args)
            return apply(*unwrap_dead_wrappers(args))

        return some_tensors

    def direct(*args):
        if _functorch_transforms_active():
            return general(*args)
        return apply(*map(_unwrap_if_dead, args))

    return direct


def entry_call(shared: SharedEntry, apply: Callable) -> Callable:
    """The entry's computation: the Function's ``apply``, then the outputs that are inputs put
    in place and the write-backs into inputs copied with autograd on."""
    leaf, source, writebacks, n_user = shared.leaf, shared.layout.source, shared.writebacks, shared.n_user
    enable_grad = shared.enable_grad
    direct = shared.plain_outputs and not writebacks and not enable_grad and leaf is None
    if direct:  # (a closure of its own: the entry's computation, with no frame around it)
        return apply
    if leaf is not None:
        function_apply = apply

        def apply(*args):
            return function_apply(*args, leaf)

    def computation(*args):
        if enable_grad:
            with torch.enable_grad():
                result = apply(*args)
        else:
            result = apply(*args)
        values = [args[i] if is_input else result[i] for is_input, i in source]
        if writebacks:
            with torch.enable_grad() if enable_grad else nullcontext():
                for k, i in writebacks:
                    if args[i].is_leaf and args[i].requires_grad:  # written through .data / detach()
                        with torch.no_grad():
                            args[i].copy_(values[k])
                    else:
                        args[i].copy_(values[k])
        return tuple(values[:n_user])

    return computation
