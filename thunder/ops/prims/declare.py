"""How a primitive is declared: a Symbol printed ``prims.<name>`` with its meta function,
registered as an op.

The printed trace imports the prims as ``import thunder.ops.prims as prims`` (the package that
gathers every module here), so ``_prim`` names that package as the module path, not this
module.

``_torch_prim`` declares a prim that is one torch call as it stands (a factorization, an FFT):
``torch_impl`` names that call, which the torch executor claims the prim through and which runs
it outside a trace, so no executor table has to name it.
"""

from __future__ import annotations

from thunder.core.symbol import EAGER_IMPLS, Symbol, register
from thunder.core.tags import Tag
from thunder.ops.langs import resolve_path


def _prim(name: str, meta, *tags: Tag) -> Symbol:
    return register(Symbol(name, "prims", meta=meta, tags=(Tag.PRIM, *tags), module_path="thunder.ops.prims"))


def _torch_prim(name: str, meta, torch_impl: str, *tags: Tag) -> Symbol:
    sym = register(
        Symbol(
            name,
            "prims",
            meta=meta,
            tags=(Tag.PRIM, *tags),
            module_path="thunder.ops.prims",
            torch_impl=torch_impl,
        )
    )
    EAGER_IMPLS[sym] = resolve_path(torch_impl)
    return sym
