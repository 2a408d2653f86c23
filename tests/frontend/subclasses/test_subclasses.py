"""Tensor wrapper subclasses (seed 002): subclass inputs and outputs, ``__torch_dispatch__``
resolved at trace time, the flattening pass, and clear errors for what is not supported.

The subclasses: ``ScaleTensor`` (tests/support/subclasses.py: data and a scale) and torch's
``TwoTensor`` (two inner tensors, every op applied to both).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from support.subclass_checks import assert_flat, walk
from support.subclasses import (
    BranchyTensor,
    DequantizingTensor,
    I0Tensor,
    NoFlattenTensor,
    OffsetTensor,
    ScaleTensor,
    scale_tensor,
)
from torch.testing._internal.two_tensor import TwoTensor

import thunder
from thunder.autograd.function import CotangentMismatchError
from thunder.core.errors import DataDependentError, UnsupportedOpError, UnsupportedValueError
from thunder.core.proxies import proxies_in
from thunder.core.subclass import SubclassProxy
from thunder.core.tags import Tag
from thunder.core.verify import verify
from thunder.executors import pythonex, torchex
from thunder.executors.claim import claim
from thunder.transforms.flatten_subclasses import flatten_trace


def two_tensor(*shape, requires_grad: bool = False) -> TwoTensor:
    a = torch.randn(*shape)
    out = TwoTensor(a, a * 3 + 1)
    return out.requires_grad_() if requires_grad else out


MAKERS = {"ScaleTensor": scale_tensor, "TwoTensor": two_tensor}


def assert_same(got, expected) -> None:
    """Equal values, and for a subclass the same class, flatten context and inner tensors."""
    if isinstance(expected, torch.Tensor) and type(expected) is not torch.Tensor:
        assert type(got) is type(expected), f"{type(got).__qualname__} != {type(expected).__qualname__}"
        names, ctx = expected.__tensor_flatten__()
        assert got.__tensor_flatten__() == (names, ctx)
        assert (got.shape, got.dtype, got.device) == (expected.shape, expected.dtype, expected.device)
        for n in names:
            torch.testing.assert_close(getattr(got, n), getattr(expected, n))
    elif isinstance(expected, (tuple, list)):
        assert type(got) is type(expected) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same(g, e)
    else:
        torch.testing.assert_close(got, expected)


def check(fn, *args):
    """``thunder.jit(fn)`` equals eager, its traces verify, the executed computation is flat,
    and a second call hits the cache."""
    expected = fn(*args)
    jfn = thunder.jit(fn)
    assert_same(jfn(*args), expected)
    for kind in (thunder.last_prologue_traces, thunder.last_traces, thunder.last_epilogue_traces):
        for t in kind(jfn):
            verify(t)
    assert_flat(thunder.last_traces(jfn)[-1])
    assert_same(jfn(*args), expected)
    assert thunder.compile_stats(jfn).cache_hits == 1
    return jfn


CASES = {
    # elementwise
    "add": (lambda x: x + 1, 1),
    "mul": (lambda x, y: x * y, 2),
    "sin": (lambda x: x.sin(), 1),
    "rdiv": (lambda x: 2 / x, 1),
    "neg": (lambda x: -x, 1),
    "relu": (lambda x: torch.relu(x), 1),
    "where": (lambda x: torch.where(x > 0, x, 0.0), 1),
    "compare": (lambda x: x > 0, 1),  # ScaleTensor: a plain bool result
    "chain": (lambda x: ((x + 1) * 2 - x).exp(), 1),
    # matmul
    "mm": (lambda x, y: x @ y.t(), 2),
    "matmul_3d": (lambda x, y: x.unsqueeze(0).expand(3, 4, 4) @ y, 2),
    "linear": (lambda x, y: F.linear(x, y), 2),
    # views
    "t": (lambda x: x.t(), 1),
    "transpose": (lambda x: x.transpose(0, 1) * 2, 1),
    "view": (lambda x: x.view(16), 1),
    "reshape": (lambda x: x.reshape(2, 8), 1),
    "getitem": (lambda x: x[0], 1),
    "slice": (lambda x: x[:, 1:3], 1),
    "permute": (lambda x: x.unsqueeze(0).permute(2, 0, 1), 1),
    "split": (lambda x: x.split(3), 1),
    # reductions
    "sum": (lambda x: x.sum(), 1),
    "sum_dim": (lambda x: x.sum(1), 1),
    "mean": (lambda x: x.mean(), 1),
    "amax": (lambda x: x.amax(1), 1),
    "softmax": (lambda x: x.softmax(-1), 1),
    # several outputs, casts, copies
    "tuple_out": (lambda x: (x * 2, x.sum(), x > 1), 1),
    "to_float64": (lambda x: x.to(torch.float64), 1),
    "clone": (lambda x: x.clone(), 1),
    "cat": (lambda x, y: torch.cat([x, y]), 2),
}


@pytest.mark.parametrize("maker", list(MAKERS), ids=str)
@pytest.mark.parametrize("case", list(CASES), ids=str)
def test_results_equal_eager(case, maker):
    fn, n = CASES[case]
    check(fn, *(MAKERS[maker](4, 4) for _ in range(n)))


@pytest.mark.parametrize("maker", list(MAKERS), ids=str)
def test_mixed_subclass_and_plain_inputs(maker):
    x, y = MAKERS[maker](4, 4), MAKERS[maker](4, 4)
    w, b = torch.randn(4, 4), torch.randn(4)
    check(lambda x, w, y, b: (w.sin() * x + y) @ w + b, x, w, y, b)  # a plain tensor first, too
    check(lambda x, w: x + torch.ones(4, 4) * w, x, w)  # a tensor made in the function


@pytest.mark.parametrize("maker", list(MAKERS), ids=str)
def test_a_subclass_input_returned_as_it_is_is_the_same_object(maker):
    x = MAKERS[maker](3)
    jfn = thunder.jit(lambda x, y: (x, y * 2))
    y = torch.randn(3)
    out = jfn(x, y)
    assert out[0] is x
    torch.testing.assert_close(out[1], y * 2)
    assert jfn(x, y)[0] is x


def test_construction_inside_the_function():
    a, b, s = torch.randn(3, 3), torch.randn(3, 3), torch.tensor(0.5)
    check(lambda a, s: ScaleTensor(a * 2, s) + 1, a, s)
    check(lambda a, s: ScaleTensor(a.sin(), s), a, s)  # returned without any op on it
    check(lambda a, b, c: TwoTensor(a, b) @ c, a, b, torch.randn(3, 2))
    # the construction is recorded where it is first used, and flattened away
    jfn = thunder.jit(lambda a, s: ScaleTensor(a * 2, s) + 1)
    jfn(a, s)
    first = thunder.last_traces(jfn)[0]
    assert any(b.sym.id == "prims.unflatten_tensor_subclass" for b in first.bound_symbols)


def test_metadata_drives_python_control_flow_and_user_code_sees_the_subclass():
    def fn(x):
        y = x + 1
        assert isinstance(y, ScaleTensor) and isinstance(y, torch.Tensor)
        if y.shape[0] == 4 and y.dtype is torch.float32:
            return y.dequantize() * 2  # a Python method of the subclass: inner tensors used directly
        return y

    check(fn, scale_tensor(4, 2))
    check(lambda x: x._scale * 3 + x.sum().dequantize(), scale_tensor(4, 2))
    check(lambda x: (x.a * 2, x + 1), two_tensor(3))


def test_several_subclass_inputs_and_a_captured_subclass():
    w = scale_tensor(4, 4)
    check(lambda x, y: (x @ w, y @ w), scale_tensor(2, 4), scale_tensor(3, 4))


def test_the_prologue_checks_the_class_the_context_and_every_inner_tensor():
    jfn = thunder.jit(lambda x: x * 2)
    x = scale_tensor(3)
    jfn(x)
    pro = str(thunder.last_prologue_traces(jfn)[0])
    assert (
        "prims.check_tensor_subclass(x, ScaleTensor, (3,), torch.float32, torch.device('cpu'), False, ('_x', '_scale'), None)"
        in pro
    )
    assert "(x__x, x__scale) = prims.flatten_tensor_subclass(x)" in pro
    assert "prims.check_tensor(x__scale, (), torch.float32, 'cpu', False)" in pro
    for other in (
        ScaleTensor(torch.randn(3), torch.tensor([2.0])),  # an inner tensor of another shape
        ScaleTensor(torch.randn(3), torch.tensor(2.0, dtype=torch.float64)),  # another dtype
        torch.randn(3),  # a plain tensor
        two_tensor(3),  # another subclass
    ):
        expected = other * 2
        assert_same(jfn(other), expected)
    assert thunder.compile_stats(jfn).cache_misses == 5
    # the flatten context is checked: another offset is another program
    jo = thunder.jit(lambda x: x + 1)
    for offset in (1.0, 2.0, 1.0):
        x = OffsetTensor(torch.randn(3), offset)
        assert_same(jo(x), x + 1)
    assert thunder.compile_stats(jo).cache_misses == 2


def test_a_module_with_a_subclass_weight():
    lin = torch.nn.Linear(4, 3)
    with torch.no_grad():
        lin.weight = torch.nn.Parameter(
            ScaleTensor(lin.weight.detach() / 2, torch.tensor(2.0)), requires_grad=False
        )
    x = torch.randn(5, 4)
    jlin = thunder.jit(lin)
    with torch.no_grad():
        assert_same(jlin(x), lin(x))
        assert_flat(thunder.last_traces(jlin)[-1])
    assert isinstance(lin.weight, ScaleTensor) and isinstance(lin.weight._x, torch.Tensor)


# -- printed traces ---------------------------------------------------------------------------
FIRST_TRACE = """\
import torch

def computation(x):
  # x: "ScaleTensor[cpu f32[2, 2]] (_x: cpu f32[2, 2], _scale: cpu f32[])"
  t3 = ScaleTensor.torch.add(x, 1)  # t3: "ScaleTensor[cpu f32[2, 2]] (_x: cpu f32[2, 2], _scale: cpu f32[])"
    # (x__x, x__scale) = prims.flatten_tensor_subclass(x)  # x__x: "cpu f32[2, 2]", x__scale: "cpu f32[]"
    # t0 = aten.mul.Tensor(x__x, x__scale)  # t0: "cpu f32[2, 2]"
      # t0 = prims.mul(x__x, x__scale)  # t0: "cpu f32[2, 2]"
    # t1 = aten.add.Tensor(t0, 1)  # t1: "cpu f32[2, 2]"
      # t1 = prims.add(t0, 1)  # t1: "cpu f32[2, 2]"
    # t2 = aten.div.Tensor(t1, x__scale)  # t2: "cpu f32[2, 2]"
      # t2 = prims.div(t1, x__scale)  # t2: "cpu f32[2, 2]"
    # t3 = prims.unflatten_tensor_subclass(ScaleTensor, {'_x': t2, '_scale': x__scale}, None, (2, 2), (2, 1))  # t3: "ScaleTensor[cpu f32[2, 2]] (_x: cpu f32[2, 2], _scale: cpu f32[])"
  return (t3,)
"""

FLAT_TRACE = """\
# Constructed by Flatten tensor subclasses
import torch
import thunder.ops.aten as aten

def computation(x__x, x__scale):
  # x__x: "cpu f32[2, 2]"
  # x__scale: "cpu f32[]"
  t0 = aten.mul.Tensor(x__x, x__scale)  # t0: "cpu f32[2, 2]"
    # t0 = prims.mul(x__x, x__scale)  # t0: "cpu f32[2, 2]"
  t1 = aten.add.Tensor(t0, 1)  # t1: "cpu f32[2, 2]"
    # t1 = prims.add(t0, 1)  # t1: "cpu f32[2, 2]"
  t2 = aten.div.Tensor(t1, x__scale)  # t2: "cpu f32[2, 2]"
    # t2 = prims.div(t1, x__scale)  # t2: "cpu f32[2, 2]"
  return (t2, x__scale)
"""

FLAT_EPILOGUE = """\
# Constructed by Flatten tensor subclasses
import torch
import thunder.ops.prims as prims

def epilogue(t2, x__scale):
  # t2: "cpu f32[2, 2]"
  # x__scale: "cpu f32[]"
  t3 = prims.unflatten_tensor_subclass(ScaleTensor, {'_x': t2, '_scale': x__scale}, None, (2, 2), (2, 1))  # t3: "ScaleTensor[cpu f32[2, 2]] (_x: cpu f32[2, 2], _scale: cpu f32[])"
  return t3
"""

FIRST_PROLOGUE = """\
import torch
import thunder.ops.prims as prims

def prologue(*args, **kwargs):
  prims.check_len(args, 1)
  prims.check_keys(kwargs, ())
  x = prims.unpack_item(args, 0)  # x: "ScaleTensor[cpu f32[2, 2]] (_x: cpu f32[2, 2], _scale: cpu f32[])"
  prims.check_tensor_subclass(x, ScaleTensor, (2, 2), torch.float32, torch.device('cpu'), False, ('_x', '_scale'), None)
  (x__x, x__scale) = prims.flatten_tensor_subclass(x)  # x__x: "cpu f32[2, 2]", x__scale: "cpu f32[]"
  prims.check_tensor(x__x, (2, 2), torch.float32, 'cpu', False)
  prims.check_strides(x__x, (2, 1))
  prims.check_tensor(x__scale, (), torch.float32, 'cpu', False)
  prims.check_strides(x__scale, ())
  prims.check_grad_enabled(True)
  prims.check_autocast(())
  prims.check_default_dtype(torch.float32)
  return ((x,), ())
"""


def test_golden_traces_of_x_plus_1():
    jfn = thunder.jit(lambda x: x + 1)
    x = scale_tensor(2, 2)
    assert_same(jfn(x), x + 1)
    traces = thunder.last_traces(jfn)
    assert str(traces[0]) == FIRST_TRACE
    flat = next(t for t in traces if t.provenance and t.provenance.pass_name == "Flatten tensor subclasses")
    assert str(flat) == FLAT_TRACE
    assert str(thunder.last_epilogue_traces(jfn)[1]) == FLAT_EPILOGUE
    assert str(thunder.last_prologue_traces(jfn)[0]) == FIRST_PROLOGUE
    # the executed prologue hands over the inner tensors; the epilogue rebuilds with the class's own unflatten
    assert "return ((x__x, x__scale), ())" in str(thunder.last_prologue_traces(jfn)[-1])
    assert "ScaleTensor.__tensor_unflatten__({'_x': t2, '_scale': x__scale}" in str(
        thunder.last_epilogue_traces(jfn)[-1]
    )


def test_the_printed_first_trace_runs_on_real_subclass_values():
    for make in MAKERS.values():
        x = make(3, 3)
        jfn = thunder.jit(lambda x: (x @ x).sum(0) + 1)
        expected = jfn(x)
        first = thunder.last_traces(jfn)[0]
        (got,) = first.python_callable()(x)  # ``ScaleTensor.torch.matmul(x, x)`` runs the torch op
        assert_same(got, expected)


def test_flattening_with_instances_at_the_boundary():
    """The after-split form: the values autograd hands over stay instances at the trace's
    boundary (flattened at its start, rebuilt at its end); the body is flat."""
    for make in MAKERS.values():
        x, y = make(3, 3), make(3, 3)
        fn = lambda x, y: ((x @ y) * 2).sum(0)  # noqa: E731
        jfn = thunder.jit(fn)
        jfn(x, y)
        first = thunder.last_traces(jfn)[0]
        names = frozenset(p.name for p in proxies_in((first.args, first.output)))
        kept = flatten_trace(first, keep=names)
        verify(kept)
        assert all(isinstance(p, SubclassProxy) for p in kept.args + list(kept.output))
        ends = [b for b in kept.bound_symbols if b.has_tag(Tag.FLATTEN_TENSOR_SUBCLASS)]
        ends += [b for b in kept.bound_symbols if b.has_tag(Tag.UNFLATTEN_TENSOR_SUBCLASS)]
        assert [b.sym.id for b in ends] == ["prims.flatten_tensor_subclass"] * 2 + [
            "prims.unflatten_tensor_subclass"
        ]
        assert ends[:2] == kept.bound_symbols[:2] and ends[2] is kept.bound_symbols[-1]
        for b in kept.bound_symbols[2:-1]:  # the body: aten ops on plain tensors
            assert b.has_tag(Tag.ATEN) and not any(isinstance(p, SubclassProxy) for p in proxies_in(b))
        executed = claim(kept, [torchex.executor, pythonex.executor])
        (got,) = executed.python_callable()(x, y)
        assert_same(got, fn(x, y))


# -- gradients --------------------------------------------------------------------------------
def cotangent_like(t):
    """A gradient for ``t`` as ``t.backward()`` passes one: of ``t``'s class, inner tensors like ``t``'s."""
    if isinstance(t, ScaleTensor):
        return ScaleTensor(torch.randn(t.shape), torch.tensor(3.0))
    if isinstance(t, TwoTensor):
        return TwoTensor(torch.randn(t.shape), torch.randn(t.shape))
    return torch.randn(t.shape)


_BOUNDARY = (Tag.FLATTEN_TENSOR_SUBCLASS, Tag.UNFLATTEN_TENSOR_SUBCLASS, Tag.PROLOGUE_CHECK)


def _at_boundary(b) -> bool:
    """A flatten, unflatten or check of a subclass value (claimed: its first subsymbol is)."""
    return any(b.has_tag(t) for t in _BOUNDARY) or any(_at_boundary(s) for s in b.subsymbols[:1])


def assert_flat_inside(trace) -> None:
    """No subclass op; subclass values only where autograd hands instances over: flattened at
    the start of the trace, rebuilt at its end."""
    for b in walk(trace.bound_symbols):
        assert not b.has_tag(Tag.TENSOR_SUBCLASS), f"a subclass op is left: {b.sym.id}"
        if not _at_boundary(b):
            for p in proxies_in((b.args, b.kwargs, b.output)):
                assert not isinstance(p, SubclassProxy), f"{b.sym.id} uses the subclass value {p.name}"
    ops = [b for b in trace.bound_symbols if not _at_boundary(b)]
    assert ops, "the trace computes nothing"


def assert_same_value(got, expected) -> None:
    """The same class and value. A ScaleTensor's value is its data times its scale: which
    scale an op keeps depends on the order of its operands (thunder's rule for softmax
    multiplies in another order than torch's formula), as for any quantized format."""
    if isinstance(expected, ScaleTensor):
        assert type(got) is ScaleTensor
        torch.testing.assert_close(got.dequantize(), expected.dequantize())
    else:
        assert_same(got, expected)


def check_grads(fn, *args):
    """Gradients of ``thunder.jit(fn)`` equal eager's (class and inner tensors), for a
    cotangent like ``out.backward()`` passes, with a forward and a backward trace, both flat."""
    expected = fn(*args)
    cot = cotangent_like(expected)
    wrt = [a for a in args if a.requires_grad]
    grads = torch.autograd.grad(expected, wrt, cot, allow_unused=True)
    jfn = thunder.jit(fn)
    out = jfn(*args)
    assert_same(out.detach(), expected.detach())
    for call in range(2):  # the second call hits the cache
        out = out if call == 0 else jfn(*args)
        got = torch.autograd.grad(out, wrt, cot, allow_unused=True)
        for g, e in zip(got, grads):
            if e is None:
                assert g is None
            else:
                assert_same_value(g, e)
    assert thunder.compile_stats(jfn).cache_hits == 1
    assert thunder.last_backward_traces(jfn), "fell back to torch's autograd over whole subclass ops"
    for kind in (thunder.last_traces, thunder.last_backward_traces):
        for t in kind(jfn):
            verify(t)
    assert_flat_inside(thunder.last_traces(jfn)[-1])
    assert_flat_inside(thunder.last_backward_traces(jfn)[-1])
    return jfn


GRAD_CASES = {
    "elementwise": lambda x, w: (x * 2 + w).sin(),
    "chain": lambda x, w: ((x - w).tanh() * x.exp()) / (w.abs() + 1),
    "matmul": lambda x, w: x @ w,
    "matmul_plain_first": lambda x, w: w @ x - x,
    "linear": lambda x, w: F.linear(w, x),
    "reduction": lambda x, w: (x.t() * w).sum(0),
    "sum": lambda x, w: (x * 2).sum(),
    "mean": lambda x, w: (x * w).mean(),
    "softmax": lambda x, w: x.softmax(-1) * w,
    "view": lambda x, w: x.view(9) * 2,
    "self_matmul": lambda x, w: (x @ x).sum(1),
    "addmm": lambda x, w: torch.addmm(w, x, w),
    "transpose": lambda x, w: x.transpose(0, 1) @ w,
    "permute": lambda x, w: x.unsqueeze(0).permute(2, 0, 1) * 2,
    "cat": lambda x, w: torch.cat([x, x * 2]).sum(0),
    "pow_sqrt": lambda x, w: (x**2 + 1).sqrt() + x.pow(3),
    "to_float64": lambda x, w: x.to(torch.float64) * 2,
    # the backward's where(cond, g, 0): torch wraps the 0 into a tensor inside the dispatch
    "relu": lambda x, w: torch.relu(x) * w,
    "amax": lambda x, w: x.amax(1),
    "where": lambda x, w: torch.where(w > 0, x, w),
    "no_grad_region": lambda x, w: _doubled_without_grad(x) * w,
}


def _doubled_without_grad(x):
    with torch.no_grad():
        return x * 2


@pytest.mark.parametrize("maker", list(MAKERS), ids=str)
@pytest.mark.parametrize("case", list(GRAD_CASES), ids=str)
def test_gradients_through_a_subclass_equal_eager(case, maker):
    x, w = MAKERS[maker](3, 3, requires_grad=True), torch.randn(3, 3, requires_grad=True)
    check_grads(GRAD_CASES[case], x, w)


@pytest.mark.parametrize("maker", list(MAKERS), ids=str)
def test_gradients_of_two_subclass_inputs(maker):
    x, y = MAKERS[maker](3, 3, requires_grad=True), MAKERS[maker](3, 3, requires_grad=True)
    check_grads(lambda x, y: (x * y + x @ y).sum(0), x, y)


GOLDEN_BACKWARD = """\
# Constructed by Flatten tensor subclasses
import torch
import thunder.ops.aten as aten
import thunder.ops.prims as prims

def backward(g_t7):
  # g_t7: "ScaleTensor[cpu f32[]] (_x: cpu f32[], _scale: cpu f32[])"
  prims.check_tensor_subclass(g_t7, ScaleTensor, (), torch.float32, torch.device('cpu'), None, ('_x', '_scale'), None)
  (g_t7__x, g_t7__scale) = prims.flatten_tensor_subclass(g_t7)  # g_t7__x: "cpu f32[]", g_t7__scale: "cpu f32[]"
  prims.check_tensor(g_t7__x, (), torch.float32, 'cpu', False)
  prims.check_tensor(g_t7__scale, (), torch.float32, 'cpu', False)
  t12 = aten.mul.Tensor(g_t7__x, g_t7__scale)  # t12: "cpu f32[]"
    # t12 = prims.mul(g_t7__x, g_t7__scale)  # t12: "cpu f32[]"
  t13 = aten.view.default(t12, [1, 1])  # t13: "cpu f32[1, 1]"
    # t13 = prims.reshape(t12, (1, 1))  # t13: "cpu f32[1, 1]"
  t14 = aten.div.Tensor(t13, g_t7__scale)  # t14: "cpu f32[1, 1]"
    # t14 = prims.div(t13, g_t7__scale)  # t14: "cpu f32[1, 1]"
  t15 = aten.mul.Tensor(t14, g_t7__scale)  # t15: "cpu f32[1, 1]"
    # t15 = prims.mul(t14, g_t7__scale)  # t15: "cpu f32[1, 1]"
  t16 = aten.expand.default(t15, [2, 2])  # t16: "cpu f32[2, 2]"
    # t16 = prims.broadcast_in_dim(t15, (2, 2), (0, 1))  # t16: "cpu f32[2, 2]"
  t17 = aten.div.Tensor(t16, g_t7__scale)  # t17: "cpu f32[2, 2]"
    # t17 = prims.div(t16, g_t7__scale)  # t17: "cpu f32[2, 2]"
  t19 = aten.mul.Tensor(t17, g_t7__scale)  # t19: "cpu f32[2, 2]"
    # t19 = prims.mul(t17, g_t7__scale)  # t19: "cpu f32[2, 2]"
  t20 = aten.mul.Tensor(t19, 2)  # t20: "cpu f32[2, 2]"
    # t20 = prims.mul(t19, 2)  # t20: "cpu f32[2, 2]"
  t21 = aten.div.Tensor(t20, g_t7__scale)  # t21: "cpu f32[2, 2]"
    # t21 = prims.div(t20, g_t7__scale)  # t21: "cpu f32[2, 2]"
  t22 = prims.unflatten_tensor_subclass(ScaleTensor, {'_x': t21, '_scale': g_t7__scale}, None, (2, 2), (2, 1))  # t22: "ScaleTensor[cpu f32[2, 2]] (_x: cpu f32[2, 2], _scale: cpu f32[])"
  return (t22,)
"""


def test_golden_backward_of_x_times_2_summed():
    """sum's and mul's rules on the ScaleTensor cotangent, each resolved by the subclass's
    dispatch (its aten ops: dequantize, the op, requantize), then flattened."""
    x = scale_tensor(2, 2, requires_grad=True)
    jfn = check_grads(lambda x: (x * 2).sum(), x)
    split, flat = thunder.last_backward_traces(jfn)[:2]
    assert [(b.sym.id, [getattr(a, "name", a) for a in b.args]) for b in split.bound_symbols] == [
        ("ScaleTensor.prims.broadcast_in_dim", ["g_t7", (2, 2), ()]),
        ("ScaleTensor.prims.mul", ["t18", 2]),
    ]
    assert str(flat) == GOLDEN_BACKWARD
    got = x.detach().requires_grad_()
    jfn(got).backward()  # ``backward()`` passes ones of the output's class
    expected = x.detach().requires_grad_()
    (expected * 2).sum().backward()
    assert_same(got.grad, expected.grad)


@pytest.mark.parametrize("maker", list(MAKERS), ids=str)
def test_a_module_with_a_subclass_weight_trains(maker):
    def make():
        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 3)
        with torch.no_grad():
            lin.weight = torch.nn.Parameter(MAKERS[maker](3, 3))
        return lin

    eager, jitted = make(), make()
    x = torch.randn(5, 3)
    jlin = thunder.jit(jitted)
    eager(x).sum().backward()
    jlin(x).sum().backward()
    assert thunder.last_backward_traces(jlin)
    assert_flat_inside(thunder.last_traces(jlin)[-1])
    assert_flat_inside(thunder.last_backward_traces(jlin)[-1])
    assert_same_value(jitted.weight.grad, eager.weight.grad)
    assert_same_value(jitted.bias.grad, eager.bias.grad)


@pytest.mark.parametrize("maker", list(MAKERS), ids=str)
def test_gradients_thunder_cannot_trace_fall_back_to_torch_autograd(maker, monkeypatch):
    """digamma's rule (polygamma) reaches the subclass's dispatch as aten.polygamma; without a
    symbol for it (taken away here) the program keeps torch's autograd over whole subclass ops,
    as eager."""
    from thunder.ops import aten

    monkeypatch.delitem(aten.ATEN, torch.ops.aten.polygamma.default)
    fn = lambda x, w: torch.digamma(x) * w  # noqa: E731
    x, w = MAKERS[maker](3, 3, requires_grad=True), torch.randn(3, 3, requires_grad=True)
    expected = fn(x, w)
    cot = torch.randn(expected.shape)  # any gradient works here, as in eager
    grads = torch.autograd.grad(expected, (x, w), cot)
    jfn = thunder.jit(fn)
    for g, e in zip(torch.autograd.grad(jfn(x, w), (x, w), cot), grads):
        assert_same(g, e)
    assert thunder.last_backward_traces(jfn) == []
    last = thunder.last_traces(jfn)[-1]
    ops = [b for b in last.bound_symbols if b.subsymbols and b.subsymbols[0].has_tag(Tag.TENSOR_SUBCLASS)]
    assert ops and all(b.info.claimed_by == "torch" for b in ops)


@pytest.mark.parametrize("maker", list(MAKERS), ids=str)
@pytest.mark.parametrize(
    "fn",
    [lambda x, w: torch.nn.functional.gelu(x) * w, lambda x, w: torch.digamma(x.abs() + 1) * w],
    ids=["gelu", "digamma"],
)
def test_a_gradient_on_a_subclass_is_thunder_s_backward(maker, fn):
    """gelu's rule takes erf of the subclass value (aten.erf in its dispatch), digamma's takes
    polygamma (aten.polygamma): a thunder backward, equal to eager's, over two calls."""
    jfn = thunder.jit(fn)
    for _ in range(2):
        x, w = MAKERS[maker](3, 3, requires_grad=True), torch.randn(3, 3, requires_grad=True)
        cot = torch.randn(3, 3)
        grads = torch.autograd.grad(fn(x, w), (x, w), cot)
        for g, e in zip(torch.autograd.grad(jfn(x, w), (x, w), cot), grads):
            assert_same(g, e)
    assert thunder.last_backward_traces(jfn)


def test_a_dispatch_returning_plain_tensors_keeps_eagers_gradient():
    """Eager's autograd records the op above the dispatch, so its plain result has a
    gradient; so does the trace's, and thunder's backward computes it."""
    fn = lambda x, w: x * 2 + w  # noqa: E731
    x = DequantizingTensor(torch.randn(3), torch.tensor(2.0)).requires_grad_()
    w = torch.randn(3, requires_grad=True)
    expected = torch.autograd.grad(fn(x, w).sum(), (x, w))
    jfn = thunder.jit(fn)
    for g, e in zip(torch.autograd.grad(jfn(x, w).sum(), (x, w)), expected):
        assert_same(g, e)
    assert thunder.last_backward_traces(jfn) != []


@pytest.mark.parametrize("maker", list(MAKERS), ids=str)
def test_gradients_of_a_plain_input_through_a_frozen_subclass_weight(maker):
    w = MAKERS[maker](3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    check_grads(lambda x, w: F.linear(x, w) * 2, x, w)


def test_a_gradient_of_a_third_class_is_a_clear_error():
    x = scale_tensor(3, 3, requires_grad=True)
    out = thunder.jit(lambda x: x * 2)(x)
    cot = ScaleTensor(torch.randn(3, 3), torch.tensor(3.0)).requires_grad_()  # of the class: fine
    assert_same(torch.autograd.grad(out, x, cot, retain_graph=True)[0], torch.autograd.grad(x * 2, x, cot)[0])
    # a plain gradient: a backward traced for it (tests/frontend/subclasses/test_subclass_grads.py)
    assert_same(torch.autograd.grad(out, x, torch.ones(3, 3), retain_graph=True)[0], torch.full((3, 3), 2.0))
    with pytest.raises(CotangentMismatchError, match="expected a ScaleTensor, got TwoTensor"):
        torch.autograd.grad(out, x, TwoTensor(torch.ones(3, 3), torch.ones(3, 3)))


def test_no_grad_inputs_under_grad_mode_are_flattened():
    jfn = thunder.jit(lambda x: x * 2)
    x = scale_tensor(3)
    assert_same(jfn(x), x * 2)
    assert_flat(thunder.last_traces(jfn)[-1])


# -- what is refused, clearly -----------------------------------------------------------------
def test_a_subclass_without_tensor_flatten_is_a_clear_error():
    jfn = thunder.jit(lambda x: x + 1)
    with pytest.raises(
        UnsupportedValueError, match=r"the input x is a NoFlattenTensor.*without __tensor_flatten__"
    ):
        jfn(NoFlattenTensor(torch.randn(3)))


def test_a_dispatch_calling_an_aten_op_thunder_lacks_is_a_clear_error():
    jfn = thunder.jit(lambda x: x.cos())  # the dispatch calls aten.i0
    with pytest.raises(UnsupportedOpError) as e:
        jfn(I0Tensor(torch.rand(3)))
    msg = str(e.value)
    assert "I0Tensor.__torch_dispatch__ calls aten.i0.default" in msg
    assert "thunder/ops/aten/" in msg and "tests/support/aten_opdb.py" in msg  # where ops are added
    assert "test_subclasses.py" in msg and "x.cos()" in msg  # the user's line
    assert "support/subclasses.py" in msg and "torch.ops.aten.i0.default(x)" in msg  # the subclass's


def test_a_dispatch_with_data_dependent_control_flow_is_a_clear_error():
    jfn = thunder.jit(lambda x: x * 3)
    with pytest.raises(DataDependentError) as e:
        jfn(BranchyTensor(torch.randn(3)))
    msg = str(e.value)
    assert "BranchyTensor.__torch_dispatch__ calls aten.is_nonzero.default" in msg
    assert "x * 3" in msg and "if x.sum() > 0:" in msg


def test_in_place_ops_on_subclasses_run_as_in_eager():
    """(More in tests/frontend/subclasses/test_subclass_inplace.py.) ScaleTensor's dispatch
    computes an in-place op on a temporary, so eager's ``x.add_(1)`` leaves ``x`` as it was and
    returns it; a write into an inner tensor reaches the caller's object."""
    x = scale_tensor(3)
    before = x._x.clone()
    assert thunder.jit(lambda x: x.add_(1))(x) is x
    torch.testing.assert_close(x._x, before)
    data = x._x
    out = thunder.jit(lambda x: (x._x.mul_(2), x * 1)[1])(x)
    assert x._x is data
    torch.testing.assert_close(data, before * 2)
    assert_same(out, ScaleTensor(before * 2, x._scale) * 1)


def test_errors_in_the_subclass_code_name_the_users_line():
    class Picky(ScaleTensor):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            raise KeyError("the subclass does not like this op")

        @staticmethod
        def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
            return Picky(inner["_x"], inner["_scale"], outer_size, outer_stride)

    jfn = thunder.jit(lambda x: x.exp())
    with pytest.raises(KeyError) as e:
        jfn(Picky(torch.randn(2), torch.tensor(1.0)))
    assert any("x.exp()" in note for note in e.value.__notes__)
