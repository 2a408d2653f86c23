"""Random draws whose values the function never uses still draw, as in eager: dead-code
elimination drops any other unused op, but dropping a draw would leave torch's generator
behind, so every later draw (in the function and after it) would give other numbers than
eager's. Checked against eager over several seeds: the results, the gradients, and the
next number the generator gives after the call."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import thunder
from thunder.core.tags import Tag


def unused_before_a_used_one(x):
    torch.rand(3)
    return x * torch.rand_like(x)


def unused_dropout_and_noise(x):
    F.dropout(x, 0.5)
    torch.randn_like(x)
    y = F.dropout(x, 0.5)
    return (y * torch.rand_like(x)).sum()


def unused_in_place_draw(x):
    torch.empty(4).bernoulli_(0.5)
    return x * 2


@pytest.mark.parametrize("fn", [unused_before_a_used_one, unused_dropout_and_noise, unused_in_place_draw])
@pytest.mark.parametrize("grad", [False, True], ids=["no-grad", "grad"])
def test_an_unused_draw_draws_as_in_eager(fn, grad):
    jfn = thunder.jit(fn)
    for seed in range(3):
        x = torch.randn(4, requires_grad=grad)
        torch.manual_seed(seed)
        expected = fn(x)
        expected_next = torch.rand(2)
        torch.manual_seed(seed)
        got = jfn(x)
        got_next = torch.rand(2)
        assert type(got) is torch.Tensor and type(x) is torch.Tensor, "a proxy reached the caller"
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
        torch.testing.assert_close(
            got_next, expected_next, rtol=0, atol=0, msg="the generator after the call"
        )
        if grad:
            (g_expected,) = torch.autograd.grad(expected.sum(), x)
            (g_got,) = torch.autograd.grad(got.sum(), x)
            torch.testing.assert_close(g_got, g_expected, rtol=0, atol=0)
    assert thunder.compile_stats(jfn).cache_misses == 1
    for backward in thunder.last_backward_traces(jfn)[-1:]:
        assert not any(Tag.RANDOM in b.sym.tags for b in backward.bound_symbols), "the backward draws nothing"


def test_an_unused_draw_shows_in_the_trace():
    jfn = thunder.jit(unused_before_a_used_one)
    jfn(torch.ones(2))
    text = str(thunder.last_traces(jfn)[-1])
    assert "= torch.rand(3)" in text and "= torch.rand_like(x)" in text, text
