"""The compiled module's state under the module's own names: ``state_dict()``,
``load_state_dict()``, ``named_parameters()`` and ``named_buffers()`` have no ``_model.``
prefix, alone and inside an enclosing module, so checkpoints move between the compiled and the
plain module; the compiled calls read what was loaded."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import thunder


def _net():
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))


def test_state_dict_and_names_are_the_modules_own():
    torch.manual_seed(0)
    model = _net()
    jm = thunder.jit(model)
    jm(torch.randn(5, 3))
    sd, own = jm.state_dict(), model.state_dict()
    assert list(sd) == list(own) and all(sd[k].data_ptr() == own[k].data_ptr() for k in own)
    assert list(sd._metadata) == list(own._metadata)  # (module versions, read by BatchNorm's loading)
    assert [n for n, _ in jm.named_parameters()] == [n for n, _ in model.named_parameters()]
    assert [n for n, _ in jm.named_buffers()] == [n for n, _ in model.named_buffers()]
    assert [n for n, _ in jm.named_parameters(prefix="net")][0] == "net.0.weight"


@pytest.mark.parametrize("assign", [False, True])
def test_a_checkpoint_moves_between_the_compiled_and_the_plain_module(assign):
    torch.manual_seed(0)
    model, other = _net().eval(), _net().eval()
    jm = thunder.jit(model)
    x = torch.randn(5, 3)
    jm(x)  # compiled before the load
    assert other.load_state_dict(jm.state_dict()).missing_keys == []
    torch.manual_seed(1)
    fresh = _net().eval()
    before = list(model.parameters())
    jm.load_state_dict(fresh.state_dict(), assign=assign)
    torch.testing.assert_close(jm(x), fresh(x))  # the cached program reads the loaded values
    # (assign=True: new parameter objects, which the next call unpacks)
    assert [p is q for p, q in zip(model.parameters(), before)] == [not assign] * len(before)


def test_a_missing_key_is_named_as_the_module_names_it():
    jm = thunder.jit(_net())
    sd = jm.state_dict()
    del sd["0.bias"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "0.bias"'):
        jm.load_state_dict(sd)


def test_inside_an_enclosing_module_the_keys_are_the_plain_models():
    torch.manual_seed(0)
    outer = nn.Sequential(thunder.jit(_net()), nn.ReLU())
    plain = nn.Sequential(_net(), nn.ReLU())
    assert list(outer.state_dict()) == list(plain.state_dict())
    assert list(outer.state_dict()._metadata) == list(plain.state_dict()._metadata)
    assert plain.load_state_dict(outer.state_dict()).missing_keys == []
    torch.manual_seed(1)
    fresh = nn.Sequential(_net(), nn.ReLU())
    assert outer.load_state_dict(fresh.state_dict()).missing_keys == []
    x = torch.randn(5, 3)
    outer.eval(), fresh.eval()
    torch.testing.assert_close(outer(x), fresh(x))
