"""Shared test set-up: every trace a test makes is verified after every pass; the
torch.compile executor compiles on the calling thread (so that a test's calls run Inductor's
code, not the torch calls that run while a helper process compiles), except in the tests of
compiling in the background (tests/executors/inductor/test_torchcompile.py), which turn it on
themselves; and with Inductor's Python wrapper, quicker to compile
(tests/executors/inductor/test_torchcompile.py, which the every-op run
``make check-torchcompile`` is, turns the C++ wrapper users get back on).

``tests/`` is on ``sys.path`` (``pythonpath`` in pyproject.toml): the helpers in
``tests/support/`` are imported as ``support.models``, ``support.opdb``, ...; see
tests/README.md."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(autouse=True, scope="session")
def _compile_on_the_calling_thread():
    from thunder.executors.inductor import executor as torchcompileex

    previous = torchcompileex.compile_in_background(False), torchcompileex.cpp_wrapper(False)
    yield
    torchcompileex.compile_in_background(previous[0])
    torchcompileex.cpp_wrapper(previous[1])


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)
