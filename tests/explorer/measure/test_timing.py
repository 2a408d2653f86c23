"""Measured times per BoundSymbol: the final traces run line by line on real inputs."""

from __future__ import annotations

import pytest
import torch

import thunder
from explorer.measure.runner import measure
from explorer.model.compilation import model_of


def test_times_every_line(jfn):
    args = (torch.ones(2, 4), torch.ones(2, 4))
    m = measure(jfn, args, repeat=2)
    final = thunder.last_traces(jfn)[-1]
    assert len(m.times["computation"]) == len(final.bound_symbols)
    assert all(0 <= t < 1 for t in m.times["computation"])
    assert m.device == "cpu" and m.runs == 2 and m.note == ""
    model = m.attach(model_of(jfn))
    ids = {n.id for n in model.series["computation"].final.nodes if "del" not in n.tags}
    assert set(model.timings["computation"]) == ids
    assert set(model.timings["prologue"]) == {n.id for n in model.series["prologue"].final.nodes}
    assert model.timing_device == "cpu"


def test_measuring_a_program_that_writes_its_inputs_leaves_them_as_they_were():
    def fn(x, buf):
        buf.add_(1)
        return x * 2

    jfn = thunder.jit(fn)
    x, buf = torch.ones(3), torch.zeros(3)
    jfn(x, buf)
    assert torch.equal(buf, torch.ones(3))
    m = measure(jfn, (x, buf))
    assert torch.equal(buf, torch.ones(3))  # measuring did not write to the user's tensor
    assert "put back" in m.note and m.times["computation"]


WRITTEN_GLOBAL = torch.zeros(2)


class _Writing(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(2)
        self.last = torch.zeros(2)

    def forward(self, x):
        self.last = x.sum(0)  # an attribute the epilogue sets
        WRITTEN_GLOBAL.add_(1)  # a captured tensor written in place
        return self.bn(x)  # running statistics and num_batches_tracked written


def test_measuring_leaves_module_buffers_attributes_and_globals_as_one_call_did():
    m = _Writing()
    jm = thunder.jit(m)
    x = torch.randn(4, 2)
    jm(x)
    before = (m.bn.running_mean.clone(), int(m.bn.num_batches_tracked), m.last, WRITTEN_GLOBAL.clone())
    assert before[1] == 1
    measured = measure(jm, (x,), repeat=4)
    assert measured.times["computation"] and "put back" in measured.note
    torch.testing.assert_close(m.bn.running_mean, before[0])
    assert int(m.bn.num_batches_tracked) == 1 and m.last is before[2]
    torch.testing.assert_close(WRITTEN_GLOBAL, before[3])


def test_a_prologue_that_rejects_the_inputs_reports_each_line_it_ran(jfn):
    m = measure(jfn, (torch.ones(5), torch.ones(5)))
    prologue = thunder.last_prologue_traces(jfn)[-1]
    times = m.times["prologue"]
    # check_len, check_keys, x = args[0], y = args[1], then check_tensors(_tensors, x, y)
    # rejects x's shape
    failing = prologue.bound_symbols[len(times) - 1]
    assert failing.sym.name == "check_tensors" and failing.args[1].name == "x"
    assert all(0 <= t < 1 for t in times) and "computation" not in m.times
    # (the line of x's own check, as a cache miss's reason names it)
    assert "the prologue rejected the inputs at line 4 (pythonex.check_tensor(x, (2, 4)" in m.note
    assert "expected shape (2, 4), got (5,)" in m.note
    model = m.attach(model_of(jfn))
    assert len(model.timings["prologue"]) == len(times)


def test_times_every_line_of_a_program_with_a_no_grad_block():
    def fn(x):
        y = x * 2
        with torch.no_grad():
            z = y.sin()
        return y + z

    jfn = thunder.jit(fn)
    x = torch.ones(3, requires_grad=True)
    jfn(x)
    final = thunder.last_traces(jfn)[-1]
    assert "with torch.no_grad():" in str(final)
    m = measure(jfn, (x,), repeat=1)
    assert len(m.times["computation"]) == len(final.bound_symbols)
    assert all(0 <= t < 1 for t in m.times["computation"]) and m.note == ""


@pytest.mark.cuda
def test_times_on_cuda():
    def fn(x):
        return (x @ x).relu().sum(-1)

    jfn = thunder.jit(fn)
    x = torch.randn(64, 64, device="cuda")
    jfn(x)
    m = measure(jfn, (x,))
    assert m.device != "cpu" and len(m.times["computation"]) == len(
        thunder.last_traces(jfn)[-1].bound_symbols
    )


def test_the_backward_is_timed_line_by_line_without_touching_grads():
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    jm = thunder.jit(m)
    x = torch.randn(3, 4)
    jm(x).sum().backward()
    grads = [p.grad.clone() for p in m.parameters()]
    measured = measure(jm, (x,))
    backward = thunder.last_backward_traces(jm)[-1]
    times = measured.times["backward"]
    assert len(times) == len(backward.bound_symbols) and all(0 <= t < 1 for t in times)
    model = measured.attach(model_of(jm))
    timed = model.timings["backward"]
    assert any(
        ("matmul" in n.line or "torch.mm(" in n.line) and n.id in timed
        for n in model.series["backward"].final.nodes
    )
    for p, g in zip(m.parameters(), grads):
        torch.testing.assert_close(p.grad, g, rtol=0, atol=0)
