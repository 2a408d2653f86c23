"""Tensor arguments that alias: the same tensor passed twice, views of one tensor. A program
traced for separate tensors that writes into one of them never runs on aliased ones; the
same tensor twice is traced as one input; views of one tensor written in place are a clear
error that leaves them as they were."""

from __future__ import annotations

import pytest
import torch

import thunder
from thunder.core.errors import UnsupportedValueError


def add_into_first(a, b):
    a.add_(1)
    return a + b


def test_the_same_tensor_twice_after_separate_tensors():
    jfn = thunder.jit(add_into_first)
    jfn(torch.zeros(3), torch.zeros(3))
    a, e = torch.zeros(3), torch.zeros(3)
    torch.testing.assert_close(jfn(a, a), add_into_first(e, e))
    torch.testing.assert_close(a, e)
    assert thunder.compile_stats(jfn).cache_misses == 2


def test_separate_tensors_after_the_same_tensor_twice():
    jfn = thunder.jit(add_into_first)
    a = torch.zeros(3)
    jfn(a, a)
    x, y, ex, ey = torch.zeros(3), torch.ones(3), torch.zeros(3), torch.ones(3)
    torch.testing.assert_close(jfn(x, y), add_into_first(ex, ey))
    torch.testing.assert_close((x, y), (ex, ey))


def test_overlapping_views_written_in_place_are_refused():
    def f(a, b):
        a.mul_(2)  # alias-write-line
        return b + 0

    jfn = thunder.jit(f)
    jfn(torch.arange(2.0), torch.arange(2.0))
    base = torch.arange(4.0)
    with pytest.raises(
        UnsupportedValueError,
        match=r"(?s)mul_ writes into the argument a, which shares memory with b.*alias-write-line",
    ):
        jfn(base[0:2], base[1:3])
    assert torch.equal(base, torch.arange(4.0))  # nothing ran


def test_aliased_inputs_only_read_hit_the_cache():
    def f(a, b):
        return a * b

    jfn = thunder.jit(f)
    jfn(torch.ones(2), torch.ones(2))
    base = torch.arange(4.0)
    torch.testing.assert_close(jfn(base[0:2], base[1:3]), f(base[0:2], base[1:3]))
    assert thunder.compile_stats(jfn).cache_misses == 1


def write_both(a, b):
    a.mul_(2)
    b.add_(a)
    return a + b


# views of one tensor that share no element: (the base, the two views)
DISJOINT = {
    "halves": lambda: (lambda t: (t, t[0:2], t[2:4]))(torch.arange(4.0)),
    "rows": lambda: (lambda t: (t, t[0], t[1]))(torch.arange(4.0).reshape(2, 2)),
    "interleaved columns": lambda: (lambda t: (t, t[:, 0], t[:, 1]))(torch.arange(4.0).reshape(2, 2)),
    "even and odd": lambda: (lambda t: (t, t[1::2], t[::2]))(torch.arange(4.0)),
    "columns of a transpose": lambda: (lambda t: (t, t.T[1], t.T[0]))(torch.arange(4.0).reshape(2, 2)),
}


@pytest.mark.parametrize("first", ["separate tensors", "views"])
@pytest.mark.parametrize("name", list(DISJOINT))
def test_views_of_one_tensor_that_do_not_overlap_are_written_as_in_eager(name, first):
    jfn = thunder.jit(write_both)
    if first == "separate tensors":
        jfn(torch.zeros(2), torch.zeros(2))
    else:  # traced for the views, then called with separate tensors (the same entry)
        jfn(*DISJOINT["halves"]()[1:])
        x, y, ex, ey = torch.ones(2), torch.arange(2.0), torch.ones(2), torch.arange(2.0)
        torch.testing.assert_close(jfn(x, y), write_both(ex, ey))
        torch.testing.assert_close((x, y), (ex, ey))
    (base, a, b), (ebase, ea, eb) = DISJOINT[name](), DISJOINT[name]()
    torch.testing.assert_close(jfn(a, b), write_both(ea, eb))
    torch.testing.assert_close(base, ebase)  # both writes reached the base, as in eager
    assert thunder.compile_stats(jfn).cache_misses == 1


@pytest.mark.parametrize(
    "views",
    [
        lambda t: (t.flatten()[::2], t.flatten()[2:4]),  # ranges cross, element 2 is in both
        lambda t: (t.T[0], t[1]),  # column 0 and row 1 share t[1, 0]
        lambda t: (t[1], t[1]),  # equal views, two tensor objects
    ],
)
def test_interleaved_views_that_overlap_are_refused(views):
    def f(a, b):
        b.add_(1)  # overlap-write-line
        return a * 1

    jfn = thunder.jit(f)
    jfn(torch.zeros(2), torch.zeros(2))
    base = torch.arange(4.0).reshape(2, 2)
    with pytest.raises(
        UnsupportedValueError, match=r"(?s)add_ writes into the argument b.*overlap-write-line"
    ):
        jfn(*views(base))
    assert torch.equal(base, torch.arange(4.0).reshape(2, 2))


def test_only_written_arguments_must_not_overlap():
    def f(a, b, c):
        a.add_(1)
        return b + c

    jfn = thunder.jit(f)
    t, e = torch.arange(6.0), torch.arange(6.0)
    torch.testing.assert_close(jfn(t[0:2], t[2:4], t[3:5]), f(e[0:2], e[2:4], e[3:5]))
    torch.testing.assert_close(t, e)


def test_the_overlap_test_is_exact():
    """Against the sets of elements, over views of one storage with assorted strides."""
    from thunder.executors.python.overlap import overlaps

    gen = torch.Generator().manual_seed(0)
    base = torch.empty(60)
    for _ in range(400):
        views = []
        for _ in range(2):
            ndim = int(torch.randint(1, 3, (), generator=gen))
            shape = [int(torch.randint(1, 4, (), generator=gen)) for _ in range(ndim)]
            stride = [int(torch.randint(0, 7, (), generator=gen)) for _ in range(ndim)]
            span = sum((n - 1) * s for n, s in zip(shape, stride))
            offset = int(torch.randint(0, 60 - span, (), generator=gen))
            views.append((shape, stride, offset))
        tensors = [base.as_strided(*v) for v in views]
        index = torch.arange(60)
        sets = [set(index.as_strided(*v).flatten().tolist()) for v in views]
        assert overlaps(*tensors) == bool(sets[0] & sets[1]), views
    # elements of another size: bytes, not elements, are compared
    h = base.view(torch.float16)
    assert not overlaps(h[0::4], base[1::2]) and overlaps(h[1::4], base[::2])
    assert not overlaps(base[0:2], torch.empty(2)) and not overlaps(base[0:0], base)
