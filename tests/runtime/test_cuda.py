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


def test_gradients_through_a_tensor_subclass_on_cuda():
    """The backward of a subclass program runs on the device (autograd's device thread)."""
    from torch.testing._internal.two_tensor import TwoTensor

    a = torch.randn(8, 8, device="cuda")
    x = TwoTensor(a, a * 2).requires_grad_()
    w = torch.randn(8, 8, device="cuda", requires_grad=True)
    fn = lambda x, w: (torch.relu(x @ w) * 2).sum()  # noqa: E731
    expected = torch.autograd.grad(fn(x, w), (x, w))
    jfn = thunder.jit(fn)
    got = torch.autograd.grad(jfn(x, w), (x, w))
    assert thunder.last_backward_traces(jfn)
    assert type(got[0]) is TwoTensor and type(got[1]) is type(expected[1])
    torch.testing.assert_close((got[0].a, got[0].b), (expected[0].a, expected[0].b))
    torch.testing.assert_close(got[1], expected[1])
