"""``thunder.jit(obj.method)``: the object is an input, read and checked on every call and
written back (``thunder/frontend/stand_ins/bound_self.py``). Optimizer steps against eager over
several steps with a learning-rate schedule: the parameters and every state tensor (momentum
buffers, Adam's moments and step counts, created on the first step as eager creates them)."""

from __future__ import annotations

import copy

import pytest
import torch
from support.checks import no_proxies
from torch import nn

import thunder

OPTIMIZERS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "sgd-momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "sgd-nesterov-wd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "sgd-momentum-loop": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=False),
    "adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "adam-loop": lambda p: torch.optim.Adam(p, lr=0.01, foreach=False),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1),
    "adamw-loop-amsgrad": lambda p: torch.optim.AdamW(p, lr=0.01, foreach=False, amsgrad=True),
}
SCHEDULES = {
    "none": None,
    "steplr": lambda o: torch.optim.lr_scheduler.StepLR(o, 2, 0.5),
    "cosine": lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 5),
}


def _state_tensors(opt) -> list[torch.Tensor]:
    return [
        v for p in opt.param_groups[0]["params"] for v in opt.state[p].values() if isinstance(v, torch.Tensor)
    ]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_an_optimizer_step_matches_eager_over_five_steps(name, schedule):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    eager_model = copy.deepcopy(model)
    opt, eager_opt = OPTIMIZERS[name](model.parameters()), OPTIMIZERS[name](eager_model.parameters())
    make = SCHEDULES[schedule]
    sched, eager_sched = (make(opt), make(eager_opt)) if make else (None, None)
    step = thunder.jit(opt.step)
    for i in range(5):
        x = torch.randn(6, 4)
        for m, o in ((model, opt), (eager_model, eager_opt)):
            o.zero_grad()
            m(x).pow(2).sum().backward()
        step()
        eager_opt.step()
        if sched is not None:
            sched.step()
            eager_sched.step()
        for a, b in zip(model.parameters(), eager_model.parameters()):
            torch.testing.assert_close(a, b, msg=lambda m, i=i: f"step {i}: {m}")
        got, expected = _state_tensors(opt), _state_tensors(eager_opt)
        assert len(got) == len(expected), f"step {i}: {len(got)} state tensors, eager has {len(expected)}"
        for a, b in zip(got, expected):
            assert type(a) is torch.Tensor
            torch.testing.assert_close(a, b)
        assert opt.param_groups[0]["lr"] == eager_opt.param_groups[0]["lr"]
        assert no_proxies(vars(opt))
    # the state made on the first step, then the same program; a schedule's first new rate makes
    # the rate a value the program reads (one more trace), and every later rate hits it
    assert thunder.compile_stats(step).cache_misses <= (2 if schedule == "none" else 3)


@pytest.mark.parametrize("name", ["sgd-momentum", "adam", "adamw-loop-amsgrad"])
def test_twenty_steps_of_a_cosine_schedule_compile_at_most_three_times(name):
    torch.manual_seed(0)
    model = nn.Linear(5, 3)
    eager_model = copy.deepcopy(model)
    opt, eager_opt = OPTIMIZERS[name](model.parameters()), OPTIMIZERS[name](eager_model.parameters())
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 20)
    eager_sched = torch.optim.lr_scheduler.CosineAnnealingLR(eager_opt, 20)
    step = thunder.jit(opt.step)
    for i in range(20):
        x = torch.randn(4, 5)
        for m, o in ((model, opt), (eager_model, eager_opt)):
            o.zero_grad()
            m(x).pow(2).sum().backward()
        step()
        eager_opt.step()
        sched.step()
        eager_sched.step()
        for a, b in zip(model.parameters(), eager_model.parameters()):
            torch.testing.assert_close(a, b, msg=lambda m, i=i: f"step {i}: {m}")
        assert type(opt.param_groups[0]["lr"]) is float and no_proxies(vars(opt))
    assert thunder.compile_stats(step).cache_misses <= 3


def test_a_learning_rate_set_by_hand_between_steps_is_read():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    eager_model = copy.deepcopy(model)
    opt, eager_opt = (
        torch.optim.SGD(model.parameters(), lr=0.1),
        torch.optim.SGD(eager_model.parameters(), lr=0.1),
    )
    step = thunder.jit(opt.step)
    for i in range(3):
        x = torch.randn(4, 3)
        for m, o in ((model, opt), (eager_model, eager_opt)):
            o.zero_grad()
            m(x).sum().backward()
            o.param_groups[0]["lr"] = 0.1 / (i + 1)
        step()
        eager_opt.step()
        for a, b in zip(model.parameters(), eager_model.parameters()):
            torch.testing.assert_close(a, b)


def test_a_method_of_a_plain_object_reads_its_attributes_on_every_call():
    class Scaler:
        def __init__(self):
            self.scale = 2.0
            self.extra = {"k": 1.0}
            self.calls = 0

        def apply(self, x):
            self.calls += 1
            return x * self.scale * self.extra["k"]

    s = Scaler()
    jfn = thunder.jit(s.apply)
    x = torch.ones(2)
    torch.testing.assert_close(jfn(x), x * 2)
    s.scale = 3.0
    torch.testing.assert_close(jfn(x), x * 3)
    s.extra["k"] = 2.0
    torch.testing.assert_close(jfn(x), x * 6)
    assert s.calls == 3 and no_proxies(vars(s))
