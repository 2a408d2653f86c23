"""Random sequences of calls that change, between calls, the input's shape, dtype and
requires_grad, grad mode, the module's training mode and attributes, and globals: the
compiled module always gives eager's values (outputs, gradients, running statistics). And
random Python side effects inside and between calls: eager's state and prints."""

from __future__ import annotations

import contextlib
import copy
import io
import random

import pytest
import torch
from torch import nn

import thunder

P_SHIFT = 0.0
P_BIAS = torch.zeros(6)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.bn = nn.BatchNorm1d(6)
        self.scale = 1.0
        self.use_tanh = False

    def forward(self, x):
        y = self.bn(self.fc(x)) * self.scale + P_SHIFT + P_BIAS
        return y.tanh() if self.use_tanh else y.relu()


def _changes():
    return [
        ("shape", lambda s: s.update(batch=random.choice([2, 3, 5]))),
        ("dtype", lambda s: s.update(dtype=random.choice([torch.float32, torch.float64]))),
        ("requires_grad", lambda s: s.update(requires_grad=not s["requires_grad"])),
        ("grad mode", lambda s: s.update(grad=not s["grad"])),
        ("training", lambda s: s.update(training=not s["training"])),
        ("scale", lambda s: s.update(scale=random.choice([1.0, 0.5, 2.0, 2]))),
        ("use_tanh", lambda s: s.update(use_tanh=not s["use_tanh"])),
        ("global number", lambda s: s.update(shift=random.choice([0.0, 1.0, -2.5]))),
        ("global tensor", lambda s: s.update(bias=random.choice([0.0, 1.0, 3.0]))),
    ]


@pytest.mark.filterwarnings("ignore:thunder.*compiled")
@pytest.mark.parametrize("seed", range(6))
def test_random_changes_between_calls_match_eager(seed):
    global P_SHIFT, P_BIAS
    random.seed(seed)
    torch.manual_seed(seed)
    m = Net()
    ref = copy.deepcopy(m)
    jm = thunder.jit(m)
    state = dict(
        batch=4, dtype=torch.float32, requires_grad=False, grad=True, training=True, scale=1.0, use_tanh=False
    )
    state.update(shift=0.0, bias=0.0)
    old = P_SHIFT, P_BIAS
    try:
        for _ in range(14):
            what, change = random.choice(_changes())
            change(state)
            for mod in (m, ref):
                mod.train(state["training"])
                mod.scale, mod.use_tanh = state["scale"], state["use_tanh"]
                mod.to(state["dtype"])
            P_SHIFT = state["shift"]
            if float(P_BIAS[0]) != state["bias"]:
                P_BIAS = torch.full((6,), state["bias"])  # rebound, not written
            x = torch.randn(state["batch"], 6, dtype=state["dtype"])
            xs = [x.clone().requires_grad_(state["requires_grad"]) for _ in range(2)]
            with torch.set_grad_enabled(state["grad"]):
                got, want = jm(xs[0]), ref(xs[1])
                torch.testing.assert_close(got, want, msg=lambda s, what=what: f"after changing {what}: {s}")
                if got.requires_grad:
                    got.sum().backward()
                    want.sum().backward()
                    torch.testing.assert_close(m.fc.weight.grad, ref.fc.weight.grad)
                    if state["requires_grad"]:
                        torch.testing.assert_close(xs[0].grad, xs[1].grad)
                    m.zero_grad()
                    ref.zero_grad()
            torch.testing.assert_close(m.bn.running_mean, ref.bn.running_mean)
            assert int(m.bn.num_batches_tracked) == int(ref.bn.num_batches_tracked)
    finally:
        P_SHIFT, P_BIAS = old


def _with_effects():
    """A function with Python side effects on state it closes over, and handles on that state."""
    log, table, seen = [], {}, set()
    n = 0

    def f(x, mode):
        nonlocal n
        if mode == 0:
            log.append(x * 2)
        elif mode == 1:
            table["k"] = x + len(log)
        elif mode == 2:
            n += 1
            seen.add(n % 3)
        elif mode == 3:
            print("mode", mode, x.sum())
        else:
            log.append(n)
            table[n % 2] = x * n
        return x * (n + 1)

    def state():
        return log, table, seen, n

    def set_n(v):
        nonlocal n
        n = v

    return f, state, set_n


def _between(rng):
    """A change the caller makes to the state between calls (drawn once, made on both states)."""
    v = rng.randint(0, 9)
    return rng.choice(
        [
            lambda log, table, seen, set_n: log.append(v),
            lambda log, table, seen, set_n: log.clear(),
            lambda log, table, seen, set_n: table.__setitem__("k", v),
            lambda log, table, seen, set_n: table.clear(),
            lambda log, table, seen, set_n: seen.add(v % 5),
            lambda log, table, seen, set_n: set_n(v % 4),
            lambda log, table, seen, set_n: None,
        ]
    )


def _same_state(a, b) -> None:
    assert type(a) is type(b), (a, b)
    if isinstance(a, torch.Tensor):
        assert type(a) is torch.Tensor  # never a proxy
        torch.testing.assert_close(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same_state(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same_state(x, y)
    else:
        assert a == b


@pytest.mark.filterwarnings("ignore:thunder.*compiled")
@pytest.mark.parametrize("seed", range(4))
def test_random_python_side_effects_match_eager(seed):
    """Appends, dict writes, a nonlocal counter, a set and prints inside the calls, and random
    changes to the same state between them: state, prints and values as in eager, call after call."""
    rng = random.Random(seed)
    fe, state_e, set_e = _with_effects()
    fj, state_j, set_j = _with_effects()
    jf = thunder.jit(fj)
    for step in range(16):
        change = _between(rng)
        change(*state_e()[:3], set_e)
        change(*state_j()[:3], set_j)
        mode = rng.randint(0, 4)
        x = torch.full((2,), float(step))
        out_e, out_j = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out_e):
            want = fe(x, mode)
        with contextlib.redirect_stdout(out_j):
            got = jf(x, mode)
        torch.testing.assert_close(got, want)
        assert out_j.getvalue() == out_e.getvalue()
        _same_state(state_j(), state_e())
