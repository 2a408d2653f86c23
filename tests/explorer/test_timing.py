"""Measured times per BoundSymbol: the final traces run line by line on real inputs."""

from __future__ import annotations

import pytest
import torch

import thunder
from explorer.compilation import model_of
from explorer.runner import measure


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


def test_program_that_writes_its_inputs_is_timed_on_copies():
    def fn(x, buf):
        buf.add_(1)
        return x * 2

    jfn = thunder.jit(fn)
    x, buf = torch.ones(3), torch.zeros(3)
    jfn(x, buf)
    assert torch.equal(buf, torch.ones(3))
    m = measure(jfn, (x, buf))
    assert torch.equal(buf, torch.ones(3))  # measuring did not write to the user's tensor
    assert "copies" in m.note


def test_rejected_inputs_are_explained(jfn):
    m = measure(jfn, (torch.ones(5), torch.ones(5)))
    assert m.times == {} and "the prologue rejected the inputs" in m.note


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
