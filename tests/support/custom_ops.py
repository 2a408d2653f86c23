"""A library operator (``torch.library.custom_op``) with a fake and an autograd rule, which
both the custom-op tests and the torch.compile executor's tests call: registered once, here.

``thunder_test::scaled_rows(x, scale, k)``: the first ``k`` rows of ``x`` times ``scale``."""

from __future__ import annotations

import torch


@torch.library.custom_op("thunder_test::scaled_rows", mutates_args=())
def scaled_rows(x: torch.Tensor, scale: torch.Tensor, k: int) -> torch.Tensor:
    return x[:k] * scale


@scaled_rows.register_fake
def _(x, scale, k):
    return x.new_empty((k, *x.shape[1:]))


def _scaled_rows_backward(ctx, grad):
    x, scale = ctx.saved_tensors
    gx = torch.zeros_like(x)
    gx[: ctx.k] = grad * scale
    return gx, (grad * x[: ctx.k]).sum(), None


def _scaled_rows_setup(ctx, inputs, output):
    x, scale, k = inputs
    ctx.save_for_backward(x, scale)
    ctx.k = k


scaled_rows.register_autograd(_scaled_rows_backward, setup_context=_scaled_rows_setup)
