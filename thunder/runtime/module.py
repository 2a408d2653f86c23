"""``thunder.jit(module)``: ``ThunderModule``, the ``nn.Module`` around a module's ``ThunderFunction``.

Calls run the compiled forward (``thunder/runtime/jit.py``); the parameters, buffers and state dict
stay the module's, under its own names, so a checkpoint moves between the compiled module and
the plain one. Apart from the pipeline: what makes a jitted function behave as the module it
wraps (state dicts, deep copies, backward hooks, ``generate()``) is no part of compiling it.
"""

from __future__ import annotations

import copy

import torch
from torch.nn.modules import module as _torch_module

from thunder.core.context import current_trace
from thunder.frontend.modules.backward_hooks import call_with_backward_hooks, has_backward_hooks
from thunder.runtime.cache import DEFAULT_CACHE_SIZE
from thunder.runtime.hf_generate import generate
from thunder.runtime.jit import ThunderFunction, text_of

_tracing_state = torch._C._get_tracing_state


class ThunderModule(torch.nn.Module):
    """``thunder.jit(module)``: calls run the compiled forward; parameters stay the module's."""

    def __init__(
        self,
        module: torch.nn.Module,
        *,
        executors=None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        dynamic: bool | None = None,
    ):
        super().__init__()
        self._model = module
        self._jfn = ThunderFunction(
            module, executors=executors, module=module, cache_size=cache_size, dynamic=dynamic
        )
        # loaded as a part of an enclosing module, the module's own keys reach it under "_model."
        self.register_load_state_dict_pre_hook(_prefixed_state)

    def state_dict(self, *args, **kwargs):
        """The module's state dict, under its own keys (no ``_model.``), here and as a part of an
        enclosing module's: a checkpoint saved from the compiled module loads into the plain
        one, and back."""
        return self._model.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """The module's ``load_state_dict`` (its keys, its errors); the compiled calls read the
        loaded values (and, with ``assign=True``, the new tensors)."""
        return self._model.load_state_dict(state_dict, strict=strict, assign=assign)

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """The module's parameters under its own names (as ``state_dict()``)."""
        return self._model.named_parameters(prefix, recurse, remove_duplicate)

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """The module's buffers under its own names (as ``state_dict()``)."""
        return self._model.named_buffers(prefix, recurse, remove_duplicate)

    def __call__(self, *args, **kwargs):
        """``nn.Module.__call__`` where it does more than call ``forward`` (hooks on this
        wrapper or global ones, ``compile()``, TorchScript tracing) or where another
        ``thunder.jit`` traces the call; else ``forward``'s common path, with no frame of
        torch's or of ``forward`` around the compiled call (every cached call pays them)."""
        d = self.__dict__
        if (
            current_trace() is not None  # (traced by another thunder.jit: forward's own path, below)
            or d["_forward_hooks"]
            or d["_forward_pre_hooks"]
            or d["_backward_hooks"]
            or d["_backward_pre_hooks"]
            or d.get("_compiled_call_impl") is not None
            or _torch_module._global_forward_hooks
            or _torch_module._global_forward_pre_hooks
            or _torch_module._global_backward_hooks
            or _torch_module._global_backward_pre_hooks
            or _tracing_state() is not None
        ):
            return torch.nn.Module.__call__(self, *args, **kwargs)
        jfn = d["_jfn"]
        if jfn._serial or "forward" in d or has_backward_hooks(jfn.module):
            return self.forward(*args, **kwargs)
        return jfn.__call__(*args, **kwargs)  # (``forward``'s common path, without its frame)

    def forward(self, *args, **kwargs):
        if current_trace() is not None:
            # inside a function another thunder.jit traces: run the model itself, which that
            # trace reaches as a module (its shadow, whose writes the epilogue applies)
            return self._model(*args, **kwargs)
        jfn = self.__dict__["_jfn"]
        model = jfn.module  # (the module itself, as ``self._model``, without nn.Module's __getattr__)
        # (``ThunderFunction.__call__`` holds the cache's lock for a serial call)
        call = jfn.__call__
        if has_backward_hooks(model):  # its own: around the program (frontend/modules/backward_hooks.py)
            return call_with_backward_hooks(model, call, args, kwargs)
        return call(*args, **kwargs)

    def __deepcopy__(self, memo):
        """An independent copy: a deep copy of the module, jitted afresh (the cached programs
        unpack the original module's parameters, so they are not copied)."""
        jfn = self._jfn
        new = ThunderModule(
            copy.deepcopy(self._model, memo),
            executors=jfn.executors,
            cache_size=jfn._cache.limit,
            dynamic=jfn.dynamic,
        )
        new.training = self.training
        return new

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(text_of(self._jfn))

    def generate(self, *args, **kwargs):
        """The model's ``generate()`` (transformers) with every forward compiled by thunder."""
        return generate(self, *args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_model"], name)


_INNER = "_model."


def _prefixed_state(module, state: dict, prefix: str, local_metadata, strict, missing, unexpected, errors):
    """Before an enclosing module loads its state dict: ``prefix + key`` -> ``prefix + "_model." +
    key`` (the module is the wrapper's ``_model``), and the module's version entry with it."""
    inner = prefix + _INNER
    for key in [k for k in state if k.startswith(prefix) and not k.startswith(inner)]:
        state[inner + key[len(prefix) :]] = state.pop(key)
    metadata = getattr(state, "_metadata", None)
    if metadata is not None and prefix[:-1] in metadata and inner[:-1] not in metadata:
        metadata[inner[:-1]] = metadata[prefix[:-1]]
