"""Every aten symbol against eager PyTorch, from the aten op database (``tests/support/aten_opdb.py``).

For each entry, dtype and sample: ``thunder.jit`` of the ``torch.ops.aten`` overload equals
eager; the traces pass ``verify``; the aten symbol is in the first trace; the decomposition
alone (every aten op replaced by its prims, run by the torch executor's prim
implementations) equals eager; and gradients through the compiled program equal eager
autograd's (float64, first sample).
"""

from __future__ import annotations

import pytest
import torch
from support.aten_opdb import OPS
from support.compare import compare, grads_of, split_tensors, tolerance
from support.opdb import Maker, OpInfo

import thunder
from thunder.core.errors import UnsupportedOpError
from thunder.core.tags import Tag
from thunder.core.trace import Trace
from thunder.core.verify import verify
from thunder.executors import pythonex, torchex
from thunder.executors.claim import claim
from thunder.ops import aten


def _walk(bsyms):
    for b in bsyms:
        yield b
        yield from _walk(b.subsymbols)


def _prims_only(trace: Trace) -> Trace:
    """``trace`` with each aten and torch-language op replaced by its decomposition."""

    def flat(bsyms):
        for b in bsyms:
            if Tag.ATEN in b.sym.tags or Tag.LTORCH in b.sym.tags:
                yield from flat(b.subsymbols)
            else:
                yield b

    out = trace.derive("prims only")
    out.bound_symbols = list(flat(trace.bound_symbols))
    return out


def _check(info: OpInfo, dtype, sample) -> None:
    tensors, rebuild = split_tensors(sample)
    what = f"{info.id} {dtype} {sample}"

    def call(*ts):
        args, kwargs = rebuild(ts)
        return info.op(*args, **kwargs)

    jfn = thunder.jit(call)
    got = jfn(*[t.clone() for t in tensors])
    args, kwargs = rebuild([t.clone() for t in tensors])
    expected = info.op(*args, **kwargs)
    compare(info, dtype, sample, got, expected, what)
    traces = thunder.last_traces(jfn)
    for t in traces:
        verify(t)
    if not info.noop:
        assert any(b.sym.id == f"aten.{info.name}" for b in _walk(traces[0].bound_symbols)), (
            f"{what}: aten.{info.name} is not in the trace:\n{traces[0]}"
        )
    # the decomposition alone
    entry = thunder.compile_stats(jfn).entries[-1]
    prims_trace = claim(_prims_only(traces[0]), [torchex.executor, pythonex.executor])
    verify(prims_trace)
    cargs, eargs = entry.prologue(*[t.clone() for t in tensors])
    out = prims_trace.python_callable()(*cargs)
    out = out[0] if entry.epilogue is None else entry.epilogue(*out, *eargs)
    compare(info, dtype, sample, out, expected, f"{what} (decomposition)")


@pytest.mark.parametrize("info", OPS, ids=lambda o: o.id)
def test_aten_op(info: OpInfo):
    for dtype in info.dtypes:
        for sample in info.samples(Maker(dtype)):
            _check(info, dtype, sample)


@pytest.mark.parametrize("info", [o for o in OPS if torch.float64 in o.dtypes], ids=lambda o: o.id)
def test_aten_op_grad(info: OpInfo):
    """Gradients through the compiled program (the aten ops run whole) equal eager's."""
    sample = info.samples(Maker(torch.float64))[0]
    tensors, rebuild = split_tensors(sample)

    def call(*ts):
        args, kwargs = rebuild(ts)
        return info.op(*args, **kwargs)

    try:
        expected = grads_of(info.op, tensors, rebuild, 0)
    except RuntimeError as e:  # eager cannot differentiate this sample (an in-place write into a leaf)
        pytest.skip(f"eager autograd refuses: {e}")
    if expected is None or all(g is None for g in expected):
        pytest.skip("not differentiable")
    got = grads_of(
        lambda *a, **k: thunder.jit(call)(*split_tensors(type(sample)(a, k))[0]), tensors, rebuild, 0
    )
    for g, e in zip(got, expected):
        g = torch.zeros_like(e) if g is None and e is not None else g
        e = torch.zeros_like(g) if e is None and g is not None else e
        if g is not None:
            torch.testing.assert_close(g, e, equal_nan=True, **tolerance(info, torch.float64))


def test_every_aten_symbol_has_an_op_database_entry():
    covered = {o.name for o in OPS}
    missing = sorted(s.name for s in aten.symbols() if s.name not in covered)
    assert not missing, f"aten symbols without an entry in tests/support/aten_opdb.py: {missing}"


def test_aten_symbols_print_and_run_as_torch_names_them():
    a, b = torch.randn(2, 3), torch.randn(3, 4)
    jfn = thunder.jit(lambda a, b: torch.ops.aten.mm(a, b))  # the packet: overload resolved as torch does
    torch.testing.assert_close(jfn(a, b), a @ b)
    first, last = thunder.last_traces(jfn)[0], thunder.last_traces(jfn)[-1]
    assert "t0 = aten.mm.default(a, b)" in str(first)
    assert "t0 = torch.ops.aten.mm.default(a, b)" in str(last)
    # the printed first trace runs: ``aten.mm.default`` resolves in thunder.ops.aten
    torch.testing.assert_close(first.python_callable()(a, b)[0], a @ b)


def test_an_aten_op_without_a_symbol_is_a_clear_error():
    jfn = thunder.jit(lambda a: torch.ops.aten.i0.default(a))
    with pytest.raises(UnsupportedOpError, match=r"torch\.ops\.aten\.i0\.default is not supported"):
        jfn(torch.rand(3))
