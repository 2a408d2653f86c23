"""A model's own decoding loop (transformers' ``generate()``) with every forward compiled.

``thunder.jit(model).generate(...)`` runs ``model.generate(...)`` while the model's
``forward`` is the compiled one: transformers calls ``self(**inputs)`` for the prefill and
for each decoding step, and each call runs the ``ThunderModule``'s cached program (tracing
when no entry fits). An encoder-decoder's encoder, which ``generate()`` calls on its own,
is compiled too (``compiled_encoder``). Sampling, logits processors and stopping criteria stay transformers'
Python, as in eager. While thunder traces, the model's own ``forward`` runs.

Each forward tells the compiled function's size policy the sequence's length (``_lengths``:
the cache's and the new tokens', with and without the token being decoded), so that the dimensions of that
length are symbols from the first trace (``thunder/runtime/dynamic.py``): the prefill and the
decoding step compile once each, for every prompt's length and every token.

transformers compiles the forward with ``torch.compile`` itself when a StaticCache is used
on a GPU; that is turned off here (``disable_compile=True``) unless the caller says otherwise.
"""

from __future__ import annotations

import functools
from contextlib import ExitStack, contextmanager

import torch

from thunder.core.context import current_trace
from thunder.frontend.modules.shadows import NO_OWN_FORWARD


@contextmanager
def compiled_forward(module: torch.nn.Module, compiled, lengths: bool = False):
    """Within the block, ``module(...)`` calls ``compiled`` (which traces the real forward);
    ``lengths``: each call tells ``compiled``'s size policy the sequence's length."""
    own = module.__dict__.get("forward", NO_OWN_FORWARD)
    real = own if own is not NO_OWN_FORWARD else type(module).forward.__get__(module)

    policy = getattr(compiled, "_sizes", None) if lengths else None

    @functools.wraps(real)
    def forward(*args, **kwargs):
        if current_trace() is not None:  # thunder is tracing this very forward
            return real(*args, **kwargs)
        if policy is None:
            return compiled(*args, **kwargs)
        policy.sequence = _lengths(args, kwargs)
        try:
            return compiled(*args, **kwargs)
        finally:
            policy.sequence = frozenset()

    forward.replaced = own  # tracing runs the module's own forward (thunder/frontend/modules/shadows.py)
    module.forward = forward
    try:
        yield
    finally:
        if own is NO_OWN_FORWARD:
            del module.forward
        else:
            module.forward = own


def generate(tmodule, *args, **kwargs):
    """``model.generate(*args, **kwargs)`` for ``tmodule = thunder.jit(model)``, with the
    model's forward and, for an encoder-decoder, its encoder's forward compiled."""
    model = tmodule._model
    kwargs.setdefault("disable_compile", True)
    with ExitStack() as stack:
        stack.enter_context(compiled_forward(model, tmodule._jfn, lengths=tmodule._jfn.dynamic is None))
        encoder = compiled_encoder(tmodule)
        if encoder is not None:
            stack.enter_context(compiled_forward(encoder.module, encoder))
        return model.generate(*args, **kwargs)


def _lengths(args: tuple, kwargs: dict) -> frozenset[int]:
    """The sequence's length at this forward of a decoding loop, with and without the tokens it
    decodes: the cache's length (``get_seq_length()``) plus the new input ids', or the attention
    mask's last size."""
    ids = kwargs.get("input_ids", args[0] if args else None)
    n = ids.shape[-1] if isinstance(ids, torch.Tensor) and ids.dim() >= 1 else 0
    for v in kwargs.values():
        if callable(getattr(type(v), "get_seq_length", None)):  # (a transformers Cache)
            n += int(v.get_seq_length())
            break
    mask = kwargs.get("attention_mask")
    if isinstance(mask, torch.Tensor) and mask.dim() >= 1:
        n = max(n, mask.shape[-1])
    return frozenset(k for k in (n, n - 1) if k >= 2)


def compiled_encoder(tmodule):
    """The compiled encoder ``generate()`` runs once per call of an encoder-decoder (T5,
    Whisper), made on first use and kept with ``tmodule``; None for a decoder-only model."""
    model = tmodule._model
    if not getattr(getattr(model, "config", None), "is_encoder_decoder", False):
        return None
    encoder = model.get_encoder()
    found = tmodule.__dict__.get("_compiled_encoder")
    if found is None or found.module is not encoder:
        # a jitted function of the model's own kind (thunder.jit's ThunderFunction, which
        # imports this module)
        found = type(tmodule._jfn)(encoder, executors=tmodule._jfn.executors, module=encoder)
        tmodule.__dict__["_compiled_encoder"] = found
    return found
