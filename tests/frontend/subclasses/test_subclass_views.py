"""View ops inside a tensor subclass's ``__torch_dispatch__`` against eager PyTorch: the aten
views (``thunder/ops/aten/views.py``) a subclass's dispatch receives for ``x.diagonal()``,
``x.unfold(...)``, ``x.unbind()``, ``x.split([...])``, ``x.as_strided(...)``,
``x.view(dtype)`` and the scatters.

Each case runs three calls of one compiled function next to eager (``check`` of
test_subclass_inplace.py): the results (class, inner tensors), the arguments after each call;
gradients through them, their class included; writes through the views into the subclass
value where eager allows them, and eager's error where it refuses.
"""

from __future__ import annotations

import pytest
import torch
from support.subclass_checks import assert_no_proxy, assert_same, check, copy, two
from support.subclasses import scale_tensor
from torch.testing._internal.two_tensor import TwoTensor

import thunder
from thunder.core.errors import UnsupportedOpError
from thunder.ops.meta import ShapeError

# -- forward ---------------------------------------------------------------------------------
VIEWS = {
    "diagonal": lambda x: x.diagonal() * 2,
    "diagonal with an offset": lambda x: x.diagonal(1, 1, 0) + 1,
    "unfold": lambda x: x.unfold(0, 2, 1) * 2,
    "unfold of the last dim": lambda x: x.unfold(-1, 3, 1).sum(-1),
    "unbind": lambda x: x.unbind(0)[1] * 2,
    "unbind, every piece": lambda x: x.unbind(1),
    "split with sizes": lambda x: x.split([1, 3])[1] * 2,
    "split with sizes, every piece": lambda x: x.split([3, 1], 1),
    "as_strided": lambda x: x.as_strided((2, 2), (1, 2)) * 2,
    "as_strided with a storage_offset": lambda x: x.as_strided((3, 2), (4, 1), 5) + 1,
    "as_strided reading elements twice": lambda x: x.as_strided((3, 3), (1, 1)) * x[:3, :3],
    "view(int32)": lambda x: x.view(torch.int32) + 1,
    "view(bfloat16)": lambda x: x.view(torch.bfloat16) * 2,
    "view(float32) of the same dtype": lambda x: x.view(torch.float32) * 2,
    "select_scatter": lambda x: torch.select_scatter(x, x[0] * 2, 0, 1),
    "slice_scatter": lambda x: torch.slice_scatter(x, x[1:] * 2, 0, 1),
    "diagonal_scatter": lambda x: torch.diagonal_scatter(x, x.diagonal() * 2),
}


# other ops a subclass's dispatch receives for common calls
OTHERS = {
    "new_zeros": lambda x: x.new_zeros(3) + 1,
    "new_full": lambda x: x.new_full((2, 2), 3.0) * 2,
    "empty_like filled": lambda x: torch.empty_like(x).fill_(1),
    "stack": lambda x: torch.stack([x, x * 2]),
    "flip": lambda x: x.flip(0) * 2,
    "repeat": lambda x: x.repeat(2, 1) * 2,
    "roll": lambda x: x.roll(1, 0) * 2,
    "roll flattened": lambda x: x.roll(3) * 2,
    "tril": lambda x: x.tril() * 2,
    "triu": lambda x: x.triu(1) * 2,
    "masked_fill": lambda x: x.masked_fill(x > 0, 0.0),
    "indexing with a tensor": lambda x: x[torch.tensor([0, 2, 0])] * 2,
    "indexing with tensors in two dims": lambda x: x[torch.tensor([3, 1]), 2:] * x[:2, torch.tensor([1, -1])],
    "gather": lambda x: x.gather(1, torch.tensor([[0], [1], [2], [3]])) * 2,
    "F.pad": lambda x: torch.nn.functional.pad(x, (1, 2)) * 2,
    "remainder": lambda x: x.remainder(0.5) + x % x.abs().add(0.5),
    "torch.diag (diagonal_copy)": lambda x: torch.diag(x) * 2,
    "t_copy": lambda x: torch.t_copy(x) * 2,
    "unbind_copy": lambda x: torch.unbind_copy(x)[1] * 2,
    "view_as_real of a complex value": lambda x: torch.view_as_real(x.to(torch.complex64)) * 2,
    "narrow_copy": lambda x: torch.narrow_copy(x, 1, 1, 2) * 2,
    "diag_embed": lambda x: torch.diag_embed(x[0], 1) * 2,
    "trace": lambda x: torch.trace(x) * x,
    "polygamma": lambda x: torch.polygamma(1, x.abs() + 1) * 2,
    "digamma (its gradient is polygamma)": lambda x: torch.digamma(x.abs() + 1) * 2,
}
VIEWS |= OTHERS


@pytest.mark.parametrize("case", list(VIEWS), ids=str)
@pytest.mark.parametrize("make", [two, scale_tensor], ids=["TwoTensor", "ScaleTensor"])
def test_views_equal_eager(case, make):
    if make is scale_tensor and case == "empty_like filled":
        pytest.skip("ScaleTensor's fill_ writes a temporary: eager's result is uninitialised memory")
    check(VIEWS[case], make(4, 4))


# -- gradients -------------------------------------------------------------------------------
def check_grads(fn, x, *others):
    """Three calls: the result and the gradient of its sum with respect to ``x`` (its class and
    inner tensors) equal eager's, computed by thunder's backward (no fallback to torch's
    autograd over whole subclass ops)."""
    xt = copy(x)
    jfn = thunder.jit(fn)
    for call in range(3):
        expected, got = fn(x, *others), jfn(xt, *others)
        assert_same(got, expected, f"call {call}: the result")
        (ge,) = torch.autograd.grad(expected.sum(), x)
        (gg,) = torch.autograd.grad(got.sum(), xt)
        assert_same(gg, ge, f"call {call}: the gradient")
        assert_no_proxy((got, xt), f"call {call}")
    assert thunder.compile_stats(jfn).cache_hits == 2
    assert thunder.last_backward_traces(jfn), "fell back to torch's autograd"


# (not differentiable as eager sees them: factories, reinterpretations of the bytes, a
# complex intermediate)
NOT_DIFFERENTIABLE = ("every piece", "view(", "view_as_real", "new_", "empty_like")
GRADS = {k: VIEWS[k] for k in VIEWS if not any(n in k for n in NOT_DIFFERENTIABLE)}


@pytest.mark.parametrize("case", list(GRADS), ids=str)
def test_gradients_through_views_equal_eager(case):
    check_grads(GRADS[case], two(4, 4).requires_grad_())


# -- writes through the views ------------------------------------------------------------------
def _written(view):
    def fn(x):
        view(x)
        return x

    return fn


WRITES = {
    "x.diagonal().mul_(2)": _written(lambda x: x.diagonal().mul_(2)),
    "x.diagonal(1).add_(1)": _written(lambda x: x.diagonal(1).add_(1)),
    "x.unbind(0)[1].add_(1)": _written(lambda x: x.unbind(0)[1].add_(1)),
    "x.unbind(1)[0].mul_(x[0])": _written(lambda x: x.unbind(1)[0].mul_(x[0])),
    "x.split([1, 3])[1].add_(1)": _written(lambda x: x.split([1, 3])[1].add_(1)),
    "x.split(2)[1].mul_(3)": _written(lambda x: x.split(2)[1].mul_(3)),
    "x.chunk(2, 1)[0].zero_()": _written(lambda x: x.chunk(2, 1)[0].zero_()),
    "x.unfold(0, 2, 2).mul_(2)": _written(lambda x: x.unfold(0, 2, 2).mul_(2)),
    "x.as_strided((2, 2), (1, 4)).mul_(2)": _written(lambda x: x.as_strided((2, 2), (1, 4)).mul_(2)),
    "x.as_strided((2, 3), (8, 2), 1)[1].add_(1)": _written(
        lambda x: x.as_strided((2, 3), (8, 2), 1)[1].add_(1)
    ),
    "x.view(torch.int32).add_(1)": _written(lambda x: x.view(torch.int32).add_(1)),
    "x.view(torch.bfloat16)[0].zero_()": _written(lambda x: x.view(torch.bfloat16)[0].zero_()),
    "a write read back through the view": lambda x: (x.diagonal().add_(1), x.diagonal() * x)[1],
}


@pytest.mark.parametrize("case", list(WRITES), ids=str)
@pytest.mark.parametrize("make", [two, scale_tensor], ids=["TwoTensor", "ScaleTensor"])
def test_writes_through_views_equal_eager(case, make):
    check(WRITES[case], make(4, 4))


def test_factories_given_a_value_requiring_grad_are_outside_the_graph_as_in_eager():
    """``torch.empty_like(x)`` of an ``x`` requiring grad does not require grad (and may be
    written in place); a value written into it brings its gradient."""

    def fn(x):
        z = torch.zeros_like(x).add_(x * 2)
        return torch.empty_like(x).fill_(1), x.new_zeros(2), z

    x = two(4, 4).requires_grad_()
    xt = copy(x)
    jfn = thunder.jit(fn)
    for call in range(3):
        expected, got = fn(x), jfn(xt)
        assert_same(got, expected, f"call {call}")
        assert [t.requires_grad for t in got] == [t.requires_grad for t in expected] == [False, False, True]
        assert_same(torch.autograd.grad(got[2].sum(), xt), torch.autograd.grad(expected[2].sum(), x))


def test_a_view_of_another_dtype_is_outside_the_graph_as_in_eager():
    """``x.view(dtype)`` of a value requiring grad does not require grad (eager's autograd does
    not differentiate it), its class and inner tensors as eager's."""

    def fn(x):
        return x.view(torch.int32), x.view(torch.float16) * 2, x * 2

    x = two(4, 4).requires_grad_()
    expected, got = fn(x), thunder.jit(fn)(copy(x))
    assert_same(got, expected)
    assert [t.requires_grad for t in got] == [t.requires_grad for t in expected] == [False, False, True]


def _view_write_grad(view):
    def fn(x, w):
        y = x * 2
        view(y).mul_(w)
        return y * x

    return fn


WRITE_GRADS = {
    "y.diagonal().mul_(w)": (_view_write_grad(lambda y: y.diagonal()), 4),
    "y.diagonal(-1).mul_(w)": (_view_write_grad(lambda y: y.diagonal(-1)), 3),
    "y.unfold(1, 2, 2).mul_(w)": (_view_write_grad(lambda y: y.unfold(1, 2, 2)), 2),
}


def _write_through_view_dtype(x, w):
    y = x * 2
    y.view(torch.int32)[0].zero_()  # outside the graph: y's gradient passes as before the write
    return y * w


WRITE_GRADS["y.view(torch.int32)[0].zero_()"] = (_write_through_view_dtype, 4)
WRITE_GRADS["y.as_strided((2, 2), (1, 4), 2).mul_(w)"] = (
    _view_write_grad(lambda y: y.as_strided((2, 2), (1, 4), 2)),
    2,
)


@pytest.mark.parametrize("case", list(WRITE_GRADS), ids=str)
def test_gradients_through_writes_into_views_equal_eager(case):
    fn, n = WRITE_GRADS[case]
    check_grads(fn, two(4, 4).requires_grad_(), torch.randn(n))


@pytest.mark.parametrize(
    "view",
    [lambda y: y.unbind(0)[1], lambda y: y.split([1, 3])[1], lambda y: y.chunk(2)[0][1]],
    ids=["unbind", "split_with_sizes", "a view of a chunk"],
)
@pytest.mark.parametrize("make", [two, torch.randn], ids=["TwoTensor", "a plain tensor"])
def test_a_write_into_one_of_several_views_of_a_value_requiring_grad_raises_as_in_eager(view, make):
    def fn(x):
        y = x * 2
        view(y).add_(1)
        return y

    with pytest.raises(RuntimeError, match="returns multiple views"):
        fn(make(4, 4).requires_grad_())
    with pytest.raises(RuntimeError, match="returns multiple views"):
        thunder.jit(fn)(make(4, 4).requires_grad_())
    with torch.no_grad():  # (eager allows it without grad mode)
        torch.testing.assert_close(thunder.jit(fn)(x := make(4, 4)), fn(copy(x)))


def test_a_write_into_overlapping_windows_is_a_clear_error():
    """Eager writes each memory location once per window holding it, in an order its kernel
    chooses; thunder refuses."""
    with pytest.raises(
        ShapeError, match=r"(?s)aten.unfold.default: .*overlapping windows.*test_subclass_views.py"
    ):
        thunder.jit(_written(lambda x: x.unfold(0, 2, 1).mul_(2)))(two(4, 4))


# -- as_strided reads memory: where thunder's values are not eager's memory, it refuses ---------
def _transposed_two() -> TwoTensor:
    return TwoTensor(torch.randn(4, 4).t(), torch.randn(4, 4).t())


def _offset_two() -> TwoTensor:
    return TwoTensor(torch.randn(17)[1:].view(4, 4), torch.randn(17)[1:].view(4, 4))


@pytest.mark.parametrize(
    "fn, make",
    [
        (lambda x: x.as_strided((2, 2), (1, 2)), _transposed_two),
        (lambda x: x.t().as_strided((2, 2), (1, 2)), lambda: two(4, 4)),
        (lambda x: x.as_strided((2, 2), (1, 2), 1), _offset_two),
        (lambda x: x.as_strided((2, 2), (1, 2)), lambda: torch.randn(4, 4).t()),
    ],
    ids=[
        "an input laid out transposed",
        "a transposed view",
        "an input not starting its storage",
        "a plain tensor",
    ],
)
def test_as_strided_of_memory_that_is_not_the_elements_in_order_is_a_clear_error(fn, make):
    x = make()
    fn(x)  # eager reads the memory
    with pytest.raises(UnsupportedOpError, match="reads a tensor's memory"):
        thunder.jit(fn)(x)


def test_as_strided_with_an_offset_misses_the_cache_for_an_input_not_starting_its_storage():
    fn = thunder.jit(lambda x: x.as_strided((2, 2), (1, 2), 1) * 2)
    x = two(4, 4)
    assert_same(fn(x), x.as_strided((2, 2), (1, 2), 1) * 2)
    with pytest.raises(UnsupportedOpError, match="does not start its storage"):
        fn(_offset_two())


def test_a_write_into_an_as_strided_view_reading_elements_twice_is_a_clear_error():
    with pytest.raises(
        ShapeError, match=r"(?s)aten.as_strided.default: .*more than once.*test_subclass_views.py"
    ):
        thunder.jit(_written(lambda x: x.as_strided((2, 2), (1, 1)).mul_(2)))(two(4, 4))
