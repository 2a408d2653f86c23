"""Smaller call semantics against eager: operands by keyword, parameters named like the
prologue's own, dict-subclass dataclasses returned, the real error from inside a block that
restores the RNG, torch.compile inside the function, NaN through activations on every executor,
and no reference kept to earlier calls' outputs."""

import dataclasses
import weakref

import pytest
import torch

import thunder
from thunder.core.proxies import Proxy


def _same(got, expected):
    for g, e in zip(got, expected):
        assert not isinstance(g, Proxy)
        assert g.dtype == e.dtype
        torch.testing.assert_close(g, e, equal_nan=True)


def test_operands_by_keyword():
    def f(x, t, v):
        return (
            torch.mul(x, other=t),
            x.mul(other=t),
            torch.mul(input=x, other=t),
            torch.add(input=x, other=t, alpha=2),
            torch.addcmul(x, x, t, value=v),
            torch.addcdiv(x, t, x + 2, value=v),
            x.clone().mul_(other=t),
            torch.nn.functional.relu(input=x),
            torch.where(condition=x > 0, input=x, other=t),
        )

    jf = thunder.jit(f)
    for i in range(3):
        args = (torch.randn(3), torch.randn(3), torch.tensor(2.0 + i, dtype=torch.float64))
        _same(jf(*args), f(*args))


def test_parameters_named_like_the_prologues_own():
    def f(args, kwargs, *rest, **more):
        return args + kwargs + rest[0] + more["k"]

    jf = thunder.jit(f)
    for i in range(3):
        a = [torch.full((2,), float(i + j)) for j in range(4)]
        _same([jf(a[0], a[1], a[2], k=a[3])], [f(a[0], a[1], a[2], k=a[3])])


@dataclasses.dataclass
class DictOutput(dict):
    logits: torch.Tensor
    count: int = 1

    def __post_init__(self):
        self["logits"] = self.logits


def test_a_dict_subclass_dataclass_is_returned():
    def f(x):
        return DictOutput(logits=x * 2)

    jf = thunder.jit(f)
    for i in range(3):
        x = torch.full((2,), float(i))
        got, expected = jf(x), f(x)
        assert type(got) is DictOutput and got.count == expected.count
        assert list(got) == list(expected) == ["logits"]
        _same([got.logits, got["logits"]], [expected.logits, expected["logits"]])


def test_the_real_error_from_inside_fork_rng():
    def f(x):
        with torch.random.fork_rng():
            y = x * 2
            raise ValueError(f"the user's own error for {tuple(y.shape)}")

    state = torch.get_rng_state()
    with pytest.raises(ValueError, match=r"the user's own error for \(2,\)"):
        thunder.jit(f)(torch.ones(2))
    assert torch.equal(torch.get_rng_state(), state)


def test_rng_state_set_in_a_caught_exception_is_still_refused():
    def f(x):
        state = torch.get_rng_state()
        try:
            raise KeyError("caught")
        except KeyError:
            torch.set_rng_state(state)
        return x + 1

    with pytest.raises(Exception, match="set_rng_state inside the compiled function"):
        thunder.jit(f)(torch.ones(2))


def test_torch_compile_inside_the_function_is_traced_through():
    def f(x):
        return torch.compile(lambda y: y.sin() + 1)(x) * 2

    jf = thunder.jit(f)
    for i in range(3):
        x = torch.full((3,), float(i))
        _same([jf(x)], [f(x)])
    assert any("sin" in str(b.sym.id) for b in thunder.last_traces(jf)[0].bound_symbols)


@pytest.mark.parametrize("executor", ["torch", "torchcompile"])
def test_nan_and_inf_through_activations(executor):
    F = torch.nn.functional

    def f(x):
        return (
            torch.relu(x),
            F.relu6(x),
            F.leaky_relu(x),
            torch.clamp(x, -1, 1),
            F.hardtanh(x),
            x.clamp(min=0),
        )

    jf = thunder.jit(f, executors=[executor])
    for _ in range(3):
        x = torch.tensor([float("nan"), float("inf"), -float("inf"), -1.0, 0.0, 2.0])
        _same(jf(x), f(x))


def test_no_reference_to_earlier_outputs():
    emb, w = torch.nn.Embedding(10, 4), torch.randn(4, 3)

    def f(idx):
        e = emb(idx)
        return e, e.reshape(-1, 4) @ w

    for executors in (["torch"], ["torchcompile"]):
        jf = thunder.jit(f, executors=executors)
        refs = []
        for _ in range(3):
            out = jf(torch.tensor([[1, 2], [3, 4]]))
            out[1].sum().backward()
            refs += [weakref.ref(o) for o in out]
            del out
        # (no gc.collect(): nothing holds them, not even in a reference cycle)
        assert all(r() is None for r in refs), executors
