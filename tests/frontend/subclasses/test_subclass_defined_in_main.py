"""A tensor subclass defined in ``__main__`` (a notebook cell, a script) traces like any other:
finding the subclass's own line for error messages does not need its class's source file."""

from __future__ import annotations

import sys
import types

import torch
from support.subclasses import ScaleTensor, scale_tensor

import thunder


class MainScaleTensor(ScaleTensor):
    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return MainScaleTensor(inner["_x"], inner["_scale"], outer_size, outer_stride)


MainScaleTensor.__module__ = "__main__"  # as a class made in a notebook cell is


def test_a_subclass_of_main_is_traced(monkeypatch):
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))  # a kernel's: no __file__
    base = scale_tensor(2, 3)
    x = MainScaleTensor(base._x, base._scale)
    jfn = thunder.jit(lambda x: x.sin() * 2)
    out = jfn(x)
    expected = x.sin() * 2
    torch.testing.assert_close(out._x * out._scale, expected._x * expected._scale)
    assert "MainScaleTensor.torch.Tensor.sin(x)" in str(thunder.last_traces(jfn)[0])
