"""A region Inductor compiled as an inference graph (thunder differentiates itself, so most
are) is called straight into Inductor's code after its first call (``_direct`` in
``thunder/executors/inductor/compile.py``) where AOTAutograd's wrapper around it has nothing to
do; where it has (an output that is a view of an input, autocast on at the call), the call goes
through the wrapper. Every value is eager's, over several calls."""

from __future__ import annotations

import copy

import pytest
import torch
from torch._inductor.output_code import CompiledFxGraph

import thunder
from thunder.core.tags import Tag
from thunder.executors.inductor import executor as torchcompileex


@pytest.fixture(autouse=True, scope="module")
def _on_the_calling_thread():
    previous = torchcompileex.compile_in_background(False), torchcompileex.cpp_wrapper(True)
    yield
    torchcompileex.compile_in_background(previous[0])
    torchcompileex.cpp_wrapper(previous[1])


def _compiled(jfn) -> list:
    """The compiled functions of the last trace's regions (a symbolic region's: each variant's)."""
    fns = []
    for b in thunder.last_traces(jfn)[-1].bound_symbols:
        if b.has_tag(Tag.FUSION):
            region = b.sym.impl
            fns += list(region.compiled.values())
            fns += [getattr(v.fn, "fn", v.fn) for vs in region.variants.values() for v in vs]
    return fns


@pytest.fixture
def wrapper_calls(monkeypatch) -> list:
    """Each call of a compiled graph through ``CompiledFxGraph.__call__``, which AOTAutograd's
    wrapper makes and a direct call does not."""
    calls, real = [], CompiledFxGraph.__call__

    def counted(self, inputs):
        calls.append(self)
        return real(self, inputs)

    monkeypatch.setattr(CompiledFxGraph, "__call__", counted)
    return calls


def test_an_inference_region_is_called_straight_after_its_first_call(wrapper_calls):
    def f(x):
        return x * 2 + 1

    jfn = thunder.jit(f, executors=["torchcompile"])
    x = torch.randn(4)
    for _ in range(5):
        torch.testing.assert_close(jfn(x), f(x))
    (fn,) = _compiled(jfn)
    assert hasattr(fn, "graph")
    assert len(wrapper_calls) == 1


def test_a_training_step_s_regions_are_called_straight_and_its_gradients_are_eager_s(wrapper_calls):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    ref = copy.deepcopy(model)
    jm = thunder.jit(model, executors=["torchcompile"])
    for _ in range(3):
        x = torch.randn(5, 8)
        out, want = jm(x), ref(x)
        torch.testing.assert_close(out, want)
        out.square().sum().backward()
        want.square().sum().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad)
    fns = _compiled(jm)
    assert fns and all(hasattr(fn, "graph") for fn in fns)
    assert len(wrapper_calls) <= 2  # (the forward's and the backward's first calls)


def test_an_output_that_is_a_view_of_an_input_goes_through_the_wrapper():
    def f(x):
        return x.t(), x.sin()

    jfn = thunder.jit(f, executors=["torchcompile"])
    x = torch.randn(3, 4)
    for _ in range(3):
        got, want = jfn(x), f(x)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)
            assert g.stride() == w.stride()
    got[0].mul_(0)  # (a view of x, as eager's)
    assert not x.any()
    (fn,) = _compiled(jfn)
    assert not hasattr(fn, "graph")  # (AOTAutograd's wrapper makes the view)


def test_under_autocast_the_call_goes_through_the_wrapper_and_dtypes_are_eager_s(wrapper_calls):
    def f(a, b):
        return (a @ b).relu() + 1

    jfn = thunder.jit(f, executors=["torchcompile"])
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    torch.testing.assert_close(jfn(a, b), f(a, b))
    for _ in range(3):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got, want = jfn(a, b), f(a, b)
        assert got.dtype == want.dtype == torch.bfloat16
        torch.testing.assert_close(got, want)
    torch.testing.assert_close(jfn(a, b), f(a, b))


def test_a_region_with_symbolic_sizes_is_called_straight_at_every_size(wrapper_calls):
    def f(x):
        return (x * 2).sum(-1) + x.shape[0]

    jfn = thunder.jit(f, executors=["torchcompile"], dynamic=True)
    for n in (3, 5, 7, 5, 3, 9):
        x = torch.randn(n, 6)
        torch.testing.assert_close(jfn(x), f(x))
    fns = _compiled(jfn)
    assert len(fns) == 1 and hasattr(fns[0], "graph")
    assert len(wrapper_calls) == 1
