"""The nvFuser executor: its regions on CPU (what it takes, decided by the translation of
``thunder.executors.nvfuser``; each region's repro), and, on CUDA with nvFuser installed,
regions executed by nvFuser against eager (marked ``cuda``, skipped elsewhere).

On CPU the regions are formed by ``nvfuserex.preview()``, the executor that calls itself
available and runs each region as torch calls: the partitioning and the repros are the real
ones, only the execution is not.
"""

from __future__ import annotations

import pytest
import torch
from support.models import MLP, Block

import thunder
from thunder.core.tags import Tag
from thunder.core.verify import verify
from thunder.executors import nvfuser
from thunder.executors.nvfuser.executor import executor as nvfuser_executor
from thunder.executors.nvfuser.executor import preview


def _regions(jfn):
    return [b for b in thunder.last_traces(jfn)[-1].bound_symbols if b.has_tag(Tag.FUSION)]


def test_nvfuser_regions_of_a_gpt_block_and_their_repros():
    model, x = Block(), torch.randn(2, 8, 32)
    ex = preview()
    jm = thunder.jit(model, executors=[ex])
    with torch.no_grad():
        torch.testing.assert_close(jm(x), model(x), rtol=1e-5, atol=1e-5)
    for t in thunder.last_traces(jm):
        verify(t)
    regions = _regions(jm)
    assert [r.sym.name for r in regions] == [f"nvFusion{i}" for i in range(len(regions))]
    assert regions and len(ex.regions) == len(regions)
    for r, compiled in zip(regions, ex.regions):
        assert r.sym.id == f"nvfuser.{r.sym.name}"
        assert all(nvfuser.unsupported_reason(p) is None for p in compiled.prims)
        repro = compiled.repro()
        assert "def nvfuser_fusion(fd: FusionDefinition)" in repro and "fd.execute(inputs)" in repro
        assert repro.count("fd.add_output(") == len(compiled.outputs)
        assert repro.count("fd.define_tensor(") == sum(1 for p in compiled.inputs if hasattr(p, "meta_shape"))
    # what nvFuser declined stays with torch, saying why
    final = thunder.last_traces(jm)[-1]
    for b in final.bound_symbols:
        if not b.has_tag(Tag.FUSION) and not b.has_tag(Tag.DEL) and b.sym.module != "python":
            assert "nvfuser" in (b.info.declined or {}), b.sym.id


def test_nvfuser_partitioning_respects_what_it_declines():
    # the nvFuser translation has no flip: sin and cos share a region across it, mul cannot
    def fn(x):
        a = x.sin()
        c = a.flip(0)
        d = x.cos()
        return c * d

    jfn = thunder.jit(fn, executors=[preview()])
    x = torch.randn(5)
    torch.testing.assert_close(jfn(x), fn(x))
    r0, r1 = _regions(jfn)
    assert [m.sym.name for m in r0.subsymbols] == ["sin", "cos"]
    assert [m.sym.name for m in r1.subsymbols] == ["mul"]
    (flip,) = [b for b in thunder.last_traces(jfn)[-1].bound_symbols if b.sym.name == "flip"]
    assert (
        flip.info.declined["nvfuser"] == "nvfuser does not fuse ltorch.flip (prims.flip: nvFuser has no flip)"
    )


def _symbolic(x, w, ids):
    y = torch.relu(x @ w)
    z = y.reshape(x.shape[0] * 2, -1) * 2  # a size the program computes: 2*s0
    e = torch.nn.functional.embedding(ids, w.t())  # a size read from a tensor: s4*s5
    return z, e.sum(-1)


def test_nvfuser_regions_with_symbolic_sizes_serve_every_size():
    ex = preview()
    jfn = thunder.jit(_symbolic, executors=[ex], dynamic=True)
    for n, m in ((4, 6), (6, 10), (9, 4)):
        args = (torch.randn(n, 8), torch.randn(8, m), torch.randint(0, m, (3, n)))
        for got, want in zip(jfn(*args), _symbolic(*args)):
            torch.testing.assert_close(got, want)
    assert thunder.compile_stats(jfn).cache_misses == 1
    text = "\n".join(r.sym.impl.repro() for r in _regions(jfn))
    # the symbols the ops' arguments use are scalar inputs; sizes computed from them are
    # nvFuser scalar ops; a symbol only a tensor's shape holds is read from that tensor
    assert "fd.define_scalar(None, dtype=DataType.Int)  # s0" in text
    assert "fd.ops.mul(" in text and "fd.ops.reshape(" in text and "fd.ops.size(" in text
    assert "shape=[-1, -1]" in text  # symbolic extents
    assert "torch.testing.make_tensor((4, 8)" in text  # example inputs at the sizes of the call traced


def test_the_default_executors_say_whether_nvfuser_is_in():
    from thunder.executors.registry import default_executors

    names = [e.name for e in default_executors()]
    if nvfuser_executor.unavailable_reason() is None:
        assert names == ["nvfuser", "torch"]
    else:
        assert names == ["torch"]


def _nvfuser_on_cuda():
    why = nvfuser_executor.unavailable_reason()
    if why is not None:
        pytest.skip(f"nvFuser is not available: {why}")


PROGRAMS = {
    "chain": (lambda x: (torch.sin(x) * 2 + 1).tanh().sum(-1), (64, 128)),
    "gelu": (lambda x: torch.nn.functional.gelu(x) * x, (64, 128)),
    "layer_norm": (lambda x: torch.nn.functional.layer_norm(x, (128,)), (64, 128)),
    "softmax": (lambda x: torch.softmax(x * 0.5, -1), (64, 128)),
}


@pytest.mark.cuda
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_nvfuser_runs_regions_on_cuda(name):
    _nvfuser_on_cuda()
    fn, shape = PROGRAMS[name]
    x = torch.randn(shape, device="cuda")
    jfn = thunder.jit(fn, executors=["nvfuser"])
    torch.testing.assert_close(jfn(x), fn(x), rtol=1e-5, atol=1e-5)
    (region,) = _regions(jfn)
    assert region.sym.name == "nvFusion0" and len(region.sym.impl.definitions) == 1
    jfn(torch.randn(shape, device="cuda"))  # the same signature: no new definition
    assert len(region.sym.impl.definitions) == 1


@pytest.mark.cuda
def test_nvfuser_runs_a_symbolic_region_at_every_size_on_cuda():
    _nvfuser_on_cuda()
    jfn = thunder.jit(_symbolic, executors=["nvfuser"], dynamic=True)
    for n, m in ((4, 6), (6, 10), (9, 4)):
        args = (torch.randn(n, 8, device="cuda"), torch.randn(8, m, device="cuda"))
        args += (torch.randint(0, m, (3, n), device="cuda"),)
        for got, want in zip(jfn(*args), _symbolic(*args)):
            torch.testing.assert_close(got, want)
    assert thunder.compile_stats(jfn).cache_misses == 1
    assert all(len(r.sym.impl.definitions) == 1 for r in _regions(jfn))


@pytest.mark.cuda
@pytest.mark.parametrize(
    "make", [lambda: (MLP(), (8, 32)), lambda: (Block(), (2, 8, 32))], ids=["mlp", "block"]
)
def test_nvfuser_models_on_cuda_forward_and_gradients(make):
    _nvfuser_on_cuda()
    model, shape = make()
    model = model.cuda()
    x = torch.randn(shape, device="cuda")
    jm = thunder.jit(model, executors=["nvfuser"])
    with torch.no_grad():
        torch.testing.assert_close(jm(x), model(x), rtol=1e-4, atol=1e-4)
    assert _regions(jm)
    jm(x).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    model(x).sum().backward()
    torch.testing.assert_close(grads, [p.grad for p in model.parameters()], rtol=1e-4, atol=1e-4)


@pytest.mark.cuda
def test_torchcompile_on_cuda_forward_and_gradients():
    model = Block().cuda()
    x = torch.randn(2, 8, 32, device="cuda")
    jm = thunder.jit(model, executors=["torchcompile"])
    out = jm(x)
    torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-4)
    out.sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    model(x).sum().backward()
    torch.testing.assert_close(grads, [p.grad for p in model.parameters()], rtol=1e-4, atol=1e-4)
    assert [r.sym.name for r in _regions(jm)] == ["TorchCompile0"]
