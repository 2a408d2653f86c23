"""The transformers GPT-2 config the tests build models from: 2 layers of width 32, 4 heads, a
vocabulary of 100 tokens and 16 positions."""

from __future__ import annotations


def tiny_gpt2_config(transformers, *, dropout: bool = True):
    """The config (``transformers`` is the module, imported by the test); ``dropout=False``
    turns every dropout off (training steps compared with eager's copy step by step)."""
    off = {} if dropout else {"resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}
    return transformers.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=16, **off)
