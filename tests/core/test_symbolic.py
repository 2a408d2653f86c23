"""Symbolic sizes (``thunder/core/symbolic/``): the expressions' normal form, what each
comparison records, and torch's own code computing with them."""

from __future__ import annotations

import pytest
import torch

from thunder.core.proxies import NumberProxy, proxies_in
from thunder.core.symbolic import (
    SizeEnv,
    SizeRelations,
    evaluate,
    expr_of,
    fold,
    hints,
    is_symbolic,
    size_source,
    source,
)


@pytest.fixture
def env():
    return SizeEnv()


def _sym(env, name, value):
    return env.new_symbol(NumberProxy(name, value), (f"t_{name}", 0))


def test_expressions_are_kept_in_a_normal_form(env):
    s0, s1 = _sym(env, "s0", 5), _sym(env, "s1", 7)
    assert size_source(s0 * 2 + 1) == "2*s0 + 1"
    assert size_source((s0 + 1) * 2) == "2*s0 + 2"
    assert size_source(s1 - s0) == "-s0 + s1"
    assert size_source(s0 * s1) == size_source(s1 * s0) == "s0*s1"
    assert s0 - s0 == 0 and not is_symbolic(s0 - s0)
    assert size_source(s0 // 2) == "s0 // 2" and size_source(s0 % 3) == "s0 % 3"
    assert not env.relations  # (none of that needed a number)
    assert (s0 * 2 + 1).node.hint == 11
    assert evaluate(expr_of(s0 * s1 + s0 // 2), {"s0": 9, "s1": 3}) == 31


def test_products_expand_and_a_common_factor_cancels(env):
    s0, s1 = _sym(env, "s0", 5), _sym(env, "s1", 7)
    assert size_source((s0 * 2 + 1) * s1) == "2*s0*s1 + s1"
    assert size_source((s0 * 6) * s1 // (s0 * 3)) == "2*s1"  # exact: the quotient
    assert (s0 * s1 * 4 + s0 * 2) % (s0 * 2) == 0  # (a constant: no relation needed)
    assert size_source(-(-(3 * s0) // s0)) == "3"  # the pieces of split(3*s0, s0)
    assert size_source(s0 * s1 // (2 * s0)) == "s1 // 2"  # s0 > 0 cancels
    assert size_source((s0 + 3) // s0) == "(s0 + 3) // s0" and size_source(s1 // s0) == "s1 // s0"
    assert not env.relations
    for a, b in ((5, 7), (2, 9), (12, 3)):
        values = {"s0": a, "s1": b}
        assert evaluate(expr_of(s0 * s1 // (2 * s0)), values) == (a * b) // (2 * a)
        assert evaluate(expr_of((s0 * 2 + 1) * s1), values) == (2 * a + 1) * b


def test_a_comparison_records_the_relation_it_rested_on(env):
    s0, s1 = _sym(env, "s0", 5), _sym(env, "s1", 7)
    assert bool(s0 > 3) and not bool(s0 == s1) and bool(s0 % 2 == 1)
    assert [source(r) for r in env.relations] == ["s0 > 3", "s0 != s1", "s0 % 2 == 1"]
    # what holds for every size of at least 2 records nothing
    assert bool(s0 + 1 > s0) and bool(s0 != 1) and bool(s0 >= 2) and not bool(s0 - 1 < 0)
    assert len(env.relations) == 3
    # a use that needs the number pins it
    assert int(s0 * 2) == 10 and source(env.relations[-1]) == "2*s0 == 10" and env.specialized == {"s0"}
    assert SizeRelations(env).sources()[:2] == ("s0 >= 2", "s1 >= 2")


def test_torch_computes_with_them(env):
    s0 = _sym(env, "s0", 6)
    t = torch.empty((s0, 8), device="meta")
    assert size_source(t.shape[0]) == "s0" and t.stride() == (8, 1) and size_source(t.numel()) == "8*s0"
    assert t.is_contiguous() and not env.relations
    # a string made of a size is its number (then the trace holds for this size only)
    assert f"{t.shape[0]}" == "6" and str(t.shape) == "torch.Size([6, 8])" and env.specialized == {"s0"}
    assert hints((s0 + 1, [s0 * 2])) == (7, [12])
    assert [p.name for p in proxies_in((s0 * 2, torch.Size([s0, 3])))] == ["s0", "s0"]


def test_each_symbol_is_printed_as_the_code_computes_it(env):
    from thunder.core.printing import Printer

    s0 = _sym(env, "s0", 6)
    p = Printer()
    assert p.value((s0 * 2 + 1, 8)) == "((2*s0 + 1), 8)" and p.value(s0) == "s0"
    assert p.value(SizeRelations(env)) == "('s0 >= 2',)"


def test_the_printed_source_computes_what_the_expression_is(env):
    """Every expression, printed as the programs print it and run by Python, gives its value
    (``-(s0 // 2)`` is not ``-s0 // 2``)."""
    import random

    rng = random.Random(0)
    s0, s1 = _sym(env, "s0", 5), _sym(env, "s1", 7)
    ops = [
        lambda a, b: a + b,
        lambda a, b: a - b,
        lambda a, b: a * b,
        lambda a, b: a // 2,
        lambda a, b: -a // 3,
        lambda a, b: a % 3,
        lambda a, b: -a,
        lambda a, b: 2 * a - b + 1,
        lambda a, b: torch.sym_max(a, b),
        lambda a, b: (a * b) // 2,
        lambda a, b: (a * b) % (b + 1),
        lambda a, b: (a * a * b) // (b * b + 1),
    ]
    for _ in range(400):
        e = rng.choice([s0, s1])
        for _ in range(rng.randint(1, 4)):
            e = rng.choice(ops)(e, rng.choice([s0, s1, 3]))
        if not is_symbolic(e):
            continue
        for values in ({"s0": 2, "s1": 9}, {"s0": 11, "s1": 4}, {"s0": 6, "s1": 6}):
            text = size_source(e)
            assert eval(text, {"max": max, "min": min}, dict(values)) == evaluate(expr_of(e), values), text


def test_fold_computes_a_size_in_another_domain_each_part_once(env):
    # (the nvFuser executor folds sizes into its scalar ops; here into strings and ints)
    s0, s1 = _sym(env, "s0", 5), _sym(env, "s1", 7)
    made = []

    def op(name):
        def f(*args):
            made.append(name)
            return f"{name}({', '.join(map(str, args))})"

        return f

    size = (s0 * 2 + 1) * (s1 // 2) + torch.sym_max(s0, s1) % 3
    memo = {}

    def folded():
        return fold(
            expr_of(size),
            symbol=str,
            number=str,
            add=op("add"),
            scale=op("scale"),
            mul=op("mul"),
            binary=lambda name, a, b: op(name)(a, b),
            memo=memo,
        )

    ints = {"add": int.__add__, "scale": int.__mul__, "mul": int.__mul__, "floordiv": int.__floordiv__}
    ints |= {"mod": int.__mod__, "max": max, "s0": 5, "s1": 7}
    assert eval(folded(), ints) == evaluate(expr_of(size), {"s0": 5, "s1": 7})
    count = len(made)
    folded()
    assert len(made) == count  # (each part once: the memo holds them all)
    with pytest.raises(ValueError, match="relation"):
        fold(expr_of(s0 > 3), symbol=str, number=str, add=None, scale=None, mul=None, binary=None)
