"""The in-place ``torch._foreach_*_`` ops optimizers use, inside a compiled function: each
tensor of the list written as eager writes it (the out-of-place op of
``thunder/ops/ltorch/foreach.py``, written back by the frontend), and the list returned, as
eager returns it; where a written tensor is read at a later position, in eager's order."""

from __future__ import annotations

import pytest
import torch

import thunder


def _adam_like_step(params, grads, exp_avgs, exp_avg_sqs):
    """The foreach calls of torch.optim.Adam's multi-tensor step, with fixed hyperparameters."""
    torch._foreach_lerp_(exp_avgs, grads, 0.1)
    torch._foreach_mul_(exp_avg_sqs, 0.999)
    torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 0.001)
    denom = torch._foreach_sqrt(exp_avg_sqs)
    torch._foreach_div_(denom, 0.9)
    torch._foreach_add_(denom, 1e-8)
    torch._foreach_addcdiv_(params, exp_avgs, denom, [-0.01, -0.02])
    torch._foreach_maximum_(exp_avg_sqs, 1e-3)
    torch._foreach_sub_(params, grads, alpha=0.5)
    torch._foreach_neg_(grads)
    return None


def _state():
    shapes = [(3, 4), (5,)]
    params, grads, exp_avgs = ([torch.randn(s) for s in shapes] for _ in range(3))
    return [params, grads, exp_avgs, [torch.rand(s) + 0.1 for s in shapes]]


def test_foreach_inplace_step_writes_every_tensor():
    state = _state()
    ref = [[t.clone() for t in ts] for ts in state]
    jstep = thunder.jit(_adam_like_step)
    for _ in range(2):  # the second call runs the cached program
        assert jstep(*state) is None
        _adam_like_step(*ref)
        for got, expected in zip(state, ref):
            torch.testing.assert_close(got, expected)


def test_foreach_inplace_without_a_thunder_op_is_a_clear_error():
    jfn = thunder.jit(lambda ts: torch._foreach_log_(ts))
    with pytest.raises(Exception, match="_foreach_log_"):
        jfn([torch.rand(3) + 1])


_ALIASING = {
    # a tensor written first, then read by the second position
    "read_later": lambda y, z, w: torch._foreach_addcmul_([y, z], [w, w], [z, y]),
    # a tensor listed twice: written twice
    "listed_twice": lambda y, z, w: torch._foreach_add_([y, z, y], [w, z, y]),
    # the scalar tensor is the first written tensor
    "scalar_tensor_written": lambda y, z, w: torch._foreach_mul_([y[0], z], y[0]),
    # a read at an earlier position than the write: the old value, as a batch (no ordering)
    "read_earlier": lambda y, z, w: torch._foreach_add_([y, z], [z, w]),
}


@pytest.mark.parametrize("case", sorted(_ALIASING))
def test_foreach_inplace_reads_what_earlier_positions_wrote(case):
    fn = _ALIASING[case]
    jf = thunder.jit(fn)
    for call in range(3):
        torch.manual_seed(call)
        eager_args = [torch.randn(3, dtype=torch.float64) for _ in range(3)]
        args = [a.clone() for a in eager_args]
        expected, got = fn(*eager_args), jf(*args)
        for a, e in zip(args, eager_args):
            torch.testing.assert_close(a, e)
        # the written tensors themselves, in a list of their own, as eager returns
        assert isinstance(got, list) and len(got) == len(expected)
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e)
            same = [i for i, x in enumerate(eager_args) if x is e]
            assert not same or g is args[same[0]]


def test_foreach_inplace_returns_the_list_itself():
    tensors = [torch.ones(2), torch.ones(3)]
    got = thunder.jit(lambda ts: torch._foreach_add_(ts, 1))(tensors)
    assert got is tensors
    assert all(torch.equal(t, torch.full_like(t, 2.0)) for t in tensors)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_foreach_addcdiv_and_addcmul_take_their_scalars_as_a_tensor(dtype):
    """AdamW's foreach step passes its per-parameter step sizes as a 1-D tensor."""

    def step(params, a, b, scalars):
        torch._foreach_addcdiv_(params, a, b, scalars)
        torch._foreach_addcmul_(params, a, b, scalars)
        return torch._foreach_addcdiv(params, a, b, scalars)

    jf = thunder.jit(step)
    for call in range(3):
        torch.manual_seed(call)
        args = ([torch.randn(3, 4), torch.randn(5)], [torch.randn(3, 4), torch.randn(5)])
        args += ([torch.rand(3, 4) + 0.5, torch.rand(5) + 0.5], torch.randn(2, dtype=dtype))
        mine = ([t.clone() for t in args[0]], *args[1:])
        expected, got = step(*args), jf(*mine)
        for g, e in zip((*mine[0], *got), (*args[0], *expected)):
            assert g.dtype == e.dtype
            torch.testing.assert_close(g, e)


def test_foreach_scalars_tensor_of_the_wrong_length_is_a_clear_error():
    params = [torch.ones(2), torch.ones(3)]
    with pytest.raises(Exception, match=r"one value per tensor \(2\), got shape \(3,\)"):
        thunder.jit(lambda p: torch._foreach_addcdiv_(p, p, p, torch.ones(3)))(params)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_s_foreach_path_equals_eager(norm_type):
    # torch.nn.utils.clip_grad_norm_(..., foreach=True): _foreach_norm, then _foreach_mul_ of the grads
    import copy

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    ref = copy.deepcopy(model)

    def clip(params):
        return torch.nn.utils.clip_grad_norm_(params, 0.5, norm_type=norm_type, foreach=True)

    jclip = thunder.jit(clip)
    for _ in range(3):
        x = torch.randn(5, 4)
        for m in (model, ref):
            m.zero_grad()
            m(x).square().sum().backward()
        torch.testing.assert_close(jclip(list(model.parameters())), clip(list(ref.parameters())))
        for p, q in zip(model.parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad, q.grad)


def test_foreach_pow_of_a_number_to_each_tensor():
    a, b = torch.randn(3), torch.randn(2, 2)

    def fn(a, b):
        return torch._foreach_pow(2.0, [a, b])

    for got, want in zip(thunder.jit(fn)(a, b), fn(a, b)):
        torch.testing.assert_close(got, want)
