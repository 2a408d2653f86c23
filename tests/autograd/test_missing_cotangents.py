"""An output the backward is not given a cotangent for gets zeros of this call's sizes, also
when the entry's sizes are symbolic (a second size compiles one entry for every size)."""

from __future__ import annotations

import torch

import thunder


def test_a_missing_cotangent_is_zeros_of_the_calls_sizes_when_sizes_are_symbolic():
    jfn = thunder.jit(lambda x: (x.sin(), x.cos()))
    for n in (3, 5, 7):  # from the second size on, the sizes are symbolic
        x = torch.randn(n, requires_grad=True)
        s, _ = jfn(x)
        s.sum().backward()  # no cotangent for the cosine
        torch.testing.assert_close(x.grad, x.detach().cos())
