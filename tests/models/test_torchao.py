"""torchao, the library people quantize with, end to end against eager: its tensor subclasses
(``__torch_dispatch__`` wrappers, the kind of ``thunder/frontend/subclasses/``) through
thunder.jit, the torch.compile executor and thunderfx, over three calls (NF4: three training
steps of the LoRA adapters, gradients and updated weights compared).

- int8 weight-only (``Int8WeightOnlyConfig``), with and without bias: its dispatch writes the
  bias into its result in place (``y += bias``);
- int8 dynamic activations (``Int8DynamicActivationInt8WeightConfig``): ``full_like``,
  ``_int_mm`` of uint8 by int8;
- NF4 (QLoRA): the frozen base weight's 4-bit codes unpacked with ``>>`` and ``&``;
- float8 training (``convert_to_float8_training``): dynamic per-tensor scales, casts to
  ``float8_e4m3fn`` and ``float8_e5m2`` and ``aten._scaled_mm`` in an autograd.Function whose
  backward keeps ``grad_output.stride()`` (thunder passes it a contiguous gradient).
"""

from __future__ import annotations

import logging

import pytest
import torch

import thunder
from thunder.dynamo import thunderfx

torchao = pytest.importorskip("torchao")
from torchao.float8 import convert_to_float8_training  # noqa: E402
from torchao.quantization import (  # noqa: E402
    Int8DynamicActivationInt8WeightConfig,
    Int8WeightOnlyConfig,
    quantize_,
)
from torchao.quantization.quantize_.workflows.nf4.nf4_tensor import linear_nf4, to_nf4  # noqa: E402

MODES = {
    "jit": lambda f: thunder.jit(f),
    "torchcompile": lambda f: thunder.jit(f, executors=["torchcompile"]),
    "thunderfx": lambda f: thunderfx(f),
}


@pytest.fixture(autouse=True)
def _quiet():
    logging.disable(logging.WARNING)  # (torchao warns about its CUDA kernels on a CPU machine)
    yield
    logging.disable(logging.NOTSET)


def _mlp(bias: bool) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 32, bias=bias), torch.nn.GELU(), torch.nn.Linear(32, 8, bias=bias)
    )


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize(
    "config",
    [Int8WeightOnlyConfig, Int8DynamicActivationInt8WeightConfig],
    ids=["int8 weight-only", "int8 dynamic activation"],
)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no bias"])
def test_an_int8_quantized_model_equals_eager(config, bias, mode):
    model = _mlp(bias)
    quantize_(model, config())
    jm = MODES[mode](model)
    for n in (4, 4, 6):
        x = torch.randn(n, 16)
        torch.testing.assert_close(jm(x), model(x))


class QLoRA(torch.nn.Module):
    """A frozen NF4 weight and a trainable low-rank adapter beside it."""

    def __init__(self, d_in=64, d_out=32, r=4):
        super().__init__()
        self.weight = torch.nn.Parameter(
            to_nf4(torch.randn(d_out, d_in), block_size=64, scaler_block_size=16), requires_grad=False
        )
        self.a = torch.nn.Parameter(torch.randn(r, d_in) * 0.1)
        self.b = torch.nn.Parameter(torch.randn(d_out, r) * 0.1)

    def forward(self, x):
        return linear_nf4(x, self.weight) + (x @ self.a.t()) @ self.b.t()


@pytest.mark.parametrize("mode", list(MODES))
def test_qlora_training_of_the_adapters_equals_eager(mode):
    torch.manual_seed(1)
    model = QLoRA()
    torch.manual_seed(1)
    ref = QLoRA()
    jm = MODES[mode](model)
    for _ in range(3):
        x = torch.randn(8, 64)
        out, want = jm(x), ref(x)
        torch.testing.assert_close(out, want)
        out.square().mean().backward()
        want.square().mean().backward()
        for p, q in ((model.a, ref.a), (model.b, ref.b)):
            torch.testing.assert_close(p.grad, q.grad)
            with torch.no_grad():
                p -= 0.1 * p.grad
                q -= 0.1 * q.grad
            p.grad = q.grad = None
    torch.testing.assert_close(model.a, ref.a)


def _float8_mlp(dtype: torch.dtype) -> torch.nn.Module:
    torch.manual_seed(0)  # (float8 training wants dimensions that are multiples of 16)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32)).to(dtype)
    return convert_to_float8_training(model)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_float8_training_equals_eager(dtype, mode):
    # thunder's losses, gradients and updated weights are eager's to the bit. Inductor keeps a
    # fused kernel's bf16 intermediates in f32 unless told to round them as eager does; the
    # float8 casts (e5m2 has two mantissa bits) turn that last bit into differences of a few
    # percent in the first layer's gradients (torch.compile of the model alone differs more)
    model, ref = _float8_mlp(dtype), _float8_mlp(dtype)
    assert type(model[0]).__name__ == "Float8Linear"
    jm = MODES[mode](model)
    with torch._inductor.config.patch(emulate_precision_casts=True):
        _float8_steps(jm, model, ref, dtype)
    if mode == "thunderfx":  # (thunder ran the model: no piece fell back to eager)
        assert jm.pieces and not jm.fallbacks


def _float8_steps(jm, model, ref, dtype):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(16, 32, dtype=dtype)
        loss = jm(x).float().square().mean()
        want = ref(x).float().square().mean()
        torch.testing.assert_close(loss, want, rtol=0, atol=0)
        loss.backward()
        want.backward()
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=0, atol=0, msg=f"step {step}: {name}.grad")
        opt.step()
        ref_opt.step()
        opt.zero_grad()
        ref_opt.zero_grad()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
