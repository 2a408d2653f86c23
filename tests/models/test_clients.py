"""Libraries people train with, end to end against eager in the three modes (``thunder.jit``,
the torch.compile executor, thunderfx), on tiny configurations:

- peft: LoRA adapters on a small GPT's attention and MLP projections (peft's ``lora.Linear``
  wrapping ``nn.Linear``), three training steps of the adapters (loss, the adapters' gradients,
  the frozen weights' none, the updated adapters), then ``merge_and_unload`` (the merged
  weights, and the merged model's outputs);
- diffusers: a ``UNet2DModel`` with attention blocks (GroupNorm, SiLU, SDPA, up- and
  downsampling, timestep embeddings) and an ``AutoencoderKL`` (its encoder, posterior mode and
  decoder): outputs over two calls, and a training step's gradients of every parameter.

Needs the ``dev`` extra's peft and diffusers (skipped without them).
"""

from __future__ import annotations

import logging

import pytest
import torch
import torch.nn.functional as F
from support.models import GPT

import thunder
from thunder.dynamo import thunderfx

peft = pytest.importorskip("peft")
diffusers = pytest.importorskip("diffusers")

MODES = {
    "jit": lambda f: thunder.jit(f),
    "torchcompile": lambda f: thunder.jit(f, executors=["torchcompile"]),
    "thunderfx": lambda f: thunderfx(f),
}
# Inductor compiles each model's regions, forward and backward, for half a minute or more with an
# empty cache: slow
COMPILED = [pytest.param("torchcompile", marks=pytest.mark.slow), "thunderfx"]
# the compiled programs reorder floating-point sums (Inductor's kernels, eager's math where
# thunder runs another kernel): gradients of a few hundred terms differ in their last bits
TOL = {"rtol": 1e-4, "atol": 1e-5}


@pytest.fixture(autouse=True)
def _quiet():
    logging.disable(logging.WARNING)  # (diffusers and torchao announce optional kernels they lack)
    yield
    logging.disable(logging.NOTSET)


# -- peft -----------------------------------------------------------------------------------
def _lora_gpt() -> torch.nn.Module:
    """A small GPT with LoRA adapters (rank 4) on its attention and first MLP projections;
    the adapters start non-zero (``init_lora_weights=False``) so every gradient is."""
    torch.manual_seed(0)
    base = GPT(vocab=50, d=32, heads=4, layers=1, ctx=16)
    config = peft.LoraConfig(
        r=4, lora_alpha=8, target_modules=["qkv", "proj", "mlp.0"], lora_dropout=0.0, init_lora_weights=False
    )
    torch.manual_seed(1)
    return peft.get_peft_model(base, config)


def _adapters(model) -> dict[str, torch.nn.Parameter]:
    return {n: p for n, p in model.named_parameters() if "lora_" in n}


@pytest.mark.parametrize("mode", ["jit", *COMPILED])
def test_peft_lora_training_and_merge_equal_eager(mode):
    model, ref = _lora_gpt(), _lora_gpt()
    assert len(_adapters(model)) == 2 * 3  # (A and B of 3 projections)
    jm = MODES[mode](model)
    for step in range(3):
        idx, target = torch.randint(0, 50, (2, 16)), torch.randint(0, 50, (2, 16))
        loss = F.cross_entropy(jm(idx).flatten(0, 1), target.flatten())
        want = F.cross_entropy(ref(idx).flatten(0, 1), target.flatten())
        torch.testing.assert_close(loss, want, **TOL)
        loss.backward()
        want.backward()
        got, expected = _adapters(model), _adapters(ref)
        for name, p in got.items():
            torch.testing.assert_close(
                p.grad, expected[name].grad, **TOL, msg=lambda m, n=name, i=step: f"step {i} {n}: {m}"
            )
        frozen = [n for n, p in model.named_parameters() if n not in got]
        assert frozen and all(model.get_parameter(n).grad is None for n in frozen)
        with torch.no_grad():
            for name, p in got.items():
                p -= 0.5 * p.grad
                expected[name] -= 0.5 * expected[name].grad
        model.zero_grad(set_to_none=True)
        ref.zero_grad(set_to_none=True)
    merged, merged_ref = model.merge_and_unload(), ref.merge_and_unload()
    assert not _adapters(merged)
    torch.testing.assert_close(merged.state_dict(), merged_ref.state_dict(), **TOL)
    idx = torch.randint(0, 50, (2, 16))
    torch.testing.assert_close(MODES[mode](merged)(idx), merged_ref(idx), **TOL)


# -- diffusers ------------------------------------------------------------------------------
def _unet():
    torch.manual_seed(0)
    return diffusers.UNet2DModel(
        sample_size=8,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(8, 16),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=4,
        attention_head_dim=4,
    )


def _unet_call(model, x):
    return model(x, torch.tensor([1, 10])).sample


def _vae():
    torch.manual_seed(0)
    return diffusers.AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(8, 16),
        latent_channels=4,
        norm_num_groups=4,
        layers_per_block=1,
        sample_size=16,
    )


def _vae_call(model, x):
    return model(x).sample  # (the posterior's mode: deterministic)


DIFFUSERS = {
    "UNet2DModel": (_unet, _unet_call, (2, 3, 8, 8)),
    "AutoencoderKL": (_vae, _vae_call, (2, 3, 16, 16)),
}


@pytest.mark.parametrize("mode", ["jit", *COMPILED])
@pytest.mark.parametrize("name", list(DIFFUSERS))
def test_diffusers_forward_equals_eager(name, mode):
    make, call, shape = DIFFUSERS[name]
    model = make().eval()
    jm = MODES[mode](model)
    for _ in range(2):
        x = torch.randn(shape)
        with torch.no_grad():
            torch.testing.assert_close(call(jm, x), call(model, x), **TOL)


def _training_case(name, mode):
    make, call, shape = DIFFUSERS[name]
    model, ref = make(), make()
    jm = MODES[mode](model)
    x, target = torch.randn(shape), torch.randn(shape)
    loss, want = F.mse_loss(call(jm, x), target), F.mse_loss(call(ref, x), target)
    torch.testing.assert_close(loss, want, **TOL)
    loss.backward()
    want.backward()
    expected = dict(ref.named_parameters())
    for n, p in model.named_parameters():
        torch.testing.assert_close(p.grad, expected[n].grad, **TOL, msg=lambda m, n=n: f"{n}: {m}")


@pytest.mark.parametrize("mode", ["jit", *COMPILED])
@pytest.mark.parametrize("name", list(DIFFUSERS))
def test_diffusers_training_step_equals_eager(name, mode):
    _training_case(name, mode)
