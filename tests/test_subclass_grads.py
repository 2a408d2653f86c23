"""Gradients and layouts of tensor-subclass programs against eager: a subclass input that
requires grad gives results that require grad whatever class its ``__torch_dispatch__``
returns, and the prologue checks each inner tensor's layout (a view that layout cannot give
raises as in eager, and an entry made for one layout is not used for another)."""

from __future__ import annotations

import pytest
import torch
from subclass_examples import DequantizingTensor, scale_tensor  # tests/ is on sys.path
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
