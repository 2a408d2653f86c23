"""The write-back records: one frozen record per kind of write, each making its own epilogue
step (``thunder/frontend/stand_ins/writes.py``)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import thunder
from thunder.frontend.stand_ins import writes


def _record_classes():
    found, todo = [], [writes.Write]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if not getattr(cls, "__abstractmethods__", None):
            found.append(cls)
    return found


def test_every_kind_is_a_frozen_record_with_its_own_step():
    kinds = _record_classes()
    assert {k.__name__ for k in kinds} >= {
        "SetAttr", "DelAttr", "SetItem", "DelItem", "ReplaceContents", "ContainerCall", "SetHook",
        "DelHook", "PythonCall",
    }  # fmt: skip
    for k in kinds:
        assert dataclasses.is_dataclass(k) and k.__dataclass_params__.frozen, k
        assert k.step is not writes.Write.step, f"{k.__name__} has no step of its own"
    with pytest.raises(TypeError):
        writes.Write()  # (abstract: a kind without a step cannot be made)


def test_a_typo_is_an_error_not_a_silent_kind():
    w = writes.SetAttr("holder", "calls", 2)
    with pytest.raises(AttributeError):
        w.key  # noqa: B018  (SetAttr has a name, not a key)
    with pytest.raises(TypeError):
        writes.SetAttr("holder", nme="calls", value=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.value = 3


def test_each_kind_prints_as_its_epilogue_step_and_runs_as_eager():
    log: list = []
    store = {"n": 0}

    def fn(x, obj):
        obj.count = obj.count + 1  # SetAttr on an input object
        store["n"] += 1  # ReplaceContents of a global dict the function read
        log.append(3)  # ContainerCall on a global list it did not read
        print("value", x.shape[0])  # PythonCall
        return x + 1

    class Obj:
        count = 0

    obj, eager_obj = Obj(), Obj()
    jfn = thunder.jit(fn)
    x = torch.ones(2)
    for i in range(3):
        jfn(x, obj)
        assert obj.count == i + 1 and store["n"] == i + 1 and log == [3] * (i + 1)
    fn(x, eager_obj)
    epilogue = str(thunder.last_epilogue_traces(jfn)[-1])
    assert "python_setattr(" in epilogue and "'count'" in epilogue
    assert "python_replace(" in epilogue and "{'n': 3}" in epilogue
    assert "python_call(_append" in epilogue
    assert "python_call(_print, 'value', 2)" in epilogue
    assert eager_obj.count == 1
