"""Fusion partitioning: regions follow the data dependencies, never form a cycle through an
op outside them, and take exactly what crosses their boundary.

A test-only fusion executor (``Fuses``) takes a chosen set of prims and runs each region's
torch program, so structures can be forced without compiling anything; the torch.compile
executor's regions are checked in ``tests/executors/inductor/test_torchcompile.py``.
"""

from __future__ import annotations

import pytest
import torch

import thunder
from thunder.core.tags import Tag
from thunder.core.verify import verify
from thunder.executors import torchex
from thunder.executors.claim import claim
from thunder.executors.fusion import FusionExecutor, Region
from thunder.ops import prims
from thunder.transforms.fuse import dependencies, partition, schedule


class Fuses(FusionExecutor):
    """Fuses the prims in ``syms``; a region runs its prims as torch calls."""

    region_prefix = "Test"

    def __init__(self, *syms, name="fuses"):
        super().__init__(name)
        self.syms = set(syms)
        self.compiled: list[Region] = []

    def prim_reason(self, prim):
        return None if prim.sym in self.syms else f"the test fuses only {len(self.syms)} prims"

    def compile_region(self, region):
        self.compiled.append(region)
        program = claim(region.trace(), [torchex.executor]).python_callable()

        def run(*args):
            out = program(*args)
            return out[0] if len(region.outputs) == 1 else out

        return run


ELEMENTWISE = (prims.sin, prims.cos, prims.exp, prims.mul, prims.add, prims.neg, prims.tanh)


def _regions(jfn):
    trace = thunder.last_traces(jfn)[-1]
    return [b for b in trace.bound_symbols if b.has_tag(Tag.FUSION)]


def _names(xs):
    return [x.name for x in xs]


def _members(region):
    return [m.sym.name for m in region.subsymbols]


def _check(jfn, fn, *args):
    torch.testing.assert_close(jfn(*args), fn(*args))
    for t in thunder.last_traces(jfn):
        verify(t)


def test_a_region_is_not_only_neighbours_and_never_a_cycle():
    # the docstring's example: cos joins sin across the matmul; mul cannot (it needs the
    # matmul of sin's result: a region {sin, mul} would depend on itself through torch.matmul)
    def fn(x, w):
        a = x.sin()
        m = a @ w
        b = m * 2
        c = x.cos()
        return b, c

    jfn = thunder.jit(fn, executors=[Fuses(*ELEMENTWISE)])
    _check(jfn, fn, torch.randn(3, 3), torch.randn(3, 3))
    r0, r1 = _regions(jfn)
    assert (r0.sym.name, _members(r0), _names(r0.args), _names(r0.output)) == (
        "Test0",
        ["sin", "cos"],
        ["x"],
        ["t0", "t3"],
    )
    assert (r1.sym.name, _members(r1), _names(r1.args), r1.output.name) == ("Test1", ["mul"], ["t1"], "t2")
    ids = [b.sym.id for b in thunder.last_traces(jfn)[-1].bound_symbols if not b.has_tag(Tag.DEL)]
    assert ids == ["fuses.Test0", "torch.matmul", "fuses.Test1"]


def test_a_diamond_through_an_outside_op_is_split():
    # d = c + b where b = matmul(sin(x)) is outside: d cannot join {sin, cos}
    def fn(x, w):
        a = x.sin()
        b = a @ w
        c = x.cos()
        return c + b

    jfn = thunder.jit(fn, executors=[Fuses(*ELEMENTWISE)])
    _check(jfn, fn, torch.randn(3, 3), torch.randn(3, 3))
    r0, r1 = _regions(jfn)
    assert _members(r0) == ["sin", "cos"] and _members(r1) == ["add"]
    assert _names(r1.args) == ["t2", "t1"]  # c comes from the first region, b from the matmul


def test_region_outputs_are_exactly_what_is_used_later_or_returned():
    def fn(x, y):
        a = x.exp()  # used only inside the region
        b = a * y  # used by the matmul (outside) and returned
        c = b.tanh()  # used only inside
        d = c + 1  # returned
        return d, b @ y

    jfn = thunder.jit(fn, executors=[Fuses(*ELEMENTWISE)])
    _check(jfn, fn, torch.randn(3, 3), torch.randn(3, 3))
    (r,) = _regions(jfn)
    assert _members(r) == ["exp", "mul", "tanh", "add"]
    assert _names(r.args) == ["x", "y"] and _names(r.output) == ["t1", "t3"]


def test_an_op_taken_whole_keeps_its_prims_and_source_lines():
    def fn(x):
        y = torch.nn.functional.gelu(x)
        return y * 2

    fuses = Fuses(prims.mul, prims.add, prims.erf)
    jfn = thunder.jit(fn, executors=[fuses])
    _check(jfn, fn, torch.randn(4))
    (r,) = _regions(jfn)
    gelu, mul = r.subsymbols
    assert gelu.sym.id == "ltorch.gelu" and [p.sym.name for p in gelu.subsymbols] == [
        "mul",
        "mul",
        "erf",
        "add",
        "mul",
    ]
    assert gelu.info.claimed_by == "fuses" and r.info.claimed_by == "fuses"
    assert gelu.source.lineno == fn.__code__.co_firstlineno + 1
    assert mul.source.lineno == fn.__code__.co_firstlineno + 2
    assert len(fuses.compiled[0].prims) == 6


def test_an_op_not_fusible_whole_goes_to_torch_and_who_declined_is_recorded():
    # softmax's amax and sum are not in the test set: torch runs softmax whole
    def fn(x):
        return torch.softmax(x, -1).neg()

    jfn = thunder.jit(fn, executors=[Fuses(prims.sub, prims.exp, prims.div, prims.neg)])
    _check(jfn, fn, torch.randn(2, 5))
    softmax, region = [b for b in thunder.last_traces(jfn)[-1].bound_symbols if not b.has_tag(Tag.DEL)]
    assert softmax.sym.id == "torch.softmax" and softmax.info.claimed_by == "torch"
    assert softmax.info.declined == {
        "fuses": "fuses does not fuse ltorch.softmax (prims.amax: the test fuses only 4 prims)"
    }
    assert _members(region) == ["neg"] and _names(region.args) == ["t6"]


def test_a_region_of_shape_ops_only_goes_back_to_torch():
    def fn(x):
        return x.transpose(0, 1).reshape(6) @ torch.ones(6)

    fuses = Fuses(prims.transpose, prims.reshape)
    jfn = thunder.jit(fn, executors=[fuses])
    _check(jfn, fn, torch.randn(2, 3))
    assert _regions(jfn) == [] and fuses.compiled == []
    t = thunder.last_traces(jfn)[-1].bound_symbols[0]
    assert t.sym.id == "torch.transpose"
    assert "shape operations only" in t.info.declined["fuses"]


def test_grad_modes_do_not_share_a_region():
    def fn(x):
        with torch.no_grad():
            a = x.sin()
        return a * x.cos()

    jfn = thunder.jit(fn, executors=[Fuses(*ELEMENTWISE)])
    x = torch.randn(3, requires_grad=True)
    _check(jfn, fn, x)
    r0, r1 = _regions(jfn)
    assert Tag.NO_GRAD in r0.tags and _members(r0) == ["sin"]
    assert Tag.NO_GRAD not in r1.tags and _members(r1) == ["cos", "mul"]
    assert "with torch.no_grad():\n    t0 = Test0(x)" in str(thunder.last_traces(jfn)[-1])


def test_writes_are_barriers_and_del_last_used_still_frees():
    def fn(x):
        y = x.exp()
        x.mul_(2)  # written back to x after everything that read it
        return y + 1

    jfn = thunder.jit(fn, executors=[Fuses(*ELEMENTWISE)])
    x = torch.randn(3)
    ref = x.clone()
    torch.testing.assert_close(jfn(x), ref.exp() + 1)
    torch.testing.assert_close(x, ref * 2)
    trace = thunder.last_traces(jfn)[-1]
    for t in thunder.last_traces(jfn):
        verify(t)
    src = str(trace)
    assert src.index("Test0(x)") < src.index("torchex.copy_(")
    assert "del " in src


def test_partition_by_hand():
    # indices:   0 F   1 N(0)   2 F(1)   3 F   4 F(2, 3)   5 N(4)   6 F(5, 0)
    kinds = ["f", None, "f", "f", "f", None, "f"]
    preds = [[], [0], [1], [], [2, 3], [4], [5, 0]]
    groups = partition(kinds, preds)
    assert groups == [[0, 3], [2, 4], [6]]
    assert schedule(7, preds, groups) == [[0, 3], 1, [2, 4], 5, [6]]
    # kinds keep groups apart; a group of another kind in between is outside like any op
    assert partition(["f", "g", "f"], [[], [], [1]]) == [[0, 2], [1]]
    assert partition(["f", "g", "f"], [[], [0], [1]]) == [[0], [1], [2]]


def test_dependencies_put_effects_in_order():
    def fn(x):
        a = x.sin()
        x.add_(1)
        return a.cos()

    jfn = thunder.jit(fn)
    jfn(torch.randn(2))
    bsyms = [b for b in thunder.last_traces(jfn)[1].bound_symbols]
    preds = dependencies(bsyms)
    write = next(i for i, b in enumerate(bsyms) if b.has_tag(Tag.INPLACE))
    assert all(write in preds[j] for j in range(write + 1, len(bsyms)))
    assert set(range(write)) <= {p for j in range(write + 1) for p in preds[j]} | {write - 1}


def test_random_draws_keep_their_order_across_regions():
    # torchvision's EfficientNet: a stochastic-depth mask (torch.empty(...).bernoulli_, the
    # empty in a region that waits on a convolution) and a later dropout, whose draw needs no
    # value at all: scheduled by readiness alone, the dropout drew first and took the other's
    # numbers (float64 outputs 0.6 from eager's)
    def fn(x, w):
        a = x.sin()
        noise = torch.empty((4, 1, 1, 1), dtype=x.dtype).bernoulli_(0.5)
        d = torch.nn.functional.dropout(x, 0.5)
        b = torch.nn.functional.conv2d(x, w, padding=1).cos() + a
        return b * noise + d

    x, w = torch.randn(4, 2, 3, 3), torch.randn(2, 2, 3, 3)
    jfn = thunder.jit(fn, executors=[Fuses(*ELEMENTWISE, prims.full), "torch"])
    torch.manual_seed(0)
    got = jfn(x, w)
    torch.manual_seed(0)
    torch.testing.assert_close(got, fn(x, w))
    ids = [b.sym.id for b in thunder.last_traces(jfn)[-1].bound_symbols]
    assert ids.index("torch.bernoulli") < ids.index("torch.nn.functional.dropout")


@pytest.mark.parametrize("executors", [["nvfuser"], ["nvfuser", "torch"]])
def test_nvfuser_says_why_it_is_unavailable(executors):
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(RuntimeError, match="the nvfuser executor is not available here: no CUDA device"):
        thunder.jit(lambda x: x, executors=executors)
