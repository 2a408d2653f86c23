"""Gradients where eager picks one subgradient among several (``thunder/ops/vjp/subgradients.py``),
on inputs built to hit the choice: ties of the selecting reductions, inputs exactly at the
bounds of clamp, hardtanh and relu6, ties and NaNs of fmax/fmin, tensor bounds that cross. Each
gradient must equal eager's exactly, with the torch executor (which runs the selecting ops
whole: their kernels' indices) and with the torch.compile executor (Inductor computes them)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import thunder

NAN = float("nan")
# rows of ties, a row at the bounds 0 and 1, NaNs, negative zero
X = torch.tensor(
    [
        [1.0, 3.0, 3.0, 0.0, 3.0],
        [2.0, 2.0, 2.0, 2.0, 2.0],
        [0.0, 1.0, 1.0, 0.5, -0.0],
        [6.0, 0.0, 6.0, -1.0, 7.0],
        [NAN, 1.0, NAN, 0.0, 1.0],
    ],
    dtype=torch.float64,
)
LO = torch.tensor([0.0, 1.0, 2.0, 2.0, 0.0], dtype=torch.float64)
HI = torch.tensor([1.0, 1.0, 1.0, 3.0, NAN], dtype=torch.float64)  # (crossing, equal, NaN)
WEIGHTS = torch.arange(1.0, 6.0, dtype=torch.float64)  # (a different cotangent per element)

CASES = {
    "max dim": lambda t: torch.max(t, 1).values,
    "max dim keepdim": lambda t: torch.max(t, 0, keepdim=True)[0],
    "min dim": lambda t: torch.min(t, dim=-1).values,
    "min dim of a method": lambda t: t.min(0).values,
    "max": lambda t: torch.max(t[:4]).expand(5),
    "max of NaNs": lambda t: torch.max(t).expand(5),
    "min of NaNs": lambda t: t.min().expand(5),
    "amax": lambda t: torch.amax(t, 1),
    "kthvalue": lambda t: torch.kthvalue(t, 2, 1).values,
    "kthvalue keepdim": lambda t: torch.kthvalue(t, 3, 0, keepdim=True).values,
    "median dim": lambda t: torch.median(t, 1).values,
    "median": lambda t: torch.median(t[:4]).expand(5),
    "sort": lambda t: torch.sort(t, 1).values,
    "topk": lambda t: torch.topk(t, 2, 1).values,
    "clamp": lambda t: torch.clamp(t, 0, 1),
    "clamp min": lambda t: torch.clamp(t, min=1),
    "clamp max": lambda t: t.clamp(max=2),
    "clip": lambda t: torch.clip(t, -0.0, 3),
    "clamp_min": lambda t: torch.clamp_min(t, 2),
    "clamp crossed": lambda t: torch.clamp(t, 2, 1),
    # (not of a NaN: eager's own kernel passes a NaN's gradient in its scalar tail and not in
    # its vector lanes, so two NaNs of one tensor can get different answers)
    "hardtanh": lambda t: F.hardtanh(t.nan_to_num(0.5), 0.0, 1.0),
    "hardtanh default": lambda t: F.hardtanh(t.nan_to_num(0.5) - 1),
    "relu6": lambda t: F.relu6(t.nan_to_num(0.5)),
    "relu6 module": lambda t: torch.nn.ReLU6()(t.nan_to_num(0.5)),
    "fmax": lambda t: torch.fmax(t, torch.full_like(t, 2.0)),
    "fmin": lambda t: torch.fmin(torch.full_like(t, 1.0), t),
    "relu": lambda t: torch.relu(t),
    "threshold": lambda t: F.threshold(t, 1.0, -5.0),
    "cummax": lambda t: torch.cummax(t, 1).values,
    "max_pool1d": lambda t: F.max_pool1d(t[None], 2, 1)[0],
    "maximum": lambda t: torch.maximum(t, torch.ones_like(t)),
    "minimum of NaNs": lambda t: torch.minimum(t.flip(1), t),
}


def _grads(fn, *inputs):
    leaves = [t.clone().requires_grad_() for t in inputs]
    out = fn(*leaves)
    (out * WEIGHTS[: out.shape[-1]] if out.dim() else out).sum().backward()
    return [t.grad for t in leaves]


@pytest.mark.parametrize("executors", [None, ["torchcompile"]], ids=["torch", "torchcompile"])
@pytest.mark.parametrize("name", list(CASES))
def test_a_subgradient_is_eager_s(name, executors):
    fn = CASES[name]
    want = _grads(fn, X)
    got = _grads(thunder.jit(fn, executors=executors), X)
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize(
    "bounds",
    [(LO, HI), (LO, None), (None, HI), (LO[:1].expand(5), HI[3:4])],
    ids=["both", "min", "max", "broadcast"],
)
def test_clamp_with_tensor_bounds_gives_each_bound_the_gradient_eager_gives_it(bounds):
    lo, hi = bounds
    tensors = [t for t in (X, lo, hi) if isinstance(t, torch.Tensor)]

    def fn(x, *rest):
        it = iter(rest)
        a = next(it) if isinstance(lo, torch.Tensor) else lo
        b = next(it) if isinstance(hi, torch.Tensor) else hi
        return torch.clamp(x, a, b)

    want = _grads(fn, *tensors)
    got = _grads(thunder.jit(fn), *tensors)
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


def test_the_index_a_selecting_op_returns_is_the_one_its_gradient_goes_to():
    # many ties, random rows: the gradient lands where the returned index says, for each op
    torch.manual_seed(0)
    x = torch.randint(0, 3, (64, 9)).double()
    for fn in (lambda t: torch.max(t, 1), lambda t: torch.kthvalue(t, 4, 1), lambda t: torch.median(t, 1)):
        leaf = x.clone().requires_grad_()
        values, index = thunder.jit(fn)(leaf)
        values.sum().backward()
        assert torch.equal(index, fn(x).indices)
        assert torch.equal(leaf.grad, torch.zeros_like(x).scatter_(1, index[:, None], 1.0))
