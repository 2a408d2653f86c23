"""PyTorch's OpInfo samples through ``thunder.jit``, against eager (``tests/support/opinfo_map.py``).

For every OpInfo entry that has a thunder op, each sample (CPU, float64, requiring grad) is
run compiled and eagerly: the forward values and their strides, which outputs require grad, the gradients
against ``torch.autograd`` (gradcheck-grade tolerance, relative to the magnitudes) and, where
the entry has one, the in-place variant (its result and the tensor it writes). A sample that
differs for a known reason is declared in ``DIFFERENCES``; a declared difference that no
longer differs fails too, so the table stays true.

The default run takes the first ``FAST_SAMPLES`` samples of each entry; ``THUNDER_ALL_OPINFO=1``
(``make check-opinfo``) runs every sample.
"""

from __future__ import annotations

import itertools
import os

import pytest
import torch
import torch.utils._pytree as pytree
from support.opinfo_map import RANDOM, declared, entry_id, layout, op_db, thunder_op

import thunder

FAST_SAMPLES = 2
ALL = os.environ.get("THUNDER_ALL_OPINFO") == "1"
# entries with a thunder op: the floor rises as ops are added
COVERAGE_FLOOR = 523

_DB = op_db()
_COVERED = [i for i in _DB if thunder_op(i) is not None]


def test_opinfo_coverage():
    n = len(_COVERED)
    print(f"\nOpInfo entries with a thunder op: {n} of {len(_DB)}")
    assert n >= COVERAGE_FLOOR, f"{n} OpInfo entries have a thunder op, fewer than {COVERAGE_FLOOR}"


def _scale(t: torch.Tensor) -> float:
    finite = t.detach()[torch.isfinite(t.detach())] if t.is_floating_point() else t
    return max(1.0, float(finite.abs().max())) if finite.numel() else 1.0


def _close(got, expected, what: str) -> None:
    g_leaves, g_spec = pytree.tree_flatten(got)
    e_leaves, e_spec = pytree.tree_flatten(expected)
    assert len(g_leaves) == len(e_leaves), f"{what}: {len(g_leaves)} results, eager has {len(e_leaves)}"
    for k, (g, e) in enumerate(zip(g_leaves, e_leaves)):
        if isinstance(e, torch.Tensor):
            assert isinstance(g, torch.Tensor), f"{what}[{k}]: {type(g).__name__}, eager has a tensor"
            tol = 1e-7 * (_scale(e) if e.is_floating_point() or e.is_complex() else 1)
            torch.testing.assert_close(
                g.detach(),
                e.detach(),
                atol=tol,
                rtol=1e-7,
                equal_nan=True,
                msg=lambda m, k=k: f"{what}[{k}]: {m}",
            )
        else:
            assert g == e or (g != g and e != e), f"{what}[{k}]: {g!r}, eager has {e!r}"


def _split(sample):
    """(tensors, rebuild): the sample's tensors become the jit inputs; the rest is constant."""
    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    pos = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]

    def rebuild(tensors):
        filled = list(leaves)
        for i, t in zip(pos, tensors):
            filled[i] = t
        return pytree.tree_unflatten(filled, spec)

    return [leaves[i] for i in pos], rebuild


def _leaves(tensors, grad: bool):
    return [t.detach().clone().requires_grad_(grad and t.requires_grad) for t in tensors]


def _grad_outputs(out):
    return [o for o in pytree.tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]


def _grads(out, leaves, seed: int):
    outs = _grad_outputs(out)
    inputs = [t for t in leaves if t.requires_grad]
    if not outs or not inputs:
        return None
    gen = torch.Generator().manual_seed(seed)
    cts = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs]
    grads = torch.autograd.grad(outs, inputs, cts, allow_unused=True)
    return [torch.zeros_like(t) if g is None else g for g, t in zip(grads, inputs)]


def _check_forward_and_grad(info, fn, sample, random: bool) -> list[tuple[str, str]]:
    """The phases ("forward", "grad") where thunder differs from eager, with the message."""
    tensors, rebuild = _split(sample)

    def call(*ts):
        args = rebuild(ts)
        return fn(args[0], *args[1], **args[2])

    e_leaves = _leaves(tensors, True)
    try:
        expected = call(*e_leaves)
    except Exception:  # eager refuses this sample too: nothing to compare
        return []
    g_leaves = _leaves(tensors, True)
    try:
        got = thunder.jit(call)(*g_leaves)
    except Exception as e:
        return [("forward", f"{type(e).__name__}: {e}")]
    failures = []
    try:
        if random:
            for g, e in zip(pytree.tree_leaves(got), pytree.tree_leaves(expected)):
                assert (g.shape, g.dtype) == (e.shape, e.dtype), f"{g.shape} {g.dtype} != {e.shape} {e.dtype}"
        else:
            _close(got, expected, "forward")
        for k, (g, e) in enumerate(zip(pytree.tree_leaves(got), pytree.tree_leaves(expected))):
            if isinstance(e, torch.Tensor) and isinstance(g, torch.Tensor) and g.shape == e.shape:
                # a stride read, view() or is_contiguous() on the result answers as eager's
                assert layout(g) == layout(e), f"forward[{k}]: strides {g.stride()}, eager's {e.stride()}"
        rg = [o.requires_grad for o in pytree.tree_leaves(got) if isinstance(o, torch.Tensor)]
        re = [o.requires_grad for o in pytree.tree_leaves(expected) if isinstance(o, torch.Tensor)]
        assert rg == re, f"outputs requiring grad {rg}, eager {re}"
    except AssertionError as e:
        return [("forward", str(e))]
    if random:
        return failures
    try:
        e_grads = _grads(expected, e_leaves, 0)
    except Exception:  # eager cannot differentiate this sample
        return failures
    if e_grads is None:
        return failures
    try:
        g_grads = _grads(got, g_leaves, 0)
        assert g_grads is not None, "no gradient"
        _close(g_grads, e_grads, "grad")
    except Exception as e:
        failures.append(("grad", f"{type(e).__name__}: {e}"))
    return failures


def _check_inplace(info, sample) -> list[tuple[str, str]]:
    tensors, rebuild = _split(sample)
    fn = info.inplace_variant

    def call(*ts):
        args = rebuild(ts)
        return fn(args[0], *args[1], **args[2])

    e_leaves = _leaves(tensors, False)
    try:
        expected = call(*e_leaves)
    except Exception:
        return []
    g_leaves = _leaves(tensors, False)
    try:
        got = thunder.jit(call)(*g_leaves)
        _close((got, g_leaves), (expected, e_leaves), "inplace")
    except Exception as e:
        return [("inplace", f"{type(e).__name__}: {e}")]
    return []


def _describe(sample) -> str:
    """The sample with its tensors as shapes (for the failure message)."""
    shown = pytree.tree_map(
        lambda x: f"T{list(x.shape)}" if isinstance(x, torch.Tensor) else x,
        (sample.input, sample.args, sample.kwargs),
    )
    return f"input={shown[0]} args={shown[1]} kwargs={shown[2]}"


def _samples(info):
    gen = info.sample_inputs("cpu", torch.float64, requires_grad=True)
    return list(gen if ALL else itertools.islice(gen, FAST_SAMPLES))


@pytest.fixture
def _unseeded(monkeypatch):
    """OpInfo calls its random ops through ``wrapper_set_seed``, which sets torch's generator
    state inside the call (thunder refuses that inside a compiled function; the random values
    are compared by shape only anyway): here it just calls the op."""
    from torch.testing._internal import common_methods_invocations as cmi

    monkeypatch.setattr(cmi, "wrapper_set_seed", lambda op, *args, **kwargs: op(*args, **kwargs))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("info", _COVERED, ids=entry_id)
def test_opinfo(info, _unseeded):
    """Each sample equals eager in its forward, gradients and in-place variant, or differs
    exactly as ``DIFFERENCES`` declares."""
    if torch.float64 not in info.dtypes:
        pytest.skip("the entry has no float64 samples")
    eid = entry_id(info)
    random = eid in RANDOM
    unexpected, stale = [], []
    for i, sample in enumerate(_samples(info)):
        failures = dict(_check_forward_and_grad(info, info.op, sample, random))
        if info.inplace_variant is not None and not random:
            failures.update(_check_inplace(info, sample))
        for phase in ("forward", "grad", "inplace"):
            d = declared(eid, phase, i, sample)
            if phase in failures and d is None:
                unexpected.append(f"sample {i} {phase}: {failures[phase][:600]}\n  {_describe(sample)}")
            elif d is not None and phase not in failures:
                stale.append(f"sample {i} {phase}: declared ({d.reason}) but equals eager")
    assert not unexpected and not stale, "\n".join(unexpected + stale)
