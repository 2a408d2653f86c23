"""Every torch-language op against eager PyTorch, from the op database (``tests/support/opdb/``).

For each entry, dtype and sample: ``thunder.jit`` of the torch call equals eager; the traces
pass ``verify``; the ltorch symbol is in the first trace; and the decomposition alone (the
first trace with every ltorch op replaced by its prims, run by the torch executor's prim
implementations) equals eager too, which is what runs where no executor claims the op; and
gradients through the compiled program equal eager autograd's (float64, first sample).
"""

from __future__ import annotations

import functools
import inspect
import types

import pytest
import torch
from support.compare import compare, grads_of, split_tensors, tolerance
from support.opdb import OPS, Maker, OpInfo, S

import thunder
from thunder.core.pytree import tree_flatten
from thunder.core.tags import Tag
from thunder.core.trace import Trace
from thunder.core.verify import verify
from thunder.executors import pythonex, torchex
from thunder.executors.claim import claim
from thunder.ops.langs import all_symbols


def _walk(bsyms):
    for b in bsyms:
        yield b
        yield from _walk(b.subsymbols)


def _prims_only(trace: Trace) -> Trace:
    """``trace`` with each torch-language op replaced by its decomposition, recursively."""

    def flat(bsyms):
        for b in bsyms:
            if Tag.LTORCH in b.sym.tags:
                yield from flat(b.subsymbols)
            else:
                yield b

    out = trace.derive("prims only")
    out.bound_symbols = list(flat(trace.bound_symbols))
    return out


def _run_decomposition(jfn, tensors):
    entry = thunder.compile_stats(jfn).entries[-1]
    prims_trace = claim(_prims_only(thunder.last_traces(jfn)[0]), [torchex.executor, pythonex.executor])
    verify(prims_trace)
    cargs, eargs = entry.prologue(*tensors)
    out = prims_trace.python_callable()(*cargs)
    return out[0] if entry.epilogue is None else entry.epilogue(*out, *eargs)


def _check_sample(info: OpInfo, fn, dtype, sample: S, *, decomposition: bool = True) -> None:
    tensors, rebuild = split_tensors(sample)
    what = f"{info.id} {dtype} {sample}"

    def call(*ts):
        args, kwargs = rebuild(ts)
        return fn(*args, **kwargs)

    jfn = thunder.jit(call)
    got = jfn(*tensors)
    args, kwargs = rebuild([t.clone() for t in tensors])
    expected = (info.ref or fn)(*args, **kwargs)
    compare(info, dtype, sample, got, expected, what)
    traces = thunder.last_traces(jfn)
    for t in traces:
        verify(t)
    first = traces[0]
    inputs = {p.name for p in tree_flatten(first.args)[0] if hasattr(p, "name")}
    returns_input = any(getattr(p, "name", None) in inputs for p in tree_flatten(first.output)[0])
    if not (info.noop or returns_input):
        assert any(b.sym.id == f"ltorch.{info.name}" for b in _walk(first.bound_symbols)), (
            f"{what}: ltorch.{info.name} is not in the trace:\n{first}"
        )
    if decomposition:
        compare(info, dtype, sample, _run_decomposition(jfn, tensors), expected, f"{what} (decomposition)")


def _on(sample: S, device: str) -> S:
    """The sample with every tensor moved to ``device``."""
    tensors, rebuild = split_tensors(sample)
    args, kwargs = rebuild([t.to(device) for t in tensors])
    return S(args, kwargs)


def _check_op(info: OpInfo, device: str) -> None:
    for dtype in info.dtypes:
        for sample in info.samples(Maker(dtype, device)):
            _check_sample(info, info.op, dtype, _on(sample, device))
    sample = _on(info.samples(Maker(info.dtypes[0], device))[0], device)
    for alias in info.aliases:  # the other torch spellings of the op
        _check_sample(info, alias, info.dtypes[0], sample, decomposition=False)


@pytest.mark.filterwarnings("ignore:size_average and reduce args")
@pytest.mark.parametrize("info", OPS, ids=lambda o: o.id)
def test_op(info: OpInfo):
    if info.cuda:
        pytest.skip("needs CUDA: see test_op_cuda")
    _check_op(info, "cpu")


@pytest.mark.cuda
@pytest.mark.parametrize("info", OPS, ids=lambda o: o.id)
def test_op_cuda(info: OpInfo):
    _check_op(info, "cuda")


def test_every_ltorch_symbol_has_an_op_database_entry():
    covered = {o.name for o in OPS}
    missing = sorted(s.name for s in all_symbols() if s.name not in covered)
    assert not missing, f"ltorch ops without an entry in tests/support/opdb/: {missing}"


def test_op_database_names_real_symbols():
    names = {s.name for s in all_symbols()}
    assert not [o.id for o in OPS if o.name not in names]


def test_identity_composites_record_nothing():
    jfn = thunder.jit(lambda x: x.contiguous().sin())
    jfn(torch.randn(3))
    verify(thunder.last_traces(jfn)[0])


def test_batch_norm_decomposition_updates_running_stats():
    bn, ref = torch.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    x = torch.randn(4, 3, 5)
    jbn = thunder.jit(bn)
    torch.testing.assert_close(jbn(x), ref(x))
    torch.testing.assert_close((bn.running_mean, bn.running_var), (ref.running_mean, ref.running_var))
    # the decomposition alone writes the running statistics with prims.copy_
    expected = ref(x)
    torch.testing.assert_close(_run_decomposition(jbn, [x]), expected)
    torch.testing.assert_close((bn.running_mean, bn.running_var), (ref.running_mean, ref.running_var))


def test_getitem_with_a_bool_mask_is_a_clear_error():
    jfn = thunder.jit(lambda x: x[x > 0])
    with pytest.raises(Exception, match="boolean mask"):
        jfn(torch.randn(3, 4))


@pytest.mark.filterwarnings("ignore:size_average and reduce args")
@pytest.mark.parametrize(
    "info", [o for o in OPS if torch.float64 in o.dtypes and o.values], ids=lambda o: o.id
)
def test_op_grad(info: OpInfo):
    """Gradients through the compiled program (its backward trace) equal eager's, and so do
    those through the decomposition into prims."""
    if info.cuda:
        pytest.skip("needs CUDA")
    sample = info.samples(Maker(torch.float64))[0]
    tensors, rebuild = split_tensors(sample)

    def call(*ts):
        args, kwargs = rebuild(ts)
        return info.op(*args, **kwargs)

    if info.numerical_grad:
        leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in tensors]
        assert torch.autograd.gradcheck(thunder.jit(call), tuple(leaves))
        return
    try:
        expected = grads_of(info.ref or info.op, tensors, rebuild, 0)
    except (RuntimeError, NotImplementedError) as e:  # eager cannot differentiate this sample
        pytest.skip(f"eager autograd refuses: {e}")
    if expected is None or all(g is None for g in expected):
        pytest.skip("not differentiable")
    got = grads_of(lambda *a, **k: thunder.jit(call)(*split_tensors(S(a, k))[0]), tensors, rebuild, 0)

    def decomposed(*a, **k):
        ts = split_tensors(S(a, k))[0]
        jfn = thunder.jit(call)
        jfn(*ts)
        return _run_decomposition(jfn, ts)

    # the prims alone (what a backward built from per-prim rules differentiates) agree too
    got_prims = grads_of(decomposed, tensors, rebuild, 0)
    checked = (("compiled", got),) + ((("decomposition", got_prims),) if not info.rule_only_grad else ())
    for what, grads in checked:
        for g, e in zip(grads or [None] * len(expected), expected):
            # an input the result does not depend on: no gradient here, zeros in eager
            g = torch.zeros_like(e) if g is None and e is not None else g
            e = torch.zeros_like(g) if e is None and g is not None else e
            if g is not None:
                torch.testing.assert_close(
                    g, e, equal_nan=True, **tolerance(info, torch.float64), msg=lambda m, w=what: f"{w}: {m}"
                )


def _keyword_forms(op, args: tuple, kwargs: dict):
    """The sample's call with its operands given by keyword, as torch names them (the aten
    schema for a C function, ``input`` for ``self``; the signature of a Python one); a Tensor
    method keeps its tensor positional."""
    method = isinstance(op, (types.MethodDescriptorType, types.WrapperDescriptorType))
    keep = 1 if method else 0
    if inspect.isfunction(op):
        try:
            params = [
                p.name
                for p in inspect.signature(op).parameters.values()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            ]
        except (TypeError, ValueError):
            return
        forms = [params]
    else:
        forms = [
            [
                ("input" if a.name == "self" and not method else a.name)
                for a in s.arguments
                if not a.kwarg_only
            ]
            for s in torch._C._jit_get_schemas_for_operator(f"aten::{getattr(op, '__name__', '')}")
        ]
    for names in forms:
        if len(names) < len(args) or len(args) <= keep:
            continue
        named = dict(zip(names[keep : len(args)], args[keep:]))
        if any(k in kwargs for k in named):
            continue
        yield args[:keep], {**named, **kwargs}


@pytest.mark.filterwarnings("ignore:size_average and reduce args")
def test_ops_take_their_operands_by_keyword():
    """Each op's first sample with its operands by keyword, where eager accepts that form,
    equals eager."""
    checked = []
    for info in OPS:
        if info.cuda or not info.values or info.ref is not None:  # (a ref: eager's op differs)
            continue
        sample = info.samples(Maker(info.dtypes[0], "cpu"))[0]
        tensors, rebuild = split_tensors(sample)
        for pos, kw in _keyword_forms(info.op, sample.args, sample.kwargs):
            call_form = S(pos, kw)
            ts, rb = split_tensors(call_form)
            try:
                a, k = rb([t.clone() for t in ts])
                expected = info.op(*a, **k)
            except (TypeError, RuntimeError):
                continue  # eager does not take this form

            def call(*xs, rb=rb, op=info.op):
                a, k = rb(xs)
                return op(*a, **k)

            got = thunder.jit(call)(*[t.clone() for t in ts])
            compare(info, info.dtypes[0], call_form, got, expected, f"{info.id} by keyword {sorted(kw)}")
            checked.append(info.id)
            break
    assert len(checked) > 150, checked


def _with_nan_and_inf(t: torch.Tensor) -> torch.Tensor:
    t = t.clone()
    if t.dtype.is_floating_point and t.numel():
        flat = t.view(-1)
        for i, v in enumerate((float("nan"), float("inf"), -float("inf"))[: flat.numel()]):
            flat[i * (flat.numel() // 3)] = v
    return t


# where eager's CPU kernel and Inductor's code of the same formula differ, with the reason
_TORCHCOMPILE_NAN_DIFFERS = {
    "gelu": "eager's CPU kernel gives NaN for gelu(inf); Inductor's code of x/2 * (1 + erf(x/sqrt(2))) "
    "gives inf, as torch.compile of F.gelu alone does",
}


def _elementwise_nan_samples():
    """(op id, op, sample with NaN and inf in its float tensors) for every elementwise op."""
    by_name = {s.name: s for s in all_symbols()}
    out = []
    for info in OPS:
        sym = by_name.get(info.name)
        if info.cuda or not info.values or sym is None or Tag.ELEMENTWISE not in sym.tags:
            continue
        sample = info.samples(
            Maker(torch.float32 if torch.float32 in info.dtypes else info.dtypes[0], "cpu")
        )[0]
        tensors, rebuild = split_tensors(sample)
        out.append((info, [_with_nan_and_inf(t) for t in tensors], rebuild))
    return out


@pytest.mark.parametrize(
    "executor",
    [
        "torch",
        pytest.param("torchcompile", marks=pytest.mark.slow),
    ],
)
def test_elementwise_ops_keep_nan_and_inf(executor):
    """Every elementwise op's first sample with NaN, inf and -inf in its float inputs, through
    each executor's translation, equals eager, NaN for NaN (through torch.compile regions in
    programs of a dozen ops: about a minute of Inductor compiles in all)."""
    cases = []
    for info, tensors, rebuild in _elementwise_nan_samples():
        a, k = rebuild([t.clone() for t in tensors])
        try:
            expected = (info.ref or info.op)(*a, **k)
        except (RuntimeError, TypeError, ValueError):
            continue  # eager refuses these values
        cases.append((info, tensors, rebuild, expected))

    def run_all(*flat, cases):
        outs, i = [], 0
        for info, tensors, rebuild, _ in cases:
            a, k = rebuild(flat[i : i + len(tensors)])
            i += len(tensors)
            outs.append(info.op(*a, **k))
        return outs

    assert len(cases) > 150
    # through torch.compile, programs of a dozen ops (Inductor's compile time grows faster than
    # the program)
    size = len(cases) if executor == "torch" else 12
    got = []
    for start in range(0, len(cases), size):
        chunk = cases[start : start + size]
        inputs = [t.clone() for _, tensors, _, _ in chunk for t in tensors]
        got += thunder.jit(functools.partial(run_all, cases=chunk), executors=[executor])(*inputs)
    for (info, _, _, expected), g in zip(cases, got):
        if executor == "torchcompile" and info.id in _TORCHCOMPILE_NAN_DIFFERS:
            # declared: still differs, or the declaration goes
            assert not torch.equal(g.isnan(), expected.isnan()), f"{info.id} no longer differs: undeclare it"
            continue
        torch.testing.assert_close(
            g,
            expected,
            equal_nan=True,
            **tolerance(info, torch.float32),
            msg=lambda m, i=info: f"{i.id}: {m}",
        )
