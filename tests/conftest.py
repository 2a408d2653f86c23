"""Shared test set-up: every trace a test makes is verified after every pass; Inductor compiles
on the calling thread, so the output a test checks is Inductor's (tests of the background
compilation turn it back on)."""

from __future__ import annotations

import pytest
import torch

from thunder.executors import torchcompileex

torchcompileex.compile_in_background(False)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)
