"""Tensor arguments that alias: the same tensor passed twice, views of one tensor. A program
traced for separate tensors that writes into one of them never runs on aliased ones; the
same tensor twice is traced as one input; views of one tensor written in place are a clear
error that leaves them as they were."""

from __future__ import annotations

import pytest
import torch

import thunder
from thunder.frontend.errors import UnsupportedValueError


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
        UnsupportedValueError, match=r"(?s)mul_ writes into the argument a.*share memory.*alias-write-line"
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
