"""Provenance of an input value: how the prologue reaches it from the call's arguments.

``Unpack(holder, ATTR, "keys")`` says a value is the attribute ``keys`` of the value named by
``holder``; the prologue prints it as ``t_cache_keys = cache.keys``. ``via`` is the prologue's
unpacking op itself (``pyops.unpack_attr``), so the prologue emits it as it is.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from thunder.core.symbol import Symbol
from thunder.ops import python as pyops

ITEM = pyops.unpack_item  # ``parent[key]``
ATTR = pyops.unpack_attr  # ``parent.key``
PARAM = pyops.unpack_param  # a module's parameter ``key``
BUFFER = pyops.unpack_buffer  # a module's buffer ``key``
SUBMODULE = pyops.unpack_submodule  # a module's submodule ``key``
CAPTURED = pyops.unpack_captured  # a tensor the function captured (a closure's, a global's)
LOCAL_SHARD = pyops.unpack_local_shard  # a DTensor parameter's shard (frontend/distributed/fsdp.py)
SIZE = pyops.unpack_size  # a tensor's size along dimension ``key`` (a symbol: core/symbolic/)
# unpacks of the parent alone (no key)
WHOLE = frozenset({CAPTURED, LOCAL_SHARD})


@dataclasses.dataclass
class Unpack:
    """How one value is reached: ``via`` (one of the unpacking ops above) of ``parent`` at ``key``."""

    parent: Any  # the parent's proxy (AnyProxy or the root proxies ``args``/``kwargs``)
    via: Symbol
    key: Any

    def args(self) -> tuple:
        """The unpacking op's arguments."""
        return (self.parent,) if self.via in WHOLE else (self.parent, self.key)
