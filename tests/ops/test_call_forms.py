"""Forms of torch calls eager accepts beyond the usual signatures: NumPy's keyword names
(``axis``, ``keepdims``), arithmetic on two Python numbers, which gives a 0-d tensor
(``torch.div(seq_len, window, rounding_mode="trunc")`` in transformers' LED), and
``Tensor.type(dtype)`` as a cast; a compiled function called inside another one."""

from __future__ import annotations

import pytest
import torch

import thunder
from thunder.core.errors import UnsupportedOpError

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
    "H and mH": lambda x: x.H @ x + x.mH @ x,
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


def test_out_writes_the_result_into_the_tensor_given_as_eager_does():
    """``torch.add(a, b, out=c)``: the result copied into ``c`` (an input: the caller's tensor
    changes) and ``c`` returned; a result that would need resizing or casting ``c`` is an error."""

    def fn(a, b, c):
        r = torch.add(a, b, out=c)
        return r * 2, torch.nn.functional.normalize(a, dim=0, out=torch.empty(3))

    a, b = torch.randn(3), torch.randn(3)
    c1, c2 = torch.zeros(3), torch.zeros(3)
    got, expected = thunder.jit(fn)(a, b, c1), fn(a, b, c2)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(c1, c2)
    with pytest.raises(
        UnsupportedOpError, match=r"torch.add\(out=...\): the result \(\(3,\) torch.float32\) is not"
    ):
        thunder.jit(fn)(a, b, torch.zeros(2))


@pytest.mark.parametrize("which", ["parametrizations", "hook"])
def test_spectral_norm_trains_as_eager(which):
    """Its power iteration writes the singular vectors with ``F.normalize(..., out=self._u)``
    and reads ``weight.H`` (the newer form): three training calls, buffers and gradients."""
    import copy

    torch.manual_seed(0)
    wrap = (
        torch.nn.utils.parametrizations.spectral_norm
        if which == "parametrizations"
        else torch.nn.utils.spectral_norm
    )
    model = wrap(torch.nn.Linear(4, 3))
    ref = copy.deepcopy(model)
    jm = thunder.jit(model)
    for _ in range(3):
        x = torch.randn(5, 4)
        out, expected = jm(x), ref(x)
        torch.testing.assert_close(out, expected)
        out.square().sum().backward()
        expected.square().sum().backward()
    for (n, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=n)
    for (n, b), (_, q) in zip(model.named_buffers(), ref.named_buffers()):
        torch.testing.assert_close(b, q, msg=n)


RESULTS = {
    "max dim": lambda t: torch.max(t, 1),
    "min method": lambda t: t.min(0, keepdim=True),
    "sort": lambda t: torch.sort(t, descending=True),
    "topk": lambda t: torch.topk(t, 2),
    "kthvalue": lambda t: torch.kthvalue(t, 2),
    "median dim": lambda t: torch.median(t, 1),
    "aminmax": lambda t: torch.aminmax(t, dim=0),
    "cummax": lambda t: torch.cummax(t, 1),
    "cummin": lambda t: torch.cummin(t, 0),
    "nested": lambda t: {"m": torch.max(t, 0), "s": [torch.sort(t)]},
}


@pytest.mark.parametrize("mode", ["jit", "grad", "thunderfx"])
@pytest.mark.parametrize("name", list(RESULTS))
def test_results_of_several_values_are_eager_s_class(name, mode):
    # torch.return_types.max and friends, as eager returns them (type(), isinstance, repr)
    from thunder.dynamo import thunderfx

    fn = RESULTS[name]
    x = torch.randn(3, 4, requires_grad=mode == "grad")
    jfn = thunderfx(fn) if mode == "thunderfx" else thunder.jit(fn)
    got, want = jfn(x), fn(x)
    assert repr(type(got)) == repr(type(want))
    flat_got = got["s"][0] if isinstance(got, dict) else got
    flat_want = want["s"][0] if isinstance(want, dict) else want
    assert type(flat_got) is type(flat_want)
    for g, w in zip(flat_got, flat_want):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize(
    "make",
    [
        lambda: [torch.tensor([]), torch.randn(1, 5, 2, 4).transpose(1, 2)],  # a legacy 1-D empty, skipped
        lambda: [torch.randn(3, 4).t()],  # one tensor
        lambda: [torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)],
    ],
    ids=["legacy-empty", "one", "channels-last"],
)
def test_cat_of_what_comes_down_to_one_tensor_is_a_new_tensor_as_eager_s(make):
    # eager's cat always makes a new tensor in the layout its inputs suggest: a program that
    # handed back its input would alias it (a KV cache grown from torch.tensor([]) wrote into
    # the projection's output) and keep its strides
    tensors = make()
    jfn = thunder.jit(lambda ts: torch.cat(ts, dim=-2))
    got, expected = jfn(tensors), torch.cat(tensors, dim=-2)
    assert torch.equal(got, expected) and got.stride() == expected.stride()
    assert all(got.data_ptr() != t.data_ptr() for t in tensors if t.numel())
