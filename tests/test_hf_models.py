"""More transformers models, built tiny from a config (random weights, nothing downloaded)."""

from __future__ import annotations

import warnings

import torch
import transformers

import thunder
from thunder.core.verify import verify


def test_gpt2_logits_and_loss_match_eager():
    transformers.logging.set_verbosity_error()
    cfg = transformers.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=16)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 100, (2, 6))
    mask = torch.ones(2, 6, dtype=torch.long)
    mask[1, :2] = 0  # left padding
    jm = thunder.jit(model)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kwargs in ({}, {"attention_mask": mask, "labels": ids}):
            out = jm(ids, use_cache=False, **kwargs)
            ref = model(ids, use_cache=False, **kwargs)
            torch.testing.assert_close(out.logits, ref.logits, rtol=1e-5, atol=1e-5)
            if "labels" in kwargs:
                torch.testing.assert_close(out.loss, ref.loss)
            assert type(out) is type(ref) and list(out.keys()) == list(ref.keys())
    for trace in thunder.last_traces(jm):
        verify(trace)
