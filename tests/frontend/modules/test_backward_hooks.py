"""Module backward hooks: the compiled module's own full backward (pre-)hooks run as in eager on
every call, with eager's gradients; a submodule's, a global one and the deprecated non-full form
are refused with an error naming the module, before anything runs."""

import pytest
import torch
from torch import nn

import thunder
from thunder.core.errors import UnsupportedValueError


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()


def _clone(gs):
    return [None if g is None else g.clone() for g in gs]


def _steps(m, f, n=3):
    """n training steps through ``f``; the inputs' gradients, after the parameters'."""
    torch.manual_seed(1)
    out = []
    for _ in range(n):
        x = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
        (f(x) ** 2).sum().backward()
        out.append(x.grad)
    return out + [p.grad for p in m.parameters()]


def _hooked(m, records):
    a = m.register_full_backward_hook(
        lambda mod, gi, go: records.append(("full", mod, _clone(gi), _clone(go)))
    )
    b = m.register_full_backward_pre_hook(lambda mod, go: records.append(("pre", mod, _clone(go))))
    return a, b


def _assert_same_records(expected, got, m_eager, m_thunder):
    assert [r[0] for r in got] == [r[0] for r in expected]
    for e, g in zip(expected, got):
        assert e[1] is m_eager and g[1] is m_thunder  # the module itself, not a wrapper
        for es, gs in zip(e[2:], g[2:]):
            assert len(es) == len(gs)
            for a, b in zip(es, gs):
                assert (a is None) == (b is None)
                if a is not None:
                    torch.testing.assert_close(b, a)


def test_the_compiled_modules_own_backward_hooks_run_as_in_eager():
    m_eager, m_thunder = _model(), _model()
    expected, got = [], []
    _hooked(m_eager, expected)
    _hooked(m_thunder, got)
    jm = thunder.jit(m_thunder)
    e_grads, g_grads = _steps(m_eager, m_eager), _steps(m_thunder, jm)
    assert len(got) == 6  # pre and full, on each of the 3 calls
    _assert_same_records(expected, got, m_eager, m_thunder)
    for a, b in zip(e_grads, g_grads):
        torch.testing.assert_close(b, a)
    assert thunder.last_backward_traces(jm)  # the gradients come from thunder's backward


def test_backward_hooks_added_and_removed_between_calls():
    m = _model()
    jm = thunder.jit(m)
    records = []
    _steps(m, jm, 1)
    a, b = _hooked(m, records)
    _steps(m, jm, 2)
    assert [r[0] for r in records] == ["pre", "full", "pre", "full"]
    a.remove()
    b.remove()
    _steps(m, jm, 1)
    assert len(records) == 4


def test_a_hook_that_changes_the_input_gradient():
    m_eager, m_thunder = _model(), _model()
    for m in (m_eager, m_thunder):
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 3,))
    for a, b in zip(_steps(m_eager, m_eager), _steps(m_thunder, thunder.jit(m_thunder))):
        torch.testing.assert_close(b, a)


def test_a_submodules_backward_hook_is_refused():
    m = _model()
    m[2].register_full_backward_hook(lambda mod, gi, go: None)
    params = [p.clone() for p in m.parameters()]
    with pytest.raises(UnsupportedValueError, match=r"the Linear at '2' module has a backward hook"):
        thunder.jit(m)(torch.randn(5, 3, dtype=torch.float64))
    assert all(torch.equal(a, b) for a, b in zip(params, m.parameters()))
    assert len(m[2]._backward_hooks) == 1


def test_the_deprecated_non_full_hook_is_refused():
    m = _model()
    m.register_backward_hook(lambda mod, gi, go: None)
    with pytest.raises(UnsupportedValueError, match="register_backward_hook"):
        thunder.jit(m)(torch.randn(5, 3, dtype=torch.float64))


def test_a_global_module_backward_hook_is_refused():
    handle = nn.modules.module.register_module_full_backward_hook(lambda mod, gi, go: None)
    try:
        with pytest.raises(UnsupportedValueError, match="global module backward hook"):
            thunder.jit(_model())(torch.randn(5, 3, dtype=torch.float64))
    finally:
        handle.remove()


def test_hooks_on_the_compiled_module_itself_run_as_on_any_module():
    """The wrapper's own forward pre-hooks and hooks and a global forward hook take
    ``nn.Module.__call__``; without them a call goes straight to the program."""
    model = _model()
    jm = thunder.jit(model)
    x = torch.randn(5, 3, dtype=torch.float64)
    torch.testing.assert_close(jm(x), model(x))
    pre = jm.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    post = jm.register_forward_hook(lambda mod, args, out: out + 1)
    torch.testing.assert_close(jm(x), model(x * 2) + 1)
    pre.remove()
    torch.testing.assert_close(jm(x), model(x) + 1)
    post.remove()
    torch.testing.assert_close(jm(x), model(x))
    seen = []
    handle = nn.modules.module.register_module_forward_hook(
        lambda mod, args, out: seen.append(type(mod).__name__) if mod is jm else None
    )
    try:
        jm(x)
    finally:
        handle.remove()
    assert seen == ["ThunderModule"]
    torch.testing.assert_close(jm(x), model(x))
