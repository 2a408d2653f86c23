"""Executors: who runs each BoundSymbol. ``torch`` runs every prim; fusion executors
(nvFuser, torch.compile) claim regions; ``python`` runs the prologue's and epilogue's
Python. Each registers itself in ``registry.py`` when its module is imported, and importing
this package imports the built-in ones. ``claim.py`` is the pass that asks them."""

from thunder.executors import pythonex, torchex  # noqa: F401  (registered on import)
from thunder.executors.inductor import executor as _inductor  # noqa: F401
from thunder.executors.nvfuser import executor as _nvfuser  # noqa: F401
