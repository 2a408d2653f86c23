"""Whole models against eager: an MLP module and a small GPT-style block."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

import thunder
from thunder.core.verify import verify


class MLP(nn.Module):
    def __init__(self, d=32, layers=4):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = F.relu(layer(x))
        return x


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=50, d=32, heads=4, layers=2, ctx=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


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


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.pool(y + self.conv2(y))
        y = F.adaptive_avg_pool2d(y, 1).flatten(1)
        return self.head(y)


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
