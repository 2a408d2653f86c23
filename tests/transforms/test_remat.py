"""Rematerialization when a fusion executor comes first: values its fused backward can
recompute from what it has anyway (a GELU's output from its input, a layer norm's output from
its input and saved statistics) are not saved, and gradients stay eager's.

A test-only fusion executor (``FusesAll``, or one that declines some prims) runs each region's
torch program, so nothing is compiled here; the torch.compile executor's backward is checked
against eager in ``tests/executors/inductor/test_torchcompile.py``. Without a fusion executor
only cheap elementwise values are recomputed (``test_grad.py``).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from support.compare import grads_of, split_tensors, tolerance
from support.opdb import OPS, Maker, S

import thunder
from thunder.core.pytree import tree_flatten, tree_unflatten
from thunder.core.tags import Tag
from thunder.core.verify import verify
from thunder.executors import torchex
from thunder.executors.claim import claim
from thunder.executors.fusion import FusionExecutor
from thunder.ops import prims


class FusesAll(FusionExecutor):
    """Fuses every prim except those in ``declines``; a region runs as its torch calls."""

    region_prefix = "Test"

    def __init__(self, *declines, name="fusesall"):
        super().__init__(name)
        self.declines = set(declines)

    def prim_reason(self, prim):
        return f"the test declines {prim.sym.id}" if prim.sym in self.declines else None

    def compile_region(self, region):
        program = claim(region.trace(), [torchex.executor]).python_callable()

        def run(*args):
            out = program(*args)
            return out[0] if len(region.outputs) == 1 else out

        return run


def _traces(jfn):
    return thunder.last_traces(jfn)[-1], thunder.last_backward_traces(jfn)[-1]


def _recomputed(backward):
    """The backward's recomputed ops (inside its regions too): (symbol id, value recomputed)."""

    def walk(bsyms):
        for b in bsyms:
            if b.has_tag(Tag.FUSION):
                yield from walk(b.subsymbols)
            elif Tag.RECOMPUTED in b.tags:
                yield b.sym.id, b.info.recomputes[0]

    return list(walk(backward.bound_symbols))


def _ops(trace, sym_id: str):
    """The trace's BoundSymbols of ``sym_id``, regions' members included."""
    return [m for b in trace.bound_symbols for m in [b, *b.subsymbols] if m.sym.id == sym_id]


def _train(fn, params, x):
    for p in params:
        p.grad = None
    out = fn(x)
    out.pow(2).sum().backward()
    return out, [p.grad.clone() for p in params]


def _matches_eager(jfn, fn, params, x):
    out, grads = _train(jfn, params, x)
    ref, ref_grads = _train(fn, params, x)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(grads, ref_grads)
    for t in thunder.last_traces(jfn) + thunder.last_backward_traces(jfn):
        verify(t)


def _mlp():
    torch.manual_seed(0)
    up, down = torch.nn.Linear(8, 16).double(), torch.nn.Linear(16, 8).double()

    def fn(x):
        return down(F.gelu(up(x)))

    return fn, [*up.parameters(), *down.parameters()], torch.randn(4, 8, dtype=torch.float64)


def test_a_gelu_output_is_recomputed_in_a_fused_backward_not_saved():
    fn, params, x = _mlp()
    jfn = thunder.jit(fn, executors=[FusesAll()])
    _matches_eager(jfn, fn, params, x)
    forward, backward = _traces(jfn)
    (gelu,) = _ops(forward, "ltorch.gelu")
    h, u = gelu.output.name, gelu.args[0].name
    assert forward.info.rematerialized == [h]
    assert h not in forward.info.saved_for_backward and u in forward.info.saved_for_backward
    assert _recomputed(backward) == [("ltorch.gelu", h)]
    assert h not in [p.name for p in backward.args]


def test_without_a_fusion_executor_the_gelu_output_is_saved():
    fn, params, x = _mlp()
    jfn = thunder.jit(fn, executors=["torch"])
    _matches_eager(jfn, fn, params, x)
    forward, backward = _traces(jfn)
    assert forward.info.rematerialized == []
    assert _recomputed(backward) == []


def test_a_fusion_executor_that_declines_erf_keeps_the_gelu_output_saved():
    fn, params, x = _mlp()
    jfn = thunder.jit(fn, executors=[FusesAll(prims.erf)])
    _matches_eager(jfn, fn, params, x)
    forward, backward = _traces(jfn)
    assert forward.info.rematerialized == []
    assert _recomputed(backward) == []


def test_a_layer_norm_output_is_recomputed_from_its_input_and_saved_statistics():
    torch.manual_seed(0)
    ln, lin = torch.nn.LayerNorm(8).double(), torch.nn.Linear(8, 4).double()
    with torch.no_grad():  # weights that are not 1 and 0, so that a mistake shows
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-0.5, 0.5)

    def fn(x):
        return lin(ln(x))

    x = torch.randn(3, 8, dtype=torch.float64)
    jfn = thunder.jit(fn, executors=[FusesAll()])
    _matches_eager(jfn, fn, [*ln.parameters(), *lin.parameters()], x)
    forward, backward = _traces(jfn)
    (norm,) = _ops(forward, "ltorch.native_layer_norm")
    y, mean, rstd = (p.name for p in norm.output)
    assert forward.info.rematerialized == [y]
    saved = forward.info.saved_for_backward
    assert y not in saved and {norm.args[0].name, mean, rstd} <= set(saved)
    # (y = (x - mean) * rstd * w + b, its prims reading the saved mean and 1/std)
    recomputed = [(op, v) for op, v in _recomputed(backward) if v == y]
    assert [op for op, _ in recomputed] == ["prims.sub", "prims.mul", "prims.mul", "prims.add"]
    (sub,) = _ops(backward, "prims.sub")
    assert [a.name for a in sub.args] == [norm.args[0].name, mean]
    assert not _ops(backward, "prims.rsqrt") and not _ops(backward, "prims.var")


def test_a_value_returned_or_made_by_a_reduction_is_not_recomputed():
    w = torch.randn(8, dtype=torch.float64, requires_grad=True)

    def fn(x):
        e = torch.exp(x * w)  # returned: alive anyway
        s = e.sum(-1, keepdim=True)  # a reduction: saved
        return e, torch.sin(e / s)

    x = torch.randn(3, 8, dtype=torch.float64)
    jfn = thunder.jit(fn, executors=[FusesAll()])
    out = jfn(x)
    (out[0].sum() + out[1].pow(2).sum()).backward()
    got, w.grad = w.grad, None
    ref = fn(x)
    (ref[0].sum() + ref[1].pow(2).sum()).backward()
    torch.testing.assert_close(got, w.grad)
    forward, _ = _traces(jfn)
    e = forward.output[0][0].name
    assert e not in forward.info.rematerialized
    assert all(not n.startswith("s") for n in forward.info.rematerialized)


# -- every op of the database, its backward through a fusing executor -------------------------
def _then_sin(op):
    """``op`` with ``sin`` applied to each floating tensor it returns: sin's backward reads the
    op's outputs, so they are saved, or recomputed where the fused backward can."""

    def fn(*args, **kwargs):
        out = op(*args, **kwargs)
        leaves, spec = tree_flatten(out)
        leaves = [
            torch.sin(o) if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in leaves
        ]
        return tree_unflatten(leaves, spec)

    return fn


def _check_op(info) -> list[str]:
    """Gradients of ``info``'s op followed by ``sin``, every prim fused (and so every output
    the fused backward can recompute recomputed), equal eager's; the values recomputed."""
    sample = info.samples(Maker(torch.float64))[0]
    tensors, rebuild = split_tensors(sample)
    op = _then_sin(info.op)

    def call(*ts):
        args, kwargs = rebuild(ts)
        return op(*args, **kwargs)

    try:
        expected = grads_of(_then_sin(info.ref or info.op), tensors, rebuild, 0)
    except (RuntimeError, NotImplementedError) as e:
        pytest.skip(f"eager autograd refuses: {e}")
    if expected is None or all(g is None for g in expected):
        pytest.skip("not differentiable")
    jfn = thunder.jit(call, executors=[FusesAll()])
    got = grads_of(lambda *a, **k: jfn(*split_tensors(S(a, k))[0]), tensors, rebuild, 0)
    for g, e in zip(got or [None] * len(expected), expected):
        g = torch.zeros_like(e) if g is None and e is not None else g
        e = torch.zeros_like(g) if e is None and g is not None else e
        if g is not None:
            torch.testing.assert_close(g, e, equal_nan=True, **tolerance(info, torch.float64))
    for t in thunder.last_traces(jfn) + thunder.last_backward_traces(jfn):
        verify(t)
    return thunder.last_traces(jfn)[-1].info.rematerialized


@pytest.mark.filterwarnings("ignore:size_average and reduce args")
@pytest.mark.parametrize(
    "info", [o for o in OPS if torch.float64 in o.dtypes and o.values], ids=lambda o: o.id
)
def test_op_grad_through_a_fusion_executor(info):
    if info.cuda or info.numerical_grad:
        pytest.skip("needs CUDA" if info.cuda else "checked numerically in test_ops")
    _check_op(info)


def test_elementwise_and_normalization_outputs_are_recomputed_reductions_are_not():
    by_id = {o.id: o for o in OPS}
    for op in ("gelu", "tanh", "sigmoid", "exp", "mul", "layer_norm"):
        assert _check_op(by_id[op]), f"{op}: nothing recomputed"
    for op in ("sum", "matmul", "cumsum", "softmax"):
        assert _check_op(by_id[op]) == [], f"{op}: an output recomputed"
