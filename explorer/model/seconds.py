"""How a measured or recorded time prints in every view: ``12.3 us``, ``1.20 ms``, ``2.00 s``.

Its own module because the model's module groups print their time too (``ModuleGroup.summary``)
and the model sits below the views.
"""

from __future__ import annotations


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"
