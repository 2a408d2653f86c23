"""Float64 training steps of torchvision-style blocks through torch.compile regions (and the
torch executor) give eager's outputs and gradients to rounding: MobileNetV3's inverted residual
(hardswish, batch norm with batch statistics, squeeze-excitation gated by hardsigmoid) and
EfficientNet's MBConv (SiLU, sigmoid gate, stochastic depth) under a dropout head.

What these caught: eager's hardsigmoid backward multiplies by one sixth rounded to float32
(the decomposition's gradient was 3e-8 from eager's in float64), and the fusion schedule let
the head's dropout draw before a block's stochastic-depth mask (outputs 0.6 from eager's).
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import thunder

TIGHT = {"rtol": 1e-12, "atol": 1e-12}
# (Inductor compiles the torch.compile case's regions: about 30 s each on two cores)
EXECUTORS = [pytest.param(["torchcompile", "torch"], marks=pytest.mark.slow), ["torch"]]


class SqueezeExcitation(nn.Module):
    def __init__(self, c: int, squeeze: int, gate):
        super().__init__()
        self.fc1, self.fc2, self.gate = nn.Conv2d(c, squeeze, 1), nn.Conv2d(squeeze, c, 1), gate

    def forward(self, x):
        return x * self.gate(self.fc2(F.relu(self.fc1(F.adaptive_avg_pool2d(x, 1)))))


class InvertedResidual(nn.Module):
    """MobileNetV3's block: expand, depthwise, squeeze-excitation (hardsigmoid), project."""

    def __init__(self, c: int = 8, e: int = 16):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(c, e, 1, bias=False), nn.BatchNorm2d(e), nn.Hardswish())
        self.dw = nn.Sequential(
            nn.Conv2d(e, e, 3, padding=1, groups=e, bias=False), nn.BatchNorm2d(e), nn.Hardswish()
        )
        self.se = SqueezeExcitation(e, 8, nn.Hardsigmoid())
        self.project = nn.Sequential(nn.Conv2d(e, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return x + self.project(self.se(self.dw(self.expand(x))))


def _stochastic_depth(x, p: float):
    """torchvision.ops.stochastic_depth, "row" mode, in training."""
    noise = torch.empty([x.shape[0]] + [1] * (x.ndim - 1), dtype=x.dtype, device=x.device)
    noise = noise.bernoulli_(1 - p)
    noise.div_(1 - p)
    return x * noise


class MBConv(nn.Module):
    """EfficientNet's block: expand, depthwise, squeeze-excitation (sigmoid), project, and the
    residual through stochastic depth."""

    def __init__(self, c: int = 8, e: int = 16, p: float = 0.5):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(c, e, 1, bias=False), nn.BatchNorm2d(e), nn.SiLU())
        self.dw = nn.Sequential(
            nn.Conv2d(e, e, 3, padding=1, groups=e, bias=False), nn.BatchNorm2d(e), nn.SiLU()
        )
        self.se = SqueezeExcitation(e, 4, nn.Sigmoid())
        self.project = nn.Sequential(nn.Conv2d(e, c, 1, bias=False), nn.BatchNorm2d(c))
        self.p = p

    def forward(self, x):
        return x + _stochastic_depth(self.project(self.se(self.dw(self.expand(x)))), self.p)


class Net(nn.Module):
    def __init__(self, block):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.Hardswish())
        self.blocks = nn.Sequential(block(), block())
        self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(8, 5))

    def forward(self, x):
        return self.head(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1).flatten(1))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("block", [InvertedResidual, MBConv])
@pytest.mark.parametrize("executors", EXECUTORS, ids=["torchcompile+torch", "torch"])
def test_float64_training_step_matches_eager_to_rounding(block, executors):
    torch.manual_seed(0)
    model = Net(block).double().train()
    expected_model = copy.deepcopy(model)
    x = torch.randn(4, 3, 16, 16, dtype=torch.float64)
    jm = thunder.jit(model, executors=executors)
    torch.manual_seed(1)
    out = jm(x)
    out.square().sum().backward()
    torch.manual_seed(1)
    expected = expected_model(x)
    expected.square().sum().backward()
    torch.testing.assert_close(out, expected, **TIGHT)
    for (name, p), e in zip(model.named_parameters(), expected_model.parameters()):
        torch.testing.assert_close(p.grad, e.grad, **TIGHT, msg=lambda m, name=name: f"{name}: {m}")
