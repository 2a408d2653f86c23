"""Double backward: ``torch.autograd.grad(..., create_graph=True)`` through a compiled
function differentiates its backward (``thunder/transforms/double_backward.py``): a
WGAN-GP gradient penalty and a Hessian-vector product equal eager's (float64), and the
traces of the backward as a computation and of its own backward are shown by
``thunder.last_double_backward_traces``."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import thunder
from thunder.transforms.saved_versions import SavedValueOverwrittenError

D = torch.float64


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(3, 8), nn.Linear(8, 8), nn.Linear(8, 1)

    def forward(self, x):
        return self.fc3(F.leaky_relu(self.fc2(torch.tanh(self.fc1(x))), 0.2)).squeeze(-1)


def _gradient_penalty(critic, real, fake, eps):
    """WGAN-GP: the critic's gradient at points between real and fake samples, pushed to norm 1."""
    mixed = (eps * real + (1 - eps) * fake).requires_grad_()
    scores = critic(mixed)
    (g,) = torch.autograd.grad(scores, mixed, torch.ones_like(scores), create_graph=True)
    return ((g.norm(2, dim=1) - 1) ** 2).mean() + scores.mean()


def test_a_wgan_gp_gradient_penalty_trains_as_in_eager():
    torch.manual_seed(0)
    eager = Critic().to(D)
    compiled = Critic().to(D)
    compiled.load_state_dict(eager.state_dict())
    jc = thunder.jit(compiled)
    opts = [torch.optim.SGD(m.parameters(), lr=0.05) for m in (eager, compiled)]
    for _ in range(3):
        real, fake, eps = torch.randn(6, 3, dtype=D), torch.randn(6, 3, dtype=D), torch.rand(6, 1, dtype=D)
        losses = []
        for critic, opt in zip((eager, jc), opts):
            opt.zero_grad()
            loss = _gradient_penalty(critic, real, fake, eps)
            loss.backward()
            opt.step()
            losses.append(loss)
        torch.testing.assert_close(losses[1], losses[0])
    for p, q in zip(eager.parameters(), compiled.parameters()):
        torch.testing.assert_close(q.grad, p.grad)
        torch.testing.assert_close(q, p)
    assert thunder.compile_stats(jc).cache_misses == 1


def _hvp(fn, x, v):
    (g,) = torch.autograd.grad(fn(x), x, create_graph=True)
    (hv,) = torch.autograd.grad(g, x, v)
    return hv


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: (x.sin() * x).sum(),
        lambda x: torch.logsumexp(x @ x.T, dim=-1).sum(),
        lambda x: F.softmax(x, -1).pow(3).sum() + F.layer_norm(x, (3,)).exp().mean(),
    ],
    ids=["sin", "logsumexp of a matmul", "softmax and layer_norm"],
)
def test_a_hessian_vector_product_equals_eagers(fn):
    x = torch.randn(4, 3, dtype=D, requires_grad=True)
    v = torch.randn(4, 3, dtype=D)
    torch.testing.assert_close(_hvp(thunder.jit(fn), x, v), _hvp(fn, x, v))


def test_the_traces_of_the_backward_and_of_its_backward_are_shown():
    jf = thunder.jit(lambda x, w: (x.sin() * w).sum())
    x, w = torch.randn(3, dtype=D, requires_grad=True), torch.randn(3, dtype=D, requires_grad=True)
    out = jf(x, w)
    with pytest.raises(RuntimeError, match="create_graph"):
        thunder.last_double_backward_traces(jf)
    (gx,) = torch.autograd.grad(out, x, create_graph=True)
    traces = thunder.last_double_backward_traces(jf)
    first = traces["computation"][0]
    assert first.name == "backward_computation"
    assert [p.name for p in first.args][:2] == ["x", "w"] and first.args[2].requires_grad
    assert str(traces["backward"][-1]).startswith("# Constructed by")
    # the gradient of the gradient, against eager's
    gw = torch.autograd.grad(gx.sum(), w)[0]
    torch.testing.assert_close(gw, x.detach().cos())


def test_third_order_gradients():
    def f(x):
        return (x.sin() * x.exp()).sum()

    def third(fn, x):
        (g,) = torch.autograd.grad(fn(x), x, create_graph=True)
        (h,) = torch.autograd.grad(g.sum(), x, create_graph=True)
        return torch.autograd.grad(h.sum(), x)[0]

    x = torch.randn(5, dtype=D, requires_grad=True)
    torch.testing.assert_close(third(thunder.jit(f), x), third(f, x))


def test_a_cotangent_that_requires_grad_is_differentiated():
    def f(x):
        return x.sin() * 2

    def both(fn):
        x = torch.linspace(-1, 1, 4, dtype=D, requires_grad=True)
        v = torch.ones(4, dtype=D, requires_grad=True)
        (g,) = torch.autograd.grad(fn(x), x, v * x, create_graph=True)
        return torch.autograd.grad(g.sum(), (x, v))

    for got, expected in zip(both(thunder.jit(f)), both(f)):
        torch.testing.assert_close(got, expected)


def test_an_input_written_before_the_double_backward_raises_as_in_eager():
    def f(y):
        return (y.exp() * y).sum()

    x = torch.randn(3, dtype=D, requires_grad=True)
    y = x * 1
    out = f(y)
    with torch.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        torch.autograd.grad(out, x, create_graph=True)  # eager raises: y is saved
    y = x * 1
    out = thunder.jit(f)(y)
    with torch.no_grad():
        y.add_(1)
    with pytest.raises(SavedValueOverwrittenError):
        torch.autograd.grad(out, x, create_graph=True)
