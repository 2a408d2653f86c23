"""An executor added from outside thunder/ and explorer/: registered in this file, it claims,
fuses, is drawn and is compared as the built-in ones are, with nothing else to edit."""

from __future__ import annotations

import pytest
import torch

import explorer
import thunder
from explorer.views.style import stylesheet
from thunder.core.tags import Tag
from thunder.executors.base import Drawing
from thunder.executors.claim import claim
from thunder.executors.fusion import FusionExecutor
from thunder.executors.registry import deregister_executor, get_executor, register_executor


class ToyFuser(FusionExecutor):
    """Fuses elementwise prims; a region runs as the torch executor's calls of its prims, and
    counts its calls."""

    region_prefix = "Toy"
    drawing = Drawing("#fff2a8", "#8a6d00", "star", "bold")

    def __init__(self, name: str):
        super().__init__(name)
        self.calls = 0
        self.regions = 0

    def prim_reason(self, prim) -> str | None:
        return None if Tag.ELEMENTWISE in prim.sym.tags else "the toy fuses elementwise prims only"

    def compile_region(self, region):
        self.regions += 1
        program = claim(region.trace(), [get_executor("torch")]).python_callable()
        single = len(region.outputs) == 1

        def run(*args):
            self.calls += 1
            out = program(*args)
            return out[0] if single else out

        return run


@pytest.fixture
def toy():
    ex = register_executor(ToyFuser("toy"))
    yield ex
    deregister_executor("toy")


def fn(x, w):
    return (torch.sin(x) * 2 + 1) @ w


def _args():
    return torch.randn(4, 8), torch.randn(8, 3)


def test_the_toy_claims_and_fuses(toy):
    x, w = _args()
    jfn = thunder.jit(fn, executors=["toy"])
    torch.testing.assert_close(jfn(x, w), fn(x, w))
    final = thunder.last_traces(jfn)[-1]
    regions = [b for b in final.bound_symbols if Tag.FUSION in b.tags]
    assert len(regions) == 1 and regions[0].sym.name == "Toy0" and regions[0].sym.executor == "toy"
    assert "Toy0(x)" in str(final)
    assert toy.regions == 1 and toy.calls == 1
    jfn(x, w)
    assert toy.calls == 2  # the cached entry runs the toy's region
    # what it does not fuse (the matmul) runs on the executor that runs every prim
    assert any(b.sym.executor == "torch" for b in final.bound_symbols if Tag.FUSION not in b.tags)


def test_the_toy_is_drawn_as_it_says(toy):
    x, w = _args()
    jfn = thunder.jit(fn, executors=["toy"])
    jfn(x, w)
    graph = explorer.graph_of(jfn)
    assert 'fillcolor="#fff2a8"' in graph.dot and "shape=star" in graph.dot
    assert graph.svg is not None and "#fff2a8" in graph.svg
    assert ".x-toy{color:#8a6d00;background:#fff2a8}" in stylesheet()


def test_the_toy_is_compared(toy):
    x, w = _args()
    table = explorer.compare(fn, (x, w), executors=[["torch"], ["toy"]], repeat=1, warmup=0, measure=False)
    rows = {tuple(r.executors): r for r in table.rows}
    assert rows[("toy",)].error is None and rows[("toy",)].matched
    assert rows[("toy",)].fusion_regions == 1


def test_an_unknown_executor_names_the_known_ones(toy):
    with pytest.raises(ValueError, match=r"unknown executor 'toys'.*'toy'"):
        thunder.jit(fn, executors=["toys"])
    with pytest.raises(ValueError, match="already registered"):
        register_executor(ToyFuser("toy"))
