"""The prologue's checks of several plain tensors in one line (``check_tensors``, made by
``transforms/batch_checks.py``), run as one C++ check once they have passed: the printed
prologue, and over many calls every change of a tensor that the per-tensor check would have
caught is still caught, with a reason that names the tensor."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import thunder
from thunder.ops import python as pyops
from thunder.runtime.misses import miss_reason

PROLOGUE = """\
# Constructed by Transform for execution
import torch
import thunder.executors.pythonex as pythonex

def prologue(*args, **kwargs):
  pythonex.check_len(args, 1)
  pythonex.check_keys(kwargs, ())
  input = args[0]  # input: "cpu f32[4, 3]"
  pythonex.check_tensor(input, (4, 3), torch.float32, 'cpu', False)
  pythonex.check_module(module, torch_nn_modules_linear_Linear, _module_state)  # training=True, in_features=3, out_features=2
  t_weight = module._parameters['weight']  # t_weight: "cpu f32[2, 3]"
  t_bias = module._parameters['bias']  # t_bias: "cpu f32[2]"
  pythonex.check_tensors(_tensors, t_weight, t_bias)  # shapes, dtypes and devices as unpacked; requires_grad=True
  pythonex.check_no_module_hooks()
  pythonex.check_grad_enabled(True)
  pythonex.check_autocast(())
  pythonex.check_default_dtype(torch.float32)
  return ((input, t_weight, t_bias), ())
"""


def _code(trace) -> str:
    # (the claimed lines' subsymbols, printed as comments below them, left out)
    return "".join(line + "\n" for line in str(trace).splitlines() if not line.startswith("    # "))


def test_the_parameters_of_a_module_are_checked_in_one_line_after_they_are_unpacked():
    """The argument keeps its own check before the module's (an entry that does not fit fails
    at the argument); the parameters' checks join after their unpacking."""
    jm = thunder.jit(nn.Linear(3, 2))
    jm(torch.randn(4, 3))
    assert _code(thunder.last_prologue_traces(jm)[-1]) == PROLOGUE


def _batched(jfn):
    trace = thunder.last_prologue_traces(jfn)[-1]
    return [b.args[0] for b in trace.bound_symbols if b.sym.id == "pythonex.check_tensors"]


def f(a, b, c):
    return a * 2 + b.sum() + c.mean()


def test_every_change_of_a_tensor_is_still_caught_after_the_cached_calls_check_in_cpp():
    a, b, c = torch.randn(3, 4), torch.randn(5), torch.randn(2, 2)
    jfn = thunder.jit(f)
    for _ in range(3):
        torch.testing.assert_close(jfn(a, b, c), f(a, b, c))
    (checks,) = _batched(jfn)
    assert checks.names == ("a", "b", "c") and checks.guards is not None  # (what the cached calls ran)
    hits = thunder.compile_stats(jfn).cache_hits
    jfn(a.t().contiguous().t(), b, c)  # other strides: not checked (no line read them)
    assert thunder.compile_stats(jfn).cache_hits == hits + 1
    changed = [  # (the arguments, whether the check rejects them)
        ((torch.randn(4, 3), b, c), True),  # shape
        ((a, b.double(), c), True),  # dtype
        ((a, b, c.clone().requires_grad_()), True),  # requires_grad
        # passed by the full check (which the C++ one leaves them to): a Parameter where a
        # tensor was, a tensor with another dispatch key set (a negative view)
        ((a, nn.Parameter(b.clone(), requires_grad=False), c), False),
        ((a, b, torch._neg_view(c)), False),
    ]
    for args, rejected in changed:
        misses = thunder.compile_stats(jfn).cache_misses
        got, expected = jfn(*args), f(*args)
        torch.testing.assert_close(got, expected)
        assert got.dtype == expected.dtype and got.requires_grad == expected.requires_grad
        assert thunder.compile_stats(jfn).cache_misses == misses + rejected
    # each kind of change made its entry; the first entry still fits its own inputs
    torch.testing.assert_close(jfn(a, b, c), f(a, b, c))
    with torch.inference_mode():  # C++ check fails (other dispatch keys): the full one decides
        torch.testing.assert_close(jfn(a, b, c), f(a, b, c))


def test_a_miss_names_the_tensor_that_does_not_fit():
    a, b, c = torch.randn(3, 4), torch.randn(5), torch.randn(2, 2)
    jfn = thunder.jit(f)
    jfn(a, b, c)
    jfn(a, b, c)
    reason, bsym = miss_reason(jfn._cache.entries[0], (a, torch.randn(6), c), {})
    assert (
        reason == "pythonex.check_tensor(b, (5,), torch.float32, 'cpu', False): expected shape (5,), got (6,)"
    )
    assert bsym.sym.id == "pythonex.check_tensors"


@pytest.mark.parametrize("n", [1, 2])
def test_a_single_tensor_keeps_its_own_check(n):
    def g(*ts):
        return sum(t.sum() for t in ts)

    jfn = thunder.jit(g)
    jfn(*[torch.randn(3) for _ in range(n)])
    trace = thunder.last_prologue_traces(jfn)[-1]
    syms = [b.subsymbols[0].sym for b in trace.bound_symbols if b.subsymbols]
    assert (pyops.check_tensor in syms) == (n == 1) and (pyops.check_tensors in syms) == (n == 2)


@pytest.mark.parametrize(
    "grads, shown",
    [
        ((False, False, True), "requires_grad=True for c"),
        ((True, True, False), "requires_grad=True except for c"),
        ((False, False, False), "requires_grad=False"),
    ],
)
def test_the_line_says_which_tensors_require_grad(grads, shown):
    args = [torch.randn(3, requires_grad=g) for g in grads]
    jfn = thunder.jit(f)
    jfn(*args)
    line = next(
        ln
        for ln in str(thunder.last_prologue_traces(jfn)[-1]).splitlines()
        if "pythonex.check_tensors(" in ln
    )
    assert line.endswith(f"(_tensors, a, b, c)  # shapes, dtypes and devices as unpacked; {shown}")
