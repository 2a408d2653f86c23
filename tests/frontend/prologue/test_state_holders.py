"""Python state the traced code reads wherever it is held, against eager over several calls:
a function's attributes, a class's (reached through a closure, a global or ``type(self)``), a
module object made by the program (no file), ``collections.Counter`` and ``OrderedDict``
methods. Each case runs eager and jitted side by side on separate copies of the state and
compares the results and the state after every call; no proxy is left in the state.

Objects whose state lives in C (a ``random.Random``, NumPy's generator, an iterator held in a
dict) are refused with an error naming them, and left as they were:
``tests/frontend/effects/test_opaque_state.py``.
"""

from __future__ import annotations

import collections
import types

import pytest
import torch
from support.checks import no_proxies

import thunder

CALLS = 4


def _against_eager(make):
    """``make()`` -> (fn, state()): the function and a reader of the state it holds."""
    fe, state_e = make()
    fj, state_j = make()
    jfn = thunder.jit(fj)
    for i in range(CALLS):
        x = torch.full((3,), float(i + 1))
        expected, got = fe(x), jfn(x)
        torch.testing.assert_close(got, expected, msg=lambda m, i=i: f"call {i}: {m}")
        assert state_j() == state_e(), f"call {i}: state {state_j()!r}, eager {state_e()!r}"
        assert no_proxies(state_j())
    return jfn


def test_a_function_attribute_counter():
    def make():
        def f(x):
            f.calls += 1
            return x * f.calls

        f.calls = 0
        return f, lambda: f.calls

    _against_eager(make)


def test_a_function_attribute_changed_between_calls_is_read_again():
    def make():
        def f(x):
            return x * f.scale

        f.scale = 2.0
        return f, lambda: f.scale

    fe, _ = make()
    fj, _ = make()
    jfn = thunder.jit(fj)
    x = torch.ones(2)
    torch.testing.assert_close(jfn(x), fe(x))
    fe.scale = fj.scale = 5.0
    torch.testing.assert_close(jfn(x), fe(x))


def test_a_class_attribute_reached_through_a_closure():
    def make():
        class C:
            n = 0

        def f(x):
            C.n += 1
            return x * C.n

        return f, lambda: C.n

    _against_eager(make)


def test_a_class_attribute_written_through_type_of_self():
    def make():
        class M(torch.nn.Module):
            n = 0

            def forward(self, x):
                type(self).n += 1
                return x * type(self).n

        return M(), lambda: M.n

    _against_eager(make)


def test_a_class_attribute_set_by_the_user_between_calls():
    class C:
        scale = 2.0

    def f(x):
        return x * C.scale

    jfn = thunder.jit(f)
    x = torch.ones(2)
    torch.testing.assert_close(jfn(x), f(x))
    C.scale = 3.0
    torch.testing.assert_close(jfn(x), x * 3.0)


def test_a_module_object_without_a_file():
    def make():
        cfg = types.ModuleType("cfg")
        cfg.count = 0

        def f(x):
            cfg.count += 1
            return x * cfg.count

        return f, lambda: cfg.count

    _against_eager(make)


def test_counter_update():
    def make():
        c = collections.Counter()

        def f(x):
            c.update(["a", "a", "b"])
            return x * c["a"]

        return f, lambda: dict(c)

    _against_eager(make)


def test_ordered_dict_move_to_end_and_a_write():
    def make():
        od = collections.OrderedDict(a=1, b=2, c=3)

        def f(x):
            od.move_to_end("a")
            k = next(iter(od))
            od[k] += 10
            return x * od[k]

        return f, lambda: list(od.items())

    _against_eager(make)


def test_ordered_dict_popitem_first():
    def make():
        od = collections.OrderedDict((k, i) for i, k in enumerate("abcdefgh"))

        def f(x):
            k, v = od.popitem(last=False)
            return x * v

        return f, lambda: list(od.items())

    _against_eager(make)


def test_a_failed_trace_leaves_a_class_and_a_function_as_they_were():
    class C:
        n = 0

    def f(x):
        C.n += 1
        f.seen = True
        return torch.nonzero(x).sum()  # data-dependent: refused

    with pytest.raises(Exception, match="nonzero"):
        thunder.jit(f)(torch.ones(2))
    assert C.n == 0 and not hasattr(f, "seen")


def test_an_attribute_a_function_gains_while_traced():
    def make():
        def f(x):
            f.calls = getattr(f, "calls", 0) + 1
            return x * f.calls

        return f, lambda: f.calls

    _against_eager(make)


def test_a_wrapped_function_s_wrapper_is_not_state_but_an_attribute_it_gains_is():
    import functools

    def make():
        def inner(x):
            return x + 1

        @functools.wraps(inner)
        def f(x):
            f.calls = getattr(f, "calls", 0) + 1
            return inner(x) * f.calls

        return f, lambda: f.calls

    jfn = _against_eager(make)
    assert thunder.compile_stats(jfn).cache_misses <= 3


def test_state_written_over_calls_of_changing_sizes():
    # sizes 1, 4, 7 and 4 again (symbolic sizes, a size of 1 specialised): the class counter,
    # the function attribute and the Counter move on every call as eager's
    def make():
        class C:
            n = 0

        seen = collections.Counter()

        def f(x):
            C.n += 1
            f.last = x.shape[0]
            seen.update([x.shape[0]])
            return x.sum() * C.n + seen[x.shape[0]]

        f.last = 0
        return f, lambda: (C.n, f.last, dict(seen))

    fe, state_e = make()
    fj, state_j = make()
    jfn = thunder.jit(fj)
    for i, n in enumerate((1, 4, 7, 4)):
        x = torch.arange(float(n))
        torch.testing.assert_close(jfn(x), fe(x), msg=lambda m, i=i: f"call {i}: {m}")
        assert state_j() == state_e(), f"call {i}: state {state_j()!r}, eager {state_e()!r}"
        assert no_proxies(state_j())


def test_a_class_counter_is_traced_as_a_value_after_one_miss():
    # ``type(self).n += 1`` every call: the second trace reads it as a value, so ten calls
    # compile twice (not ten times), with a branch on it checked by its outcome
    def make():
        class M(torch.nn.Module):
            n = 0
            limit = 6

            def forward(self, x):
                type(self).n += 1
                if type(self).n > type(self).limit:
                    return x - type(self).n
                return x * type(self).n

        return M(), lambda: M.n

    fe, state_e = make()
    fj, state_j = make()
    jfn = thunder.jit(fj)
    for i in range(10):
        x = torch.full((2,), float(i))
        torch.testing.assert_close(jfn(x), fe(x), msg=lambda m, i=i: f"call {i}: {m}")
        assert state_j() == state_e() and no_proxies(vars(type(fj)))
    assert thunder.compile_stats(jfn).cache_misses <= 3


def test_a_class_counter_read_only_and_set_by_the_user_between_calls():
    class C:
        k = 0

    def bump(x):
        C.k += 1
        return x + C.k

    def read(x):
        return x * C.k

    jb, jr = thunder.jit(bump), thunder.jit(read)
    for i in range(6):
        x = torch.ones(2)
        before = C.k
        torch.testing.assert_close(jb(x), x + before + 1)
        torch.testing.assert_close(jr(x), x * C.k)
        if i == 3:
            C.k = 100  # set by the user: the next calls read it
    assert C.k == 102 and isinstance(C.k, int)
    assert thunder.compile_stats(jb).cache_misses <= 2
