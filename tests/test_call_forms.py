"""Forms of torch calls eager accepts beyond the usual signatures: NumPy's keyword names
(``axis``, ``keepdims``), arithmetic on two Python numbers, which gives a 0-d tensor
(``torch.div(seq_len, window, rounding_mode="trunc")`` in transformers' LED), and
``Tensor.type(dtype)`` as a cast; a compiled function called inside another one."""

from __future__ import annotations

import pytest
import torch

import thunder

CALLS = {
    "cat axis": lambda x: torch.cat([x, x], axis=1),
    "sum axis keepdims": lambda x: x.sum(axis=0, keepdims=True),
    "mean axis": lambda x: torch.mean(x, axis=-1),
    "softmax axis": lambda x: torch.softmax(x, axis=0),
    "max axis": lambda x: x.max(axis=1)[0],
    "stack axis": lambda x: torch.stack([x, x], axis=0),
    "add numbers": lambda x: torch.add(2, 3) + x,
    "mul int float": lambda x: torch.mul(2, 3.5) * x,
    "div trunc": lambda x: torch.div(-7, 2, rounding_mode="trunc") + x,
    "div floor of a size": lambda x: torch.div(x.shape[0] + 3, 2, rounding_mode="floor") * x,
    "true_divide": lambda x: torch.true_divide(5, 2) + x,
    "sub": lambda x: torch.sub(5, 2) - x,
    "floor_divide": lambda x: torch.floor_divide(-5, 2) + x,
    "bool and int": lambda x: torch.add(True, 2) + x,
    "divide alone": lambda x: torch.divide(5, 2),
    # Tensor.type with a dtype or a type name is a cast (RecurrentGemma's normalizer)
    "type dtype": lambda x: x * torch.tensor(2.0).type(x.dtype),
    "type float16": lambda x: x.type(torch.float16),
    "type name": lambda x: x.type("torch.DoubleTensor"),
    "type dtype keyword": lambda x: x.type(dtype=torch.int64),
    "type() is the name": lambda x: x + len(x.type()),
}


@pytest.mark.parametrize("name", list(CALLS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_call_forms_match_eager(name, dtype):
    fn = CALLS[name]
    if dtype is torch.int32 and name in ("mean axis", "softmax axis"):
        pytest.skip("eager has no integer mean or softmax")
    x = (torch.randn(2, 3) * 4).to(dtype)
    expected, got = fn(x), thunder.jit(fn)(x)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got, expected)


def test_a_compiled_function_or_module_called_inside_another_is_traced_into_it():
    inner = thunder.jit(lambda t: t * 2 + 1)
    outer = thunder.jit(lambda t: inner(t).sin())
    x = torch.randn(3)
    torch.testing.assert_close(outer(x), (x * 2 + 1).sin())
    assert "sin" in str(thunder.last_traces(outer)[-1]) and "mul" in str(thunder.last_traces(outer)[-1])
    assert thunder.compile_stats(inner).calls == 0  # it ran as part of the outer trace

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)
            self.inner = thunder.jit(torch.nn.Linear(4, 4))

        def forward(self, x):
            return self.inner(self.fc(x)).relu()

    m = Outer()
    jm = thunder.jit(m)
    x = torch.randn(2, 4)
    torch.testing.assert_close(jm(x), m(x))
    jm(x).sum().backward()
    got = m.inner._model.weight.grad.clone()
    m.zero_grad()
    m(x).sum().backward()
    torch.testing.assert_close(got, m.inner._model.weight.grad)
    with torch.no_grad():
        m.inner._model.weight.mul_(2)  # the inner module's parameters are inputs of the outer program
    torch.testing.assert_close(jm(x), m(x))


def test_a_compiled_module_with_state_called_inside_another_writes_its_state_back():
    class Counting(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)
            self.calls = 0
            self.register_buffer("n", torch.zeros(()))

        def forward(self, x):
            self.calls += 1
            self.n += 1
            return self.fc(x)

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = thunder.jit(Counting())

        def forward(self, x):
            return self.inner(x) * 2

    import copy

    m = Outer()
    me = copy.deepcopy(m)
    jm = thunder.jit(m)
    x = torch.randn(2, 4)
    for _ in range(3):
        torch.testing.assert_close(jm(x), me(x))
        assert m.inner._model.calls == me.inner._model.calls
        torch.testing.assert_close(m.inner._model.n, me.inner._model.n)
