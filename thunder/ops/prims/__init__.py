"""Primitives: the smallest operations, each with a meta function (shape, dtype, device).

Torch-language ops decompose into these; executors must be able to run every one of them
(the torch executor's table gives each its implementation). Elementwise primitives
broadcast and promote like torch, so a decomposition needs no explicit casts.

Every prim prints as ``prims.<name>`` and the printed trace imports this package as
``prims``, so it gathers the prims of its modules, in the order they are registered:
``elementwise``, ``shape``, ``reductions`` (with linear algebra), ``indexing``,
``factories`` (with ``copy_``), ``windowed`` (convolution, pooling and their gradients),
``factorizations`` (matrix factorizations, triangular solves) and ``spectral`` (FFTs);
``declare`` holds how a prim is declared.
"""

# isort: off
# (imported in the order the prims register: the order of thunder.core.symbol.SYMBOLS)
from thunder.ops.prims.elementwise import *  # noqa: F401,F403
from thunder.ops.prims.shape import *  # noqa: F401,F403
from thunder.ops.prims.reductions import *  # noqa: F401,F403
from thunder.ops.prims.indexing import *  # noqa: F401,F403
from thunder.ops.prims.factories import *  # noqa: F401,F403
from thunder.ops.prims.windowed import *  # noqa: F401,F403
from thunder.ops.prims.factorizations import *  # noqa: F401,F403
from thunder.ops.prims.spectral import *  # noqa: F401,F403
from thunder.ops.prims.shape import slice_prim
# isort: on

# ``prims.slice`` must resolve by its printed name; bound last so nothing above sees the
# builtin ``slice`` shadowed.
slice = slice_prim

# The collectives of torch.distributed and the Python-level prims of prologues and epilogues
# print as ``prims.*`` too.
from thunder.ops.collectives import *  # noqa: E402, F403
from thunder.ops.python import *  # noqa: E402, F403
