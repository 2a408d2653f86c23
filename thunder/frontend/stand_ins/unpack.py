"""Provenance of an input value: how the prologue reaches it from the call's arguments.

``Unpack(holder, "attr", "keys")`` says a value is the attribute ``keys`` of the value named
by ``holder``; the prologue prints it as ``t_cache_keys = cache.keys``.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class Unpack:
    """How one value is reached: ``kind`` (item, attr, param, buffer, submodule) of ``parent``."""

    parent: Any  # the parent's proxy (AnyProxy or the root proxies ``args``/``kwargs``)
    kind: str
    key: Any
