"""Iterators the compiled function did not make (a global iterator, ``itertools.count``, a
generator in a closure): taking an item is refused with the iterator's name and the user's
line, and the iterator is left where it was; iterators made inside work as in eager."""

import itertools

import pytest
import torch

import thunder
from thunder.core.errors import UnsupportedValueError

IT = iter(range(10))
COUNTER = itertools.count()


def _gen():
    yield from range(3)


GEN = _gen()


_TAKES = {
    "IT": lambda x: x * next(IT),
    "COUNTER": lambda x: x * next(COUNTER),
    "GEN": lambda x: x * next(GEN),
}


@pytest.mark.parametrize("name", sorted(_TAKES))
def test_next_of_a_global_iterator_is_refused_and_leaves_it(name):
    (first,) = itertools.islice(globals()[name], 1)  # a step of the caller's own
    jf = thunder.jit(_TAKES[name])
    for _ in range(2):
        with pytest.raises(
            UnsupportedValueError, match=rf"next\(\) of the global {name} .*\n  at .*test_foreign_iterators"
        ):
            jf(torch.ones(2))
    # nothing was taken: the next item is the one after the caller's own step
    assert next(globals()[name]) == first + 1


def test_for_loop_over_a_closure_iterator_is_refused():
    it = iter([5, 6])

    def f(x):
        for v in it:
            x = x + v
        return x

    with pytest.raises(UnsupportedValueError, match="next\\(\\) of the closure variable it"):
        thunder.jit(f)(torch.ones(1))
    assert list(it) == [5, 6]


def test_iterators_made_inside_are_traced():
    def f(x, n: int):
        it = iter(range(n))
        out = x * next(it)
        for v in it:
            out = out + v
        return out, list(zip(range(2), itertools.count()))

    jf = thunder.jit(f)
    for n in (3, 4, 3):
        x = torch.randn(2)
        got, expected = jf(x, n), f(x, n)
        torch.testing.assert_close(got[0], expected[0])
        assert got[1] == expected[1]


def test_an_iterator_held_by_a_module_is_refused_and_left_where_it_was():
    class Scaled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scales = itertools.cycle([1.0, 2.0])

        def forward(self, x):
            return x * next(self.scales)

    m = Scaled()
    with pytest.raises(UnsupportedValueError, match=r"next\(\) of the attribute scales"):
        thunder.jit(m)(torch.ones(1))
    assert next(m.scales) == 1.0 and type(m.scales) is itertools.cycle
