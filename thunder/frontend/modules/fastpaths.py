"""Paths eager PyTorch chooses by inspecting its inputs, traced so the result is eager's.

``nn.TransformerEncoder`` in eval mode, given a boolean ``src_key_padding_mask``, runs its
layers on a nested tensor (only the unpadded positions) and pads the result with zeros
before the final norm, when its inputs pass a list of checks (the fast path enabled, no
autocast, no parameter requiring grad under grad mode, the mask left-aligned when
``mask_check`` is on). While tracing, torch's own checks see proxies and take the ordinary
path, whose values at padded positions differ. The traced forward here runs the ordinary
layers and then puts eager's zeros at the padded positions, with the data-dependent
left-alignment test computed in the program. Where eager's result cannot be matched (a
float mask on the fast path, ``mask_check=False``) the trace stops with a clear error.

``FAST_PATHS`` maps a module class to the forward traced for it in its shadow
(``thunder/frontend/modules/shadows.py``), called with ``flag``, which reads a global torch flag such
as ``torch.backends.mha.get_fastpath_enabled()`` and has the prologue check it.
"""

from __future__ import annotations

import torch
from torch import nn

from thunder.core.errors import UnsupportedValueError, at
from thunder.core.source import user_location


def _encoder_takes_nested_path(enc: nn.TransformerEncoder, src, mask, padding_mask, flag) -> bool:
    """The input-independent part of ``TransformerEncoder.forward``'s fast-path checks;
    ``flag(name)`` reads a global torch flag and has the prologue check it."""
    first = enc.layers[0]
    if not (
        flag("mha_fastpath")
        and getattr(enc, "use_nested_tensor", False)
        and not first.training
        and src.dim() == 3
        and padding_mask is not None
        and mask is None
        and not torch.is_autocast_enabled()
        and src.device.type in ("cpu", "cuda", "xpu")
    ):
        return False
    weights = [p for p in first.parameters()]
    return not (torch.is_grad_enabled() and (src.requires_grad or any(p.requires_grad for p in weights)))


def transformer_encoder_forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None, *, flag):
    if not _encoder_takes_nested_path(self, src, mask, src_key_padding_mask, flag):
        return type(self).forward(self, src, mask, src_key_padding_mask, is_causal)
    name = f"{type(self).__qualname__} in eval mode with src_key_padding_mask"
    if src_key_padding_mask.dtype is not torch.bool:
        raise UnsupportedValueError(
            f"thunder: {name} takes eager's nested-tensor fast path; only a boolean mask is supported "
            f"there, got {src_key_padding_mask.dtype}" + at(user_location())
        )
    if not getattr(self, "mask_check", True):
        raise UnsupportedValueError(
            f"thunder: {name} and mask_check=False takes eager's nested-tensor fast path, whose result "
            "depends on the mask's data; build the encoder with enable_nested_tensor=False"
            + at(user_location())
        )
    out = src
    for layer in self.layers:
        out = layer(out, src_mask=None, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
    # eager's nested path (taken when every row's unpadded positions come first) pads with zeros
    keep = src_key_padding_mask.logical_not()
    left_aligned = (keep[:, 1:] & keep[:, :-1].logical_not()).any().logical_not()
    out = torch.where((src_key_padding_mask & left_aligned).unsqueeze(-1), torch.zeros_like(out), out)
    if self.norm is not None:
        out = self.norm(out)
    return out


FAST_PATHS = {nn.TransformerEncoder: transformer_encoder_forward}
