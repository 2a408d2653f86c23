"""Paths eager chooses by inspecting its inputs give eager's result: nn.TransformerEncoder's
nested-tensor fast path in eval mode with a padding mask."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import thunder
from thunder.core.errors import UnsupportedValueError


def _encoder(norm: bool, **kwargs):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8) if norm else None, **kwargs).eval()


ALIGNED = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
NOT_ALIGNED = torch.tensor([[False] * 5, [True] + [False] * 4])


@pytest.mark.parametrize("norm", [False, True])
@pytest.mark.parametrize("mask", [ALIGNED, NOT_ALIGNED], ids=["left-aligned", "not-left-aligned"])
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_transformer_encoder_with_a_padding_mask_matches_eager(norm, mask, grad):
    enc = _encoder(norm)
    src = torch.randn(2, 5, 8)
    with torch.set_grad_enabled(grad):
        expected = enc(src, src_key_padding_mask=mask)
        got = thunder.jit(enc)(src, src_key_padding_mask=mask)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_transformer_encoder_in_train_mode_and_without_a_mask():
    enc = _encoder(True)
    src = torch.randn(2, 5, 8)
    jenc = thunder.jit(enc)
    with torch.no_grad():
        torch.testing.assert_close(jenc(src), enc(src), atol=1e-5, rtol=1e-5)
        enc.train()
        torch.testing.assert_close(
            jenc(src, src_key_padding_mask=ALIGNED), enc(src, src_key_padding_mask=ALIGNED)
        )


def test_transformer_encoder_without_mask_check_is_a_clear_error():
    enc = _encoder(False, mask_check=False)
    with torch.no_grad(), pytest.raises(UnsupportedValueError, match="mask_check=False"):
        thunder.jit(enc)(torch.randn(2, 5, 8), src_key_padding_mask=ALIGNED)


def test_turning_the_fast_path_off_after_the_first_call_gives_eagers_ordinary_path():
    # the traced forward took the fast path (zeros at padded positions); with the flag off
    # eager computes the padded positions, and the cached program must not answer for it
    enc = _encoder(False)
    src = torch.randn(2, 5, 8)
    jenc = thunder.jit(enc)
    with torch.no_grad():
        torch.testing.assert_close(
            jenc(src, src_key_padding_mask=ALIGNED), enc(src, src_key_padding_mask=ALIGNED)
        )
        try:
            torch.backends.mha.set_fastpath_enabled(False)
            expected = enc(src, src_key_padding_mask=ALIGNED)
            assert expected[1, 3:].abs().sum() > 0  # the ordinary path: not zeros
            torch.testing.assert_close(
                jenc(src, src_key_padding_mask=ALIGNED), expected, atol=1e-5, rtol=1e-5
            )
        finally:
            torch.backends.mha.set_fastpath_enabled(True)
    assert thunder.compile_stats(jenc).cache_misses == 2
    assert "check_torch_flag('mha_fastpath', False)" in str(thunder.last_prologue_traces(jenc)[-1])
