"""Whether two tensors share an element's memory: views of one storage that do not overlap
(``b[0:2]`` and ``b[2:4]``, the columns ``b[:, 0]`` and ``b[:, 1]``) can both be written as
separate tensors; views that do overlap cannot.

The byte ranges decide most cases; interleaved views (ranges that cross, elements that do
not) are decided exactly by NumPy's bounded solver over the two layouts, given as arrays of
bytes at made-up addresses (nothing is read: only the arithmetic of the strides is used).
"""

from __future__ import annotations

import numpy as np
import torch

# Candidate solutions NumPy may try before giving up; a layout past it counts as overlapping.
_MAX_WORK = 1 << 20
_ORIGIN = 1 << 40  # the made-up address of the storage's first byte


def _span(t: torch.Tensor) -> tuple[int, int]:
    """The first byte after the storage's start that ``t`` reads, and one past its last."""
    e = t.element_size()
    lo = t.storage_offset() * e
    return lo, lo + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) * e + e


class _Layout:
    """``t``'s elements as an array of bytes (one extra last dim of the element's size)."""

    def __init__(self, t: torch.Tensor):
        e = t.element_size()
        self.__array_interface__ = {
            "data": (_ORIGIN + t.storage_offset() * e, True),
            "shape": (*t.shape, e),
            "strides": (*(s * e for s in t.stride()), 1),
            "typestr": "|u1",
            "version": 3,
        }


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether some byte of an element of ``a`` is a byte of an element of ``b``."""
    if a.numel() == 0 or b.numel() == 0 or a.device != b.device:
        return False
    if a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False
    (alo, ahi), (blo, bhi) = _span(a), _span(b)
    if ahi <= blo or bhi <= alo:
        return False
    try:
        return bool(np.shares_memory(np.asarray(_Layout(a)), np.asarray(_Layout(b)), max_work=_MAX_WORK))
    except np.exceptions.TooHardError:
        return True
