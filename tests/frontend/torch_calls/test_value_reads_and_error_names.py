"""Errors name what the user called (F.rrelu, not the torch function it calls; fractional_max_pool2d,
not the dispatch helper; Tensor.requires_grad, not a descriptor) and say "data-dependent" when a
value the program computes is needed. Numbers kept in 0-d integer input tensors are read with a
prologue check, as they are after the in-place writes traced before the read; counters compared with
a limit are checked by outcome; Python types as dtypes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import thunder
from thunder.core.errors import DataDependentError, UnsupportedOpError
from thunder.ops.meta import ShapeError


def test_a_functional_is_named_with_what_it_calls_and_the_line():
    x = torch.randn(1, 2, 4, 4)
    with pytest.raises(UnsupportedOpError) as e:
        thunder.jit(lambda x: F.gumbel_softmax(x))(x)  # gumbel-line
    msg = str(e.value)
    assert msg.startswith("thunder: torch.nn.functional.gumbel_softmax is not supported: it calls ")
    assert "torch.Tensor.exponential_" in msg and "gumbel-line" in msg
    # interpolate is a composition of thunder ops in every mode (sym_int is plain arithmetic)
    for kw in ({"scale_factor": 2}, {"scale_factor": 0.5, "mode": "area"}):
        f = lambda x, kw=kw: F.interpolate(x, **kw)  # noqa: E731
        torch.testing.assert_close(thunder.jit(f)(x), f(x))


def test_dispatchers_and_tensor_setters_are_named():
    x = torch.randn(1, 2, 8, 8)
    # fractional_max_pool2d is a boolean dispatcher, as adaptive_max_pool2d was before it had an op
    with pytest.raises(
        UnsupportedOpError, match=r"torch\.nn\.functional\.fractional_max_pool2d is not supported"
    ):
        thunder.jit(lambda x: F.fractional_max_pool2d(x, 2, output_size=4))(x)
    torch.testing.assert_close(
        thunder.jit(lambda x: F.adaptive_max_pool2d(x, 2))(x), F.adaptive_max_pool2d(x, 2)
    )

    def f(x):
        y = x * 2
        y.grad = torch.zeros_like(y)  # setter-line
        return y

    with pytest.raises(UnsupportedOpError, match=r"setting torch\.Tensor\.grad is not supported") as e:
        thunder.jit(f)(x)
    assert "setter-line" in str(e.value)


def test_a_computed_value_used_as_a_size_or_bound_is_data_dependent():
    def size(x):
        n = x.sum().long()
        return torch.ones(n)  # size-line

    def bound(x):
        return x[: x.sum().long()]  # bound-line

    for fn, line, op in (
        (size, "size-line", "torch.ones"),
        (bound, "bound-line", "torch.Tensor.__getitem__"),
    ):
        with pytest.raises(DataDependentError) as e:
            thunder.jit(fn)(torch.ones(3))
        msg = str(e.value)
        assert msg.startswith(f"thunder: {op} needs the value of the tensor")
        assert "data-dependent" in msg and line in msg and "vmap" not in msg


def test_numbers_kept_in_0d_integer_input_tensors_are_read_and_checked():
    def f(x, n):
        seq = n + x.shape[0]  # a 0-d tensor plus an int: still known from the input's value
        return torch.ones(2, seq) * x.sum(), x[: int(n)]

    jfn = thunder.jit(f)
    x = torch.arange(5.0)
    for n in (2, 2, 3):
        out, expected = jfn(x, torch.tensor(n)), f(x, torch.tensor(n))
        for a, b in zip(out, expected):
            torch.testing.assert_close(a, b)
    stats = thunder.compile_stats(jfn)
    assert (stats.cache_hits, stats.cache_misses) == (1, 2)  # a new value traces again
    assert "pythonex.check_tensor_value(n, 3)" in str(thunder.last_prologue_traces(jfn)[-1])
    # data (a float tensor, or one that is not 0-d) is never specialised on: still an error
    with pytest.raises(DataDependentError, match="data-dependent"):
        thunder.jit(lambda x: torch.ones(int(x)))(torch.tensor(2.0))
    with pytest.raises(DataDependentError):
        thunder.jit(lambda ids: torch.ones(int(ids[0])))(torch.tensor([2]))


class Counted(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("n", torch.tensor(0))

    def forward(self, x):
        self.n.add_(1)
        return x / float(self.n), x[: int(self.n)], x * self.n.item()


def test_a_value_read_after_an_in_place_write_is_the_new_value():
    # BatchNorm with momentum=None does this: num_batches_tracked.add_(1), then 1 / float(it)
    m, ref = Counted(), Counted()
    jm = thunder.jit(m)
    x = torch.arange(1.0, 6.0)
    for _ in range(3):
        for a, b in zip(jm(x), ref(x)):
            torch.testing.assert_close(a, b)
        assert int(m.n) == int(ref.n)
    bn, bn_ref = torch.nn.BatchNorm1d(3, momentum=None), torch.nn.BatchNorm1d(3, momentum=None)
    jbn = thunder.jit(bn)
    for _ in range(3):
        x = torch.randn(4, 3)
        torch.testing.assert_close(jbn(x), bn_ref(x))
        torch.testing.assert_close(bn.running_var, bn_ref.running_var)


class Window:
    def __init__(self):
        self.length = 0
        self.limit = 4


def step(w, x):
    out = x * 2 if w.length >= w.limit else x + 1
    w.length += 1
    return out


def test_counter_compared_with_a_limit_is_checked_by_outcome():
    w, ref = Window(), Window()
    jfn = thunder.jit(step)
    x = torch.ones(2)
    for _ in range(7):
        torch.testing.assert_close(jfn(w, x), step(ref, x))
        assert w.length == ref.length
    stats = thunder.compile_stats(jfn)
    # length 0 (a literal), 1 (now a traced counter: hits while length < 4), 4 (the outcome changed)
    assert stats.cache_misses == 3 and stats.cache_hits == 4
    pro = str(thunder.last_prologue_traces(jfn)[-1])
    assert "pythonex.check_int_compare(w_length, '>=', 4, True)" in pro


def test_python_types_as_dtypes():
    def f(x):
        i = torch.tensor([-1], dtype=int)
        return (
            x.to(int) + i,
            torch.zeros(2, dtype=float),
            torch.ones(2, dtype=bool),
            x.new_zeros(2, dtype=complex),
        )

    x = torch.randn(3) * 4
    for a, b in zip(thunder.jit(f)(x), f(x)):
        assert a.dtype == b.dtype and torch.equal(a, b)


def test_a_lazy_module_not_yet_called_is_refused_with_what_to_do():
    m = torch.nn.Sequential(torch.nn.LazyLinear(4), torch.nn.ReLU())
    with pytest.raises(Exception, match="lazy module .* call the module once eagerly"):
        thunder.jit(m)(torch.randn(2, 3))
    m(torch.randn(2, 3))  # materialised: now it traces
    x = torch.randn(2, 3)
    torch.testing.assert_close(thunder.jit(m)(x), m(x))


def test_an_in_place_op_that_would_grow_its_tensor_is_an_error_naming_it():
    def f(x, y):
        return x.add_(y)

    with pytest.raises(RuntimeError):  # eager's own error
        f(torch.zeros(3), torch.zeros(2, 3))
    with pytest.raises(
        ShapeError, match=r"torch.Tensor.add_: the result's shape \(2, 3\) does not match .*\(3,\)"
    ) as e:
        thunder.jit(f)(torch.zeros(3), torch.zeros(2, 3))
    assert "in f" in str(e.value)


def test_distributions_validating_arguments_say_how_to_turn_it_off():
    mu = torch.zeros(3, requires_grad=True)

    def f(x):
        return torch.distributions.Normal(mu, 1.0, validate_args=True).log_prob(x).sum()

    with pytest.raises(DataDependentError, match="validate_args=False") as e:
        thunder.jit(f)(torch.randn(3))
    assert "in f" in str(e.value)

    def g(x):
        return torch.distributions.Normal(mu, 1.0, validate_args=False).log_prob(x).sum()

    x = torch.randn(3)
    torch.testing.assert_close(thunder.jit(g)(x), g(x))
