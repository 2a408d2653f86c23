"""The cached call of an entry whose prologue checks plain tensors alone runs on torch's C
tensor guard and the grad mode and default dtype compared (``thunder/runtime/fast_path.py``):
every change those checks stand for still reaches the prologue's path and answers as eager,
over several calls that change it and change it back."""

from __future__ import annotations

import pytest
import torch
from torch.overrides import TorchFunctionMode

import thunder
from thunder.runtime.fast_path import simple


def _fast(jfn):
    return jfn._fast is not None


def test_a_function_of_tensors_alone_takes_the_fast_path_and_counts_its_calls():
    jfn = thunder.jit(lambda x, y: x * 2 + y)
    x, y = torch.randn(4), torch.randn(4)
    for _ in range(3):
        torch.testing.assert_close(jfn(x, y), x * 2 + y)
    assert _fast(jfn)
    stats = thunder.compile_stats(jfn)
    assert (stats.calls, stats.cache_hits, stats.cache_misses) == (3, 2, 1)


def test_prologues_that_read_more_than_tensors_have_no_fast_path():
    scale = {"k": 2.0}
    for fn, args in [
        (lambda x, n: x * n, (torch.randn(3), 3)),  # a number
        (lambda x: x * scale["k"], (torch.randn(3),)),  # a global container
        (lambda x, *, y: x + y, (torch.randn(3),)),  # a keyword
    ]:
        jfn = thunder.jit(fn)
        kwargs = {"y": torch.ones(3)} if fn.__code__.co_kwonlyargcount else {}
        jfn(*args, **kwargs)
        assert simple(thunder.last_prologue_traces(jfn)[-1]) is None
        assert not _fast(jfn)


@pytest.mark.parametrize("n", [2, 5, 1, 5, 2])
def test_sizes_that_change_and_come_back(n):
    jfn = thunder.jit(lambda x: x.sum(0) * 3, dynamic=False)
    for m in (n, n + 1, n):
        x = torch.randn(m, 3)
        torch.testing.assert_close(jfn(x), x.sum(0) * 3)


def test_grad_mode_default_dtype_and_autocast_changes_reach_the_prologue():
    jfn = thunder.jit(lambda a, b: a @ b * 2.5)
    a, b = torch.randn(3, 3, requires_grad=True), torch.randn(3, 3)
    ai, bi = torch.arange(9).reshape(3, 3), torch.arange(9).reshape(3, 3)
    for _ in range(2):
        out = jfn(a, b)
        assert out.requires_grad and _fast(jfn)
        with torch.no_grad():
            out = jfn(a, b)
            assert not out.requires_grad
        torch.testing.assert_close(out, a @ b * 2.5)
        assert jfn(ai, bi).dtype == torch.float32
        old = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            assert jfn(ai, bi).dtype == torch.float64  # (int @ int * 2.5: the default dtype)
        finally:
            torch.set_default_dtype(old)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert jfn(a, b).dtype == (a @ b * 2.5).dtype == torch.bfloat16
        torch.testing.assert_close(jfn(a, b), a @ b * 2.5)


def test_other_arguments_a_mode_and_an_enclosing_trace_take_the_prologue_s_path():
    jfn = thunder.jit(lambda x: x + 1)
    x = torch.zeros(2)
    jfn(x), jfn(x)
    assert _fast(jfn)
    with pytest.raises(TypeError):
        jfn(x, x)  # (the prologue's own error for two arguments)
    torch.testing.assert_close(jfn(torch.zeros(2, dtype=torch.float64)), torch.ones(2, dtype=torch.float64))

    seen = []

    class Seeing(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    with Seeing():
        jfn(x)
    assert seen  # (the user's mode sees the program's torch calls)

    outer = thunder.jit(lambda x: jfn(x) * 2)
    torch.testing.assert_close(outer(x), (x + 1) * 2)
    assert "add" in str(thunder.last_traces(outer)[-1])  # traced into the enclosing program


def test_an_in_place_write_and_an_error_on_the_fast_path():
    jfn = thunder.jit(lambda x, m: (x.add_(1), torch.linalg.cholesky(m))[1])
    x, good = torch.zeros(2), torch.eye(2)
    for i in range(3):
        jfn(x, good)
        assert torch.equal(x, torch.full((2,), i + 1.0))
    with pytest.raises(torch.linalg.LinAlgError) as info:
        jfn(x, -torch.eye(2))
    assert "x (in place)" in "\n".join(info.value.__notes__)
    assert torch.equal(x, torch.full((2,), 3.0))
