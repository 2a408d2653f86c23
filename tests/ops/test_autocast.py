"""``torch.autocast`` around a compiled call or inside the function: each op gets eager's
dtype (the casts are in the trace, ``thunder/ops/autocast.py``), the values are eager's
within bf16 tolerance, training follows eager's, and the autocast state is part of the cache
key (a prologue check)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import thunder

BF16 = {"atol": 2e-2, "rtol": 2e-2}


def _autocast():
    return torch.autocast("cpu", dtype=torch.bfloat16)


def _x(*shape):
    return torch.randn(*shape)


# (name, function, inputs): ops from each of eager's lists and from none, on float32 inputs
# (and on a bf16 one where the op's list decides what happens to it)
OPS = [
    ("linear", lambda x, w: F.linear(x, w), lambda: (_x(4, 8), _x(6, 8))),
    ("matmul", lambda x, w: x @ w, lambda: (_x(4, 8), _x(8, 3))),
    ("mm", torch.mm, lambda: (_x(4, 8), _x(8, 3))),
    ("bmm", torch.bmm, lambda: (_x(2, 4, 8), _x(2, 8, 3))),
    ("baddbmm", torch.baddbmm, lambda: (_x(2, 4, 3), _x(2, 4, 8), _x(2, 8, 3))),
    ("addmm", torch.addmm, lambda: (_x(4, 3), _x(4, 8), _x(8, 3))),
    ("einsum", lambda a, b: torch.einsum("ij,jk->ik", a, b), lambda: (_x(4, 8), _x(8, 3))),
    ("conv2d", F.conv2d, lambda: (_x(1, 2, 6, 6), _x(3, 2, 3, 3))),
    ("sdpa", F.scaled_dot_product_attention, lambda: (_x(1, 2, 4, 8), _x(1, 2, 4, 8), _x(1, 2, 4, 8))),
    ("mse_loss on bf16", lambda a, b: F.mse_loss(a.bfloat16(), b), lambda: (_x(4, 8), _x(4, 8))),
    (
        "cross_entropy on bf16",
        lambda a, t: F.cross_entropy(a.bfloat16(), t),
        lambda: (_x(4, 5), torch.tensor([0, 1, 4, 2])),
    ),
    ("l1_loss", F.l1_loss, lambda: (_x(4, 8), _x(4, 8))),
    ("prod on bf16", lambda a: a.bfloat16().prod(-1), lambda: (_x(4, 3),)),
    ("cat", lambda a, b: torch.cat([a.bfloat16(), b], 0), lambda: (_x(2, 3), _x(2, 3))),
    ("stack of bf16", lambda a, b: torch.stack([a.bfloat16(), b.bfloat16()]), lambda: (_x(2, 3), _x(2, 3))),
    ("softmax on bf16 (no list)", lambda a: torch.softmax(a.bfloat16(), -1), lambda: (_x(4, 8),)),
    ("layer_norm on bf16", lambda a, w: F.layer_norm(a.bfloat16(), (8,), w), lambda: (_x(4, 8), _x(8))),
    ("float64 stays", lambda a, b: a.double() @ b.double(), lambda: (_x(4, 8), _x(8, 3))),
    ("add of bf16 and f32", lambda a, b: a.bfloat16() + b, lambda: (_x(4, 8), _x(4, 8))),
]


@pytest.mark.parametrize("fn, make", [(f, m) for _, f, m in OPS], ids=[n for n, _, _ in OPS])
def test_each_op_has_eagers_dtype_and_value_under_cpu_autocast(fn, make):
    args = make()
    with _autocast():
        expected = fn(*args)
        got = thunder.jit(fn)(*args)
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, **BF16)


def test_the_trace_shows_the_casts_and_the_state_is_a_prologue_check():
    def f(x, w):
        return F.linear(x, w)

    jf = thunder.jit(f)
    x, w = _x(4, 8), _x(6, 8)
    with _autocast():
        assert jf(x, w).dtype is torch.bfloat16
    text = str(thunder.last_traces(jf)[0])
    assert "ltorch.to(x, torch.bfloat16)" in text and "ltorch.to(w, torch.bfloat16)" in text
    assert "check_autocast((('cpu', torch.bfloat16),))" in str(thunder.last_prologue_traces(jf)[-1])
    assert jf(x, w).dtype is torch.float32  # autocast off: another entry
    with torch.autocast("cpu", dtype=torch.float16):
        assert jf(x, w).dtype is torch.float16
    with _autocast():
        assert jf(x, w).dtype is torch.bfloat16
    stats = thunder.compile_stats(jf)
    assert (stats.cache_misses, stats.cache_hits) == (3, 1)


def test_autocast_inside_the_function():
    def f(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ w
            z = torch.cat([y, x[:, :3]], 1)
        return y, z, y.float().sin()

    x, w = _x(4, 8), _x(8, 3)
    expected, got = f(x, w), thunder.jit(f)(x, w)
    assert [g.dtype for g in got] == [e.dtype for e in expected]
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, **BF16)


def test_a_backward_called_inside_autocast_runs_thunders_traced_dtypes():
    def f(x, w):
        return (x.exp() @ w).sum()

    x, w = _x(4, 8), _x(8, 3).requires_grad_()
    thunder.jit(f)(x, w).backward()
    with _autocast():
        w2 = w.detach().clone().requires_grad_()
        thunder.jit(f)(x, w2).backward()  # traced under autocast: the cast of w is differentiated
    assert w.grad.dtype is w2.grad.dtype is torch.float32
    torch.testing.assert_close(w2.grad, w.grad, **BF16)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, x, target):
        return F.cross_entropy(self.fc2(F.gelu(self.fc1(x))), target)


class Block(nn.Module):
    """A pre-norm transformer block: attention (scaled_dot_product_attention) and an MLP."""

    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x, target):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (a.view(b, t, self.heads, d // self.heads).transpose(1, 2) for a in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        x = x + self.out(F.gelu(self.fc(self.ln2(x))))
        return F.mse_loss(x, target)


@pytest.mark.parametrize(
    "make, inputs",
    [
        (MLP, lambda: (torch.randn(8, 16), torch.randint(0, 4, (8,)))),
        (Block, lambda: (torch.randn(2, 5, 16), torch.randn(2, 5, 16))),
    ],
    ids=["mlp", "transformer block"],
)
def test_an_autocast_training_loop_follows_eager(make, inputs):
    torch.manual_seed(0)
    eager = make()
    compiled = make()
    compiled.load_state_dict(eager.state_dict())
    jm = thunder.jit(compiled)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (eager, compiled)]
    for _ in range(3):
        x, target = inputs()
        losses = []
        for model, opt in zip((eager, jm), opts):
            opt.zero_grad()
            with _autocast():
                loss = model(x, target)
            loss.backward()
            opt.step()
            losses.append(loss)
        assert losses[1].dtype == losses[0].dtype
        torch.testing.assert_close(losses[1], losses[0], **BF16)
    for (name, p), q in zip(eager.named_parameters(), compiled.parameters()):
        assert q.grad.dtype == p.grad.dtype, name
        torch.testing.assert_close(q, p, **BF16, msg=name)
    assert thunder.compile_stats(jm).cache_misses == 1


def test_a_gradient_penalty_under_autocast_follows_eager():
    def critic(x, w):
        return torch.tanh(x @ w).sum()

    def penalty(fn, x, w):
        x = x.clone().requires_grad_()
        with _autocast():
            (g,) = torch.autograd.grad(fn(x, w), x, create_graph=True)
            loss = (g.float().norm() - 1) ** 2
        return torch.autograd.grad(loss, w)[0]

    x, w = _x(4, 8), _x(8, 3).requires_grad_()
    got, expected = penalty(thunder.jit(critic), x, w), penalty(critic, x, w)
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, **BF16)
