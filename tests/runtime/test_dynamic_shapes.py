"""Sizes that change between calls (``thunder/runtime/dynamic.py``, ``thunder/core/symbolic/``):
one compilation serves every size the prologue's relations allow, and every call gives eager's
values: over many calls with changing sizes, branches on sizes, broadcasting against a size-1
dimension that comes and goes, views and slices computed from sizes, sizes 0 and 1, and the
gradients of training on batches of their own length."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from support.checks import no_proxies
from support.models import GPT

import thunder
from thunder.core.symbolic import size_source


def _calls(jfn, fn, sizes, make):
    for n in sizes:
        args = make(n)
        torch.testing.assert_close(jfn(*args), fn(*args))
    return thunder.compile_stats(jfn)


def test_the_second_size_makes_the_dimension_a_symbol():
    def fn(x, w):
        return (x * 2 + 1) @ w

    w = torch.randn(8, 3)
    jfn = thunder.jit(fn)
    stats = _calls(jfn, fn, [4, 5, 6, 9, 31, 4], lambda n: (torch.randn(n, 8), w))
    assert stats.cache_misses == 2 and stats.cache_hits == 4
    first, second = stats.entries
    assert not first.symbols and list(second.symbols) == ["s0"]
    assert "x.shape[0]: 4 in an earlier call, 5 in this one" in second.symbols["s0"]
    comp = str(thunder.last_traces(jfn)[-1])
    assert (
        'x: "cpu f32[s0, 8]"' in comp
        and 't2: "cpu f32[s0, 3]"' in comp
        and "def computation(x, w, s0):" in comp
    )
    pro = str(thunder.last_prologue_traces(jfn)[-1])
    assert "s0 = x.shape[0]" in pro and "check_tensor(x, (s0, 8)" in pro
    assert "check_sizes({'s0': s0}, ('s0 >= 2',))" in pro


def test_dynamic_true_and_false():
    def fn(x):
        return x.sin() * x.shape[0]

    stats = _calls(thunder.jit(fn, dynamic=True), fn, [3, 4, 5, 6], lambda n: (torch.randn(n, 2),))
    assert stats.cache_misses == 1 and set(stats.entries[0].symbols) == {"s0", "s1"}
    stats = _calls(thunder.jit(fn, dynamic=False), fn, [3, 4, 5, 3], lambda n: (torch.randn(n, 2),))
    assert stats.cache_misses == 3 and not any(e.symbols for e in stats.entries)


def test_a_branch_on_a_size_is_checked_by_the_prologue():
    def fn(x):
        if x.shape[0] > 8:
            return x.sum(0)
        return x.mean(0) * x.shape[0]

    jfn = thunder.jit(fn)
    stats = _calls(jfn, fn, [4, 5, 6, 12, 13, 14, 7, 15], lambda n: (torch.randn(n, 3),))
    # the first size, then one entry per side of the branch
    assert stats.cache_misses == 3
    assert "'s0 <= 8'" in str(stats.entries[1].prologue_traces[-1])
    assert "'s0 > 8'" in str(stats.entries[2].prologue_traces[-1])


def test_broadcasting_against_a_size_one_dimension_that_comes_and_goes():
    def fn(x, y):
        return x + y

    jfn = thunder.jit(fn)
    for m in (1, 4, 1, 5, 6, 1, 7):
        x, y = torch.randn(3, m), torch.randn(3, 1 if m == 1 else m)
        torch.testing.assert_close(jfn(x, y), fn(x, y))
        x, y = torch.randn(3, 4), torch.randn(3, m if m in (1, 4) else 1)
        torch.testing.assert_close(jfn(x, y), fn(x, y))


def test_views_and_slices_computed_from_sizes():
    def fn(x):
        n = x.shape[0]
        halves = x.view(n // 2, -1) if n % 2 == 0 else x[: n - 1].reshape(-1, 2 * x.shape[1])
        tail = x[n // 2 :]
        steps = torch.arange(n, dtype=x.dtype)
        pad = torch.zeros(n * 2, x.shape[1])
        a, b = torch.split(x, [1, n - 1])
        return halves.sum(), tail.sum(0), steps * 2, torch.cat([pad, x]).mean(1), b - a

    jfn = thunder.jit(fn)
    stats = _calls(jfn, fn, [4, 6, 8, 10, 5, 7, 9, 20], lambda n: (torch.randn(n, 3),))
    assert stats.cache_misses <= 4  # the first size; then each parity's entry (one may pin)


def test_sizes_zero_and_one_stay_specialised():
    def fn(x):
        return x * 2 + x.shape[0]

    jfn = thunder.jit(fn)
    stats = _calls(jfn, fn, [3, 4, 0, 1, 5, 0, 1, 6], lambda n: (torch.randn(n),))
    assert stats.cache_misses == 4  # 3 (specialised), every size from 2 on, 0, 1


def test_values_computed_from_sizes_reach_the_user_as_ints():
    seen: list = []

    def fn(x):
        seen.append(x.shape[0] * 2)
        return x.shape, x.shape[0] + 1, x.sum()

    jfn = thunder.jit(fn)
    for n in (2, 3, 4, 5):
        shape, m, _ = jfn(torch.ones(n, 2))
        assert shape == torch.Size([n, 2]) and type(m) is int and m == n + 1
        assert all(type(d) is int for d in shape)
    assert seen == [4, 6, 8, 10] and all(type(v) is int for v in seen) and no_proxies(seen)
    assert thunder.compile_stats(jfn).cache_misses == 2
    epilogue = str(thunder.last_epilogue_traces(jfn)[-1])
    assert "python_call(_append, cell_seen_1_cell_contents, (2*s0))" in epilogue
    assert "return (torch.Size([s0, 2]), (s0 + 1), t0)" in epilogue


def test_an_op_that_needs_the_value_pins_the_size():
    def fn(x):
        return sum(x[i] * i for i in range(x.shape[0]))  # a Python loop over the size

    jfn = thunder.jit(fn)
    stats = _calls(jfn, fn, [3, 4, 5, 6, 7], lambda n: (torch.randn(n),))
    # each size its own entry, and no symbol once one was pinned
    assert stats.cache_misses == 5 and not stats.entries[-1].symbols


def test_a_relation_that_fails_is_a_miss_and_eager_s_error_stays_eager_s():
    def fn(x):
        return x.view(-1, 4).sum(1)

    jfn = thunder.jit(fn)
    _calls(jfn, fn, [8, 12, 16], lambda n: (torch.randn(n),))
    try:
        fn(torch.randn(10))
    except RuntimeError:
        pass
    else:
        raise AssertionError("eager accepted a view it cannot make")
    try:
        jfn(torch.randn(10))
    except Exception as e:
        assert "view" in str(e) or "invalid" in str(e) or "shape" in str(e)
    else:
        raise AssertionError("thunder accepted a view eager refuses")


def test_training_on_batches_of_their_own_length_matches_eager():
    torch.manual_seed(0)
    model = GPT(vocab=32, d=16, heads=2, layers=2, ctx=32)
    eager = GPT(vocab=32, d=16, heads=2, layers=2, ctx=32)
    eager.load_state_dict(model.state_dict())
    jmodel = thunder.jit(model)
    for t in [9, 12, 17, 12, 23, 30]:
        ids = torch.randint(0, 32, (2, t))
        losses = []
        for m in (jmodel, eager):
            m.zero_grad()
            loss = F.cross_entropy(m(ids).flatten(0, 1), ids.flatten())
            loss.backward()
            losses.append(loss)
        torch.testing.assert_close(losses[0], losses[1])
        for p, q in zip(model.parameters(), eager.parameters()):
            torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-4)
    assert thunder.compile_stats(jmodel).cache_misses <= 3


def test_split_by_a_symbolic_size():
    def fn(x, w):
        q, k, v = (x @ w).split(x.shape[1], dim=1)  # 3*s split by s: three pieces for every s
        first, *_ = x.split(3)  # pieces of 3 rows: how many depends on the size
        return q + k * v, first * 2

    jfn = thunder.jit(fn, dynamic=True)
    for n, d in ((8, 4), (7, 5), (8, 6)):
        x, w = torch.randn(n, d), torch.randn(d, 3 * d)
        for got, want in zip(jfn(x, w), fn(x, w)):
            torch.testing.assert_close(got, want)
    assert thunder.compile_stats(jfn).cache_misses == 1
    (entry,) = thunder.compile_stats(jfn).entries
    relations = entry.sizes.relations
    assert relations and all(size_source(r) != "s1 == 4" for r in relations)  # (d stays a symbol)
    x, w = torch.randn(10, 4), torch.randn(4, 12)  # four pieces of rows: its relation fails
    for got, want in zip(jfn(x, w), fn(x, w)):
        torch.testing.assert_close(got, want)
    assert thunder.compile_stats(jfn).cache_misses == 2


def test_a_string_made_of_a_size_is_its_number_on_every_call():
    out: list = []

    def fn(x):
        out.append(f"n={x.shape[0]}, m={x.shape[1]}")
        out.append(str(x.shape))
        return x * 2

    jfn = thunder.jit(fn)
    for n in (2, 3, 4, 5):
        jfn(torch.ones(n, n + 1))
    assert out == [s for n in (2, 3, 4, 5) for s in (f"n={n}, m={n + 1}", f"torch.Size([{n}, {n + 1}])")]
