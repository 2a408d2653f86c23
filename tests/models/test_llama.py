"""Acceptance on a real model (seeds 000 and 001): a tiny transformers Llama with a
StaticCache, through thunder.jit, against eager: logits, the cache object itself returned
in the ModelOutput, the cache tensors written in place, and the next decoding positions.

The model is built from a small LlamaConfig with random weights; nothing is downloaded.
transformers is a dev dependency (``make test`` installs it): this test does not skip.
"""

from __future__ import annotations

import copy
import inspect
import warnings

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, StaticCache

import thunder
from thunder.core.errors import UnsupportedOpError
from thunder.core.verify import verify


def _config() -> LlamaConfig:
    return LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )


@pytest.fixture
def model():
    torch.manual_seed(0)
    return LlamaForCausalLM(_config()).eval()


def _cache_kwarg(model) -> str:
    # transformers 5.x renamed ``past_key_values`` to ``cache``; accept either spelling
    params = inspect.signature(model.forward).parameters
    return "past_key_values" if "past_key_values" in params else "cache"


def _call(m, ids, cache, start, kw):
    pos = torch.arange(start, start + ids.shape[1])
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecation notes of renamed arguments
        return m(input_ids=ids, use_cache=True, cache_position=pos, **{kw: cache})


def _past(out):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return out.past_key_values


def _assert_caches_equal(cache, eager_cache):
    assert len(cache.layers) == len(eager_cache.layers) == 2
    for a, b in zip(cache.layers, eager_cache.layers):
        assert a.is_initialized and b.is_initialized
        torch.testing.assert_close(a.keys, b.keys)
        torch.testing.assert_close(a.values, b.values)
        assert torch.equal(a.cumulative_length, b.cumulative_length)


def test_llama_static_cache_prefill_and_decode(model):
    cfg = model.config
    eager_model = copy.deepcopy(model)
    kw = _cache_kwarg(model)
    cache = StaticCache(config=cfg, max_cache_len=32)
    eager_cache = StaticCache(config=cfg, max_cache_len=32)
    jm = thunder.jit(model)

    prompt = torch.randint(0, cfg.vocab_size, (1, 5))
    out = _call(jm, prompt, cache, 0, kw)
    expected = _call(eager_model, prompt, eager_cache, 0, kw)
    assert type(out) is type(expected)
    assert list(out.keys()) == list(expected.keys())
    torch.testing.assert_close(out.logits, expected.logits)
    assert _past(out) is cache  # the very input object, not a copy
    _assert_caches_equal(cache, eager_cache)
    # the cache was filled by the computation: its tensors were created while tracing
    # (lazy initialisation) and set on the layers by the epilogue
    epi = str(thunder.last_epilogue_traces(jm)[-1])
    assert "python_setattr(cache_layers_0, 'keys'" in epi
    assert "python_setattr(cache_layers_0, 'is_initialized', True)" in epi
    assert "CausalLMOutputWithPast(loss=None, logits=logits" in epi

    keys = [layer.keys for layer in cache.layers]
    for step in range(3):  # the next positions, one token each
        token = torch.randint(0, cfg.vocab_size, (1, 1))
        out = _call(jm, token, cache, 5 + step, kw)
        expected = _call(eager_model, token, eager_cache, 5 + step, kw)
        torch.testing.assert_close(out.logits, expected.logits)
        assert _past(out) is cache
        _assert_caches_equal(cache, eager_cache)
        assert [layer.keys for layer in cache.layers] == keys  # updated in place, as in eager

    stats = thunder.compile_stats(jm)
    # prefill; the first decode (the cache is initialised now: a new trace); then cache hits
    assert stats.cache_misses == 2 and stats.cache_hits == 2
    decode_pro = str(thunder.last_prologue_traces(jm)[-1])
    assert "t_cache_layers_0_keys = cache_layers_0.keys" in decode_pro
    assert "pythonex.check_literal(cache_layers_0_is_initialized, True)" in decode_pro
    for trace in thunder.last_traces(jm) + thunder.last_epilogue_traces(jm):
        verify(trace)


def test_llama_failed_trace_leaves_the_cache_untouched(model, monkeypatch):
    """A trace that fails midway (here: an op thunder rejects inside attention) leaves the
    StaticCache exactly as it was: not initialised, no proxy inside."""
    cfg = model.config
    cache = StaticCache(config=cfg, max_cache_len=32)
    before = [dict(vars(layer)) for layer in cache.layers]

    import torch.nn.functional as F

    from thunder.ops import langs

    monkeypatch.delitem(langs.TORCH_TO_THUNDER, F.silu)  # make the MLP's activation unsupported
    with pytest.raises(UnsupportedOpError, match="silu"):
        _call(thunder.jit(model), torch.randint(0, cfg.vocab_size, (1, 4)), cache, 0, _cache_kwarg(model))
    for layer, old in zip(cache.layers, before):
        assert vars(layer).keys() == old.keys()
        assert all(vars(layer)[k] is v for k, v in old.items())
        assert not layer.is_initialized
