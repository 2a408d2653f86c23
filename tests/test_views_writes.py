"""In-place writes through views reach their base as in eager, and views see writes into
their base: ``x.T``, ``x.mT``, ``x.T[0]``, permutations, view, unsqueeze, squeeze, select,
narrow, split, chunk, unbind; ``reshape``, ``flatten`` and ``contiguous`` where eager made a
view (a copy where eager copied). Writes into other views are refused naming the op."""

from __future__ import annotations

import pytest
import torch

import thunder
from thunder.frontend.errors import UnsupportedOpError

WRITES = {
    "T": lambda x: x.T.add_(1),
    "mT": lambda x: x.mT.mul_(2),
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


@pytest.mark.parametrize("make", [lambda x: x.diagonal(), lambda x: x[0].expand(2, 3)])
def test_a_write_into_another_view_is_refused(make):
    def f(x):
        make(x).add_(1)
        return x

    x = torch.zeros(2, 3)
    with pytest.raises(UnsupportedOpError, match=r"(?s)writes into a view made by .*test_views_writes.py"):
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
