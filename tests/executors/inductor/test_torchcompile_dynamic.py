"""torch.compile regions with symbolic sizes: Inductor compiles a region once for every size
(its inputs' sizes and the symbols as torch's symbolic ints), a size its guards do not admit
compiles another function, each input layout its own, and values and gradients are eager's
at every size. Compiled on the calling thread (``compile_in_background(False)``) so that
which function ran does not depend on timing."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from support.models import GPT

import thunder
from thunder.core.tags import Tag
from thunder.executors.inductor import executor as torchcompileex


@pytest.fixture
def on_this_thread():
    previous = torchcompileex.compile_in_background(False)
    yield
    torchcompileex.compile_in_background(previous)


def _regions(trace):
    return [b for b in trace.bound_symbols if b.has_tag(Tag.FUSION)]


def _compiled(region) -> list:
    return [v for variants in region.sym.impl.variants.values() for v in variants]


def _program(x, w):
    y = F.gelu(x @ w) * 2 + 1
    return y.view(x.shape[0] * 2, -1).sum(0)


def test_a_region_compiles_once_for_every_size(on_this_thread):
    jfn = thunder.jit(_program, dynamic=True, executors=["torchcompile", "torch"])
    for n, m in ((4, 6), (6, 10), (9, 4), (3, 8)):
        x, w = torch.randn(n, 8), torch.randn(8, m)
        torch.testing.assert_close(jfn(x, w), _program(x, w))
    assert thunder.compile_stats(jfn).cache_misses == 1
    trace = thunder.last_traces(jfn)[-1]
    (region,) = _regions(trace)
    # the symbols are inputs of the region: Inductor's code takes them as ints
    assert "TorchCompile0(x, w, s0, s1, s2, s3)" in str(trace)
    assert region.sym.impl.symbolic
    (variant,) = _compiled(region)
    # what Inductor assumed of the sizes, checked at every call: the matmul's equal sizes
    assert "s2 == s1" in variant.fn.guards
    assert repr(region.sym.impl) == "<TorchCompile0: Inductor region of 6 operations, 1 compiled>"


def test_a_size_the_guards_do_not_admit_compiles_another_function(on_this_thread):
    jfn = thunder.jit(_program, dynamic=True, executors=["torchcompile", "torch"])
    x, w = torch.randn(4, 8), torch.randn(8, 6)
    jfn(x, w)
    (region,) = _regions(thunder.last_traces(jfn)[-1])
    (first,) = _compiled(region)
    # view(2*s0, -1) of s0*s3 elements: Inductor's function for s3 = 6 assumed s3 >= 4
    x, w = torch.randn(5, 8), torch.randn(8, 2)
    assert not first.accepts((x, w, 5, 8, 8, 2))
    torch.testing.assert_close(jfn(x, w), _program(x, w))
    assert len(_compiled(region)) == 2 and thunder.compile_stats(jfn).cache_misses == 1
    x, w = torch.randn(7, 8), torch.randn(8, 12)  # the first function again
    torch.testing.assert_close(jfn(x, w), _program(x, w))
    assert len(_compiled(region)) == 2


def test_each_input_layout_compiles_its_own_function(on_this_thread):
    def fn(x, y):
        return (x * 2 + y).relu()

    jfn = thunder.jit(fn, dynamic=True, executors=["torchcompile", "torch"])
    for n in (5, 7):
        x, y = torch.randn(n, 3), torch.randn(n, 3)
        torch.testing.assert_close(jfn(x, y), fn(x, y))
        xt = torch.randn(3, n).t()  # dense, the other order
        out = jfn(xt, y)
        torch.testing.assert_close(out, fn(xt, y))
        assert out.stride() == fn(xt, y).stride()
        xs = torch.randn(n, 6)[:, ::2]  # not dense: compiled for these strides
        torch.testing.assert_close(jfn(xs, y), fn(xs, y))
    (region,) = _regions(thunder.last_traces(jfn)[-1])
    layouts = {key[1][0] for key in region.sym.impl.variants}
    assert None in layouts and ("order", (1, 0), ()) in layouts
    assert ("strides", (6, 2)) in layouts
    assert thunder.compile_stats(jfn).cache_misses == 1


def test_training_on_batches_of_their_own_length_compiles_each_region_once(on_this_thread):
    torch.manual_seed(0)
    model = GPT(vocab=64, d=32, heads=2, layers=1, ctx=64)
    reference = GPT(vocab=64, d=32, heads=2, layers=1, ctx=64)
    reference.load_state_dict(model.state_dict())
    jm = thunder.jit(model, executors=["torchcompile", "torch"], dynamic=True)
    for i, n in enumerate((17, 40, 23, 9)):
        ids = torch.randint(0, 64, (2, n), generator=torch.Generator().manual_seed(i))
        for m in (jm, reference):
            m.zero_grad(set_to_none=True)
            F.cross_entropy(m(ids).flatten(0, 1), ids.flatten()).backward()
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4, msg=f"{name} at length {n}")
    assert thunder.compile_stats(jm).cache_misses == 1
    regions = _regions(thunder.last_traces(jm)[-1]) + _regions(thunder.last_backward_traces(jm)[-1])
    assert regions and all(len(_compiled(r)) == 1 for r in regions)
