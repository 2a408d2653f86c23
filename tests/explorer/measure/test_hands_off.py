"""The explorer's hands off: every measurement leaves the user's state bit for bit as it was.

A module with a BatchNorm (running statistics, ``num_batches_tracked``), dropout (the RNG), a
Python counter (``self.calls += 1``), a list it appends to and an in-place write into its input
is measured by ``explorer.memory``, ``explorer.compare``, the line timings and ``save_rank``;
its inputs, parameters, buffers, gradients, attributes, the RNG states of torch, ``random`` and
numpy are compared before and after, and no thunder proxy may be reachable from them.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
import torch.nn as nn

import explorer
import thunder
from explorer.measure.hands_off import RngState, Snapshot
from explorer.measure.runner import measure
from thunder.core.proxies import Proxy


class Stateful(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.bn = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.5)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        x.add_(1)  # an in-place write into the caller's tensor
        return self.drop(self.bn(self.fc(x))).sum(1)


def _stateful():
    torch.manual_seed(0)
    m = Stateful()
    jm = thunder.jit(m)
    x = torch.randn(4, 8)
    for _ in range(2):  # (the second call makes the counter a number of the trace, not a constant)
        jm(x).sum().backward()
    return m, jm, x


def _state(m: nn.Module, x: torch.Tensor) -> dict:
    """Everything a measurement could change, as copies (tensors with their identity)."""
    tensors = {name: (t, t.detach().clone()) for name, t in m.state_dict(keep_vars=True).items()}
    grads = {name: (p.grad, p.grad.clone()) for name, p in m.named_parameters()}
    return {
        "x": (x, x.clone(), x.requires_grad),
        "tensors": tensors,
        "grads": grads,
        "attributes": {name: dict(sub.__dict__) for name, sub in m.named_modules()},
        "calls": m.calls,
        "training": [sub.training for sub in m.modules()],
        "torch rng": torch.get_rng_state(),
        "python rng": random.getstate(),
        "numpy rng": np.random.get_state()[1].copy(),
    }


def _assert_same(m: nn.Module, x: torch.Tensor, before: dict) -> None:
    after = _state(m, x)
    assert after["x"][0] is before["x"][0] and torch.equal(x, before["x"][1]), "the input was written"
    assert after["tensors"].keys() == before["tensors"].keys()
    for name, (t, value) in before["tensors"].items():
        live = after["tensors"][name][0]
        assert live is t, f"{name} was replaced"
        assert torch.equal(live, value), f"{name} was written"
    for name, (g, value) in before["grads"].items():
        assert after["grads"][name][0] is g and torch.equal(g, value), f"{name}.grad changed"
    for name, attrs in before["attributes"].items():
        live = after["attributes"][name]
        assert live.keys() == attrs.keys(), f"attributes of {name or 'the module'} added or removed"
        assert all(live[k] is v for k, v in attrs.items()), f"attributes of {name or 'the module'} rebound"
    assert after["calls"] == before["calls"] and after["training"] == before["training"]
    assert torch.equal(after["torch rng"], before["torch rng"]), "torch's RNG moved"
    assert after["python rng"] == before["python rng"], "random's RNG moved"
    assert np.array_equal(after["numpy rng"], before["numpy rng"]), "numpy's RNG moved"
    assert not _proxies((m, x)), "a thunder proxy is left in the user's objects"


def _proxies(root) -> list[str]:
    """Paths to thunder proxies reachable from ``root`` (modules' dicts, containers)."""
    found, stack, seen = [], [("", root)], set()
    while stack:
        path, o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        if isinstance(o, Proxy):
            found.append(path)
        elif isinstance(o, (list, tuple)):
            stack += [(f"{path}[{i}]", v) for i, v in enumerate(o)]
        elif isinstance(o, dict):
            stack += [(f"{path}[{k!r}]", v) for k, v in o.items()]
        elif isinstance(o, nn.Module):
            stack.append((f"{path}.__dict__", o.__dict__))
    return found


def _memory(jm, x, tmp_path):
    prof = explorer.memory(jm, args=(x,))
    assert prof.measured  # it ran
    backward = explorer.memory(jm, "backward", args=(x,))
    assert backward.measured


def _compare(jm, x, tmp_path):
    c = explorer.compare(jm, (x,), executors=[["torch"], ["torch"]], repeat=2, warmup=1)
    assert all(r.error is None for r in c.rows), [r.error for r in c.rows]


def _timings(jm, x, tmp_path):
    assert measure(jm, (x,), repeat=2).times["computation"]


def _save_rank(jm, x, tmp_path):
    path = explorer.save_rank(jm, str(tmp_path), args=(x,))
    assert explorer.load_ranks(str(tmp_path))[0].timings["computation"], path


def _explore(jm, x, tmp_path):
    ex = explorer.explore(jm, args=(x,))
    assert ex.model.timings["computation"]


def _timeline(jm, x, tmp_path):
    assert explorer.timeline(jm, x).spans


@pytest.mark.parametrize(
    "run", [_memory, _compare, _timings, _save_rank, _explore, _timeline], ids=lambda f: f.__name__[1:]
)
def test_a_measurement_leaves_the_users_state_as_it_was(run, tmp_path):
    m, jm, x = _stateful()
    random.seed(5)
    np.random.seed(5)
    before = _state(m, x)
    run(jm, x, tmp_path)
    _assert_same(m, x, before)
    # and the user's own next call is the one it would have been: it runs from that state
    y = jm(x)
    assert m.calls == before["calls"] + 1 and int(m.bn.num_batches_tracked) == 3 and y.shape == (4,)


@pytest.mark.parametrize("ask", ["memory", "explore", "timeline"])
def test_asked_just_after_a_counter_moved_the_explorer_runs_the_entry_that_fits(ask):
    # one call compiled for calls == 0; the counter is now 1, which that entry does not take:
    # the explorer compiles one for it (the user's state put back), and never the other
    torch.manual_seed(0)
    m = Stateful()
    jm = thunder.jit(m)
    x = torch.randn(4, 8)
    jm(x).sum().backward()
    before = _state(m, x)
    if ask == "memory":
        assert explorer.memory(jm, args=(x,)).measured
    elif ask == "explore":
        assert explorer.explore(jm, args=(x,)).model.timings["computation"]
    else:
        assert explorer.timeline(jm, x).spans
    _assert_same(m, x, before)
    assert m.calls == 1


COUNT = 0
LOG: list = []


def _counting(x):
    global COUNT
    COUNT += 1
    LOG.append(1)
    x.add_(1)
    return x * 2


def test_a_function_that_writes_its_input_a_list_and_a_global_is_measured_hands_off():
    global COUNT
    COUNT = 0
    LOG.clear()
    jf = thunder.jit(_counting)
    x = torch.zeros(3)
    jf(x)
    jf(x)  # (the second call makes the count a number of the trace, not a constant)
    assert torch.equal(x, torch.full((3,), 2.0)) and LOG == [1, 1] and COUNT == 2
    explorer.memory(jf, args=(x,))
    explorer.compare(jf, (x,), executors=[["torch"]], repeat=1, warmup=0)
    measure(jf, (x,), repeat=1)
    assert torch.equal(x, torch.full((3,), 2.0)), "a measurement wrote the user's input"
    assert LOG == [1, 1], "a measurement left the function's appends in the user's list"
    assert COUNT == 2, "a measurement left the global rebound"


class _Instantiating(dict):  # as transformers' ACT2CLS: reading an item makes a new object
    def __getitem__(self, key):
        return object()


def test_a_dict_subclass_is_saved_and_put_back_as_a_dict():
    table = _Instantiating(gelu=1)
    snap = Snapshot([table])
    dict.__setitem__(table, "relu", 2)
    snap.restore()
    assert dict(dict.items(table)) == {"gelu": 1} and snap.complete


def test_the_snapshot_puts_back_what_a_batchnorm_kernel_writes_without_moving_its_version():
    bn = nn.BatchNorm1d(4)
    snap = Snapshot.of(bn, (torch.randn(3, 4),))
    version, mean = bn.running_mean._version, bn.running_mean.clone()
    bn(torch.randn(3, 4))
    assert bn.running_mean._version == version and not torch.equal(bn.running_mean, mean)
    snap.restore()
    assert torch.equal(bn.running_mean, mean)


def test_a_tensor_nobody_wrote_is_not_written_back():
    # writing it back would move its version and break an autograd graph that saved it
    w = torch.randn(3, requires_grad=True)
    y = w * 2
    loss = (y * y).sum()  # saves y for the backward
    snap = Snapshot([(y,)])
    snap.restore()
    loss.backward()  # raises "modified by an inplace operation" when y was written
    torch.testing.assert_close(w.grad, 8 * w.detach())


def test_the_rng_state_captured_is_the_one_restored():
    torch.manual_seed(1)
    random.seed(1)
    np.random.seed(1)
    state = RngState.capture()
    first = (torch.rand(2), random.random(), np.random.rand())
    state.restore()
    assert (
        torch.equal(torch.rand(2), first[0]) and random.random() == first[1] and np.random.rand() == first[2]
    )
