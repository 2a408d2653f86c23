"""The cheap paths of a cached training step keep every check's meaning: the one-test prologue
checks of tensors and modules (``check_tensor``, ``check_module``), the one-frame forward and
backward of the common entry (``thunder/autograd/function.py``), and the autograd Function
applied without its Python layer (``thunder/autograd/call.py``). Each change between steps is still caught, and each error
is still the one the full path raises."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import thunder
from thunder.transforms.saved_versions import SavedValueOverwrittenError


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))


def _step(model, forward, x, target):
    model.zero_grad(set_to_none=True)
    loss = F.mse_loss(forward(x), target)
    loss.backward()
    return loss.detach(), [None if p.grad is None else p.grad.clone() for p in model.parameters()]


def _same_step(change):
    """A step after ``change(model)`` gives eager's loss and gradients (a copy of the model
    changed alike), and the change made the cached entry miss."""
    model, ref = _mlp(), _mlp()
    jm = thunder.jit(model)
    x, target = torch.randn(3, 4), torch.randn(3, 2)
    _step(model, jm, x, target)
    _step(model, jm, x, target)
    misses = thunder.compile_stats(jm).cache_misses
    change(model)
    change(ref)
    (loss, grads), (ref_loss, ref_grads) = _step(model, jm, x, target), _step(ref, ref, x, target)
    torch.testing.assert_close(loss, ref_loss)
    for g, r in zip(grads, ref_grads):
        assert (g is None) == (r is None)
        if g is not None:
            torch.testing.assert_close(g, r)
    return thunder.compile_stats(jm).cache_misses - misses


def _double_the_relu(model):
    model[1].forward = lambda a: torch.relu(a) * 2


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m[1].register_forward_hook(lambda mod, args, out: out * 2),
        lambda m: m[0].register_forward_pre_hook(lambda mod, args: (args[0] + 1,)),
        lambda m: setattr(m[1], "inplace", True),
        lambda m: m.eval(),
        _double_the_relu,
        lambda m: m[0].weight.requires_grad_(False),
        lambda m: setattr(m[2], "bias", None),
    ],
    ids=["forward_hook", "pre_hook", "attribute", "eval", "instance_forward", "requires_grad", "bias_none"],
)
def test_a_change_between_steps_misses_the_cached_entry(change):
    assert _same_step(change) == 1


def test_a_new_parameter_of_the_same_metadata_is_read_without_a_miss():
    def replace(m):
        with torch.no_grad():
            m[0].weight = nn.Parameter(m[0].weight * 3)

    assert _same_step(replace) == 0


def test_the_one_test_checks_still_name_what_differs():
    model = _mlp()
    jm = thunder.jit(model)
    x = torch.randn(3, 4)
    jm(x)
    entry = jm._jfn._entries[-1]
    with pytest.raises(Exception, match="expected shape"):
        entry.prologue(torch.randn(5, 4))
    with pytest.raises(Exception, match="expected dtype"):
        entry.prologue(x.double())
    model[1].register_forward_hook(lambda *a: None)
    with pytest.raises(Exception, match="hooks were registered"):
        entry.prologue(x)


def test_the_one_frame_backward_keeps_torchs_and_thunders_errors():
    model = _mlp()
    jm = thunder.jit(model)
    x = torch.randn(3, 4, requires_grad=True)
    out = jm(x).sum()
    out.backward(retain_graph=True)
    out.backward()  # retained: a second backward runs
    with pytest.raises(RuntimeError, match="second time"):
        out.backward()
    out = jm(x).sum()
    with torch.no_grad():
        x.mul_(2)  # a value the backward reads, written since the call
    with pytest.raises(SavedValueOverwrittenError):
        out.backward()


def test_a_backward_that_records_its_graph_takes_the_general_path():
    model = _mlp()
    jm = thunder.jit(model)
    x = torch.randn(3, 4, requires_grad=True)
    (g,) = torch.autograd.grad(jm(x).pow(2).sum(), x, create_graph=True)
    (ref,) = torch.autograd.grad(model(x).pow(2).sum(), x, create_graph=True)
    torch.testing.assert_close(g, ref)
    (gg,) = torch.autograd.grad(g.sum(), x)
    (ref_gg,) = torch.autograd.grad(ref.sum(), x)
    torch.testing.assert_close(gg, ref_gg)


def test_under_a_functorch_transform_the_function_applies_as_torch_does():
    jf = thunder.jit(lambda x, w: (x * w).sum())
    x, w = torch.randn(3), torch.randn(3, requires_grad=True)
    jf(x, w).backward()
    with pytest.raises(RuntimeError, match="setup_context"):
        torch.func.grad(lambda w: jf(x, w))(w.detach())


def test_a_program_with_nothing_to_differentiate_runs_without_no_grad():
    """Called with grad mode on, a program none of whose tensors requires grad runs as its own
    compiled code (no ``torch.no_grad()`` around it), and its results are eager's: no history."""
    x = torch.randn(3)
    jfn = thunder.jit(lambda x: x * 2 + 1)
    for _ in range(2):
        out = jfn(x)
        assert torch.equal(out, x * 2 + 1) and not out.requires_grad and out.grad_fn is None
    entry = thunder.compile_stats(jfn).entries[-1]
    assert hasattr(entry.computation, "__thunder_program__")  # the trace's callable itself

    # a value made inside that requires grad: autograd would record, so no_grad stays around it
    def made(x):
        w = torch.ones(3, requires_grad=True)
        return (x * w).detach(), w.requires_grad

    jmade = thunder.jit(made)
    assert jmade(x)[1] is True and torch.equal(jmade(x)[0], made(x)[0])
    assert not hasattr(thunder.compile_stats(jmade).entries[-1].computation, "__thunder_program__")
