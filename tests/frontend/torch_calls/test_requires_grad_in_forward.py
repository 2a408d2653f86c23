"""``requires_grad_()`` / ``t.requires_grad = True`` inside the compiled function, as
transformers' gradient checkpointing does (a hook on the input embeddings, a T5 position
bias): the value becomes a leaf that requires grad, the ops after it are differentiable,
and no gradient flows past it. Against eager: outputs, ``requires_grad`` of the results,
every parameter's gradient; the misuses eager refuses raise here too.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import thunder
from thunder.core.errors import UnsupportedOpError


class FrozenTrunk(nn.Module):
    """A frozen embedding whose output is made to require grad (PEFT with checkpointing),
    a bias made from zeros that requires grad (T5), and a trainable head."""

    def __init__(self, how: str):
        super().__init__()
        self.embed = nn.Embedding(10, 8).requires_grad_(False)
        self.frozen = nn.Linear(8, 8).requires_grad_(False)
        self.head = nn.Linear(8, 3)
        self.how = how

    def forward(self, ids):
        h = self.frozen(self.embed(ids))
        if self.how == "method":
            h.requires_grad_()
        elif self.how == "setattr":
            h.requires_grad = True
        bias = torch.zeros(8)
        bias.requires_grad = True
        return self.head(torch.tanh(h + bias)), h.requires_grad


@pytest.mark.parametrize("how", ["method", "setattr", "neither"])
def test_a_value_made_to_require_grad_against_eager(how):
    torch.manual_seed(0)
    eager = FrozenTrunk(how)
    model = copy.deepcopy(eager)
    jm = thunder.jit(model)
    ids = torch.randint(0, 10, (2, 5))
    for _ in range(2):
        (got, got_flag), (want, want_flag) = jm(ids), eager(ids)
        torch.testing.assert_close(got, want)
        assert got_flag == want_flag and got.requires_grad == want.requires_grad
        got.square().sum().backward()
        want.square().sum().backward()
        for p, q in zip(model.parameters(), eager.parameters()):
            assert (p.grad is None) == (q.grad is None)
            if p.grad is not None:
                torch.testing.assert_close(p.grad, q.grad)


def test_only_the_value_made_to_require_grad_makes_the_result_differentiable():
    def f(x):
        y = x * 2
        y.requires_grad_(True)
        return y.sin(), (x * 3).sin()

    a, b = thunder.jit(f)(torch.randn(3))
    assert a.requires_grad and not b.requires_grad
    a.sum().backward()  # nothing to accumulate into: the gradient stops at y, as in eager


def test_misuses_raise_as_in_eager_and_leave_the_input_as_it_was():
    w = torch.randn(3, requires_grad=True)

    def unset(x):
        y = x * w
        y.requires_grad_(False)
        return y

    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf variables"):
        unset(torch.randn(3))  # eager
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf variables"):
        thunder.jit(unset)(torch.randn(3))

    def on_input(x):
        x.requires_grad_()
        return x * 2

    x = torch.randn(3)
    with pytest.raises(UnsupportedOpError, match="an input of the compiled function"):
        thunder.jit(on_input)(x)
    assert not x.requires_grad

    def freeze(x):
        w.requires_grad_(False)  # a parameter frozen inside: the caller's tensor
        return x * w

    with pytest.raises(UnsupportedOpError, match=r"requires_grad_\(False\) on .*an input of the compiled"):
        thunder.jit(freeze)(torch.randn(3))
    assert w.requires_grad

    def on_ints(x):
        i = x.long()
        i.requires_grad_()
        return i

    with pytest.raises(RuntimeError, match="floating point and complex dtype"):
        thunder.jit(on_ints)(torch.randn(3))


def test_transformers_gradient_checkpointing_training_step_matches_eager():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    eager = transformers.BertForMaskedLM(cfg).train()
    eager.activation_checkpointing_enable()  # registers the hook that calls requires_grad_(True)
    model = copy.deepcopy(eager)
    jm = thunder.jit(model)
    ids = torch.randint(0, 64, (2, 8))
    for _ in range(2):
        got, want = jm(input_ids=ids, labels=ids).loss, eager(input_ids=ids, labels=ids).loss
        torch.testing.assert_close(got, want)
        got.backward()
        want.backward()
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_factories_with_requires_grad_make_leaves_as_in_eager():
    def f(x):
        w = torch.ones(3, requires_grad=True)
        b = torch.zeros(3, requires_grad=True)
        t = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        return (x * w + b * t).sum()

    for x in (torch.randn(3), torch.randn(3, requires_grad=True)):
        want, got = f(x), thunder.jit(f)(x)
        assert got.requires_grad == want.requires_grad is True
        torch.testing.assert_close(got, want)
        got.backward()  # (eager's leaves get gradients nobody can read; thunder's stop there)
        if x.requires_grad:
            torch.testing.assert_close(x.grad, torch.ones(3))
    with pytest.raises(RuntimeError, match="floating point and complex dtype"):
        thunder.jit(lambda x: x + torch.zeros(3, dtype=torch.long, requires_grad=True))(torch.randn(3))
