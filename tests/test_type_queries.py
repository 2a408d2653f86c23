"""Type queries while tracing give eager's answers: ``isinstance(t, nn.Parameter)`` for an
argument and for a module's own parameter (checked by the prologue), ``type(t).__name__`` of a
tensor, ``t.type()`` in every form."""

import pytest
import torch

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
