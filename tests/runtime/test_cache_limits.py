"""The cache is bounded (least recently used entry evicted), its warning repeats with the check
that keeps failing, a jitted module deep-copies into an independent one, and threads calling
one jitted module never see each other's tracing."""

from __future__ import annotations

import copy
import inspect
import threading
import warnings

import pytest
import torch
from torch import nn

import thunder
from thunder.runtime.cache import DEFAULT_CACHE_SIZE


def scale(x, n):
    return x * n


def test_the_cache_keeps_the_least_recently_used_entries_out():
    # (sizes specialised, so that each size makes an entry)
    jfn = thunder.jit(lambda x: x + 1, cache_size=2, dynamic=False)
    a, b, c = torch.ones(1), torch.ones(2), torch.ones(3)
    jfn(a), jfn(b), jfn(a)  # a is now the most recently used
    jfn(c)  # evicts b
    stats = thunder.compile_stats(jfn)
    assert len(stats.entries) == 2 and stats.cache_misses == 3
    jfn(a), jfn(c)
    assert stats.cache_misses == 3  # both still cached
    torch.testing.assert_close(jfn(b), b + 1)  # b was evicted: traced again
    assert stats.cache_misses == 4 and len(stats.entries) == 2


def test_a_default_limit_bounds_every_function():
    jfn = thunder.jit(lambda x: x * 2, dynamic=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in range(1, DEFAULT_CACHE_SIZE + 5):
            torch.testing.assert_close(jfn(torch.ones(n)), torch.full((n,), 2.0))
    assert len(thunder.compile_stats(jfn).entries) == DEFAULT_CACHE_SIZE


def test_a_decoding_loop_of_growing_lengths_compiles_each_length_once():
    # with sizes specialised, a default-cache decode makes one entry per sequence length; a second
    # sequence of the same lengths must hit every one (a smaller limit evicted each length before
    # its reuse)
    jfn = thunder.jit(lambda x: x.cumsum(0), dynamic=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            for n in range(1, 33):
                jfn(torch.ones(n))
    assert thunder.compile_stats(jfn).cache_misses == 32


def test_a_decoding_loop_of_growing_lengths_compiles_twice():
    # by default the length becomes a symbol once it has changed: size 1 (specialised, as 0 and 1
    # always are), then one entry for every length from 2 on, even past the cache's limit
    jfn = thunder.jit(lambda x: x.cumsum(0) * x.shape[0], cache_size=4)
    for _ in range(2):
        for n in range(1, 200):
            x = torch.randn(n)
            torch.testing.assert_close(jfn(x), x.cumsum(0) * n)
    stats = thunder.compile_stats(jfn)
    assert stats.cache_misses == 2 and stats.entries[-1].symbols == {
        "s0": "x.shape[0]: 1 in an earlier call, 2 in this one"
    }


def test_an_entry_tried_in_vain_fails_on_the_arguments_before_module_state():
    # a decoding loop keeps one entry per cache length and tries them most recent first: each
    # entry that does not fit must fail at the argument's shape, not after checking every
    # submodule and config (which made a cached decode step 3x slower than eager)
    class Cache:
        def __init__(self, n):
            self.k = torch.zeros(n, 4)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.scale = 2.0

        def forward(self, x, cache):
            return self.fc(x) * self.scale + cache.k.sum(0)

    jm = thunder.jit(Block())
    for n in (1, 2, 3):
        jm(torch.randn(2, 4), Cache(n))
    lines = [str(b) for b in thunder.last_prologue_traces(jm)[-1].bound_symbols]
    first_module_check = min(i for i, line in enumerate(lines) if "check_module" in line)
    cache_check = next(i for i, line in enumerate(lines) if "check_tensor" in line and "t_cache_k" in line)
    assert cache_check < first_module_check
    calls = thunder.compile_stats(jm).cache_hits
    jm(torch.randn(2, 4), Cache(1))  # the oldest entry, after two that fail at the cache
    assert thunder.compile_stats(jm).cache_hits == calls + 1


def test_cache_size_must_be_positive():
    with pytest.raises(ValueError, match="cache_size"):
        thunder.jit(scale, cache_size=0)


def test_the_recompile_warning_repeats_with_the_failing_check():
    jfn = thunder.jit(scale, cache_size=16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(17):
            jfn(torch.ones(2), n)
    messages = [str(w.message) for w in caught if "compiled" in str(w.message)]
    assert len(messages) == 2
    assert "compiled 8 times" in messages[0] and "check_literal(n, " in messages[0]
    assert "compiled 16 times; 16 entries are kept" in messages[1] and "check_literal(n, " in messages[1]
    assert "got 15" in messages[1]


def test_an_entry_used_again_is_not_the_one_evicted():
    # six entries of six keys; the first is used again (found among its key's entries), then a
    # seventh is made: the least recently used goes, not the one just used
    jfn = thunder.jit(lambda x: x + 1, cache_size=6, dynamic=False)
    xs = [torch.ones((2,) * rank, dtype=dt) for dt in (torch.float32, torch.float64) for rank in (1, 2, 3)]
    for x in xs:
        jfn(x)
    jfn(xs[0])
    jfn(xs[0])
    jfn(torch.ones(2, dtype=torch.int32))
    misses = thunder.compile_stats(jfn).cache_misses
    jfn(xs[0])
    assert thunder.compile_stats(jfn).cache_misses == misses


def test_the_recompile_warning_points_at_the_user_s_call():
    # a function's call and a module's (whose call goes through nn.Module's frames): the line here
    jfn, jm = thunder.jit(scale, dynamic=False), thunder.jit(torch.nn.Linear(3, 3), dynamic=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(8):
            jfn(torch.ones(i + 1), 2)
            jm(torch.ones(i + 1, 3))
    found = [(w.filename, w.lineno) for w in caught if "compiled" in str(w.message)]
    here = inspect.getsourcelines(test_the_recompile_warning_points_at_the_user_s_call)[1]
    assert found == [(__file__, here + 6), (__file__, here + 7)]


def test_deepcopy_of_a_jitted_module_is_independent():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 3), nn.ReLU()).eval()
    jm = thunder.jit(m)
    x = torch.randn(2, 3)
    jm(x)
    jc = copy.deepcopy(jm)
    torch.testing.assert_close(jc(x), m(x))
    with torch.no_grad():
        jc._model[0].weight.add_(1)  # the copy's parameters, not the original's
    torch.testing.assert_close(jc(x), jc._model(x))
    torch.testing.assert_close(jm(x), m(x))
    assert not torch.equal(jc(x), jm(x))
    assert jc.training is jm.training and not jc._model[0].training


def test_a_thread_never_sees_another_threads_trace():
    torch.manual_seed(0)
    tracing, proceed = threading.Event(), threading.Event()

    class Slow(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            if x.shape[0] == 3:  # the second trace stops here until the other thread has looked
                tracing.set()
                proceed.wait(10)
            return self.fc(x)

    m = Slow()
    jm = thunder.jit(m)
    x2, x3 = torch.randn(2, 4), torch.randn(3, 4)
    jm(x2)
    results = {}
    t = threading.Thread(target=lambda: results.setdefault("traced", jm(x3)))
    t.start()
    try:
        assert tracing.wait(10)
        # meanwhile: the module as the user has it, eager and through the cached program
        assert type(m.fc.weight) is nn.Parameter and type(m.fc._parameters["bias"]) is nn.Parameter
        torch.testing.assert_close(m(x2), m.fc(x2))
        torch.testing.assert_close(jm(x2), m.fc(x2))
    finally:
        proceed.set()
        t.join(10)
    torch.testing.assert_close(results["traced"], m.fc(x3))
    assert thunder.compile_stats(jm).cache_misses == 2


def test_a_call_tries_only_the_entries_of_its_key():
    # 24 entries (two ranks of 12 dtypes): a call tries the most recently used entry, then the
    # prologues of its own key's entries alone, however many others there are
    jfn = thunder.jit(lambda x: x + 1, dynamic=False)
    dtypes = [torch.float16, torch.float32, torch.float64, torch.bfloat16, torch.int8, torch.int16]
    dtypes += [torch.int32, torch.int64, torch.uint8, torch.complex64, torch.complex128, torch.bool]
    xs = [torch.ones((2,) * rank, dtype=dt) for rank in (1, 2) for dt in dtypes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for x in xs:
            jfn(x)
    stats = thunder.compile_stats(jfn)
    assert len(stats.entries) == 24
    tried = []

    def counted(prologue):
        def run(*args, **kwargs):
            tried.append(prologue)
            return prologue(*args, **kwargs)

        return run

    for e in stats.entries:
        e.prologue = counted(e.prologue)
    for x in xs:
        tried.clear()
        torch.testing.assert_close(jfn(x), x + 1)
        assert len(tried) == 2  # the previous call's entry, then this key's one
    for _ in range(3):
        tried.clear()
        jfn(xs[-1])
        # the same inputs again: the most recent entry's C checks take them (runtime/fast_path.py)
        assert len(tried) == 0 and jfn._fast is not None
    assert stats.cache_misses == 24
