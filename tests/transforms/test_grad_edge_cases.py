"""Gradients at the edges PyTorch's OpInfo samples reach: norms at zero (torch's subgradient
0, not the 0/0 of sqrt), reductions of a 0-dim tensor returning (values, indices), a split
into one chunk, scatters whose index covers only part of ``src``, negative indices."""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree

import thunder

f64 = torch.float64


def _check(fn, *inputs):
    """Values, which outputs require grad, and the gradients of every input: compiled ==
    eager (a seeded random cotangent on each differentiable output)."""
    e_in = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    g_in = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    expected, got = fn(*e_in), thunder.jit(fn)(*g_in)
    e_out = [o for o in pytree.tree_leaves(expected) if isinstance(o, torch.Tensor)]
    g_out = [o for o in pytree.tree_leaves(got) if isinstance(o, torch.Tensor)]
    torch.testing.assert_close(g_out, e_out, atol=1e-7, rtol=1e-7)
    assert [o.requires_grad for o in g_out] == [o.requires_grad for o in e_out]
    diff = [i for i, o in enumerate(e_out) if o.requires_grad]
    gen = torch.Generator().manual_seed(0)
    cts = [torch.randn(e_out[i].shape, generator=gen, dtype=e_out[i].dtype) for i in diff]
    wrt = [i for i, t in enumerate(e_in) if t.requires_grad]
    e_g = torch.autograd.grad([e_out[i] for i in diff], [e_in[i] for i in wrt], cts, allow_unused=True)
    g_g = torch.autograd.grad([g_out[i] for i in diff], [g_in[i] for i in wrt], cts, allow_unused=True)
    for g, e, t in zip(g_g, e_g, [e_in[i] for i in wrt]):
        g = torch.zeros_like(t) if g is None else g
        e = torch.zeros_like(t) if e is None else e
        assert not g.isnan().any(), f"nan in the gradient: {g}"
        torch.testing.assert_close(g, e, atol=1e-7, rtol=1e-7)


@pytest.mark.parametrize(
    "fn",
    [
        torch.linalg.norm,
        torch.linalg.vector_norm,
        lambda x: x.norm(),
        lambda x: torch.norm(x, dim=0),
        lambda x: torch.linalg.vector_norm(x, 3, dim=1, keepdim=True),
        lambda x: torch.linalg.vector_norm(x, 0.5, dim=(0, 1)),
        lambda x: torch.linalg.vector_norm(x, 1.5),
        lambda x: torch.linalg.norm(x, "fro", dim=(0, 1)),
    ],
    ids=["linalg.norm", "vector_norm", "Tensor.norm", "norm_dim0", "ord3_keepdim", "ord0.5", "ord1.5", "fro"],
)
@pytest.mark.parametrize("zero", ["all", "one_row"])
def test_norm_gradient_at_zero_is_the_subgradient(fn, zero):
    x = torch.randn(3, 4, dtype=f64)
    x[0] = 0
    _check(fn, torch.zeros(3, 4, dtype=f64) if zero == "all" else x)


def test_vector_norm_of_a_zero_scalar():
    _check(lambda x: torch.linalg.vector_norm(x), torch.tensor(0.0, dtype=f64))


@pytest.mark.parametrize("fn", [torch.max, torch.min])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_with_dim_of_a_0dim_tensor_require_grad(fn, keepdim):
    _check(lambda x: fn(x, 0, keepdim=keepdim), torch.tensor(2.5, dtype=f64))
    _check(lambda x: fn(x, dim=-1), torch.tensor(-1.5, dtype=f64))


@pytest.mark.parametrize(
    "fn", [lambda x: torch.split(x, 5, 1), lambda x: x.chunk(1, 2), lambda x: x.split([5], 0)]
)
def test_split_into_one_chunk(fn):
    _check(fn, torch.randn(5, 5, 5, dtype=f64))


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, src: torch.scatter(a, 1, _INDEX, src),
        lambda a, src: torch.scatter_add(a, 1, _INDEX, src),
    ]
    + [
        (lambda red: lambda a, src: torch.scatter_reduce(a, 1, _INDEX, src, red))(r)
        for r in ("sum", "prod", "mean", "amax", "amin")
    ],
    ids=["scatter", "scatter_add", "sum", "prod", "mean", "amax", "amin"],
)
def test_scatter_with_an_index_smaller_than_the_input(fn):
    _check(fn, torch.randn(10, 5, dtype=f64), torch.randn(6, 3, dtype=f64))


_INDEX = torch.tensor([[0, 1, 2], [4, 3, 2], [1, 1, 0], [2, 3, 4], [0, 0, 0], [4, 4, 1]])


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_with_an_index_smaller_than_the_input(reduce, include_self):
    _check(
        lambda a, src: torch.scatter_reduce(a, 0, _INDEX, src, reduce, include_self=include_self),
        torch.randn(5, 7, dtype=f64),
        torch.randn(6, 3, dtype=f64),
    )


def test_scatters_take_an_int32_index_and_a_0dim_input():
    idx32 = _INDEX.to(torch.int32)
    _check(
        lambda a, src: torch.scatter(a, 1, idx32, src),
        torch.randn(6, 5, dtype=f64),
        torch.randn(6, 3, dtype=f64),
    )
    _check(lambda a: torch.gather(a, 1, idx32), torch.randn(6, 5, dtype=f64))
    _check(
        lambda a, s: torch.scatter_add(a, 0, torch.tensor([0]), s),
        torch.tensor(1.5, dtype=f64),
        torch.randn(1, dtype=f64),
    )
    _check(
        lambda a, s: torch.index_add(a, 0, torch.tensor([0]), s, alpha=2),
        torch.tensor(1.5, dtype=f64),
        torch.tensor(2.0, dtype=f64),
    )


@pytest.mark.parametrize("dim", [0, 1])
def test_take_along_dim_with_negative_indices(dim):
    index = torch.tensor([[-1, 0, -3], [2, -2, 1]])
    shape = {0: (3, 3), 1: (2, 3)}[dim]
    _check(lambda a: torch.take_along_dim(a, index, dim), torch.randn(shape, dtype=f64))


def test_diff_of_order_zero_ignores_prepend_and_append():
    _check(lambda x, p, a: torch.diff(x, 0, 0, p, a), *(torch.randn(n, 5, dtype=f64) for n in (5, 1, 2)))


def test_diff_of_an_order_beyond_the_length_is_empty():
    _check(lambda x: torch.diff(x, 6, 1), torch.randn(3, 3, 3, dtype=f64))


def test_0dim_topk_gather_index_select():
    x = torch.tensor(1.5, dtype=f64)
    _check(lambda a: torch.topk(a, 1, 0), x)
    _check(lambda a: torch.gather(a, 0, torch.tensor(0)), x)
    _check(lambda a: torch.gather(a, 0, torch.tensor([0])), x)
    _check(lambda a: torch.index_select(a, 0, torch.tensor([0])), x)


@pytest.mark.parametrize("pads", [(-1, 1, -2, 1), (1, -2, 2, -1), (-1, -1, 0, 2)])
def test_circular_pad_with_negative_pads_wraps_what_the_crop_leaves(pads):
    _check(lambda x: torch.nn.functional.pad(x, pads, "circular"), torch.randn(1, 3, 4, 5, dtype=f64))


@pytest.mark.parametrize(
    "conv, x, w, dilation",
    [
        (torch.nn.functional.conv1d, (2, 3, 9), (4, 3, 4), 1),
        (torch.nn.functional.conv2d, (1, 2, 6, 7), (3, 2, 2, 3), 1),
        (torch.nn.functional.conv2d, (2, 5, 5), (1, 2, 2, 3), (1, 3)),
        (torch.nn.functional.conv3d, (1, 1, 5, 6, 4), (2, 1, 2, 3, 4), 1),
    ],
)
def test_same_padding_with_an_even_kernel_extent(conv, x, w, dilation):
    """As torch: the one extra zero of an odd total padding goes at the end."""
    _check(
        lambda a, b: conv(a, b, padding="same", dilation=dilation),
        torch.randn(x, dtype=f64),
        torch.randn(w, dtype=f64),
    )
