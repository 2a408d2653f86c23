"""How a primitive is declared: a Symbol printed ``prims.<name>`` with its meta function,
registered as an op.

The printed trace imports the prims as ``import thunder.ops.prims as prims`` (the package that
gathers every module here), so ``_prim`` names that package as the module path, not this
module.
"""

from __future__ import annotations

from thunder.core.symbol import Symbol, register
from thunder.core.tags import Tag


def _prim(name: str, meta, *tags: Tag) -> Symbol:
    return register(Symbol(name, "prims", meta=meta, tags=(Tag.PRIM, *tags), module_path="thunder.ops.prims"))
