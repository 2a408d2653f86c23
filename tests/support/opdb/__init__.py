"""The op database: one entry per torch-language op (``thunder.ops.ltorch``).

An entry names the ltorch symbol, the torch callable a user calls (run under ``thunder.jit``
and eagerly as the reference), the dtypes to try and a sample generator: a function of a
``Maker`` (which makes tensors of the dtype under test) returning ``S(args, kwargs)`` samples.
``aliases`` are the other torch callables mapped to the same op, tried on the first sample.

The shared pieces are in ``entries.py``; each other module adds the entries of one family of
ops, roughly one module of ``thunder/ops/ltorch/`` each. ``OPS`` lists them in the order of
``FAMILIES`` (test ids and the every-tenth-op selections depend on that order): a new entry
goes at the end of its family's module, a new family at the end of ``FAMILIES``.
"""

from __future__ import annotations

import importlib

from .entries import (
    ALL,
    FLOAT,
    INT,
    NAN,
    NN_TOL,
    NUM,
    OPS,
    POS,
    UNIT,
    Maker,
    OpInfo,
    S,
    T,
    b8,
    bf16,
    binary,
    calls,
    distinct,
    f32,
    f64,
    i32,
    i64,
    one,
    op,
    pick,
    s,
    sorted_,
    unary,
    with_nans,
)

# Imported in this order, each module appending its entries to ``OPS``.
FAMILIES = (
    "elementwise",
    "shape",
    "indexing",
    "stacking",
    "reductions",
    "linalg",
    "layers",
    "rnn",
    "dropout",
    "losses",
    "factories",
    "writes",
    "backward",
    "special",
    "margins",
    "unpool",
    "foreach",
    "statistics",
    "indexed",
    "factorizations",
    "spectral",
)
for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")

__all__ = [
    "ALL",
    "FAMILIES",
    "FLOAT",
    "INT",
    "NAN",
    "NN_TOL",
    "NUM",
    "OPS",
    "POS",
    "UNIT",
    "Maker",
    "OpInfo",
    "S",
    "T",
    "b8",
    "bf16",
    "binary",
    "calls",
    "distinct",
    "f32",
    "f64",
    "i32",
    "i64",
    "one",
    "op",
    "pick",
    "s",
    "sorted_",
    "unary",
    "with_nans",
]
