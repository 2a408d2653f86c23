"""Views while tracing: results of view ops (``x[0]``, ``x.view(...)``, ``x.t()``) that alias
their base in eager, so an in-place write into one reaches the base and every other view of it.
"""

from __future__ import annotations

import dataclasses

from thunder.core.proxies import TensorProxy


@dataclasses.dataclass
class View:
    """``value`` is output ``index`` of ``op(base, *args, **kwargs)``, a view of ``base``."""

    base: TensorProxy
    op: object
    args: tuple
    kwargs: dict
    index: int
    value: TensorProxy
    func: object = None  # the torch callable that made it (replayed on meta tensors for its layout)
