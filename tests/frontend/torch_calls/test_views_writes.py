"""In-place writes through views reach their base as in eager, and views see writes into
their base: ``x.T``, ``x.mT``, ``x.T[0]``, permutations, view, unsqueeze, squeeze, select,
narrow, split, chunk, unbind, tensor_split, diagonal, expand (a part of it in which no element
repeats);
``reshape``, ``flatten`` and ``contiguous`` where eager made a view (a copy where eager
copied). Writes into a view whose elements repeat (one memory location twice, as in
``x[0].expand(2, 3)``) are refused naming the op, as eager refuses add_, copy_ and the like."""

from __future__ import annotations

import pytest
import torch

import thunder
from thunder.core.errors import UnsupportedOpError

WRITES = {
    "T": lambda x: x.T.add_(1),
    "mT": lambda x: x.mT.mul_(2),
    "H": lambda x: x.H.mul_(2),
    "mH": lambda x: x.mH[0].add_(1),
    "T[0]": lambda x: x.T[0].add_(1),
    "T[0] setitem": lambda x: x.T.__setitem__(0, 5.0),
    "t": lambda x: x.t().sub_(1),
    "transpose": lambda x: x.transpose(0, 1)[1].fill_(3.0),
    "permute": lambda x: x.permute(1, 0).add_(torch.arange(2.0)),
    "view": lambda x: x.view(3, 2)[0].add_(1),
    "unsqueeze": lambda x: x.unsqueeze(0).add_(1),
    "squeeze of unsqueeze": lambda x: x.unsqueeze(1).squeeze(1).add_(1),
    "select": lambda x: x.select(1, 2).add_(4),
    "narrow": lambda x: x.narrow(1, 1, 2).mul_(3),
    "movedim": lambda x: x.movedim(0, 1)[2].zero_(),
    "reshape (a view)": lambda x: x.reshape(3, 2)[1].add_(1),
    "flatten (a view)": lambda x: x.flatten().mul_(2),
    "reshape of .T (a copy)": lambda x: x.T.reshape(6).add_(1),
    "ravel of .T (a copy)": lambda x: x.T.ravel().mul_(2),
    "split": lambda x: x.split(1)[1].add_(5),
    "split sections": lambda x: x.split([1, 2], dim=1)[1].add_(5),
    "chunk": lambda x: x.chunk(3, dim=1)[2].fill_(7.0),
    "unbind": lambda x: x.unbind(1)[1].sub_(3),
    "tensor_split": lambda x: x.tensor_split(2, dim=1)[1].add_(5),
    "tensor_split at indices": lambda x: torch.tensor_split(x, [1, 2], dim=1)[2].mul_(3),
    "hsplit": lambda x: x.hsplit([1])[1][0].zero_(),
    "diagonal": lambda x: x.diagonal().add_(1),
    "diagonal offset": lambda x: torch.diagonal(x, 1, 0, 1).mul_(2),
    "diagonal negative offset of .T": lambda x: x.T.diagonal(-1).sub_(4),
    "diagonal dims reversed": lambda x: torch.diagonal(x, offset=-1, dim1=1, dim2=0).add_(3),
    "diagonal copy_": lambda x: x.diagonal().copy_(torch.tensor([10.0, 20.0])),
    "diagonal fill_": lambda x: x.diagonal().fill_(0),
    "diagonal zero_ of a row pair": lambda x: x[:, 1:].diagonal().zero_(),
    "diagonal setitem": lambda x: x.diagonal().__setitem__(1, -1.0),
    "diagonal of unsqueeze": lambda x: x.unsqueeze(0).diagonal(0, 0, 2).add_(9),
    "expand without repeats": lambda x: x.expand(1, 2, 3).mul_(2),
    "one row of an expand": lambda x: x[:1].expand(2, 3)[1].add_(1),
    "a column of an expand's .T": lambda x: x[:, 1:2].expand(2, 3).T[2].add_(5),
    "a part of a row of broadcast_to": lambda x: x[1:].broadcast_to((2, 3))[0, 1:].sub_(4),
    "the diagonal of an expand": lambda x: x[0].expand(3, 3).diagonal().mul_(2),
    "a row of expand_as": lambda x: x[1:].expand_as(x)[0].fill_(-1.0),
    "broadcast_to without repeats": lambda x: x[0].broadcast_to((1, 3)).add_(1),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_a_write_through_a_view_reaches_the_input(name):
    write = WRITES[name]

    def f(x):
        write(x)
        return x * 1

    a, b = torch.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    expected = f(b)
    torch.testing.assert_close(thunder.jit(f)(a), expected)
    torch.testing.assert_close(a, b)  # the input itself was written


def test_a_view_read_after_a_write_into_its_base_is_fresh():
    def f(x):
        t, m = x.T, x.mT
        x.add_(1)
        return t * 1, m[0] * 1

    a, b = torch.zeros(2, 3), torch.zeros(2, 3)
    for got, want in zip(thunder.jit(f)(a), f(b)):
        torch.testing.assert_close(got, want)


def test_a_write_into_a_transposed_view_of_a_local_tensor():
    def f(x):
        y = x * 2
        y.T[1].add_(10)
        return y

    x = torch.arange(6.0).reshape(2, 3)
    torch.testing.assert_close(thunder.jit(f)(x), f(x))


def test_a_reshape_eager_copied_does_not_see_writes_into_its_base():
    def f(x):
        y, z = x.T.reshape(6), x.reshape(6)
        x.add_(1)
        return y * 1, z * 1

    a = torch.zeros(2, 3)
    for got, want in zip(thunder.jit(f)(a.clone()), f(a.clone())):
        torch.testing.assert_close(got, want)


def test_other_views_of_the_input_see_a_write_into_its_diagonal():
    def f(x):
        row, t, d = x[1], x.T, x.diagonal(1)
        x.diagonal().mul_(3)
        d.add_(1)  # written after: reaches x and the other views too
        return row * 1, t * 1, d * 1, x.diagonal() * 1

    a, b = torch.arange(12.0).reshape(3, 4), torch.arange(12.0).reshape(3, 4)
    for got, want in zip(thunder.jit(f)(a), f(b)):
        torch.testing.assert_close(got, want)
    torch.testing.assert_close(a, b)


@pytest.mark.parametrize(
    "write",
    [
        lambda y: y.diagonal().mul_(2),
        lambda y: y[:1].expand(3, 3)[2].mul_(3),  # writes y[0]
        lambda y: y.diagonal(1).copy_(y[2, :2] + y[2, 1:]),
        lambda y: y.tensor_split([1], dim=1)[1][0].mul_(3),  # writes y[0, 1:]
    ],
)
def test_gradients_through_a_write_into_a_view_of_a_local_tensor(write):
    def f(x):
        y = x * 1
        write(y)
        return y

    x = torch.randn(3, 3, requires_grad=True)
    e = x.detach().clone().requires_grad_()
    g = torch.randn(3, 3)
    out, want = thunder.jit(f)(x), f(e)
    torch.testing.assert_close(out, want)
    out.backward(g)
    want.backward(g)
    torch.testing.assert_close(x.grad, e.grad)


@pytest.mark.parametrize(
    "write",
    [
        lambda x, w: x.diagonal().mul_(w),
        lambda x, w: torch.diagonal(x, -1).copy_(w[:2] * w[1:]),
        lambda x, w: x.mul_(w),  # the backward needs x as it was before the write
        lambda x, w: x[0].mul_(w),
        lambda x, w: x[1:].expand(2, 3)[0].mul_(w),  # writes x[1]
    ],
)
def test_gradients_through_a_write_into_a_non_leaf_input(write):
    def f(x, w):
        write(x, w)
        return x.sum(0) * x[1]

    got = []
    for fn in (thunder.jit(f), f):
        torch.manual_seed(0)
        leaf, w = torch.randn(3, 3, requires_grad=True), torch.randn(3, requires_grad=True)
        x = leaf * 2
        out = fn(x, w)
        (x.sum() + (out * torch.arange(3.0)).sum()).backward()
        got.append((out.detach(), x.detach(), leaf.grad, w.grad))
    torch.testing.assert_close(got[0], got[1])


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x[0].expand(2, 3),
        lambda x: x[:1].broadcast_to((2, 3)),
        lambda x: x[:, :1].expand_as(x),
        lambda x: x[0].expand(2, 3)[:, 1],  # a part of it that still repeats
    ],
)
def test_a_write_into_an_expand_with_repeats_is_refused_as_in_eager(make):
    def f(x):
        make(x).add_(1)
        return x

    with pytest.raises(RuntimeError, match="single memory location"):  # eager's error
        f(torch.zeros(2, 3))
    x = torch.zeros(2, 3)
    with pytest.raises(
        UnsupportedOpError,
        match=r"(?s)add_ writes into a view .*made by expand.*single memory location.*test_views_writes.py",
    ):
        thunder.jit(f)(x)
    assert torch.equal(x, torch.zeros(2, 3))


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x.T.contiguous(),  # a copy
        lambda x: x.contiguous(),  # x itself
        lambda x: x[0].contiguous(),  # a view of contiguous memory: itself
        lambda x: x[:, 1].contiguous(),  # strided: a copy
        lambda x: x.unsqueeze(0).transpose(0, 1).contiguous(),  # moves a size-1 dim: itself
    ],
)
def test_contiguous_is_a_copy_exactly_where_eager_copies(make):
    def f(x):
        y = make(x)
        y.add_(1)
        return x * 1, y * 1

    a, b = torch.zeros(2, 3), torch.zeros(2, 3)
    for got, want in zip(thunder.jit(f)(a), f(b)):
        torch.testing.assert_close(got, want)
    torch.testing.assert_close(a, b)


def test_contiguous_and_reshape_of_an_input_follow_the_callers_layout():
    def f(x):
        y = x.contiguous()
        y.add_(1)
        z = x.reshape(-1)
        z.mul_(2)
        return x * 1, y * 1, z * 1

    jfn = thunder.jit(f)
    layouts = [
        lambda: torch.arange(6.0).reshape(2, 3),
        lambda: torch.arange(6.0).reshape(3, 2).T,  # not contiguous: both are copies in eager
        lambda: torch.arange(6.0).reshape(2, 3),
    ]
    for make in layouts:
        a, b = make(), make()
        for got, want in zip(jfn(a), f(b)):
            torch.testing.assert_close(got, want)
        torch.testing.assert_close(a, b)
    assert thunder.compile_stats(jfn).cache_misses == 2  # the strides are checked


def _copy_then_write_source(x, y):
    y.copy_(x)
    x.add_(1)
    return y * 1


def _copy_then_write_destination(x, y):
    y.copy_(x)
    y.mul_(3)
    return x * 1


@pytest.mark.parametrize("fn", [_copy_then_write_source, _copy_then_write_destination])
def test_after_copy_the_two_tensors_are_written_apart(fn):
    # copy_ copies the values: a later write into either tensor must not reach the other
    # (thunder once bound the destination to the source's value itself)
    x, y = torch.ones(3), torch.zeros(3)
    jx, jy = x.clone(), y.clone()
    expected = fn(x, y)
    got = thunder.jit(fn)(jx, jy)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(jx, x)
    torch.testing.assert_close(jy, y)


def _write_into_detach(x):
    y = x * 3
    y.detach().add_(1)
    return y * x


def _write_into_data(x):
    y = x * 3
    y.data.mul_(2)
    return y * x


def _detach_sees_a_write_into_its_base(x):
    y = x * 3
    d = y.detach()
    y.add_(1)
    return d * 2 + y


@pytest.mark.parametrize("fn", [_write_into_detach, _write_into_data, _detach_sees_a_write_into_its_base])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_detach_and_data_are_views_without_history(fn, requires_grad):
    # a write into y.detach() or y.data changes y's values and leaves its history alone (the
    # gradient passes to y as before); the write never reached y when y required grad
    x = torch.randn(3, dtype=torch.float64, requires_grad=requires_grad)
    jx = x.detach().clone().requires_grad_(requires_grad)
    expected, got = fn(x), thunder.jit(fn)(jx)
    torch.testing.assert_close(got, expected)
    if requires_grad:
        expected.sum().backward()
        got.sum().backward()
        torch.testing.assert_close(jx.grad, x.grad)


VIEWS = {
    "view of an input laid out transposed": (lambda x: x.view(-1), lambda: torch.randn(8, 4).t()),
    "view of a transpose": (lambda x: x.t().view(-1), lambda: torch.randn(4, 8)),
    "view of an expand": (lambda x: x[:1].expand(4, 8).view(32), lambda: torch.randn(4, 8)),
    "view of a channels_last input": (
        lambda x: x.view(2, -1),
        lambda: torch.randn(2, 3, 4, 4).to(memory_format=torch.channels_last),
    ),
    "view_as of a transpose": (lambda x: x.t().view_as(torch.empty(32)), lambda: torch.randn(4, 8)),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_a_view_eager_cannot_make_is_eagers_error(name):
    fn, make = VIEWS[name]
    with pytest.raises(RuntimeError, match="view size is not compatible") as eager:
        fn(make())
    with pytest.raises(RuntimeError, match="view size is not compatible") as got:
        thunder.jit(fn)(make())
    assert "thunder: torch.Tensor.view" in str(got.value) and "test_views_writes.py" in str(got.value)
    assert "reshape" in str(eager.value)


def test_a_view_decided_on_the_callers_layout_is_checked_again():
    def fn(x):
        return x.view(2, -1) * 2

    jfn = thunder.jit(fn)
    x = torch.randn(2, 3, 4, 4)
    torch.testing.assert_close(jfn(x), fn(x))
    with pytest.raises(RuntimeError, match="view size is not compatible"):  # as eager, not the cached program
        jfn(x.to(memory_format=torch.channels_last))
    torch.testing.assert_close(
        jfn(x.permute(0, 1, 3, 2).contiguous()), fn(x.permute(0, 1, 3, 2).contiguous())
    )


def test_a_view_of_a_computed_tensor_is_not_refused_on_a_guessed_layout():
    # eager's x + 1 keeps the channels_last layout, so the permute below is contiguous there
    def fn(x):
        return (x + 1).permute(0, 2, 3, 1).view(-1)

    x = torch.randn(2, 3, 4, 4).to(memory_format=torch.channels_last)
    torch.testing.assert_close(thunder.jit(fn)(x), fn(x))


def test_a_write_through_a_reshape_decided_on_a_guessed_layout_is_refused():
    # eager's x + 1 is channels_last: its reshape(-1) is a copy there, so the write stays in it;
    # thunder's table of views does not track that layout, so it refuses the write rather than guess
    def reshaped(x):
        y = x + 1
        y.reshape(-1).add_(1)
        return y

    def made_contiguous(x):
        y = x + 1
        y.contiguous().add_(1)
        return y

    x = torch.randn(2, 3, 4, 4).to(memory_format=torch.channels_last)
    with pytest.raises(UnsupportedOpError, match="a layout thunder does not track") as e:
        thunder.jit(reshaped)(x)
    assert "in reshaped" in str(e.value)
    # contiguous() is decided on eager's layout of y, replayed (frontend/torch_calls/layout_queries.py): a copy
    torch.testing.assert_close(thunder.jit(made_contiguous)(x), made_contiguous(x))
    for fn in (reshaped, made_contiguous):
        contiguous = x.contiguous()  # with every input contiguous the layout is known: as eager
        torch.testing.assert_close(thunder.jit(fn)(contiguous), fn(contiguous))
