"""One function compiled and run eagerly on the same inputs, call after call: its results
(values, strides, which require grad) and the gradients of every differentiable input for a
seeded random cotangent on every output, complex ones included. For the ops whose gradient is
a formula of its own (factorizations, transforms): ``tests/ops/test_factorizations.py`` and
``test_spectral.py``."""

from __future__ import annotations

import torch
import torch.utils._pytree as pytree

import thunder


def _leaves(tensors):
    return [t.detach().clone().requires_grad_(t.is_floating_point() or t.is_complex()) for t in tensors]


def _tensors(out) -> list:
    return [o for o in pytree.tree_leaves(out) if isinstance(o, torch.Tensor)]


def _grads(out, leaves, seed: int):
    outs = [o for o in _tensors(out) if o.requires_grad]
    gen = torch.Generator().manual_seed(seed)
    cts = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs]
    wanted = [t for t in leaves if t.requires_grad]
    grads = torch.autograd.grad(outs, wanted, cts, allow_unused=True)
    return [torch.zeros_like(t) if g is None else g for g, t in zip(grads, wanted)]


def _strides(t: torch.Tensor) -> tuple:
    return tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)


def check_calls(fn, inputs_of_each_call, *, rtol: float = 1e-7, atol: float = 1e-7) -> None:
    """``thunder.jit(fn)`` called on each input list in turn equals ``fn``: the values, their
    strides and ``requires_grad``, and the gradients (float64 inputs: gradcheck-grade)."""
    jfn = thunder.jit(fn)
    for call, tensors in enumerate(inputs_of_each_call):
        e_leaves, g_leaves = _leaves(tensors), _leaves(tensors)
        expected, got = fn(*e_leaves), jfn(*g_leaves)
        assert type(got) is type(expected), f"call {call}: {type(got)}, eager {type(expected)}"
        for k, (g, e) in enumerate(zip(_tensors(got), _tensors(expected), strict=True)):
            what = f"call {call} output {k}"
            torch.testing.assert_close(g, e, rtol=rtol, atol=atol, msg=lambda m, w=what: f"{w}: {m}")
            assert _strides(g) == _strides(e), f"{what}: strides {g.stride()}, eager's {e.stride()}"
            assert g.requires_grad == e.requires_grad, f"{what}: requires_grad {g.requires_grad}"
        if not any(o.requires_grad for o in _tensors(expected)):
            continue
        e_grads, g_grads = _grads(expected, e_leaves, call), _grads(got, g_leaves, call)
        for k, (g, e) in enumerate(zip(g_grads, e_grads, strict=True)):
            what = f"call {call} gradient {k}"
            torch.testing.assert_close(g, e, rtol=rtol, atol=atol, msg=lambda m, w=what: f"{w}: {m}")
