"""Global torch state set inside the compiled function (grad mode as a call, as a context
manager, through torch.autograd; the default dtype) takes effect at its point and is replayed
on every call: the outputs' autograd history and the state after the call are eager's."""

import itertools

import pytest
import torch

import thunder

SWITCHES = {
    "call": lambda b: torch.set_grad_enabled(b),
    "autograd": lambda b: torch.autograd.set_grad_enabled(b),
    "private": lambda b: torch._C._set_grad_enabled(b),
}


def _make(where, value, form):
    def f(x):
        if where == "first":
            SWITCHES[form](value)
        y = x.sin()
        if where == "middle":
            SWITCHES[form](value)
        z = y * 2
        if where == "last":
            SWITCHES[form](value)
        return y, z

    return f


def _observe(fn, before, requires_grad):
    torch.set_grad_enabled(before)
    x = torch.ones(2, requires_grad=requires_grad)
    y, z = fn(x)
    after = torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    return (
        y.grad_fn is None,
        z.grad_fn is None,
        y.requires_grad,
        z.requires_grad,
        after,
        y.tolist(),
        z.tolist(),
    )


@pytest.mark.parametrize(
    "before,where,value,form,requires_grad",
    list(
        itertools.product(
            [True, False], ["first", "middle", "last"], [True, False], list(SWITCHES), [True, False]
        )
    ),
)
def test_grad_mode_switch_as_call(before, where, value, form, requires_grad):
    f = _make(where, value, form)
    jf = thunder.jit(f)
    for _ in range(3):
        assert _observe(jf, before, requires_grad) == _observe(f, before, requires_grad)
    assert thunder.compile_stats(jf).cache_misses == 1


@pytest.mark.parametrize("inner", [True, False])
@pytest.mark.parametrize("before", [True, False])
def test_grad_mode_context_manager(before, inner):
    def f(x):
        with torch.set_grad_enabled(inner):
            y = x * 3
        return y, x.cos()

    jf = thunder.jit(f)
    for _ in range(3):
        out = []
        for fn in (f, jf):
            torch.set_grad_enabled(before)
            y, c = fn(torch.ones(2, requires_grad=True))
            out.append((y.requires_grad, c.requires_grad, torch.is_grad_enabled()))
            torch.set_grad_enabled(True)
        assert out[0] == out[1]


def test_default_dtype_set_inside_is_replayed():
    def f(x):
        torch.set_default_dtype(torch.float64)
        return x + torch.ones(2)

    jf = thunder.jit(f)
    try:
        for _ in range(3):
            torch.set_default_dtype(torch.float32)
            expected = f(torch.ones(2))
            assert torch.get_default_dtype() is torch.float64
            torch.set_default_dtype(torch.float32)
            got = jf(torch.ones(2))
            assert torch.get_default_dtype() is torch.float64
            assert got.dtype is expected.dtype is torch.float64
            torch.testing.assert_close(got, expected)
    finally:
        torch.set_default_dtype(torch.float32)


def test_default_dtype_is_checked():
    jf = thunder.jit(lambda x: x + torch.ones(2))
    try:
        assert jf(torch.ones(2, dtype=torch.float16)).dtype is torch.float32
        torch.set_default_dtype(torch.float64)
        assert jf(torch.ones(2, dtype=torch.float16)).dtype is torch.float64
    finally:
        torch.set_default_dtype(torch.float32)
    assert thunder.compile_stats(jf).cache_misses == 2


def test_op_reading_a_default_dtype_set_inside_is_refused():
    def f(x):
        torch.set_default_dtype(torch.float64)
        return x.sin()

    try:
        with pytest.raises(Exception, match="takes its result's dtype torch.float64 from the default dtype"):
            thunder.jit(f)(torch.ones(2, dtype=torch.int64))
        assert torch.get_default_dtype() is torch.float32  # a failed trace leaves the state as it was
    finally:
        torch.set_default_dtype(torch.float32)
