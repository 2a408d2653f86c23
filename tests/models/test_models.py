"""Whole models against eager: an MLP module, a small GPT-style block and model, a small CNN
(the models are in ``tests/support/models.py``)."""

from __future__ import annotations

import torch
from support.models import GPT, MLP, Block, SmallCNN
from torch import nn

import thunder
from thunder.core.verify import verify


def _check(model, *inputs):
    jm = thunder.jit(model)
    torch.testing.assert_close(jm(*inputs), model(*inputs), rtol=1e-5, atol=1e-5)
    for trace in thunder.last_traces(jm):
        verify(trace)
    # the decomposition alone (prims only, as printed before claiming) gives the same values
    first = thunder.last_traces(jm)[0]
    prologue = thunder.last_prologue_traces(jm)[-1].python_callable()
    cargs, _ = prologue(*inputs)
    torch.testing.assert_close(first.python_callable()(*cargs)[0], model(*inputs), rtol=1e-5, atol=1e-5)
    return jm


def test_mlp_module():
    jm = _check(MLP(), torch.randn(8, 32))
    names = [p.name for p in thunder.last_traces(jm)[-1].args]
    assert names[0] == "x" and "t_layers_0_weight" in names and "t_layers_3_bias" in names


def test_mlp_under_no_grad_and_with_grad():
    m = MLP()
    jm = thunder.jit(m)
    x = torch.randn(4, 32)
    with torch.no_grad():
        out = jm(x)
    assert not out.requires_grad
    out = jm(x)  # grad mode changed: retrace; torch's autograd runs through the torch ops
    assert out.requires_grad
    out.sum().backward()
    ref = MLP()
    ref.load_state_dict(m.state_dict())
    ref(x).sum().backward()
    torch.testing.assert_close(m.layers[0].weight.grad, ref.layers[0].weight.grad)


def test_gpt_block():
    _check(Block(), torch.randn(2, 8, 32))


def test_gpt_model():
    jm = _check(GPT(), torch.randint(0, 50, (2, 8)))
    # the trace reads by module path
    text = str(thunder.last_prologue_traces(jm)[-1])
    assert "t_blocks_0_attn_qkv_weight" in text


def test_module_parameters_updated_in_place_are_seen():
    m = MLP(layers=1)
    jm = thunder.jit(m)
    x = torch.randn(2, 32)
    jm(x)
    with torch.no_grad():
        m.layers[0].weight.mul_(2)
    torch.testing.assert_close(jm(x), m(x))
    assert thunder.compile_stats(jm).cache_hits == 1


def test_prologue_and_epilogue_traces_verify():
    m = GPT()
    jm = thunder.jit(m)
    jm(torch.randint(0, 50, (2, 8)))
    for trace in thunder.last_prologue_traces(jm) + thunder.last_epilogue_traces(jm):
        verify(trace)


def test_small_cnn_eval_and_train():
    m = SmallCNN().eval()
    _check(m, torch.randn(2, 3, 16, 16))
    m.train()  # batch statistics, and the running statistics are written back as in eager
    ref = SmallCNN()
    ref.load_state_dict(m.state_dict())
    x = torch.randn(2, 3, 16, 16)
    torch.testing.assert_close(thunder.jit(m)(x), ref(x), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(m.bn1.running_mean, ref.bn1.running_mean)
    torch.testing.assert_close(m.bn1.running_var, ref.bn1.running_var)
    assert m.bn1.num_batches_tracked == ref.bn1.num_batches_tracked


def test_python_level_torch_functions_are_traced_through():
    # nn.MultiheadAttention calls F.multi_head_attention_forward, a Python function that
    # thunder has no op for: its body is traced, so its torch calls are recorded
    enc = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).eval()
    x = torch.randn(2, 5, 32)
    jm = _check(enc, x)
    ids = {b.sym.id for b in thunder.last_traces(jm)[0].bound_symbols}
    assert {"ltorch.linear", "ltorch.scaled_dot_product_attention"} <= ids
