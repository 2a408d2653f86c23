"""Counters: an int the function reads and writes back (``self.calls += 1``) stops causing a
retrace on every call once it has changed: it is then traced as a value (``i0 = calls + 1``)."""

from __future__ import annotations

import torch

import thunder


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


def test_a_counter_a_c_function_needs_as_an_int_is_specialised_after_one_failed_trace():
    m = Positions()
    ref = Positions()
    jm = thunder.jit(m)
    x = torch.zeros(3)
    for _ in range(4):
        torch.testing.assert_close(jm(x), ref(x))
    assert m.length == ref.length == 12
    assert "check_type(module_length" not in str(thunder.last_prologue_traces(jm)[-1])  # a value again
