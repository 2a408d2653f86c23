"""The order of a torch.compile region's prims (``thunder/executors/inductor/order.py``):
matmuls next to each other, so that Inductor's code has few stretches of other work between
its extern kernels (each stretch one C++ function called from Python). Tested on the trace
structure, not on time: a GPT's backward region keeps at most four stretches per block, and
no bias gradient's sum is a stretch of its own."""

from __future__ import annotations

import torch
from support.models import GPT

import thunder
from thunder.core.tags import Tag
from thunder.core.verify import verify
from thunder.executors.fusion import prims_of
from thunder.executors.inductor import executor as torchcompileex
from thunder.executors.inductor.order import matmuls_together


def _prims(bsyms):
    return [p for b in bsyms for p in prims_of(b)]


def stretches(prims) -> list[list]:
    """The stretches of work other than matmuls, in order (shape operations are no work)."""
    out, current = [], None
    for p in prims:
        if Tag.SHAPE in p.sym.tags:
            continue
        if torchcompileex._is_matmul(p):
            current = None
            continue
        if current is None:
            current = []
            out.append(current)
        current.append(p)
    return out


def _prims_trace(jfn):
    """The first trace of ``jfn``, its BoundSymbols replaced by their prims."""
    first = thunder.last_traces(jfn)[0]
    t = first.derive("prims")
    t.bound_symbols = _prims(first.bound_symbols)
    return t


def test_matmuls_go_together_and_outputs_join_a_stretch_of_other_work():
    def f(g, w, x):
        t1 = g @ w  # an input gradient
        t2 = t1 * 2
        t3 = x @ g  # a weight gradient
        t4 = g.sum(0)  # a bias gradient
        return t3, t4, t2 @ w

    jf = thunder.jit(f)
    jf(*(torch.randn(4, 4) for _ in range(3)))
    before = _prims_trace(jf)
    after = matmuls_together(before, torchcompileex._is_matmul)
    verify(after)
    assert [p.sym.name for p in before.bound_symbols] == ["matmul", "mul", "matmul", "sum", "matmul"]
    assert [p.sym.name for p in after.bound_symbols] == ["matmul", "matmul", "mul", "sum", "matmul"]
    assert len(stretches(before.bound_symbols)) == 2 and len(stretches(after.bound_symbols)) == 1


def test_an_order_that_is_already_right_is_the_same_trace():
    def f(x, w):
        return (x @ w).relu().sum()

    jf = thunder.jit(f)
    jf(torch.randn(4, 4), torch.randn(4, 4))
    t = _prims_trace(jf)
    assert matmuls_together(t, torchcompileex._is_matmul) is t


def test_gpt_backward_region_has_few_stretches_and_no_sum_on_its_own():
    layers = 2
    model = GPT(layers=layers)
    jm = thunder.jit(model, executors=["torchcompile", "torch"])
    x = torch.randint(0, 50, (2, 8))
    jm(x).sum().backward()
    regions = [b for b in thunder.last_backward_traces(jm)[-1].bound_symbols if b.has_tag(Tag.FUSION)]
    assert len(regions) == 1, [r.sym.name for r in regions]
    region = regions[0]
    ordered = region.sym.impl.trace
    verify(ordered)
    parts = stretches(_prims(ordered.bound_symbols))
    # per block: the MLP's GELU backward, the second layer norm's backward, the softmax's
    # backward, the attention's gradients joined; and the final layer norm's. (In the grad
    # transform's order: twice as many, the bias gradients' sums each a stretch of its own.)
    assert len(parts) <= 4 * layers + 1, [[p.sym.name for p in s] for s in parts]
    assert len(stretches(_prims(region.subsymbols))) > len(parts)
    outputs = {p.name for p in ordered.output if p is not None}
    for part in parts:
        assert not all(p.sym.name == "sum" and p.output.name in outputs for p in part), "a bias sum alone"
    # and the gradients are still eager's
    ref = GPT(layers=layers)
    ref.load_state_dict(model.state_dict())
    ref(x).sum().backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)
