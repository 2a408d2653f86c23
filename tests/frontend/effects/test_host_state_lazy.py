"""NumPy's random module is guarded without being loaded by thunder: a process that never
used it compiles without loading it, and traced code that loads it is still refused."""

import subprocess
import sys
import textwrap

_PRELUDE = """
import sys

import numpy as np
import torch

import thunder
from thunder.core.errors import UnsupportedOpError

assert "numpy.random" not in sys.modules
x = torch.randn(2, 4)
"""


def _run(body: str) -> str:
    script = _PRELUDE + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout


def test_a_compilation_does_not_load_numpy_random():
    out = _run(
        """
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        thunder.jit(model)(x).sum().backward()
        print("loaded:", "numpy.random" in sys.modules)
        """
    )
    assert "loaded: False" in out


def test_numpy_random_loaded_by_the_traced_code_is_refused_with_the_line():
    out = _run(
        """
        def uses_numpy_random(x):
            return x * np.random.rand()

        try:
            thunder.jit(uses_numpy_random)(x)
        except UnsupportedOpError as e:
            print("refused:", "numpy.random.rand inside the compiled function" in str(e), "in uses_numpy_random" in str(e))
        """
    )
    assert "refused: True True" in out


def test_numpy_random_loaded_without_a_draw_is_traced_again():
    out = _run(
        """
        def reads_numpy_random(x, k):
            return x * len(np.random.__name__) + k  # loads the module; draws nothing

        jfn = thunder.jit(reads_numpy_random)
        same = all(torch.equal(jfn(x, k), x * len("numpy.random") + k) for k in (1, 1, 2))
        print("same:", same, thunder.compile_stats(jfn).cache_misses)
        """
    )
    assert "same: True 2" in out
