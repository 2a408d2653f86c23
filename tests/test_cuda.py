"""CUDA runs (skipped without a GPU): the same programs on the device match eager."""

from __future__ import annotations

import pytest
import torch

import thunder

pytestmark = pytest.mark.cuda


def test_elementwise_on_cuda():
    x = torch.randn(1024, device="cuda")
    jfn = thunder.jit(lambda x: (x.sin() * 2 + 1).relu())
    torch.testing.assert_close(jfn(x), (x.sin() * 2 + 1).relu())
    assert '"cuda:0 f32[1024]"' in str(thunder.last_traces(jfn)[-1])


def test_module_on_cuda():
    m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).cuda()
    x = torch.randn(16, 64, device="cuda")
    torch.testing.assert_close(thunder.jit(m)(x), m(x))
