"""Grouped matrix multiplication: ``torch._grouped_mm`` (``F.grouped_mm`` calls it), the
experts of a mixture-of-experts layer, each a matrix applied to its own run of rows.

transformers runs its MoE experts this way in bfloat16 (Qwen2-MoE, Mixtral, DeepSeek):
``offs`` holds the end of each expert's run of (sorted) token rows. Two forms take ``offs``:
``(M, K) x (G, K, N) -> (M, N)`` and ``(M, K) x (K, N) -> (G, M, N)`` (runs along K, the
weight gradient), both ``prims.grouped_mm`` (the torch executor calls torch's grouped kernel);
without ``offs``, ``(G, M, K) x (G, K, N)`` is a batched matmul. Rows after the last run are
left as torch leaves them (not computed).
"""

from __future__ import annotations

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.meta import ShapeError, dtype_of, shape_of


def grouped_mm(mat_a, mat_b, offs=None, bias=None, out_dtype=None):
    if bias is not None:
        raise ShapeError("torch._grouped_mm: bias is not supported")
    if out_dtype is not None and out_dtype != dtype_of(mat_a):
        raise ShapeError(f"torch._grouped_mm: out_dtype {out_dtype} other than the inputs' is not supported")
    sa, sb = shape_of(mat_a), shape_of(mat_b)
    if offs is None:
        if len(sa) == 3 and len(sb) == 3 and sa[0] == sb[0] and sa[2] == sb[1]:
            return prims.matmul(mat_a, mat_b)
        raise ShapeError(
            f"torch._grouped_mm: without offs, expected (G, M, K) and (G, K, N), got {sa} and {sb}"
        )
    return prims.grouped_mm(mat_a, mat_b, offs)


if hasattr(torch, "_grouped_mm"):  # (torch 2.8 and later)
    grouped_mm = torchsymbol(torch._grouped_mm, tags=(Tag.MATMUL,), name="grouped_mm")(grouped_mm)
