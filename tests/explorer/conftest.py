"""Fixtures for the explorer's tests: jitted functions and hand-built traces with every tag."""

from __future__ import annotations

import pytest
import torch
from support.explorer_builders import sin_container, small_fn, tagged_passes

import thunder


@pytest.fixture
def jfn():
    """A jitted function called twice with different shapes: two cache entries."""
    f = thunder.jit(small_fn)
    f(torch.ones(3), torch.ones(3))
    f(torch.ones(2, 4), torch.ones(2, 4))
    return f


@pytest.fixture
def container_jfn():
    f = thunder.jit(sin_container)
    f(torch.ones(3))
    return f


@pytest.fixture
def passes():
    return tagged_passes()
