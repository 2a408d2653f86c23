"""Counters: an int or float the function reads and writes back (``self.calls += 1``) stops
causing a retrace on every call once it has changed: it is then traced as a value
(``i0 = calls + 1``), also where a tensor op takes it (``torch.mul(x, i0)``); where its value
decides control flow or a shape it is specialised, and every case follows eager."""

from __future__ import annotations

import math
import operator
from types import SimpleNamespace

import pytest
import torch

import thunder
from thunder.core.proxies import NumberProxy
from thunder.frontend.stand_ins.counters import DynamicNumber, refuse_stand_ins


class Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x) * 2


def test_module_step_counter_stops_retracing():
    m = Counting()
    jm = thunder.jit(m)
    x = torch.ones(2, 3)
    for _ in range(6):
        torch.testing.assert_close(jm(x), m.lin(x) * 2)
    stats = thunder.compile_stats(jm)
    assert m.calls == 6
    assert len(stats.entries) == 2 and stats.cache_hits == 4
    comp = str(thunder.last_traces(jm)[-1])
    assert "i0 = module_calls + 1" in comp
    epi = str(thunder.last_epilogue_traces(jm)[-1])
    assert "pythonex.python_setattr(module, 'calls', i0)" in epi
    assert "pythonex.check_type(module_calls, builtins_int)" in str(thunder.last_prologue_traces(jm)[-1])


class State:
    def __init__(self):
        self.step = 0
        self.lr = 0.5


def test_object_counter_with_arithmetic():
    def f(x, st):
        st.step = (st.step + 1) * 2 - 1
        return x * st.lr

    st, ref = State(), State()
    jf = thunder.jit(f)
    for _ in range(5):
        jf(torch.ones(2), st)
        f(torch.ones(2), ref)
    assert st.step == ref.step
    assert len(thunder.compile_stats(jf).entries) == 2


def test_a_counter_in_tensor_arithmetic_stays_a_value():
    def f(x, st):
        st.step = st.step + 1
        return x * st.step  # the op takes the number as its operand: no value is relied on

    st, ref = State(), State()
    jf = thunder.jit(f)
    for _ in range(6):
        out = jf(torch.ones(2), st)
        expected = f(torch.ones(2), ref)
        torch.testing.assert_close(out, expected)
        assert type(st.step) is int and st.step == ref.step
    assert thunder.compile_stats(jf).cache_misses == 2
    assert "check_literal(st_step" not in str(thunder.last_prologue_traces(jf)[-1])
    assert "torch.mul(x, i0)" in str(thunder.last_traces(jf)[-1])


def test_counter_in_control_flow_stays_correct():
    def f(x, st):
        st.step += 1
        if st.step % 2 == 0:
            return x + 1
        return x - 1

    st, ref = State(), State()
    jf = thunder.jit(f)
    for _ in range(5):
        torch.testing.assert_close(jf(torch.zeros(2), st), f(torch.zeros(2), ref))
    assert st.step == ref.step


class Positions(torch.nn.Module):
    """A decoding cache's length: counted up each call, then passed to ``torch.arange`` (a C
    function that parses its arguments before thunder sees them, as transformers' sliding-window
    masks do)."""

    def __init__(self):
        super().__init__()
        self.length = 0

    def forward(self, x):
        self.length += x.shape[0]
        return x + torch.arange(self.length - x.shape[0], self.length).float()


def test_a_counter_a_c_function_takes_as_a_size_is_a_symbolic_size():
    # ``torch.arange(self.length - n, self.length)``: the counter is a symbol of the sizes (the
    # prologue checks it is at least 2, not its value), so eight calls compile twice
    m = Positions()
    ref = Positions()
    jm = thunder.jit(m)
    x = torch.zeros(3)
    for i in range(8):
        torch.testing.assert_close(jm(x), ref(x), msg=lambda e, i=i: f"call {i}: {e}")
        assert m.length == ref.length and type(m.length) is int
    assert thunder.compile_stats(jm).cache_misses == 2
    prologue = str(thunder.last_prologue_traces(jm)[-1])
    assert "check_sizes({'module_length': module_length}" in prologue
    assert "check_literal(module_length" not in prologue


def test_a_counter_taken_as_a_size_that_falls_to_0_or_1_is_checked_by_value():
    m, ref = Positions(), Positions()
    jm = thunder.jit(m)
    for i, n in enumerate([3, 3, 3, 2, 1, 4]):
        if i == 4:
            m.length = ref.length = 0  # (reset, as a cache's reset() does)
        x = torch.zeros(n)
        torch.testing.assert_close(jm(x), ref(x), msg=lambda e, i=i: f"call {i}: {e}")
        assert m.length == ref.length


# -- counters in tensor arithmetic: the op takes the number as a traced value ----------------
N = 0


def _global_counter(x):
    global N
    N += 1
    return x * N


def test_a_global_counter_in_tensor_arithmetic_compiles_twice():
    global N
    N = 0
    jf = thunder.jit(_global_counter)
    for i in range(1, 7):
        torch.testing.assert_close(jf(torch.ones(2)), torch.full((2,), float(i)))
        assert type(N) is int and N == i
    assert thunder.compile_stats(jf).cache_misses == 2
    assert "check_literal(g_" not in str(thunder.last_prologue_traces(jf)[-1])


def _branching_counter(x):
    global N
    N += 1
    if N > 3:  # the outcome is checked, not the value
        return x * N
    return x - N


def test_a_global_counter_that_decides_a_branch_follows_eager():
    global N
    outs = []
    for fn in (thunder.jit(_branching_counter), _branching_counter):
        N = 0
        outs.append([fn(torch.ones(2)) for _ in range(6)])
        assert type(N) is int and N == 6
    for got, expected in zip(*outs):
        torch.testing.assert_close(got, expected)


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(2, 2)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x) * self.calls


def test_a_module_counter_in_training_follows_eager_s_values_and_gradients():
    m, ref = Scaled(), Scaled()
    jm = thunder.jit(m)
    for _ in range(6):
        x = torch.randn(3, 2, requires_grad=True)
        xr = x.detach().clone().requires_grad_()
        out, expected = jm(x), ref(xr)
        torch.testing.assert_close(out, expected)
        out.sum().backward()
        expected.sum().backward()
        torch.testing.assert_close(x.grad, xr.grad)
        torch.testing.assert_close(m.lin.weight.grad, ref.lin.weight.grad)
        assert type(m.calls) is int and m.calls == ref.calls
    assert thunder.compile_stats(jm).cache_misses <= 2
    assert "torch.mul(t0, i0)" in str(thunder.last_traces(jm)[-1])


class Arithmetic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0

    def forward(self, x):
        self.step += 1
        y = x + self.step
        y = self.step * y - self.step
        y = (self.step - y) / self.step + self.step / (y * y + 1)
        y = y + y // self.step + self.step // (y * y + 1) + y % self.step + self.step % (y * y + 1)
        return y * (y > self.step) + (self.step <= y) + (y == self.step)


def test_every_form_of_tensor_arithmetic_with_a_counter_stays_a_value():
    m, ref = Arithmetic(), Arithmetic()
    jm = thunder.jit(m)
    for _ in range(6):
        x = torch.linspace(-8, 8, 5)
        torch.testing.assert_close(jm(x), ref(x))
        assert type(m.step) is int and m.step == ref.step
    assert thunder.compile_stats(jm).cache_misses <= 2


def test_an_integer_tensor_times_a_counter_keeps_eager_s_dtype():
    def f(x, st):
        st.step += 1
        return x * st.step, x + st.step

    st, ref = State(), State()
    jf = thunder.jit(f)
    for _ in range(6):
        x = torch.arange(4, dtype=torch.int32)
        for got, expected in zip(jf(x, st), f(x, ref)):
            assert got.dtype == expected.dtype == torch.int32
            torch.testing.assert_close(got, expected)
    assert thunder.compile_stats(jf).cache_misses <= 2


def test_a_nonlocal_counter_in_tensor_arithmetic_compiles_twice():
    def make():
        n = 0

        def f(x):
            nonlocal n
            n += 1
            return x * n + n

        return f

    f, ref = make(), make()
    jf = thunder.jit(f)
    for _ in range(6):
        torch.testing.assert_close(jf(torch.ones(2)), ref(torch.ones(2)))
    assert thunder.compile_stats(jf).cache_misses == 2
    assert f.__closure__[0].cell_contents == 6 and type(f.__closure__[0].cell_contents) is int


class Holder(torch.nn.Module):
    """A counter on a plain object the module holds (a training state)."""

    def __init__(self):
        super().__init__()
        self.state = State()

    def forward(self, x):
        self.state.step += 1
        return x * self.state.step


def test_a_counter_on_an_object_a_module_holds_compiles_twice():
    m, ref = Holder(), Holder()
    jm = thunder.jit(m)
    for _ in range(6):
        torch.testing.assert_close(jm(torch.ones(2)), ref(torch.ones(2)))
        assert type(m.state.step) is int and m.state.step == ref.state.step
    assert thunder.compile_stats(jm).cache_misses == 2
    epi = str(thunder.last_epilogue_traces(jm)[-1])
    assert "python_setattr(obj_State, 'step', i0)" in epi
    assert m.state.lr == 0.5


class Parity(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls % 2:  # the value decides: specialised, checked by value
            return x * self.calls
        return x.repeat(self.calls, 1)  # a shape


def test_a_counter_that_decides_control_flow_or_a_shape_is_specialised_and_correct():
    m, ref = Parity(), Parity()
    jm = thunder.jit(m)
    for _ in range(6):
        torch.testing.assert_close(jm(torch.ones(1, 2)), ref(torch.ones(1, 2)))
        assert type(m.calls) is int and m.calls == ref.calls
    assert "check_literal(module_calls" in str(thunder.last_prologue_traces(jm)[-1])


def test_a_counter_the_user_sets_to_a_float_or_a_bool_makes_a_new_entry():
    m, ref = Scaled(), Scaled()
    jm = thunder.jit(m)
    x = torch.ones(1, 2)
    for value in (None, None, None, 2.5, None, True, None, 7):
        if value is not None:
            m.calls = ref.calls = value
        torch.testing.assert_close(jm(x), ref(x))
        assert type(m.calls) is type(ref.calls) and m.calls == ref.calls


class Filled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n = 0

    def forward(self, x):
        self.n += 1
        return x + torch.full((2,), self.n)  # a C function reads the int itself: specialised


def test_a_counter_a_factory_takes_is_correct():
    m, ref = Filled(), Filled()
    jm = thunder.jit(m)
    for _ in range(6):
        torch.testing.assert_close(jm(torch.ones(2)), ref(torch.ones(2)))
    assert m.n == ref.n == 6


class Clock(torch.nn.Module):
    """A float counter (a time, a schedule's position) and a value halved on every call."""

    def __init__(self):
        super().__init__()
        self.t = 0.0
        self.scale = 3

    def forward(self, x):
        self.t += 0.1
        self.scale = self.scale / 2
        return x * self.t + self.scale


def test_a_float_counter_in_tensor_arithmetic_compiles_twice():
    m, ref = Clock(), Clock()
    jm = thunder.jit(m)
    for _ in range(6):
        torch.testing.assert_close(jm(torch.ones(2)), ref(torch.ones(2)))
        assert type(m.t) is float and m.t == ref.t  # the same sums, in the same order
        assert type(m.scale) is float and m.scale == ref.scale
    assert thunder.compile_stats(jm).cache_misses == 2
    comp = str(thunder.last_traces(jm)[-1])
    assert "i0 = module_t + 0.1" in comp and "i1 = module_scale / 2" in comp
    assert "check_type(module_t, builtins_float)" in str(thunder.last_prologue_traces(jm)[-1])


class FloatBranch(Clock):
    def forward(self, x):
        self.t += 0.1
        if self.t > 0.35:  # a float's sum rounds: its comparison checks the value
            return x * 2
        return x


def test_a_float_counter_that_decides_a_branch_follows_eager():
    m, ref = FloatBranch(), FloatBranch()
    jm = thunder.jit(m)
    for _ in range(6):
        torch.testing.assert_close(jm(torch.ones(2)), ref(torch.ones(2)))
        assert type(m.t) is float and m.t == ref.t
    assert "check_literal(module_t" in str(thunder.last_prologue_traces(jm)[-1])


def _in_place(x):
    global N
    N += 1
    x *= N  # eager writes into the caller's tensor
    x += N
    return x


def test_an_augmented_assignment_with_a_counter_writes_in_place():
    global N
    jf = thunder.jit(_in_place)
    for i in range(1, 7):
        a, b = torch.ones(2), torch.ones(2)
        N = i - 1
        out = jf(a)
        assert out is a
        N = i - 1
        _in_place(b)
        torch.testing.assert_close(a, b)
    assert thunder.compile_stats(jf).cache_misses == 2


def _operator_call(x):
    global N
    N += 1
    return operator.imul(x, N)  # no bytecode to read: specialised, still in place


def test_an_operator_function_with_a_counter_is_specialised_and_in_place():
    global N
    N = 0
    jf = thunder.jit(_operator_call)
    for i in range(1, 5):
        a = torch.ones(2)
        assert jf(a) is a
        torch.testing.assert_close(a, torch.full((2,), float(i)))


class TypeAsked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.t, self.n = 0.0, 0

    def forward(self, x):
        self.t += 0.5
        self.n += 1
        if isinstance(self.t, float) and isinstance(self.n, int):  # as eager answers
            return x * self.t
        return x


def test_isinstance_of_a_counter_traced_as_a_value_is_eager_s():
    m, ref = TypeAsked(), TypeAsked()
    jm = thunder.jit(m)
    for _ in range(6):
        torch.testing.assert_close(jm(torch.ones(1)), ref(torch.ones(1)))
    assert thunder.compile_stats(jm).cache_misses == 2


class TypeCalled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.t, self.n = 0.0, 0

    def forward(self, x):
        self.t += 0.5
        self.n += 1
        if type(self.t) is float and type(self.n) is int and type(self.n).__name__ == "int":
            return x * self.t
        return x


def test_type_of_a_counter_traced_as_a_value_is_eager_s():
    m, ref = TypeCalled(), TypeCalled()
    jm = thunder.jit(m)
    for _ in range(6):
        torch.testing.assert_close(jm(torch.ones(1)), ref(torch.ones(1)))
    assert type(m.n) is int and type(m.t) is float
    assert thunder.compile_stats(jm).cache_misses == 2


class Forms(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n = 1

    def forward(self, x):
        self.n += 1
        return x % self.n + self.n / x + (self.n - x) * (x / self.n) + (x == self.n)


def test_gradients_through_every_differentiable_form_with_a_counter_are_eager_s():
    m, ref = Forms(), Forms()
    jm = thunder.jit(m)
    for _ in range(6):
        x = torch.linspace(0.5, 7, 6, requires_grad=True)
        xr = x.detach().clone().requires_grad_()
        out, expected = jm(x), ref(xr)
        torch.testing.assert_close(out, expected)
        out.sum().backward()
        expected.sum().backward()
        torch.testing.assert_close(x.grad, xr.grad)
        assert type(m.n) is int and m.n == ref.n
    assert thunder.compile_stats(jm).cache_misses == 2


class Shared(torch.nn.Module):
    """One state object held by the module and two of its layers (and read through a global)."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self.a, self.b = Holder(), Holder()
        self.a.state = self.b.state = state

    def forward(self, x):
        self.state.step += 1
        return self.b(self.a(x)) + GLOBAL_STATE.step


GLOBAL_STATE = State()


def test_a_counter_on_an_object_several_modules_and_a_global_hold_compiles_twice():
    jm = thunder.jit(Shared(GLOBAL_STATE))
    for i in range(1, 7):
        # step: +1 by the module, +1 by each layer; x * (i*3-1) * (i*3) + i*3
        n = 3 * i
        torch.testing.assert_close(jm(torch.ones(2)), torch.full((2,), float((n - 1) * n + n)))
        assert type(GLOBAL_STATE.step) is int and GLOBAL_STATE.step == n
    assert thunder.compile_stats(jm).cache_misses == 2


STEPS = State()


def _global_object_counter(x):
    STEPS.step += 1
    return x * STEPS.step


def test_a_counter_on_an_object_read_through_a_global_compiles_twice():
    STEPS.step = 0
    jf = thunder.jit(_global_object_counter)
    for i in range(1, 7):
        torch.testing.assert_close(jf(torch.ones(2)), torch.full((2,), float(i)))
        assert type(STEPS.step) is int and STEPS.step == i
    assert thunder.compile_stats(jf).cache_misses == 2


class Failing(Holder):
    def __init__(self):
        super().__init__()
        self.fail = False

    def forward(self, x):
        self.state.step += 1
        if self.fail:
            raise ValueError("the user's own error")
        return x * self.state.step


def test_a_trace_that_fails_leaves_the_counter_an_int_and_a_value():
    m = Failing()
    jm = thunder.jit(m)
    for _ in range(3):
        jm(torch.ones(2))
    m.fail = True
    with pytest.raises(ValueError, match="own error"):
        jm(torch.ones(2))
    assert type(m.state.step) is int and m.state.step == 3  # (the traces' writes are put back)
    m.fail = False
    for i in range(4, 8):
        torch.testing.assert_close(jm(torch.ones(2)), torch.full((2,), float(i)))
        assert type(m.state.step) is int and m.state.step == i
    assert thunder.compile_stats(jm).cache_misses <= 3  # the counter is still a value after the error


def test_a_number_recorded_as_its_stand_in_is_refused():
    n = DynamicNumber(NumberProxy("i0", 3), 3, (), None)
    inner = SimpleNamespace(
        sym=SimpleNamespace(name="slice"), args=(slice(0, n),), kwargs={}, subsymbols=[], source=None
    )
    outer = SimpleNamespace(
        sym=SimpleNamespace(name="getitem"), args=(), kwargs={}, subsymbols=[inner], source=None
    )
    with pytest.raises(TypeError, match="slice took a number traced as a value as itself"):
        refuse_stand_ins([outer])


def test_a_float_argument_that_changes_is_a_value_after_one_miss():
    # a scale passed as a float: the second value makes it a value the program reads, through
    # Python arithmetic, a tensor op's keyword (``alpha``, parsed in C) and a foreach op
    def f(x, a):
        y = torch.add(x, x, alpha=a) * (a - 1)
        (z,) = torch._foreach_mul([x], a / 2)
        return y + z + x.addcdiv(x, x + 2, value=-a)

    jfn = thunder.jit(f)
    for i, a in enumerate((0.5, 1.5, 2.25, 1.0, -3.75, 0.1)):
        x = torch.arange(3.0) + i
        torch.testing.assert_close(jfn(x, a), f(x, a), msg=lambda m, a=a: f"a={a}: {m}")
    assert thunder.compile_stats(jfn).cache_misses == 2
    assert "alpha=a" in str(thunder.last_traces(jfn)[-1])


def test_a_float_the_program_needs_as_a_plain_number_is_checked_by_value():
    # ``round(a)`` and ``torch.full(.., a)`` take the number itself: each new value traces again
    def f(x, a):
        return x * a + torch.full((3,), a) + round(a) + math.floor(a)

    jfn = thunder.jit(f)
    for a in (0.5, 1.5, 2.5, 2.5, -1.25):
        torch.testing.assert_close(
            jfn(torch.ones(3), a), f(torch.ones(3), a), msg=lambda m, a=a: f"a={a}: {m}"
        )
    assert thunder.compile_stats(jfn).cache_misses == 4
