"""The in-place ``torch._foreach_*_`` ops optimizers use, inside a compiled function: each
tensor of the list written as eager writes it (the out-of-place op of
``thunder/ops/ltorch/foreach.py``, written back by the frontend), and None returned."""

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
