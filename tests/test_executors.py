"""The torch executor can run every prim, and claiming records who declined what."""

from __future__ import annotations

import pytest
import torch

import thunder
from thunder.executors.base import Executor
from thunder.executors.torchex import unclaimed_prims
from thunder.ops.langs import all_symbols


def test_every_prim_has_a_torch_implementation():
    assert unclaimed_prims() == []


def test_the_torch_language_is_large():
    assert len(all_symbols()) >= 120


def test_claiming_records_who_declined():
    # an executor that knows only prims.mul declines ltorch.mul; the torch executor claims it
    only_mul = Executor("only_mul")
    from thunder.executors.torchex import PRIM_IMPLS

    for impl in PRIM_IMPLS["prims.mul"]:
        only_mul.register("prims.mul", impl)
    jfn = thunder.jit(lambda x: x * 3, executors=[only_mul])
    torch.testing.assert_close(jfn(torch.ones(2)), torch.full((2,), 3.0))
    (bsym,) = thunder.last_traces(jfn)[-1].bound_symbols
    assert bsym.info["claimed_by"] == "torch"
    assert "only_mul" in bsym.info["declined"]


def test_unknown_executor_name():
    with pytest.raises(ValueError, match="unknown executor 'nvfuzer'"):
        thunder.jit(lambda x: x, executors=["nvfuzer"])
