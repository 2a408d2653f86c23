"""Gradients as traces: every differentiable op of the op database against torch.autograd,
through the backward trace; the forward/backward split; the autograd connection."""

from __future__ import annotations

import pytest
import torch
from opdb import OPS, Maker, OpInfo, S  # tests/ is on sys.path
from test_ops import _split_tensors, _tol

import thunder
from thunder.core.pytree import tree_flatten
from thunder.core.verify import verify


def _requiring(tensors, which) -> list[torch.Tensor]:
    return [t.detach().clone().requires_grad_(i in which) for i, t in enumerate(tensors)]


def _grad_inputs(tensors) -> list[set[int]]:
    """Which inputs require grad: every floating one, else (when eager refuses that, as for
    batch_norm's running statistics) only the first."""
    floats = [i for i, t in enumerate(tensors) if t.is_floating_point()]
    return [set(floats), set(floats[:1])] if len(floats) > 1 else [set(floats)]


def _cotangents(outs, seed: int):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs]


def _differentiable(result) -> list[torch.Tensor]:
    return [o for o in tree_flatten(result)[0] if isinstance(o, torch.Tensor) and o.requires_grad]


def assert_not_recorded_by_torch(outs, leaves) -> None:
    """The outputs hang off thunder's autograd.Function, directly above the inputs: torch's
    autograd recorded none of the forward's ops."""
    ids = {id(t) for t in leaves}
    for o in outs:
        node = o.grad_fn
        assert node is not None and type(node).__name__.startswith("ThunderFunction_"), node
        for nxt, _ in node.next_functions:
            if nxt is not None:
                assert type(nxt).__name__ == "AccumulateGrad" and id(nxt.variable) in ids, nxt


def _check_grads(info: OpInfo, sample: S) -> bool:
    """Compare one sample; False when eager cannot differentiate it."""
    tensors, rebuild = _split_tensors(sample)

    def call(*ts):
        args, kwargs = rebuild(ts)
        return info.op(*args, **kwargs)

    ref = info.ref or info.op
    for which in _grad_inputs(tensors):
        leaves = _requiring(tensors, which)
        args, kwargs = rebuild(leaves)
        try:
            eager_outs = _differentiable(ref(*args, **kwargs))
            if not eager_outs:
                return False
            expected = torch.autograd.grad(
                eager_outs,
                [t for t in leaves if t.requires_grad],
                _cotangents(eager_outs, 0),
                allow_unused=True,
            )
        except (RuntimeError, NotImplementedError):
            continue
        break
    else:
        return False
    leaves = _requiring(tensors, which)
    jfn = thunder.jit(call)
    outs = _differentiable(jfn(*leaves))
    assert len(outs) == len(eager_outs), "the outputs that require grad differ from eager's"
    computed = [o for o in outs if all(o is not t for t in leaves)]  # not an input returned as is
    backward = thunder.last_backward_traces(jfn)
    assert bool(backward) == bool(computed), "a backward trace exactly when something is computed"
    for trace in thunder.last_traces(jfn) + backward:
        verify(trace)
    assert_not_recorded_by_torch(computed, leaves)
    got = torch.autograd.grad(
        outs, [t for t in leaves if t.requires_grad], _cotangents(outs, 0), allow_unused=True
    )
    for g, e in zip(got, expected):
        # an input the result does not depend on: no gradient on either side, or zeros in eager
        if g is None or e is None:
            assert (g if e is None else e) is None or not (g if e is None else e).any()
            continue
        torch.testing.assert_close(g, e, equal_nan=True, **_tol(info, torch.float64))
    return True


GRAD_OPS = [o for o in OPS if torch.float64 in o.dtypes and o.values and not o.cuda]


@pytest.mark.filterwarnings("ignore:size_average and reduce args")
@pytest.mark.parametrize("info", GRAD_OPS, ids=lambda o: o.id)
def test_op_gradients_through_the_backward_trace(info: OpInfo):
    checked = [_check_grads(info, sample) for sample in info.samples(Maker(torch.float64))]
    if not any(checked):
        pytest.skip("eager autograd differentiates none of the samples")
