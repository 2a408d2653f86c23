"""Autograd rules of in-place writes as eager has them: a leaf that requires grad cannot be
written in place under grad mode; writes into non-leaf inputs give eager's gradients;
``zero_`` keeps requires_grad."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import thunder


def add_one(x):
    x.add_(1)
    return x * 2


def test_a_write_into_a_leaf_that_requires_grad_raises_as_in_eager():
    eager = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        add_one(eager)
    a = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"(?s)leaf Variable that requires grad.*test_inplace_autograd.py"):
        thunder.jit(add_one)(a)
    assert torch.equal(a.detach(), torch.zeros(3)) and a.is_leaf


def test_a_leaf_after_a_non_leaf_misses_and_raises():
    jfn = thunder.jit(add_one)
    w = torch.ones(2, requires_grad=True)
    jfn(w * 1)
    leaf = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        jfn(leaf)
    assert torch.equal(leaf.detach(), torch.ones(2))


def test_a_write_into_a_leaf_under_no_grad_is_allowed():
    def f(x):
        with torch.no_grad():
            x.mul_(3)
        return x * 1

    a, b = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    torch.testing.assert_close(thunder.jit(f)(a), f(b))
    torch.testing.assert_close(a, b)


def test_a_parameter_written_in_forward_raises():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(2))

        def forward(self, x):
            self.w.add_(1)
            return x * self.w

    m = M()
    with pytest.raises(RuntimeError, match="leaf Variable"):
        thunder.jit(m)(torch.ones(2))
    assert torch.equal(m.w.detach(), torch.ones(2))


@pytest.mark.parametrize("write", [lambda y: y.mul_(3), lambda y: y.T.mul_(3), lambda y: y[0:1].mul_(3)])
def test_gradients_through_writes_into_a_non_leaf_input(write):
    def f(y):
        write(y)
        return (y * 2).sum()

    w = torch.ones(2, 2, requires_grad=True)
    f(w * 1).backward()
    expected = w.grad.clone()
    w.grad = None
    thunder.jit(f)(w * 1).backward()
    torch.testing.assert_close(w.grad, expected)


def test_zero_keeps_requires_grad():
    def f(y):
        return y.zero_()

    out = thunder.jit(f)(torch.ones(2, requires_grad=True) * 1)
    assert out.requires_grad == f(torch.ones(2, requires_grad=True) * 1).requires_grad
