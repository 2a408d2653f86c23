"""In-place ops on tensor-subclass values, and tensor subclasses nested in subclasses, against
eager PyTorch (thunder/frontend/subclasses/writes.py, frontend/subclasses/ops.py, frontend/subclasses/instances.py).

Each case runs three calls of one compiled function next to eager on copies of the same
arguments: the results, the caller's objects after every call (their inner tensors, written in
place or replaced as the subclass's ``__torch_dispatch__`` does), ``is`` identity of what is
returned, and gradients; what is refused is a clear error.

The subclasses: torch's ``TwoTensor`` (its dispatch writes both inner tensors in place),
``ScaleTensor`` (its dispatch computes an in-place op on a temporary: eager's write changes
nothing), ``ReplacingScaleTensor`` (its dispatch replaces the data attribute), and nestings of
them (a ScaleTensor whose data is a TwoTensor, a TwoTensor of TwoTensors).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from support.subclass_checks import (
    assert_no_proxy,
    assert_same,
    assert_same_objects,
    check,
    copy,
    two,
)
from support.subclasses import ReplacingScaleTensor, ScaleTensor, scale_tensor
from torch.testing._internal.two_tensor import TwoTensor

import thunder
from thunder.core.errors import UnsupportedOpError, UnsupportedValueError


def scale_of_two(*shape) -> ScaleTensor:
    """A ScaleTensor whose data is a TwoTensor."""
    return ScaleTensor(two(*shape), torch.tensor(2.0))


def two_of_two(*shape) -> TwoTensor:
    return TwoTensor(two(*shape), two(*shape))


def replacing(*shape) -> ReplacingScaleTensor:
    return ReplacingScaleTensor(torch.randn(*shape), torch.tensor(2.0))


# -- in-place ops ------------------------------------------------------------------------------
def _augmented(x):
    x += 1
    return x


def _setitem(x, v):
    x[0] = v
    return x


def _setitem_number(x):
    x[1] = 5.0
    return x


def _made_here(x):
    y = x * 2
    y.add_(1)
    return y, y + 1


def _built_from_arguments(a, b):
    t = TwoTensor(a, b)  # holds a and b themselves: eager's write reaches the caller's tensors
    t.mul_(2)
    return t, a + 1


WRITES = {
    "add_": (lambda x: x.add_(1), lambda: (two(3),)),
    "add_ returns x itself": (lambda x: (x.add_(1) is x, x * 2), lambda: (two(3),)),
    "mul_ by a subclass value": (lambda x, y: x.mul_(y), lambda: (two(3), two(3))),
    "mul_ by a plain tensor": (lambda x, y: x.mul_(y), lambda: (two(2, 3), torch.randn(3))),
    "copy_ of a plain tensor": (lambda x, y: x.copy_(y), lambda: (two(3), torch.randn(3))),
    "copy_ of a subclass value": (lambda x, y: x.copy_(y), lambda: (two(3), two(3))),
    "x[0] = v": (_setitem, lambda: (two(3, 2), torch.randn(2))),
    "x[1] = 5.0": (_setitem_number, lambda: (two(3, 2),)),
    "relu inplace=True": (lambda x: F.relu(x, inplace=True), lambda: (two(3),)),
    "x += 1": (_augmented, lambda: (two(3),)),
    "zero_": (lambda x: x.zero_(), lambda: (two(3),)),
    "a chain": (lambda x: x.add_(1).mul_(2), lambda: (two(3),)),
    "read after the write": (lambda x: (x.add_(1), x * 2)[1], lambda: (two(3),)),
    "a write into x.T": (lambda x: (x.T.mul_(2), x * 1)[1], lambda: (two(3, 2),)),
    "a write into x[0]": (lambda x: (x[0].add_(1), x)[1], lambda: (two(3, 2),)),
    "an inner tensor written by a plain op": (lambda x: (x.a.mul_(2), x * 1)[1], lambda: (two(3),)),
    "a value made in the function": (_made_here, lambda: (two(3),)),
    "a value built around the arguments": (_built_from_arguments, lambda: (torch.randn(3), torch.randn(3))),
    "a plain tensor written by the dispatch": (lambda w, x: w.add_(x), lambda: (torch.randn(3), two(3))),
    "a dispatch that writes a temporary": (lambda x: x.add_(1), lambda: (scale_tensor(3),)),
    "a dispatch that replaces the data": (lambda x: x.add_(1), lambda: (replacing(3),)),
    "a dispatch that replaces the data, read after": (
        lambda x: (x.mul_(3), x + 1)[1],
        lambda: (replacing(3),),
    ),
    "a TwoTensor of TwoTensors": (lambda n: n.add_(1), lambda: (two_of_two(3),)),
    "a TwoTensor of TwoTensors, read after": (lambda n: (n.mul_(2), n * 2)[1], lambda: (two_of_two(3),)),
    "a ScaleTensor of a TwoTensor": (lambda n: (n.add_(1), n * 2), lambda: (scale_of_two(3),)),
}


@pytest.mark.parametrize("case", list(WRITES), ids=str)
def test_in_place_ops_equal_eager(case):
    fn, make = WRITES[case]
    check(fn, *make())


FIRST_TRACE = """\
import torch
import thunder.ops.prims as prims

def computation(x):
  # x: "TwoTensor[cpu f32[3]] (a: cpu f32[3], b: cpu f32[3])"
  t2 = TwoTensor.torch.Tensor.add_(x, 1)  # t2: "TwoTensor[cpu f32[3]] (a: cpu f32[3], b: cpu f32[3])"
    # (x_a, x_b) = prims.flatten_tensor_subclass(x)  # x_a: "cpu f32[3]", x_b: "cpu f32[3]"
    # t0 = aten.add.Tensor(x_a, 1)  # t0: "cpu f32[3]"
      # t0 = prims.add(x_a, 1)  # t0: "cpu f32[3]"
    # t1 = aten.add.Tensor(x_b, 1)  # t1: "cpu f32[3]"
      # t1 = prims.add(x_b, 1)  # t1: "cpu f32[3]"
    # t2 = prims.unflatten_tensor_subclass(TwoTensor, {'a': t0, 'b': t1}, None, (3,), (1,))  # t2: "TwoTensor[cpu f32[3]] (a: cpu f32[3], b: cpu f32[3])"
  prims.copy_(t2, x)
  return (x,)
"""


def test_the_trace_of_a_write_into_a_subclass_input():
    """The op's output is the value written; the computation writes it back into the input's
    inner tensors (one copy per inner tensor written, once flat)."""
    jfn = check(lambda x: x.add_(1), two(3))
    assert str(thunder.last_traces(jfn)[0]) == FIRST_TRACE
    flat = str(thunder.last_traces(jfn)[-1])
    assert "copy_(t0, x_a)" in flat and "copy_(t1, x_b)" in flat
    assert "x.a" not in flat


def test_a_dispatch_that_writes_a_temporary_leaves_the_tensors_as_they_were():
    """ScaleTensor's dispatch computes the op on its dequantized data, a temporary: eager's x
    keeps its tensors and values. The write is still a write to autograd (a new value, of the
    same tensors), and nothing is written back."""
    x = scale_tensor(3)
    data, before = x._x, x._x.clone()
    jfn = check(lambda x: x.add_(1), x)
    assert x._x is data
    torch.testing.assert_close(data, before)
    assert "ScaleTensor.torch.Tensor.add_(x, 1)" in str(thunder.last_traces(jfn)[0])
    assert "copy_" not in str(thunder.last_traces(jfn)[-1])


def test_a_write_that_changes_no_value_is_still_differentiated_as_in_eager():
    """Eager's autograd differentiates ``y.add_(w)`` as ``y + w`` whatever the dispatch did."""

    def fn(x, w):
        y = x * 2
        y.add_(w)
        return (y * w).sum()

    x, w = scale_tensor(3, requires_grad=True), torch.randn(3, requires_grad=True)
    xt, wt = copy(x), copy(w)
    expected, got = fn(x, w), thunder.jit(fn)(xt, wt)
    assert_same(got, expected)
    e, g = torch.autograd.grad(expected, (x, w)), torch.autograd.grad(got, (xt, wt))
    torch.testing.assert_close(g[0].dequantize(), e[0].dequantize())
    torch.testing.assert_close(g[1].dequantize(), e[1].dequantize())


def test_a_replaced_inner_tensor_is_set_on_the_callers_object():
    x = replacing(3)
    data = x._x
    jfn = check(lambda x: x.add_(1), x)
    assert x._x is not data  # replaced, as eager's dispatch replaces it
    assert "python_setattr(x, '_x'" in str(thunder.last_epilogue_traces(jfn)[-1])


def test_a_subclass_input_written_in_place_keeps_its_inner_tensors():
    x = two(3)
    a, b = x.a, x.b
    jfn = thunder.jit(lambda x: x.mul_(2))
    expected = (a * 2, b * 2)
    assert jfn(x) is x
    assert x.a is a and x.b is b  # written in place, as TwoTensor's dispatch writes them
    torch.testing.assert_close((a, b), expected)


class _Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", two(3))

    def forward(self, x):
        self.count.add_(1)
        return x * self.count


def test_a_subclass_buffer_written_in_forward_is_the_modules_as_in_eager():
    torch.manual_seed(0)
    eager = _Counting()
    torch.manual_seed(0)
    module = _Counting()
    jmodule = thunder.jit(module)
    count = module.count
    for _ in range(3):
        x = torch.randn(3)
        assert_same(jmodule(x), eager(x))
        assert_same(module.count, eager.count, "the buffer after the call")
    assert module.count is count


# -- autograd ----------------------------------------------------------------------------------
def _two_requiring_grad():
    a = torch.randn(3)
    return TwoTensor(a, a * 3 + 1).requires_grad_()


def _add_w(x, w):
    y = x * 2
    y.add_(w)
    return (y * y).sum()


def _mul_then_use(x, w):
    y = x * 1
    y.mul_(w)
    return (y.sin() * w).sum()


def _setitem_w(x, w):
    y = x * 1
    y[0] = w[0]
    return (y * w).sum()


@pytest.mark.parametrize("fn", [_add_w, _mul_then_use, _setitem_w], ids=["add_", "mul_", "setitem"])
def test_gradients_through_a_written_value_made_in_the_function(fn):
    torch.manual_seed(0)
    x, w = _two_requiring_grad(), torch.randn(3, requires_grad=True)
    xt, wt = copy(x), copy(w)
    jfn = thunder.jit(fn)
    for _ in range(3):
        expected = torch.autograd.grad(fn(x, w), (x, w))
        got = torch.autograd.grad(jfn(xt, wt), (xt, wt))
        assert_same(list(got), list(expected), "the gradients")
    assert thunder.last_backward_traces(jfn), "fell back to torch's autograd"


def test_a_written_non_leaf_subclass_input_keeps_its_graph():
    def fn(x, w):
        x.mul_(w)
        return (x * 2).sum()

    def make():
        torch.manual_seed(0)
        base = _two_requiring_grad()
        return base, base * 1, torch.randn(3, requires_grad=True)

    base, x, w = make()
    tbase, tx, tw = make()
    out, tout = fn(x, w), thunder.jit(fn)(tx, tw)
    assert_same(tout, out)
    assert_same(tx, x, "the input after the call")
    assert tx.grad_fn is not None  # the caller's tensor was written with autograd, as in eager
    # the gradient through the written input's new value, and through the result
    got = torch.autograd.grad((tout + (tx * 3).sum()).sum(), (tbase, tw))
    expected = torch.autograd.grad((out + (x * 3).sum()).sum(), (base, w))
    assert_same(list(got), list(expected), "the gradients")


def test_a_write_into_a_leaf_subclass_that_requires_grad_raises_as_in_eager():
    x = _two_requiring_grad()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        copy(x).add_(1)
    before = copy(x)
    with pytest.raises(RuntimeError, match=r"(?s)leaf Variable that requires grad.*test_subclass_inplace.py"):
        thunder.jit(lambda x: x.add_(1))(x)
    assert_same(x, before, "the input after the failed call")

    def built(w, s):  # a ScaleTensor of a tensor that requires grad is a leaf that requires grad
        return ScaleTensor(w, s).add_(1)

    w, s = torch.randn(3, requires_grad=True), torch.tensor(2.0)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        built(w, s)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        thunder.jit(built)(w, s)


def test_a_write_into_a_leaf_under_no_grad_is_allowed():
    def fn(x):
        with torch.no_grad():
            x.mul_(3)
        return x

    check(fn, _two_requiring_grad())


def _no_grad_write(x):
    y = x * 2
    with torch.no_grad():
        y.add_(1)
    return (y * y).sum()


class _Decaying(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(two(3))

    def forward(self, x):
        with torch.no_grad():  # (a parameter written in forward: allowed under no_grad)
            self.w.mul_(0.5)
        return (x * self.w).sum()


def test_a_write_under_no_grad_passes_the_gradient_to_the_value_it_held():
    """Eager leaves the history of a tensor written under no_grad alone: the gradient of its
    new value reaches what it held before, unchanged."""
    x = _two_requiring_grad()
    xt = copy(x)
    jfn = thunder.jit(_no_grad_write)
    for _ in range(3):
        expected, got = _no_grad_write(x), jfn(xt)
        assert_same(got, expected)
        assert_same(torch.autograd.grad(got, xt)[0], torch.autograd.grad(expected, x)[0], "the gradient")
    assert thunder.last_backward_traces(jfn), "fell back to torch's autograd"

    torch.manual_seed(0)
    eager = _Decaying()
    torch.manual_seed(0)
    module = _Decaying()
    jmodule = thunder.jit(module)
    x = torch.randn(3, requires_grad=True)
    for _ in range(3):
        expected, got = eager(x), jmodule(x)
        assert_same(got, expected)
        assert_same(module.w, eager.w, "the parameter after the call")
        assert_same(
            list(torch.autograd.grad(got, (x, module.w))),
            list(torch.autograd.grad(expected, (x, eager.w))),
            "the gradients",
        )


# -- writes through views, with gradients -------------------------------------------------------
def _view_args():
    torch.manual_seed(0)
    a = torch.randn(3, 2, dtype=torch.float64)
    return TwoTensor(a, a * 3 + 1).requires_grad_(), torch.randn(
        3, 2, dtype=torch.float64, requires_grad=True
    )


def _through_select(x, w):
    y = x * 2
    y[0].mul_(w[0])  # writes y[0], a view, and so y
    return (y * w).sum()


def _other_views_see_it(x, w):
    y = x * 2
    u, r = y[0], y[:, 1]  # views taken before the write: they see it, as in eager
    y[0].add_(w[0] * 3)
    return (y * w).sum() + (u * u).sum() + (r * w[:, 0]).sum()


def _through_two_views(x, w):
    y = x.sin()
    y.transpose(0, 1)[1].mul_(w[:, 1])
    return (y * w).sum()


def _twice(x, w):
    y = x * 1
    v = y[2]
    v.mul_(w[2])
    v.add_(w[1])  # v and y were rebuilt by the first write: linked again
    return (y * w).sum() + v.sum()


def _through_t(x, w):
    y = x * 2
    y.T.mul_(w.T)  # a view a property takes
    return (y * w).sum()


def _through_mt_then_select(x, w):
    y = x.sin()
    u = y.mT
    u[1].add_(w[:, 0])  # u sees the write too
    return (y * w).sum() + (u * u).sum()


def _through_slices(x, w):
    y = x * 2
    y[1:][0].add_(w[0])  # its backward takes rows of the TwoTensor cotangent by index
    return (y * w).sum()


def _through_h_slices(x, w):
    y = x * 3
    y.H[:, 1:][1].mul_(w[1:, 1])
    return (y * w).sum()


def _through_detach(x, w):
    y = x * 2
    d = y.detach()
    d[1].mul_(3)  # y holds the values written, its history kept: the gradient passes unchanged
    return (y * w).sum() + (d * w).sum()


def _through_data(x, w):
    y = x.sin()
    y.data.mul_(w.detach())
    return (y * w).sum()


def _through_views_of_the_same_shape(x, w):
    y = x * 2
    y.view_as(w).mul_(w)  # the torch-language op gives back y itself
    y[:].add_(w * 3)
    v = y.reshape(3, 2)
    v.mul_(w)
    return (y * w).sum() + (v * v).sum()


def _through_pieces(x, w):
    y = x * 2
    a, b = y.hsplit(2)  # views of y, each one output of hsplit
    b.mul_(w[:, 1:])
    y.tensor_split([1, 2])[2][0].add_(w[0])
    return (y * w).sum() + (a * b).sum()


@pytest.mark.parametrize(
    "fn",
    [_through_select, _other_views_see_it, _through_two_views, _twice]
    + [_through_t, _through_mt_then_select, _through_slices, _through_h_slices]
    + [_through_detach, _through_data, _through_views_of_the_same_shape, _through_pieces],
    ids=["y[0].mul_", "other views of y", "y.transpose(0, 1)[1].mul_", "twice"]
    + ["y.T.mul_", "y.mT[1].add_", "y[1:][0].add_", "y.H[:, 1:][1].mul_"]
    + ["y.detach()[1].mul_", "y.data.mul_", "views of the same shape", "pieces of hsplit and tensor_split"],
)
def test_gradients_through_a_write_into_a_view_equal_eager(fn):
    """A write through a view changes the view and its base (and the other views of it):
    eager differentiates the base's new value as the view's written into its old one."""
    x, w = _view_args()
    xt, wt = (copy(t) for t in (x, w))
    jfn = thunder.jit(fn)
    for call in range(3):
        expected, got = fn(x, w), jfn(xt, wt)
        assert_same(got, expected, f"call {call}: the result")
        assert_same(
            list(torch.autograd.grad(got, (xt, wt))),
            list(torch.autograd.grad(expected, (x, w))),
            f"call {call}: the gradients",
        )
        assert_same([xt, wt], [x, w], f"call {call}: the arguments after the call")
        assert_no_proxy((got, xt), f"call {call}")
    assert thunder.last_backward_traces(jfn), "fell back to torch's autograd"


@pytest.mark.parametrize("prop", ["T", "mT", "H", "mH"])
@pytest.mark.parametrize("kind", ["a plain tensor", "a TwoTensor"])
@pytest.mark.parametrize("grad", [False, True], ids=["no grad", "grad"])
def test_a_write_through_a_view_a_property_takes_equals_eager(prop, kind, grad):
    """``y.T`` (``.mT``, ``.H``, ``.mH``) is a view of ``y``: a write through it changes ``y``."""

    def fn(x):
        y = x * 2
        getattr(y, prop).mul_(getattr(x, prop))
        return y

    torch.manual_seed(0)
    a = torch.randn(3, 2, dtype=torch.float64)
    x = (TwoTensor(a, a * 3 + 1) if kind == "a TwoTensor" else a).requires_grad_(grad)
    xt = copy(x)
    jfn = thunder.jit(fn)
    for call in range(3):
        expected, got = fn(x), jfn(xt)
        assert_same(got, expected, f"call {call}: the result")
        assert_same(xt, x, f"call {call}: the argument after the call")
        assert_no_proxy((got, xt), f"call {call}")
        if grad:
            assert_same(
                torch.autograd.grad((got * got).sum(), xt)[0],
                torch.autograd.grad((expected * expected).sum(), x)[0],
                f"call {call}: the gradient",
            )
    if grad:
        assert thunder.last_backward_traces(jfn), "fell back to torch's autograd"


def _view_write_under_no_grad(x, w):
    y = x * 2
    with torch.no_grad():
        y[0].mul_(2)
    return (y * w).sum()


def _foreach_under_no_grad(x, w):
    y, z = x * 2, x.sin()
    with torch.no_grad():
        torch._foreach_mul_([y, z], [0.5, 2.0])
    return (y * z * w).sum()


def _foreach_with_a_plain_tensor_under_no_grad(x, w):
    y, p = x * 2, w * 3
    with torch.no_grad():
        torch._foreach_mul_([y, p], 2.0)
    return (y * p).sum()


@pytest.mark.parametrize(
    "fn",
    [_view_write_under_no_grad, _foreach_under_no_grad, _foreach_with_a_plain_tensor_under_no_grad],
    ids=["through a view", "a foreach op", "a foreach op with a plain tensor"],
)
def test_several_values_written_under_no_grad_pass_their_gradient_on_as_in_eager(fn):
    """Written under no_grad, each value keeps its history: the gradient of what it holds
    afterwards passes to what it held before, unchanged."""
    x, w = _view_args()
    xt, wt = copy(x), copy(w)
    jfn = thunder.jit(fn)
    for call in range(3):
        expected, got = fn(x, w), jfn(xt, wt)
        assert_same(got, expected, f"call {call}: the result")
        assert_same(
            list(torch.autograd.grad(got, (xt, wt))),
            list(torch.autograd.grad(expected, (x, w))),
            f"call {call}: the gradients",
        )
    assert thunder.last_backward_traces(jfn), "fell back to torch's autograd"


def _into_a_select_of_the_input(x, w):
    x[0].mul_(w[0])
    return (x * w).sum()


def _into_the_t_of_the_input(x, w):
    x.T[0].mul_(w[:, 0])
    return (x * w).sum()


def _into_a_slice_of_a_slice_of_the_input(x, w):
    x[1:][0].add_(w[0])
    return (x * w).sum()


@pytest.mark.parametrize(
    "fn",
    [_into_a_select_of_the_input, _into_the_t_of_the_input, _into_a_slice_of_a_slice_of_the_input],
    ids=["x[0].mul_", "x.T[0].mul_", "x[1:][0].add_"],
)
def test_a_write_into_a_view_of_a_non_leaf_input_keeps_its_graph(fn):
    x, w = _view_args()
    xt, wt = copy(x), copy(w)
    jfn = thunder.jit(fn)
    for call in range(3):
        a, at_ = x * 1, xt * 1
        expected, got = fn(a, w), jfn(at_, wt)
        assert_same(got, expected, f"call {call}: the result")
        assert_same(at_, a, f"call {call}: the input after the call")
        assert at_.grad_fn is not None
        assert_same(
            list(torch.autograd.grad(got + (at_ * 3).sum(), (xt, wt))),
            list(torch.autograd.grad(expected + (a * 3).sum(), (x, w))),
            f"call {call}: the gradients",
        )


# -- nested subclasses -------------------------------------------------------------------------
NESTED = {
    "elementwise": lambda n, w: n * 2 + w,
    "a chain": lambda n, w: ((n * 2).sin() * w) / (w.abs() + 1),
    "a reduction": lambda n, w: (n * n).sum(),
    "a view": lambda n, w: n.unsqueeze(0).expand(2, 3) * w,
    "built in the function": lambda n, w: ScaleTensor(TwoTensor(w, w * 2), torch.tensor(3.0)) * 2,
    "returned as it is": lambda n, w: (n, n + w),
}


@pytest.mark.parametrize("case", list(NESTED), ids=str)
def test_nested_subclasses_equal_eager(case):
    check(NESTED[case], scale_of_two(3), torch.randn(3))


def test_the_prologue_unpacks_and_checks_every_level():
    jfn = check(lambda n: n * 2, scale_of_two(3))
    pro = str(thunder.last_prologue_traces(jfn)[0])
    for line in (
        "prims.check_tensor_subclass(n, ScaleTensor, (3,), torch.float32, torch.device('cpu'), False, ('_x', '_scale'), None)",
        "(n__x, n__scale) = prims.flatten_tensor_subclass(n)",
        "prims.check_tensor_subclass(n__x, TwoTensor, (3,), torch.float32, torch.device('cpu'), False, ('a', 'b'), None)",
        "(n__x_a, n__x_b) = prims.flatten_tensor_subclass(n__x)",
        "prims.check_tensor(n__x_b, (3,), torch.float32, 'cpu', False)",
    ):
        assert line in pro
    assert "return ((n__x_a, n__x_b, n__scale), ())" in str(thunder.last_prologue_traces(jfn)[-1])
    # another inner class is another program
    other = ScaleTensor(torch.randn(3), torch.tensor(2.0))
    assert_same(jfn(other), other * 2)
    assert thunder.compile_stats(jfn).cache_misses == 2


def test_outputs_are_rebuilt_level_by_level():
    jfn = check(lambda n: n + 1, scale_of_two(3))
    epi = str(thunder.last_epilogue_traces(jfn)[-1])
    assert epi.index("TwoTensor.__tensor_unflatten__") < epi.index("ScaleTensor.__tensor_unflatten__")


def _nested_requiring_grad():
    return scale_of_two(3).requires_grad_()


@pytest.mark.parametrize(
    "fn",
    [
        lambda n, w: (n * w).sum(),
        lambda n, w: ((n * 2).sin() * w).sum(),
        lambda n, w: (n.exp() + n * w).sum(),
        lambda n, w: (n * w).sin(),
    ],
    ids=["mul", "sin", "two paths", "a subclass output"],
)
def test_gradients_of_nested_subclasses_equal_eager(fn):
    torch.manual_seed(0)
    n, w = _nested_requiring_grad(), torch.randn(3, requires_grad=True)
    nt, wt = copy(n), copy(w)
    jfn = thunder.jit(fn)
    for _ in range(3):
        out, tout = fn(n, w), jfn(nt, wt)
        assert_same(tout, out)
        cot = torch.ones_like(out)  # (of the output's class, as out.backward() passes)
        expected = torch.autograd.grad(out, (n, w), cot)
        got = torch.autograd.grad(tout, (nt, wt), cot)
        assert_same(list(got), list(expected), "the gradients")
    assert thunder.last_backward_traces(jfn), "fell back to torch's autograd"


# -- foreach in-place ops (an optimizer's multi-tensor step) -----------------------------------
def _foreach_step(p, q, g, h):
    """The in-place foreach calls of an optimizer's step, on two subclass values."""
    torch._foreach_lerp_([p, q], [g, h], 0.1)
    torch._foreach_mul_([p, q], 0.9)
    torch._foreach_addcmul_([p, q], [g, h], [g, h], value=0.5)
    torch._foreach_add_([p, q], [g, h], alpha=-0.01)
    return p * 1, q.sum()


def _the_list_itself(a, b):
    tensors = [a, b]
    return torch._foreach_add_(tensors, 1) is tensors, tensors


FOREACH = {
    "_foreach_add_": (lambda a, b: torch._foreach_add_([a, b], 1), lambda: (two(3), two(2, 3))),
    "_foreach_mul_ by a number per tensor": (
        lambda a, b: torch._foreach_mul_([a, b], [2.0, 0.5]),
        lambda: (two(3), two(3)),
    ),
    "_foreach_addcmul_": (
        lambda a, b, c, d: torch._foreach_addcmul_([a, b], [c, d], [d, c], value=0.5),
        lambda: (two(3), two(3), two(3), two(3)),
    ),
    "_foreach_lerp_": (
        lambda a, b, c, d: torch._foreach_lerp_([a, b], [c, d], 0.1),
        lambda: (two(3), two(3), two(3), two(3)),
    ),
    "an optimizer's step": (_foreach_step, lambda: (two(3), two(3), two(3), two(3))),
    "returns the list itself": (_the_list_itself, lambda: (two(3), two(3))),
    "read after the write": (
        lambda a, b: (torch._foreach_sub_([a, b], 2.0), a * b)[1],
        lambda: (two(3), two(3)),
    ),
    "a plain tensor in the list": (
        lambda a, w: torch._foreach_add_([a, w], 1),
        lambda: (two(3), torch.randn(3)),
    ),
    "values made in the function": (
        lambda a, b: (torch._foreach_div_(ys := [a * 2, b + 1], 4.0), ys)[1],
        lambda: (two(3), two(3)),
    ),
    "a dispatch that writes temporaries": (
        lambda a, b: torch._foreach_add_([a, b], 1),
        lambda: (scale_tensor(3), scale_tensor(3)),
    ),
    "a TwoTensor of TwoTensors": (
        lambda a, b: torch._foreach_mul_([a, b], 3.0),
        lambda: (two_of_two(3), two(3)),
    ),
    # eager's kernel writes the tensors in order: later ones read what earlier ones wrote
    "reads a tensor written before it": (
        lambda y, z, w: torch._foreach_addcmul_([y, z], [w, w], [z, y], value=0.5),
        lambda: (two(3), two(3), two(3)),
    ),
    "one tensor twice": (lambda y: torch._foreach_add_([y, y], 1), lambda: (two(3),)),
    "each by the other": (lambda y, z: torch._foreach_mul_([y, z], [z, y]), lambda: (two(3), two(3))),
}


@pytest.mark.parametrize("case", list(FOREACH), ids=str)
def test_foreach_in_place_ops_equal_eager(case):
    fn, make = FOREACH[case]
    check(fn, *make())


def _foreach_with_grads(x, w):
    y, z = x * 2, x.sin()
    torch._foreach_mul_([y, z], [3.0, 0.5])
    torch._foreach_addcmul_([y, z], [w, w], [x, w], value=0.5)
    return (y * z).sum() + (y * w).sum()


def _foreach_reading_what_it_wrote(x, w):
    y, z = x * 2, x.sin()
    torch._foreach_add_([y, z], [w, y], alpha=0.5)  # z's reads y's new value
    return (y * z).sum()


@pytest.mark.parametrize(
    "fn", [_foreach_with_grads, _foreach_reading_what_it_wrote], ids=["steps", "in order"]
)
def test_gradients_through_foreach_writes_equal_eager(fn):
    torch.manual_seed(0)
    a = torch.randn(3, dtype=torch.float64)
    x = TwoTensor(a, a * 3 + 1).requires_grad_()
    w = torch.randn(3, dtype=torch.float64, requires_grad=True)
    xt, wt = copy(x), copy(w)
    jfn = thunder.jit(fn)
    for _ in range(3):
        expected, got = fn(x, w), jfn(xt, wt)
        assert_same(got, expected)
        assert_same(
            list(torch.autograd.grad(got, (xt, wt))), list(torch.autograd.grad(expected, (x, w))), "grads"
        )
    assert thunder.last_backward_traces(jfn), "fell back to torch's autograd"


def _saved_then_written(which: int):
    """``z.sin()`` saves ``z`` for its backward; the foreach op then writes [y, z], or [y, u]."""

    def fn(x):
        y, z, u = x * 2, x * 3, x * 4
        s = z.sin()
        torch._foreach_mul_([y, z] if which else [y, u], 2.0)
        return (s * y).sum() + u.sum()

    return fn


def test_a_foreach_write_counts_a_write_of_each_tensor_for_the_backward():
    """Each tensor of a foreach op's list is one write of its own version counter: a backward
    that reads a value written since raises. (Eager counts no write of a subclass value by a
    foreach op, and its backward reads the new value: a gradient from the overwritten value,
    which thunder never computes; thunder raises eager's error for ``y.mul_(2)`` instead.)"""
    x = _two_requiring_grad()
    y = x * 2
    torch._foreach_mul_([y], 2.0)
    assert y._version == 0  # eager: not counted

    # eager's gradient is not that of the function as written (z.sin()'s of the value it read)
    def as_written(x):
        y, z, u = x * 2, x * 3, x * 4
        return (z.sin() * (y * 2)).sum() + u.sum()

    eager = torch.autograd.grad(_saved_then_written(1)(x), x)[0]
    assert not torch.allclose(eager.a, torch.autograd.grad(as_written(x), x)[0].a)
    xt = copy(x)
    with pytest.raises(
        RuntimeError,
        match=r"(?s)modified by an inplace operation.*for a tensor subclass value it does not count a foreach op's "
        r"write.*test_subclass_inplace.py",
    ):
        torch.autograd.grad(thunder.jit(_saved_then_written(1))(xt), xt)
    fn = _saved_then_written(0)  # the saved value is not written: the gradients are eager's
    xt = copy(x)
    assert_same(
        torch.autograd.grad(thunder.jit(fn)(xt), xt)[0], torch.autograd.grad(fn(x), x)[0], "the gradient"
    )


def test_a_foreach_write_into_a_leaf_subclass_that_requires_grad_raises_as_in_eager():
    x, y = _two_requiring_grad(), two(3)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        torch._foreach_add_([copy(y), copy(x)], 1)
    with pytest.raises(RuntimeError, match=r"(?s)leaf Variable that requires grad.*test_subclass_inplace.py"):
        thunder.jit(lambda y, x: torch._foreach_add_([y, x], 1))(y, x)


# -- out= into a subclass value --------------------------------------------------------------
def _out_under_no_grad(a, o):
    with torch.no_grad():
        return torch.add(a, 1, out=o)


OUT = {
    "torch.add": (lambda a, o: torch.add(a, 1, out=o), lambda: (two(3), two(3))),
    "read after the write": (lambda a, o: (torch.sin(a, out=o), o * 2), lambda: (two(3), two(3))),
    "plain arguments": (lambda a, o: torch.mul(a, a, out=o), lambda: (torch.randn(3), two(3))),
    "into a plain tensor": (lambda a, o: torch.add(a, 1, out=o), lambda: (two(3), torch.randn(3))),
    "into a plain tensor, from a ScaleTensor": (
        lambda a, o: torch.add(a, 1, out=o),
        lambda: (scale_tensor(3), torch.randn(3)),
    ),
    "into a value made in the function": (
        lambda a: (torch.mul(a, 3, out=(y := a * 1)), y + a)[1],
        lambda: (two(3),),
    ),
    "a dispatch that writes a temporary": (
        lambda a, o: torch.mul(a, 2, out=o),
        lambda: (scale_tensor(3),) * 2,
    ),
    "a dispatch that replaces the data": (
        lambda a, o: torch.mul(a, 2, out=o),
        lambda: (scale_tensor(3), replacing(3)),
    ),
    "a ScaleTensor of a TwoTensor": (
        lambda a, o: torch.add(a, a, out=o),
        lambda: (scale_of_two(3), scale_of_two(3)),
    ),
    "under no_grad, from values requiring grad": (
        _out_under_no_grad,
        lambda: (_two_requiring_grad(), two(3)),
    ),
}


@pytest.mark.parametrize("case", list(OUT), ids=str)
def test_out_into_a_subclass_equals_eager(case):
    fn, make = OUT[case]
    check(fn, *make())


def test_out_from_values_requiring_grad_raises_as_in_eager():
    fn = lambda a, o: torch.add(a, 1, out=o)  # noqa: E731
    message = "functions with out=... arguments don't support automatic differentiation"
    with pytest.raises(RuntimeError, match=message):
        fn(_two_requiring_grad(), two(3))
    with pytest.raises(RuntimeError, match=rf"(?s){message}.*test_subclass_inplace.py"):
        thunder.jit(fn)(_two_requiring_grad(), two(3))


# -- writes into subclass values from a closure or a global -----------------------------------
def _outside_writer(held, kind: str):
    """A function writing into ``held`` (a subclass value it captures) with ``kind``'s op, and
    reading it after."""
    write = {
        "add_": lambda t: t.add_(1),
        "returns it": lambda t: t.mul_(2),
        "setitem": lambda t: t.__setitem__(0, 5.0),
        "foreach": lambda t: torch._foreach_mul_([t], 3.0),
    }[kind]

    def fn(x):
        out = write(held)
        return out is held, held * x, out

    return fn


OUTSIDE = {
    "a TwoTensor": lambda: two(3),
    "a ScaleTensor (a temporary written)": lambda: scale_tensor(3),
    "a ScaleTensor of a TwoTensor": lambda: scale_of_two(3),
    "a ReplacingScaleTensor (its data replaced)": lambda: replacing(3),
}


def _three_calls_on_held(make_fn, held, eager_held, *, rebind=None):
    """Three calls of the compiled ``make_fn(held)`` next to eager's ``make_fn(eager_held)``:
    results, identity, the held values after each call, no proxy reachable."""
    fn, efn = make_fn(held), make_fn(eager_held)
    jfn = thunder.jit(fn)
    for call in range(3):
        x = torch.randn(3)
        got, expected = jfn(x), efn(x)
        assert_same(got, expected, f"call {call}: the result")
        assert_same(held, eager_held, f"call {call}: the captured value after the call")
        assert_same_objects(got, expected, [held], [eager_held])
        assert_no_proxy((got, held), f"call {call}")
    return jfn


@pytest.mark.parametrize("kind", ["add_", "returns it", "setitem", "foreach"])
@pytest.mark.parametrize("case", list(OUTSIDE), ids=str)
def test_writes_into_a_captured_subclass_value_reach_it_on_every_call(case, kind):
    held = OUTSIDE[case]()
    if kind == "foreach" and isinstance(held, ReplacingScaleTensor):
        pytest.skip(
            "its dispatch cannot run a foreach op: test_a_dispatch_that_cannot_run_a_foreach_op_fails_as_in_eager"
        )
    jfn = _three_calls_on_held(lambda t: _outside_writer(t, kind), held, copy(held))
    assert thunder.compile_stats(jfn).cache_hits == 2


HELD = two(3)


def _global_writer(x):
    HELD.add_(x)
    return HELD * 2


def test_writes_into_a_subclass_global_reach_the_object_the_name_holds_at_each_call():
    global HELD
    eager = copy(HELD)
    jfn = thunder.jit(_global_writer)
    for call in range(4):
        if call == 2:  # the name now holds another object: that one is written
            HELD = two(3)
            eager = copy(HELD)
        x = torch.randn(3)
        got = jfn(x)
        eager.add_(x)
        assert_same(got, eager * 2, f"call {call}: the result")
        assert_same(HELD, eager, f"call {call}: the global after the call")
        assert_no_proxy((got, HELD), f"call {call}")


def test_writes_into_a_closure_variable_reach_the_object_it_holds_at_each_call():
    def make():
        held = two(3)

        def fn(x):
            held.add_(x)
            return held * 2

        def swap(t):
            nonlocal held
            held = t

        return fn, swap, lambda: held

    fn, swap, get = make()
    jfn = thunder.jit(fn)
    eager = copy(get())
    for call in range(4):
        if call == 2:  # the variable now holds another object: that one is written
            swap(two(3))
            eager = copy(get())
        x = torch.randn(3)
        got = jfn(x)
        eager.add_(x)
        assert_same(got, eager * 2, f"call {call}: the result")
        assert_same(get(), eager, f"call {call}: the closure's value after the call")
    assert thunder.compile_stats(jfn).cache_misses == 2


# -- what is refused ---------------------------------------------------------------------------


def test_out_into_a_subclass_that_eager_resizes_is_a_clear_error():
    with pytest.warns(UserWarning, match="was resized"):
        torch.add(two(2), 1, out=two(3))  # eager resizes the inner tensors, not the subclass value
    with pytest.raises(
        UnsupportedOpError, match=r"aten.add.out with out= of shape \(3,\) for a result of shape \(2,\)"
    ):
        thunder.jit(lambda x, y: torch.add(x, 1, out=y))(two(2), two(3))


def test_out_into_several_subclass_tensors_is_a_clear_error():
    with pytest.raises(UnsupportedOpError, match=r"torch.max with out= a tuple on tensor subclass values"):
        thunder.jit(lambda x, v, i: torch.max(x, 0, out=(v, i)))(
            two(3, 2), two(2), torch.zeros(2, dtype=torch.long)
        )


def test_a_replaced_inner_tensor_written_with_values_that_require_grad_is_a_clear_error():
    x, w = replacing(3), torch.randn(3, requires_grad=True)
    with pytest.raises(UnsupportedValueError, match=r"replaces the inner tensors x\._x of the input x"):
        thunder.jit(lambda x, w: x.mul_(w))(x, w)


def test_a_write_through_a_row_of_an_expand_of_a_subclass_value_is_a_clear_error():
    """``y[0].expand(3, 2)[1]`` is a row of ``y[0]`` repeated: eager writes ``y[0]`` through it.
    The subclass's dispatch takes the expand of its inner tensors with ``aten.expand``, whose
    repeats thunder does not follow back to the base (a plain tensor's ``expand`` it does)."""

    def through_an_expand(x, w):
        y = x * 2
        y[0].expand(3, 2)[1].mul_(w[0])
        return (y * w).sum()

    x, w = _view_args()
    through_an_expand(copy(x), copy(w)).backward()  # eager runs it
    for args in ((x, w), (x.detach(), w.detach())):
        with pytest.raises(
            UnsupportedOpError,
            match=r"(?s)torch.Tensor.mul_ on a TwoTensor writes into a view made by expand.default.*"
            r"test_subclass_inplace.py.*y\[0\].expand",
        ):
            thunder.jit(through_an_expand)(*args)


def test_a_detached_subclass_value_does_not_require_grad_as_in_eager():
    fn = lambda x: ((x * 2).detach().requires_grad, (x * 2).data.requires_grad, torch.detach(x).requires_grad)  # noqa: E731
    x, _ = _view_args()
    assert fn(x) == (False, False, False)
    assert thunder.jit(fn)(copy(x)) == fn(x)


def test_a_written_subclass_argument_sharing_memory_with_another_is_a_clear_error():
    fn = lambda x, a: (x.add_(1), a * 1)[1]  # noqa: E731
    jfn = thunder.jit(fn)
    a, b = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(jfn(TwoTensor(a.clone(), b), a), a)
    x = TwoTensor(a, b)  # its inner tensor a is the other argument: the entry is not for it
    with pytest.raises(
        UnsupportedValueError,
        match=r"torch.Tensor.add_ on a TwoTensor writes into the argument x_a, which shares memory with a",
    ):
        jfn(x, a)
    assert "check_no_alias(x_a, x_b, a, written=2)" in str(thunder.last_prologue_traces(jfn)[0])


def test_requires_grad_on_a_subclass_in_the_function_is_a_clear_error():
    with pytest.raises(UnsupportedOpError, match="requires_grad_ on a tensor subclass value"):
        thunder.jit(lambda x: (x * 1).requires_grad_())(two(3))


def test_the_error_of_a_subclass_write_whose_gradient_cannot_be_traced_says_why(monkeypatch):
    """When the grad pass fails on a subclass program, torch's autograd would run its ops
    whole, which an in-place op cannot; the error names the grad pass's reason too."""
    import sys

    passes = sys.modules["thunder.runtime.passes"]  # (the grad pass's module)

    def fail(*args, **kwargs):
        raise RuntimeError("no rule for some_op")

    monkeypatch.setattr(passes, "differentiate", fail)

    def fn(x, w):
        y = x * 2
        y.mul_(w)
        return (y * w).sum()

    x = TwoTensor(torch.randn(3), torch.randn(3)).requires_grad_()
    with pytest.raises(
        RuntimeError, match=r"tracing the gradient failed with RuntimeError: no rule for some_op"
    ):
        thunder.jit(fn)(x, torch.randn(3))
