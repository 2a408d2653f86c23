"""``.grad`` and autograd hooks inside a compiled function.

An input's ``.grad`` is read as it is when the call begins: None (the prologue checks it stays
None) or a tensor, which is then another input, so a function that updates parameters from
their gradients (an optimizer step) compiles and writes both back. Hooks on tensors inside
the function are refused: the backward runs as one program and would never call them."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import thunder
from thunder.core.errors import UnsupportedOpError


class UsesGrad(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3))

    def forward(self, x):
        return x * self.w if self.w.grad is None else x * self.w.grad


def test_grad_of_a_parameter_read_in_forward_is_the_current_one():
    m = UsesGrad()
    jm = thunder.jit(m)
    x = torch.arange(3.0)
    torch.testing.assert_close(jm(x), m(x))
    assert "check_literal(t_w_grad, None)" in str(thunder.last_prologue_traces(jm)[-1])
    m.w.grad = torch.full((3,), 5.0)
    torch.testing.assert_close(jm(x), m(x))  # it was x * w, silently, before .grad was an input
    m.w.grad = torch.full((3,), -2.0)
    torch.testing.assert_close(jm(x), m(x))
    m.w.grad = None
    torch.testing.assert_close(jm(x), m(x))
    stats = thunder.compile_stats(jm)
    assert (stats.cache_misses, stats.cache_hits) == (2, 2)


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is None:
                continue
            p.add_(p.grad, alpha=-lr)
            p.grad.mul_(0.5)


def test_an_optimizer_step_compiles_and_writes_parameters_and_gradients():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
    m2 = copy.deepcopy(m)
    step = thunder.jit(sgd_step)
    for i in range(4):
        x = torch.randn(5, 4)
        m(x).sum().backward()
        m2(x).sum().backward()
        if i == 2:  # a parameter without a gradient this time: another entry
            m[2].bias.grad = None
            m2[2].bias.grad = None
        sgd_step(list(m.parameters()), 0.1)
        step(list(m2.parameters()), 0.1)
        for a, b in zip(m.parameters(), m2.parameters()):
            assert torch.equal(a, b)
            assert (a.grad is None) == (b.grad is None)
            if a.grad is not None:
                assert torch.equal(a.grad, b.grad)
    assert thunder.compile_stats(step).cache_misses == 2  # every gradient set; one of them None


def test_grad_of_a_tensor_reached_through_an_object_is_read():
    # torch.optim.SGD's own step reaches the parameters through self.param_groups (captured
    # tensors, not arguments): their .grad read None while tracing, and the compiled step
    # changed nothing, silently
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    m2 = copy.deepcopy(m)
    opt, opt2 = torch.optim.SGD(m.parameters(), lr=0.1), torch.optim.SGD(m2.parameters(), lr=0.1)
    step = thunder.jit(opt2.step)
    first = m2[0].weight.detach().clone()
    for _ in range(3):
        x = torch.randn(5, 3)
        for model, o in ((m, opt), (m2, opt2)):
            o.zero_grad()
            model(x).pow(2).sum().backward()
        opt.step()
        step()
        for a, b in zip(m.parameters(), m2.parameters()):
            assert torch.allclose(a, b, atol=1e-6)
    assert not torch.equal(m2[0].weight, first)  # the compiled step did change the parameters


def test_a_bound_method_storing_tensors_in_its_object_writes_real_tensors():
    # SGD with momentum keeps a buffer per parameter in opt.state: the compiled step once left a
    # TensorProxy there, silently; the object is an input now, its new state written back
    torch.manual_seed(0)
    m = nn.Linear(3, 2)
    m2 = copy.deepcopy(m)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    opt2 = torch.optim.SGD(m2.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(4, 3)
    m(x).sum().backward()
    m2(x).sum().backward()
    thunder.jit(opt.step)()
    opt2.step()
    buf = opt.state[m.weight]["momentum_buffer"]
    assert type(buf) is torch.Tensor
    torch.testing.assert_close(buf, opt2.state[m2.weight]["momentum_buffer"])
    torch.testing.assert_close(m.weight, m2.weight)


@pytest.mark.parametrize("hook", ["register_hook", "retain_grad", "register_post_accumulate_grad_hook"])
def test_hooks_on_tensors_inside_are_refused_with_the_line(hook):
    def f(x, w):
        y = x * w
        if hook == "retain_grad":
            y.retain_grad()
        else:
            getattr(y, hook)(lambda g: g * 10)
        return y.sum()

    with pytest.raises(UnsupportedOpError, match=f"torch.Tensor.{hook} inside the compiled function") as e:
        thunder.jit(f)(torch.randn(3), torch.randn(3, requires_grad=True))
    assert "test_grad_reads.py" in str(e.value)


# -- is_leaf and grad_fn: eager's answers -------------------------------------------------------
def _branches(x):
    y = x * 2
    a = y * 3 if not y.is_leaf else y * 4
    b = a + 1 if y.grad_fn is not None else a - 1
    c = b * 5 if x.is_leaf else b * 6
    return c


@pytest.mark.parametrize("grad", [True, False], ids=["grad", "no_grad"])
def test_is_leaf_and_grad_fn_answer_as_eager(grad):
    jfn = thunder.jit(_branches)
    for requires_grad, leaf in ((True, True), (False, True), (True, False), (True, True)):
        base = torch.randn(3, requires_grad=requires_grad)
        x = base if leaf else base * 1  # (a non-leaf input that requires grad)
        with torch.set_grad_enabled(grad):
            torch.testing.assert_close(jfn(x), _branches(x))


def test_a_computed_value_s_grad_fn_has_a_name_and_says_what_it_lacks():
    x = torch.randn(3, requires_grad=True)
    assert thunder.jit(lambda t: (t * 2).grad_fn.name() == "ThunderBackward")(x)
    with pytest.raises(UnsupportedOpError, match="next_functions"):
        thunder.jit(lambda t: (t * 2).grad_fn.next_functions)(x)
