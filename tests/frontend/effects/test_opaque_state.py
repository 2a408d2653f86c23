"""Objects whose state lives in C, reached by the traced code and changed by it: refused with an
error naming the object, and put back as they were (``thunder/frontend/effects/opaque_state.py``)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
import torch

import thunder
from thunder.core.errors import UnsupportedValueError


def _refused(f, match: str):
    with pytest.raises(UnsupportedValueError, match=match):
        thunder.jit(f)(torch.ones(2))


def test_a_random_random_instance_is_refused_and_put_back():
    r = random.Random(0)
    expected = random.Random(0).random()

    def f(x):
        return x * r.random()

    _refused(f, r"closure variable r \(a random\.Random\)")
    assert r.random() == expected  # (the draw the trace took is undone)


def test_a_numpy_generator_is_refused_and_put_back():
    g = np.random.default_rng(0)
    expected = np.random.default_rng(0).random()

    def f(x):
        return x * float(g.random())

    _refused(f, r"closure variable g \(a numpy\.random\._generator\.Generator\)")
    assert g.random() == expected


def test_an_iterator_held_in_a_dict_is_refused_and_put_back():
    schedule = {"warmup": iter([1.0, 2.0, 3.0])}

    def f(x):
        return x * next(schedule["warmup"])

    _refused(f, r"closure variable schedule\['warmup'\] \(a list_iterator\)")
    assert next(schedule["warmup"]) == 1.0


def test_an_itertools_counter_in_a_list_is_refused():
    held = [itertools.count()]

    def f(x):
        return x * next(held[0])

    _refused(f, r"held\[0\]")


def test_a_generator_in_a_dict_is_refused_and_said_not_put_back():
    def numbers():
        yield from (1.0, 2.0, 3.0)

    held = {"g": numbers()}

    def f(x):
        return x * next(held["g"])

    _refused(f, r"held\['g'\] \(a generator\); it could not be put back")


def test_an_object_only_read_is_not_refused():
    r = random.Random(0)

    def f(x):
        return x * (2.0 if isinstance(r, random.Random) else 3.0)

    torch.testing.assert_close(thunder.jit(f)(torch.ones(2)), torch.full((2,), 2.0))
