"""Gradients and layouts of tensor-subclass programs against eager: a subclass input that
requires grad gives results that require grad whatever class its ``__torch_dispatch__``
returns, and the prologue checks each inner tensor's layout (a view that layout cannot give
raises as in eager, and an entry made for one layout is not used for another)."""

from __future__ import annotations

import pytest
import torch
from support.subclasses import DequantizingTensor, ScaleTensor, scale_tensor
from torch.testing._internal.two_tensor import TwoTensor

import thunder


def _dequantizing(*shape):
    return DequantizingTensor(torch.randn(*shape), torch.tensor(2.0)).requires_grad_()


W = torch.randn(3, 2)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, w: (x * 2).sum(),
        lambda x, w: x.sum(),
        lambda x, w: x @ w,
        lambda x, w: (x @ w).relu() * x[:, :2],
    ],
    ids=["(x * 2).sum()", "x.sum()", "x @ w", "a chain"],
)
@pytest.mark.parametrize(
    "make",
    [_dequantizing, lambda *s: scale_tensor(*s, requires_grad=True)],
    ids=["plain results", "subclass results"],
)
def test_results_require_grad_and_train_as_in_eager(fn, make):
    x = make(2, 3)
    w = W.clone().requires_grad_()
    expected = fn(x, w)
    out = thunder.jit(fn)(x, w)
    assert type(out) is type(expected) and out.requires_grad is expected.requires_grad is True
    want = torch.autograd.grad(expected.sum(), (x, w), allow_unused=True)
    got = torch.autograd.grad(out.sum(), (x, w), allow_unused=True)
    for g, e in zip(got, want):
        assert type(g) is type(e)
        if e is not None:
            torch.testing.assert_close(g * 1.0, e * 1.0)  # (as values: a subclass gradient dequantized)


def _transposed_two():
    return TwoTensor(torch.randn(3, 2).T, torch.randn(3, 2).T)


def test_a_view_the_inner_layout_cannot_give_raises_as_in_eager():
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        _transposed_two().view(-1)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        thunder.jit(lambda x: x.view(-1))(_transposed_two())


def test_an_entry_for_contiguous_inner_tensors_is_not_used_for_transposed_ones():
    jf = thunder.jit(lambda x: x.view(-1))
    contiguous = TwoTensor(torch.randn(2, 3), torch.randn(2, 3))
    assert jf(contiguous).shape == (6,)
    assert "check_strides(x_a, (3, 1))" in str(thunder.last_prologue_traces(jf)[-1])
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        jf(_transposed_two())
    t = _transposed_two()
    torch.testing.assert_close(thunder.jit(lambda x: x.reshape(-1))(t).a, t.a.reshape(-1))


def _plain_loss(out):
    """A loss computed from the output's values: its gradient reaches the output as a plain tensor."""
    return (out.dequantize() * torch.linspace(0, 1, out.numel()).reshape(out.shape)).sum()


@pytest.mark.parametrize(
    "fn",
    [lambda x, w: x * 2, lambda x, w: (x @ w).relu(), lambda x, w: (x.exp() + 1, x * w.sum())],
    ids=["x * 2", "relu(x @ w)", "two outputs"],
)
def test_a_plain_gradient_of_a_subclass_output_trains_as_in_eager(fn):
    x, w = scale_tensor(2, 3, requires_grad=True), W.clone().requires_grad_()

    def grads(f):
        outs = f(x, w)
        outs = outs if isinstance(outs, tuple) else (outs,)
        cots = [torch.linspace(-1, 1, o.numel()).reshape(o.shape) for o in outs]  # plain tensors
        return torch.autograd.grad(outs, (x, w), cots, allow_unused=True)

    expected = grads(fn)
    jf = thunder.jit(fn)
    for _ in range(2):  # the backward traced for plain gradients is made once
        for g, e in zip(grads(jf), expected):
            # (the class of a gradient is what the subclass's dispatch makes of the backward's
            # ops on mixed classes: thunder's VJP rules may run other ops than eager's formulas)
            assert (g is None) is (e is None)
            if e is not None:
                torch.testing.assert_close(_value(g), _value(e))


def _value(t):
    return t.dequantize() if isinstance(t, ScaleTensor) else t
