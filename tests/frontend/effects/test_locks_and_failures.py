"""Order as eager's around the call: a lock the code takes is held by every call of the compiled
program (``c_objects.HeldLock``), what depends on another thread is refused; a trace that fails
in the user's code says which writes made before the error were not kept; outputs of earlier
calls are not kept alive by thunder."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest
import torch

import thunder
from thunder.core.errors import UnsupportedValueError

LOCK = threading.Lock()
RLOCK = threading.RLock()


def _with_lock(x):
    with LOCK:
        y = x * 2
    return y + 1


def test_a_lock_the_code_takes_is_held_by_every_call():
    jfn = thunder.jit(_with_lock)
    torch.testing.assert_close(jfn(torch.ones(2)), torch.full((2,), 3.0))
    order = []

    def holder():
        with LOCK:
            time.sleep(0.2)
            order.append("other thread")

    t = threading.Thread(target=holder)
    t.start()
    time.sleep(0.05)  # (the other thread holds the lock now)
    jfn(torch.ones(2))  # a cached call: waits for the lock, as eager's with block does
    order.append("compiled call")
    t.join()
    assert order == ["other thread", "compiled call"]
    assert not LOCK.locked()


def test_an_rlock_held_by_the_caller_is_taken_again():
    def f(x):
        with RLOCK:
            return x + 1

    jfn = thunder.jit(f)
    with RLOCK:
        torch.testing.assert_close(jfn(torch.ones(2)), torch.full((2,), 2.0))
        torch.testing.assert_close(jfn(torch.ones(2)), torch.full((2,), 2.0))


def test_a_non_blocking_acquire_is_refused():
    def f(x):
        if LOCK.acquire(blocking=False):
            LOCK.release()
        return x

    with pytest.raises(UnsupportedValueError, match="LOCK"):
        thunder.jit(f)(torch.ones(2))
    assert not LOCK.locked()


class Counter:
    n = 0


SEEN: list = []


def _fails_after_writes(x, i):
    Counter.n += 1
    SEEN.append(i)
    return x[i]


def test_a_failed_trace_says_which_writes_were_not_kept():
    with pytest.raises(IndexError) as e:  # (eager's exception class)
        thunder.jit(_fails_after_writes)(torch.ones(2), 5)
    note = " ".join(getattr(e.value, "__notes__", []))
    assert "the global SEEN" in note and "the class Counter" in note
    assert Counter.n == 0 and SEEN == []  # put back as they were


def _alive_after_drop(make_output) -> bool:
    out = make_output()
    ref = weakref.ref(out)
    del out
    gc.collect()
    return ref() is not None


def test_outputs_are_not_kept_alive_after_the_caller_drops_them():
    emb = thunder.jit(torch.nn.Embedding(10, 4))

    class ViewSaved(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            v = x.view(-1)
            ctx.save_for_backward(v)
            return v * 2

        @staticmethod
        def backward(ctx, g):
            (v,) = ctx.saved_tensors
            return (g * 2).view(2, 3)

    fn = thunder.jit(lambda x: ViewSaved.apply(x))
    for _ in range(3):
        assert not _alive_after_drop(lambda: emb(torch.tensor([1, 2, 3])))
        assert not _alive_after_drop(lambda: fn(torch.randn(2, 3, requires_grad=True)))

        def stepped():
            out = emb(torch.tensor([1, 2]))
            out.sum().backward()
            return out

        assert not _alive_after_drop(stepped)
