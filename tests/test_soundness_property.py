"""Random sequences of calls that change, between calls, the input's shape, dtype and
requires_grad, grad mode, the module's training mode and attributes, and globals: the
compiled module always gives eager's values (outputs, gradients, running statistics)."""

from __future__ import annotations

import copy
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
