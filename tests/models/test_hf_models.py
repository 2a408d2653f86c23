"""More transformers models, built tiny from a config (random weights, nothing downloaded)."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
import transformers
from support.tiny_gpt2 import tiny_gpt2_config

import thunder
from thunder.core.tags import Tag
from thunder.core.verify import verify


def test_gpt2_logits_and_loss_match_eager():
    transformers.logging.set_verbosity_error()
    cfg = tiny_gpt2_config(transformers)
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


_LM = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4)


def _architecture(name: str):
    """A tiny model of each architecture that once failed to trace, and its inputs."""
    tr = transformers
    ids = {"input_ids": torch.randint(0, 64, (1, 7))}
    if name == "falcon":  # qkv[..., [-2], :]: list indexing
        cfg = tr.FalconConfig(
            vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            new_decoder_architecture=True, num_kv_heads=2,
        )  # fmt: skip
        return tr.FalconForCausalLM(cfg), ids
    if name == "mixtral":  # torch.histc, and transformers' grouped_mm custom operator
        cfg = tr.MixtralConfig(**_LM, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2)
        return tr.MixtralForCausalLM(cfg), ids
    if name == "bloom":  # alibi
        return tr.BloomForCausalLM(tr.BloomConfig(vocab_size=64, hidden_size=32, n_layer=2, n_head=4)), ids
    if name == "wav2vec2":  # torch._weight_norm in the positional convolution
        cfg = tr.Wav2Vec2Config(
            vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
            num_conv_pos_embedding_groups=4,
        )  # fmt: skip
        return tr.Wav2Vec2Model(cfg), {"input_values": torch.randn(1, 400)}
    if name == "qwen3":
        return tr.Qwen3ForCausalLM(tr.Qwen3Config(**_LM, num_key_value_heads=2, head_dim=8)), ids
    if name == "phi3":
        return tr.Phi3ForCausalLM(tr.Phi3Config(**_LM, num_key_value_heads=2, pad_token_id=0)), ids
    if name == "gpt_neox":
        return tr.GPTNeoXForCausalLM(tr.GPTNeoXConfig(**_LM)), ids
    if name == "bart":
        cfg = tr.BartConfig(
            vocab_size=64, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
        )  # fmt: skip
        return tr.BartForConditionalGeneration(cfg), {
            **ids,
            "decoder_input_ids": torch.randint(3, 64, (1, 5)),
        }
    if name == "falcon_alibi":  # masked_fill whose mask broadcasts the scores
        cfg = tr.FalconConfig(
            vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, alibi=True
        )
        return tr.FalconForCausalLM(cfg), ids
    if name == "levit":  # eval mode fills a dict of attention biases in forward
        cfg = tr.LevitConfig(
            image_size=32, hidden_sizes=[16, 32, 48], num_attention_heads=[1, 2, 3], depths=[1, 1, 1],
            key_dim=[8, 8, 8], num_labels=5,
        )  # fmt: skip
        return tr.LevitForImageClassification(cfg), {"pixel_values": torch.randn(1, 3, 32, 32)}
    if name == "recurrent_gemma":  # normalizer.type(dtype)
        cfg = tr.RecurrentGemmaConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
            num_key_value_heads=1, lru_width=32, attention_window_size=8,
            block_types=["recurrent", "attention", "recurrent"],
        )  # fmt: skip
        return tr.RecurrentGemmaForCausalLM(cfg), ids
    if name == "funnel":  # torch.cat(..., axis=...)
        cfg = tr.FunnelConfig(vocab_size=64, d_model=32, n_head=4, d_head=8, d_inner=64, block_sizes=[1, 1])
        return tr.FunnelModel(cfg), ids
    raise AssertionError(name)


_ARCHITECTURES = ["falcon", "mixtral", "bloom", "wav2vec2", "qwen3", "phi3", "gpt_neox", "bart"]
_ARCHITECTURES += ["falcon_alibi", "levit", "recurrent_gemma", "funnel"]


@pytest.mark.parametrize("name", _ARCHITECTURES)
def test_architectures_match_eager_with_their_default_cache(name):
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    model, inputs = _architecture(name)
    model.eval()
    jm = thunder.jit(model)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, ref = jm(**inputs), model(**inputs)
    key = "logits" if "logits" in ref else "last_hidden_state"
    torch.testing.assert_close(out[key], ref[key])
    assert type(out) is type(ref) and list(out.keys()) == list(ref.keys())
    with torch.no_grad(), warnings.catch_warnings():  # again: a cache made on the first call
        warnings.simplefilter("ignore")
        torch.testing.assert_close(jm(**inputs)[key], model(**inputs)[key])
    if name == "mixtral":  # the experts' matmuls stay the library's operator, run whole
        text = str(thunder.last_traces(jm)[-1])
        assert "torch.ops.transformers.grouped_mm_fallback.default(" in text
        assert "torch.histc(" in text


def test_bloom_trains_through_its_custom_autograd_function():
    """BLOOM's training-mode GELU is a custom torch.autograd.Function: its forward is traced
    and its own backward is the backward of that region; loss and every gradient equal eager's."""
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    model, inputs = _architecture("bloom")
    model.train()
    ref = copy.deepcopy(model)
    jm = thunder.jit(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = jm(**inputs, labels=inputs["input_ids"], use_cache=False)
        expected = ref(**inputs, labels=inputs["input_ids"], use_cache=False)
    torch.testing.assert_close(out.loss, expected.loss)
    out.loss.backward()
    expected.loss.backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-4, msg=lambda m, n=name: f"{n}: {m}")
    applied = [
        b.sym.name for b in thunder.last_traces(jm)[0].bound_symbols if Tag.AUTOGRAD_FUNCTION in b.sym.tags
    ]
    assert applied == ["GeLUFunction.apply"] * 2


@pytest.mark.parametrize("name", ["bert", "t5"])
def test_training_steps_with_dropout_match_eager(name):
    """Train mode, dropout on (hidden, attention): with the same seed thunder drops what eager
    drops, so losses and gradients agree step after step."""
    torch.manual_seed(0)
    ids = torch.randint(1, 64, (2, 12))
    if name == "bert":
        cfg = transformers.BertConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4
        )
        model, inputs = transformers.BertForMaskedLM(cfg), {"input_ids": ids, "labels": ids}
    else:
        cfg = transformers.T5Config(
            vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, decoder_start_token_id=0
        )
        model, inputs = (
            transformers.T5ForConditionalGeneration(cfg),
            {"input_ids": ids, "labels": ids[:, :5].clone()},
        )
    model.train()
    ref = copy.deepcopy(model)
    jm = thunder.jit(model)
    for step in range(2):
        torch.manual_seed(10 + step)
        expected = ref(**inputs).loss
        torch.manual_seed(10 + step)
        got = jm(**inputs).loss
        torch.testing.assert_close(got, expected)
        got.backward()
        expected.backward()
    for (pname, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-6, rtol=1e-4, msg=lambda m, n=pname: f"{n}: {m}")


def _image_classifier(name: str):
    tr = transformers
    if name == "vit":
        cfg = tr.ViTConfig(
            image_size=16, patch_size=8, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
            intermediate_size=64, num_labels=3,
        )  # fmt: skip
        return tr.ViTForImageClassification(cfg)
    if name == "resnet":
        cfg = tr.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], num_labels=3)
        return tr.ResNetForImageClassification(cfg)
    if name == "convnext":
        cfg = tr.ConvNextConfig(hidden_sizes=[8, 16], depths=[1, 1], num_stages=2, num_labels=3)
        return tr.ConvNextForImageClassification(cfg)
    cfg = tr.SwinConfig(
        image_size=16, patch_size=4, embed_dim=8, depths=[1, 1], num_heads=[1, 2], window_size=2, num_labels=3
    )
    return tr.SwinForImageClassification(cfg)


@pytest.mark.parametrize("name", ["vit", "resnet", "convnext", "swin"])
def test_image_classification_trains_with_labels(name):
    """``*ForImageClassification.forward`` sets ``config.problem_type`` on its first call with
    labels: written back as eager writes it; loss and gradients equal eager's, call after call."""
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    model = _image_classifier(name).train()
    ref = copy.deepcopy(model)
    jm = thunder.jit(model)
    pixels, labels = torch.randn(2, 3, 16, 16), torch.tensor([0, 2])
    for step in range(2):
        torch.manual_seed(10 + step)  # (Swin's stochastic depth draws: the same draws)
        got = jm(pixel_values=pixels, labels=labels).loss
        torch.manual_seed(10 + step)
        expected = ref(pixel_values=pixels, labels=labels).loss
        torch.testing.assert_close(got, expected)
        assert model.config.problem_type == ref.config.problem_type == "single_label_classification"
        got.backward()
        expected.backward()
    for (pname, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-4, msg=lambda m, n=pname: f"{n}: {m}")
