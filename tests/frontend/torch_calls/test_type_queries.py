"""Type queries while tracing give eager's answers: ``isinstance(t, nn.Parameter)``, ``type(t)``
and ``t.__class__`` for an argument and for a module's own parameter (checked by the prologue),
of a tensor subclass, of a counter traced as a value and of the globals the trace stands in for,
``type(t).__name__`` of a tensor, ``t.type()`` in every form."""

import array
import io
import itertools

import pytest
import torch
from support.subclasses import ScaleTensor, scale_tensor

import thunder


def _branch_on_param(p):
    return p * 2 if isinstance(p, torch.nn.Parameter) else p * 3


def test_isinstance_parameter_of_an_argument_is_checked():
    jf = thunder.jit(_branch_on_param)
    values = [
        torch.nn.Parameter(torch.ones(2)),
        torch.ones(2),
        torch.nn.Parameter(torch.ones(2)),
        torch.ones(2),
    ]
    for v in values:
        torch.testing.assert_close(jf(v), _branch_on_param(v))
    assert thunder.compile_stats(jf).cache_misses == 2
    assert "check_is_param" in str(thunder.last_prologue_traces(jf)[-1])


def test_isinstance_parameter_of_a_module_parameter():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3))
            self.register_buffer("b", torch.ones(3))

        def forward(self, x):
            params = [isinstance(t, torch.nn.Parameter) for t in (self.w, self.b, x, x * 2)]
            return x * self.w if params[0] and not params[1] else x, params

    m = M()
    jm = thunder.jit(m)
    for _ in range(3):
        x = torch.ones(3)
        out, params = jm(x)
        expected, eparams = m(x)
        assert params == eparams == [True, False, False, False]
        torch.testing.assert_close(out, expected)


def test_type_name_of_a_tensor():
    def f(x):
        return x + 1 if type(x).__name__ == "Tensor" else x - 1

    jf = thunder.jit(f)
    for _ in range(3):
        torch.testing.assert_close(jf(torch.ones(2)), f(torch.ones(2)))


@pytest.mark.parametrize(
    "form", [torch.HalfTensor, "torch.HalfTensor", torch.float16, torch.DoubleTensor, "torch.LongTensor"]
)
def test_type_casts_in_every_form(form):
    def f(x):
        return x.type(form), x.type()

    jf = thunder.jit(f)
    for _ in range(3):
        x = torch.arange(4.0)
        (got, name), (expected, ename) = jf(x), f(x)
        assert got.dtype is expected.dtype and name == ename
        torch.testing.assert_close(got, expected)


def _branch_on_type(p):
    scale = 2 if type(p) is torch.nn.Parameter else 3
    plain = type(p) is torch.Tensor and p.__class__ is torch.Tensor
    made = type(p * 1) is torch.Tensor  # a computed value is no Parameter
    # ``type`` keeps the builtin's other answers in the same code
    rest = (
        isinstance(torch.nn.Linear, type),
        type(p.shape[0]) is int,
        type("Made", (), {}).__name__,
        type(p).__name__,
    )
    return p * scale, plain, made, rest, p.__class__ is torch.nn.Parameter


def test_type_of_a_parameter_and_of_a_tensor_argument_is_checked():
    jf = thunder.jit(_branch_on_type)
    values = [
        torch.nn.Parameter(torch.ones(2)),
        torch.ones(2),
        torch.nn.Parameter(torch.ones(2)),
        torch.ones(2),
    ]
    for v in values:
        got, expected = jf(v), _branch_on_type(v)
        torch.testing.assert_close(got[0], expected[0])
        assert got[1:] == expected[1:]
        assert type(v) in (torch.Tensor, torch.nn.Parameter)
    assert thunder.compile_stats(jf).cache_misses == 2
    assert "check_is_param" in str(thunder.last_prologue_traces(jf)[-1])
    assert "type" not in globals()  # the stand-in is put back


def test_class_of_a_module_parameter_and_of_an_argument():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3))

        def forward(self, x):
            kinds = [type(t).__name__ for t in (self.w, x)] + [t.__class__.__name__ for t in (self.w, x)]
            return x * self.w if type(self.w) is torch.nn.Parameter else x, kinds

    m = M()
    jm = thunder.jit(m)
    for _ in range(3):
        (out, kinds), (expected, ekinds) = jm(torch.ones(3)), m(torch.ones(3))
        assert kinds == ekinds == ["Parameter", "Tensor", "Parameter", "Tensor"]
        torch.testing.assert_close(out, expected)


_STEPS = 0


def _count_and_ask(x):
    global _STEPS
    _STEPS += 1
    return x * 2, type(_STEPS) is int, type(_STEPS).__name__


def test_type_of_a_counter_traced_as_a_value_is_int():
    global _STEPS
    _STEPS = 0
    jf = thunder.jit(_count_and_ask)
    for _ in range(4):
        _, is_int, name = jf(torch.ones(2))
        assert is_int and name == "int"
    assert _STEPS == 4 and thunder.compile_stats(jf).cache_misses == 2


_SEEN: list = []
_COUNTS = array.array("i", [1])
_OUT = io.StringIO()
_STEP = itertools.count()


def _types_of_globals(x):
    _SEEN.append(1)  # (a tracked copy while tracing)
    _OUT.write("")  # (a RecordedFile while tracing)
    kinds = (
        type(_SEEN) is list,
        type(_COUNTS) is array.array,
        type(_OUT) is io.StringIO,
        type(_STEP).__name__,
    )
    return x * _COUNTS[0], kinds, isinstance(_OUT, io.TextIOBase), _SEEN.__class__ is list


def test_type_of_globals_the_trace_stands_in_for_is_the_user_s_class():
    jf = thunder.jit(_types_of_globals)
    for _ in range(3):
        got, expected = jf(torch.ones(2)), _types_of_globals(torch.ones(2))
        assert got[1:] == expected[1:] == ((True, True, True, "count"), True, True)
    assert len(_SEEN) == 6


def _subclass_types(x):
    return x * 2, type(x) is ScaleTensor, type(x).__name__, x.__class__ is ScaleTensor, type(x * 2).__name__


def test_type_of_a_tensor_subclass_value_is_its_class():
    jf = thunder.jit(_subclass_types)
    for x in (scale_tensor(2, 2), torch.ones(2, 2), scale_tensor(2, 2)):
        assert jf(x)[1:] == _subclass_types(x)[1:]
