"""transformers models as their users run them: the cache each model makes inside ``forward``
(``DynamicCache``, ``EncoderDecoderCache``) returned to the caller, decoding steps with it,
``generate()`` with every forward compiled (default cache and ``StaticCache``, greedy and
sampling), and StaticCache decoding of models whose cache code reads numbers from tensors.

Tiny models built from configs (random weights, nothing downloaded); everything against eager.
"""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
import transformers as tr

import thunder
from thunder.core.proxies import TensorProxy
from thunder.core.verify import verify
from thunder.runtime.hf_generate import compiled_encoder

tr.logging.set_verbosity_error()

_DECODER = dict(
    vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4
)
_TOKENS = dict(bos_token_id=1, eos_token_id=2, pad_token_id=0)


def _model(name: str, **overrides) -> torch.nn.Module:
    torch.manual_seed(0)
    if name == "gpt2":
        cfg = tr.GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=64, **_TOKENS)
        return tr.GPT2LMHeadModel(cfg).eval()
    if name == "llama":
        return tr.LlamaForCausalLM(tr.LlamaConfig(**_DECODER, num_key_value_heads=2, **_TOKENS)).eval()
    if name == "mistral":
        cfg = tr.MistralConfig(**_DECODER, num_key_value_heads=2, **_TOKENS, **overrides)
        return tr.MistralForCausalLM(cfg).eval()
    if name == "gemma2":
        cfg = tr.Gemma2Config(**_DECODER, num_key_value_heads=2, head_dim=8, **_TOKENS, **overrides)
        return tr.Gemma2ForCausalLM(cfg).eval()
    if name == "opt":
        cfg = tr.OPTConfig(
            vocab_size=64, hidden_size=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=4,
            word_embed_proj_dim=32, **_TOKENS,
        )  # fmt: skip
        return tr.OPTForCausalLM(cfg).eval()
    if name == "t5":
        cfg = tr.T5Config(
            vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, decoder_start_token_id=0,
            **_TOKENS,
        )  # fmt: skip
        return tr.T5ForConditionalGeneration(cfg).eval()
    if name == "whisper":
        cfg = tr.WhisperConfig(
            vocab_size=64, d_model=32, encoder_layers=1, decoder_layers=2, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=8,
            max_source_positions=16, max_target_positions=64, decoder_start_token_id=1, **_TOKENS,
        )  # fmt: skip
        return tr.WhisperForConditionalGeneration(cfg).eval()
    raise AssertionError(name)


def _encoder_inputs(name: str) -> dict:
    torch.manual_seed(1)
    if name == "t5":
        return {"input_ids": torch.randint(3, 64, (1, 6))}
    if name == "whisper":
        return {"input_features": torch.randn(1, 8, 32)}
    return {}


def _cache_of(out):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ``past_key_values`` is a deprecated alias of ``cache``
        return out.past_key_values


def _layers(cache) -> list:
    if isinstance(cache, tr.EncoderDecoderCache):
        return _layers(cache.self_attention_cache) + _layers(cache.cross_attention_cache)
    return list(cache.layers)


def _assert_same_cache(cache, expected) -> None:
    assert type(cache) is type(expected)
    if isinstance(cache, tr.EncoderDecoderCache):
        assert cache.is_updated == expected.is_updated
    layers, ref_layers = _layers(cache), _layers(expected)
    assert [type(x) for x in layers] == [type(x) for x in ref_layers]
    for layer, ref in zip(layers, ref_layers):
        assert list(vars(layer)) == list(vars(ref))
        for k, v in vars(ref).items():
            got = vars(layer)[k]
            assert not isinstance(got, TensorProxy)
            if isinstance(v, torch.Tensor):
                torch.testing.assert_close(got, v)
            else:
                assert got == v, k


@pytest.mark.parametrize("name", ["gpt2", "llama", "mistral", "t5", "whisper"])
def test_default_cache_prefill_and_decode_match_eager(name):
    model = _model(name)
    eager = copy.deepcopy(model)
    jm = thunder.jit(model)
    enc = _encoder_inputs(name)
    key = "decoder_input_ids" if enc else "input_ids"
    torch.manual_seed(2)
    ids = torch.randint(3, 64, (1, 4))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ``past_key_values`` is a deprecated alias of ``cache``
        out, ref = jm(**enc, **{key: ids}), eager(**enc, **{key: ids})
        for step in range(4):  # the prefill, then three decoding steps with the returned cache
            torch.testing.assert_close(out.logits, ref.logits)
            _assert_same_cache(_cache_of(out), _cache_of(ref))
            if step == 0:
                epi = str(thunder.last_epilogue_traces(jm)[-1])
                made = "EncoderDecoderCache" if enc else "DynamicCache"
                assert f"pythonex.object_new(transformers_cache_utils_{made}, " in epi
                for trace in thunder.last_traces(jm) + thunder.last_epilogue_traces(jm):
                    verify(trace)
            tok = torch.randint(3, 64, (1, 1))
            extra = {"encoder_outputs": (out.encoder_last_hidden_state,)} if enc else {}
            extra_ref = {"encoder_outputs": (ref.encoder_last_hidden_state,)} if enc else {}
            out = jm(**extra, **{key: tok}, past_key_values=_cache_of(out))
            ref = eager(**extra_ref, **{key: tok}, past_key_values=_cache_of(ref))
    # the cache the function made is passed back in: an input object now, updated in place
    assert "python_setattr(" in str(thunder.last_epilogue_traces(jm)[-1])


# compilations of the forward per 8 generated tokens: a DynamicCache grows by one position per
# token: the prefill, the first decoding step (the cache's lazy initialisation), and the second,
# whose cache length differs from the first's: a symbol (``s0``) from then on, so every later
# step hits (thunder/runtime/dynamic.py). A StaticCache keeps its shapes, and after the prefill and
# the first decoding step every step hits. Mistral's layers are sliding-window ones whose Python
# int lengths become traced counters after one more step. Gemma2's default cache passes such a
# length to torch.arange, which needs an int: the trace as a counter fails and the length is
# specialised (one trace per step).
_COMPILATIONS = {
    ("gpt2", None): 2, ("llama", None): 2, ("mistral", None): 2, ("t5", None): 3, ("whisper", None): 3,
    ("gpt2", "static"): 2, ("llama", "static"): 2, ("mistral", "static"): 3, ("t5", "static"): 2,
    ("whisper", "static"): 2, ("gemma2", None): 3, ("gemma2", "static"): 3,
}  # fmt: skip


@pytest.mark.parametrize("cache", [None, "static"])
@pytest.mark.parametrize("name", ["gpt2", "llama", "mistral", "gemma2", "t5", "whisper"])
def test_generate_matches_eager(name, cache):
    model = _model(name)
    jm = thunder.jit(model)
    enc = _encoder_inputs(name) or {"input_ids": torch.randint(3, 64, (1, 5))}
    kwargs = {"max_new_tokens": 8, "min_new_tokens": 8}
    if cache is not None:
        kwargs["cache_implementation"] = cache
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the retrace warning after 8 compilations (DynamicCache)
        for sample in (False, True):
            opts = {"do_sample": True, "top_k": 0} if sample else {"do_sample": False}
            torch.manual_seed(3)
            expected = model.generate(**enc, **kwargs, **opts)
            torch.manual_seed(3)
            tokens = jm.generate(**enc, **kwargs, **opts)
            assert tokens.tolist() == expected.tolist()
    stats = thunder.compile_stats(jm)
    assert stats.calls == 16  # every forward of both sequences ran compiled
    # the second sequence (same shapes, a new cache) compiles nothing
    assert stats.cache_misses == _COMPILATIONS[(name, cache)]
    assert stats.cache_hits == 16 - _COMPILATIONS[(name, cache)]
    encoder = compiled_encoder(jm)
    if name in ("t5", "whisper"):
        assert thunder.compile_stats(encoder).calls == 2 and thunder.compile_stats(encoder).cache_misses == 1
    assert "forward" not in vars(model)  # the model's own forward is back


def _static_decode(m, cache, ids, start):
    pos = torch.arange(start, start + ids.shape[1])
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ``past_key_values`` is a deprecated alias of ``cache``
        return m(input_ids=ids, past_key_values=cache, use_cache=True, cache_position=pos)


@pytest.mark.parametrize(
    "name, overrides",
    [
        ("mistral", {"sliding_window": 4}),  # the window fills: torch.tensor([-1], dtype=int) in the cache
        ("gemma2", {"sliding_window": 4}),
        ("opt", {}),  # the cache's length is a tensor used as a size and a slice bound
    ],
)
def test_static_cache_decode_matches_eager(name, overrides):
    model = _model(name, **overrides)
    eager = copy.deepcopy(model)
    jm = thunder.jit(model)
    cache = tr.StaticCache(config=model.config, max_cache_len=16)
    eager_cache = tr.StaticCache(config=model.config, max_cache_len=16)
    torch.manual_seed(4)
    ids = torch.randint(3, 64, (1, 5))
    for step in range(5):
        start = 0 if step == 0 else 4 + step
        out, ref = _static_decode(jm, cache, ids, start), _static_decode(eager, eager_cache, ids, start)
        torch.testing.assert_close(out.logits, ref.logits)
        assert _cache_of(out) is cache
        for layer, ref_layer in zip(cache.layers, eager_cache.layers):
            torch.testing.assert_close(layer.keys, ref_layer.keys)
            torch.testing.assert_close(layer.values, ref_layer.values)
        ids = torch.randint(3, 64, (1, 1))
    if name == "opt":  # the length is read as a number: checked by value, a trace per position
        pro = str(thunder.last_prologue_traces(jm)[-1])
        assert "pythonex.check_tensor_value(t_past_key_values_layers_0_cumulative_length, 8)" in pro
        assert thunder.compile_stats(jm).cache_misses == 5


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_prompts_of_their_own_length_compile_the_prefill_and_the_decode_once(name):
    # the sequence's dimensions are symbols from the first call of generate(): six prompts of
    # 5 to 10 tokens (and 3, 9 and 14 new tokens) add no compilation after the first prompt's
    model = _model(name)
    jm = thunder.jit(model)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, (length, new) in enumerate([(5, 3), (9, 9), (6, 14), (10, 3), (7, 9), (8, 5)]):
            ids = torch.randint(3, 64, (1, length), generator=torch.Generator().manual_seed(i))
            kwargs = {"max_new_tokens": new, "min_new_tokens": new, "do_sample": False}
            expected = model.generate(input_ids=ids, **kwargs)
            assert jm.generate(input_ids=ids, **kwargs).tolist() == expected.tolist(), f"prompt {i}"
            if i == 0:
                first = thunder.compile_stats(jm).cache_misses
    assert thunder.compile_stats(jm).cache_misses == first <= 3
    symbols = [why for e in thunder.compile_stats(jm).entries for why in e.symbols.values()]
    assert any("sequence's length in generate()" in why for why in symbols)
