"""Training steps through thunder's backward traces against eager: the MLP, the GPT-style
model, the small CNN (train mode, BatchNorm) and the transformers GPT-2 of the tests; loss
and every parameter's gradient, then several optimizer steps."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
import torch.nn.functional as F
from support.checks import assert_not_recorded_by_torch, no_proxies
from support.models import GPT, MLP, Block, SmallCNN
from support.tiny_gpt2 import tiny_gpt2_config

import thunder
from thunder.core.verify import verify


def _compare_grads(model, ref, rtol=1e-5, atol=1e-5) -> None:
    for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        assert (p.grad is None) == (q.grad is None), name
        if p.grad is not None:
            torch.testing.assert_close(
                p.grad, q.grad, rtol=rtol, atol=atol, msg=lambda m, n=name: f"{n}: {m}"
            )


def _train(model, make_batch, loss_fn, steps: int = 4, lr: float = 1e-2, tol: float = 1e-5):
    """``steps`` SGD (momentum) steps of ``model`` jitted and of an eager copy: the same
    losses, the same gradients at every step, the same parameters after. (Not Adam: it
    scales a gradient that is zero up to rounding, such as an attention key bias's, to a
    full step, so rounding differences would decide the comparison.)"""
    ref = copy.deepcopy(model)
    jm = thunder.jit(model)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=lr, momentum=0.9)
    for step in range(steps):
        inputs, target = make_batch(step)
        opt.zero_grad(set_to_none=True)
        ref_opt.zero_grad(set_to_none=True)
        out = jm(*inputs)
        loss = loss_fn(out, target)
        ref_loss = loss_fn(ref(*inputs), target)
        torch.testing.assert_close(loss, ref_loss, rtol=tol, atol=tol)
        loss.backward()
        ref_loss.backward()
        _compare_grads(model, ref, tol, tol)
        opt.step()
        ref_opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=tol, atol=tol)
    assert thunder.compile_stats(jm).cache_misses == 1  # every step reuses the first compilation
    backward = thunder.last_backward_traces(jm)
    assert backward, "the model's gradients come from a backward trace"
    for trace in thunder.last_traces(jm) + backward:
        verify(trace)
    return jm


def _logits_loss(out, target):
    return F.cross_entropy(out.flatten(0, -2), target.flatten())


def test_mlp_training_steps():
    torch.manual_seed(0)
    jm = _train(MLP(d=64), lambda i: ((torch.randn(16, 64),), torch.randn(16, 64)), F.mse_loss)
    out = jm(torch.randn(2, 64))
    assert_not_recorded_by_torch([out], list(jm._model.parameters()))


def test_gpt_block_training_steps():
    torch.manual_seed(0)
    _train(Block(), lambda i: ((torch.randn(2, 8, 32),), torch.randn(2, 8, 32)), F.mse_loss)


def test_gpt_model_training_steps():
    torch.manual_seed(0)
    batch = lambda i: ((torch.randint(0, 50, (2, 16)),), torch.randint(0, 50, (2, 16)))  # noqa: E731
    _train(GPT(ctx=16), batch, _logits_loss)


def test_small_cnn_training_steps_in_train_mode():
    torch.manual_seed(0)
    model = SmallCNN().train()
    ref_stats = copy.deepcopy(model.bn1)
    batch = lambda i: ((torch.randn(4, 3, 16, 16),), torch.randint(0, 10, (4,)))  # noqa: E731
    jm = _train(model, batch, F.cross_entropy, tol=1e-4)
    # the BatchNorm's running statistics moved as in eager (four steps)
    assert model.bn1.num_batches_tracked == 4
    assert not torch.equal(model.bn1.running_mean, ref_stats.running_mean)
    text = str(thunder.last_backward_traces(jm)[-1])
    assert "torch.ops.aten.convolution_backward" in text or "torchex.convolution_backward" in text


def test_transformers_gpt2_training_steps():
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    cfg = tiny_gpt2_config(transformers, dropout=False)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg).train()
    ref = copy.deepcopy(model)
    jm = thunder.jit(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, :3] = 0  # left padding
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            ids = torch.randint(0, 100, (2, 8))
            opt.zero_grad()
            ref_opt.zero_grad()
            loss = jm(ids, attention_mask=mask, labels=ids, use_cache=False).loss
            ref_loss = ref(ids, attention_mask=mask, labels=ids, use_cache=False).loss
            torch.testing.assert_close(loss, ref_loss)
            loss.backward()
            ref_loss.backward()
            _compare_grads(model, ref, 1e-4, 1e-5)
            opt.step()
            ref_opt.step()
    assert thunder.compile_stats(jm).cache_misses == 1
    assert thunder.last_backward_traces(jm)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_layer_norm_keeps_its_statistics_for_the_backward_as_eager_does(dtype):
    # eager's autograd saves native_layer_norm's mean and 1/std; a backward that normalised
    # the input again to get them made a layer norm training step twice as slow
    ln = torch.nn.LayerNorm(16).to(dtype)
    ref = copy.deepcopy(ln)
    x = torch.randn(4, 16, dtype=dtype, requires_grad=True)
    jln = thunder.jit(ln)
    out = jln(x)
    out.pow(2).sum().backward()
    xr = x.detach().clone().requires_grad_()
    ref(xr).pow(2).sum().backward()
    torch.testing.assert_close(x.grad, xr.grad)
    _compare_grads(ln, ref, 1e-5, 1e-6)
    forward, backward = thunder.last_traces(jln)[-1], thunder.last_backward_traces(jln)[-1]

    def norms(trace):
        return [b.sym.id for b in trace.bound_symbols if "layer_norm" in b.sym.id]

    assert norms(forward) == ["torch.ops.aten.native_layer_norm.default"]
    assert norms(backward) == ["torch.ops.aten.native_layer_norm_backward.default"]
    # without a gradient the forward stays F.layer_norm
    with torch.no_grad():
        jln(x)
    assert norms(thunder.last_traces(jln)[-1]) == ["torch.nn.functional.layer_norm"]


class TwoHeads(torch.nn.Module):
    """A shared trunk and two heads; each step's loss uses one of them."""

    def __init__(self):
        super().__init__()
        self.trunk = torch.nn.Linear(8, 16)
        self.head_a = torch.nn.Linear(16, 4)
        self.head_b = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.trunk(x))
        return self.head_a(h), self.head_b(h), h.sum()


@pytest.mark.parametrize("executors", [None, ["torchcompile"]])
def test_parameters_that_reach_only_outputs_left_out_of_the_loss_get_no_gradient(executors):
    """Eager leaves ``.grad`` None there (zeros would make AdamW decay and move the unused
    head): the gradients, then AdamW steps with weight decay, against eager."""
    torch.manual_seed(0)
    model = TwoHeads()
    ref = copy.deepcopy(model)
    jm = thunder.jit(model, **({"executors": executors} if executors else {}))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.1)
    for step, use in enumerate(["a", "a", "b", "both", "sum"]):
        x = torch.randn(5, 8, generator=torch.Generator().manual_seed(step))
        for o, fn in ((opt, jm), (ref_opt, ref)):
            o.zero_grad(set_to_none=True)
            a, b, s = fn(x)
            loss = {"a": a.square().mean(), "b": b.abs().mean(), "both": (a * b).mean(), "sum": s}[use]
            loss.backward()
        _compare_grads(model, ref)
        opt.step()
        ref_opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q)
    assert model.head_b.weight.grad is None  # the last loss reached only the trunk


def test_an_output_left_out_of_the_loss_gives_none_also_through_autograd_grad():
    torch.manual_seed(0)
    model = TwoHeads()
    jm = thunder.jit(model)
    a, b, _ = jm(torch.randn(3, 8))
    params = [model.head_a.weight, model.head_b.weight, model.trunk.weight]
    ga, gb, gt = torch.autograd.grad(a.sum(), params, allow_unused=True)
    assert ga is not None and gb is None and gt is not None


def test_gpt2_with_eager_attention_trains_over_calls_that_change_state_and_record_activations():
    """transformers GPT-2 with its eager attention (``torch.matmul`` of 4-dim q, k and v: the
    products that keep their 3-dim operands for the backward), over calls that switch between
    training and eval and under a forward hook that appends each block's attention output to a
    list: losses, gradients, parameters after SGD and the recorded activations are eager's on
    every call, and neither the model nor the list holds a proxy afterwards."""
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    cfg = tiny_gpt2_config(transformers, dropout=False)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg).train()
    ref = copy.deepcopy(model)
    records, ref_records = [], []
    model.transformer.h[0].attn.register_forward_hook(lambda m, a, out: records.append(out[0]))
    ref.transformer.h[0].attn.register_forward_hook(lambda m, a, out: ref_records.append(out[0]))
    jm = thunder.jit(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in range(4):
            ids = torch.randint(0, 100, (2, 8))
            training = step != 2
            model.train(training)
            ref.train(training)
            loss = jm(ids, labels=ids, use_cache=False).loss
            ref_loss = ref(ids, labels=ids, use_cache=False).loss
            torch.testing.assert_close(loss, ref_loss)
            torch.testing.assert_close(records[-1], ref_records[-1])
            if training:
                opt.zero_grad()
                ref_opt.zero_grad()
                loss.backward()
                ref_loss.backward()
                _compare_grads(model, ref, 1e-4, 1e-5)
                opt.step()
                ref_opt.step()
    assert len(records) == len(ref_records) == 4
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)
    assert no_proxies(model) and no_proxies(records)
    assert all(type(r) is torch.Tensor for r in records)
    forwards = [str(t) for t in thunder.last_traces(jm)]
    assert any("torchex.batched_matmul" in t for t in forwards)
