"""An in-place op returns the object it wrote, as in eager, however many writes came before,
and the epilogue hands back the caller's own tensor wherever eager does."""

import pytest
import torch

import thunder
from thunder.core.proxies import Proxy


def _twice_in_place(x):
    x += 1
    x += 2
    return x


def test_augmented_assignments_return_the_callers_tensor():
    jf = thunder.jit(_twice_in_place)
    for i in range(3):
        x, ex = torch.full((2,), float(i)), torch.full((2,), float(i))
        r, er = jf(x), _twice_in_place(ex)
        assert r is x and er is ex
        torch.testing.assert_close(x, ex)
        r.add_(5)  # reaches the caller's tensor, as in eager
        er.add_(5)
        torch.testing.assert_close(x, ex)


def test_chained_in_place_ops_return_their_tensor():
    def f(x, buf):
        y = x * 2
        chained = y.add_(1).mul_(2).sub_(1)
        written = torch.add(x, 1, out=buf)
        again = buf.add_(1).mul_(3)
        return chained is y, written is buf, again is buf, x.add_(1).add_(1) is x, y, buf, x

    jf = thunder.jit(f)
    for _ in range(3):
        args, eargs = (torch.ones(3), torch.zeros(3)), (torch.ones(3), torch.zeros(3))
        got, expected = jf(*args), f(*eargs)
        assert got[:4] == expected[:4] == (True, True, True, True)
        assert got[5] is args[1] and got[6] is args[0]
        for a, b in zip(got[4:], expected[4:]):
            torch.testing.assert_close(a, b)
        assert not any(isinstance(v, Proxy) for v in got)


def test_a_buffer_written_in_place_is_returned_as_itself():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("steps", torch.zeros(1))

        def forward(self, x):
            self.steps += 1
            s = self.steps.add_(1)
            return x + s, s

    m, em = M(), M()
    jm = thunder.jit(m)
    for _ in range(3):
        (out, s), (eout, es) = jm(torch.ones(1)), em(torch.ones(1))
        assert s is m.steps and es is em.steps
        torch.testing.assert_close(out, eout)
        torch.testing.assert_close(m.steps, em.steps)


def _view_written(x):
    v = x.view(-1)
    v.add_(1)
    return v


def _view_of_written(x):
    x.mul_(2)
    return x[0]


@pytest.mark.parametrize("fn", [_view_written, _view_of_written])
def test_a_view_of_a_written_input_is_a_view_of_the_callers_tensor(fn):
    jf = thunder.jit(fn)
    for _ in range(3):
        x, xe = torch.ones(2, 3), torch.ones(2, 3)
        r, re = jf(x), fn(xe)
        assert r._base is x and re._base is xe
        r.add_(5)  # a later write through the returned view reaches the caller's tensor, as in eager
        re.add_(5)
        torch.testing.assert_close(x, xe)


def test_a_view_of_an_input_written_with_a_gradient_keeps_its_graph():
    def f(x, w):
        v = x.view(-1)
        v.mul_(w)
        return v

    jf = thunder.jit(f)
    for _ in range(2):
        w = torch.randn(6, requires_grad=True)
        we = w.detach().clone().requires_grad_()
        x, xe = torch.ones(2, 3), torch.ones(2, 3)
        r, re = jf(x, w), f(xe, we)
        assert r._base is x and r.grad_fn is not None
        (r * r).sum().backward()
        (re * re).sum().backward()
        torch.testing.assert_close(w.grad, we.grad)
        torch.testing.assert_close(x, xe)


@pytest.mark.parametrize(
    "cast",
    [
        lambda x: x.to(torch.float32, copy=True),
        lambda x: x.to("cpu", torch.float32, False, True),  # copy as the second positional flag
        lambda x: x.to(x, False, True),
        lambda x: x.to(copy=True),
        lambda x: x.to(torch.float32),  # no copy: x itself, written through
        lambda x: x.to("cpu", torch.float32, True),  # non_blocking only: x itself
    ],
)
def test_to_copies_where_eager_copies(cast):
    """``x.to(..., copy=True)`` is a new tensor even where nothing changes: a write into it
    does not reach ``x``; without ``copy`` it is ``x`` itself, as in eager."""

    def f(x):
        y = cast(x)
        y.add_(1)
        return y is x

    jf = thunder.jit(f)
    for _ in range(2):
        x = torch.randn(3)
        a, b = x.clone(), x.clone()
        assert jf(a) == f(b)
        torch.testing.assert_close(a, b)
