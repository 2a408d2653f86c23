"""Sizes as symbols: a dimension that changes between calls is a symbolic int (``s0``). The
algebra is ``expressions.py``; one compilation's symbols and the nodes behind torch's symbolic
ints are ``sizes.py``; this package's names are those of both.

A tensor input whose dimension is dynamic gets a proxy whose size there is a ``torch.SymInt``
backed by a ``SizeNode``: user code reads it (``x.shape[0]``, ``x.size(1) * 2``), torch's own
code computes with it (a wrapper tensor's strides, ``numel()``), and the meta functions pass it
on (``f32[s0, 8]``, ``f32[2*s0 + 1]``). Each node holds an expression over the symbols (``Expr``,
a small normal form: sums of terms with integer coefficients) and its value on the call being
traced (the ``hint``).

Where Python needs a plain answer, the answer is the hint's and the relation it rests on is
recorded in the current ``SizeEnv``: ``if x.shape[0] > 8`` records ``s0 > 8`` (or its negation),
a broadcast that needed equal sizes records ``s0 == s1``, ``int(n)`` records ``n == 5`` (the
size is specialised). The prologue checks every recorded relation on every call (a call that
violates one is a cache miss, never a wrong value), and each symbol is at least 2: sizes 0 and 1
stay specialised, as torch.compile does, since broadcasting depends on them.

A relation that holds for every value of the symbols (``s0 + 1 > s0``, ``s0 == s0``) records
nothing: the difference of the two sides is a constant.
"""

from thunder.core.symbolic.expressions import Expr, compare, evaluate, fold, negate, source, symbol
from thunder.core.symbolic.sizes import (
    SizeEnv,
    SizeNode,
    SizeRelations,
    SymbolicSizeError,
    concrete,
    contiguous_strides,
    current_env,
    expr_of,
    has_symbols,
    hint_of,
    hints,
    is_symbolic,
    same_size,
    size_source,
    sizes_are_static,
    specialize,
    symbol_name,
    using_env,
)

__all__ = [
    "Expr",
    "SizeEnv",
    "SizeNode",
    "SizeRelations",
    "SymbolicSizeError",
    "compare",
    "concrete",
    "contiguous_strides",
    "current_env",
    "evaluate",
    "expr_of",
    "fold",
    "has_symbols",
    "hint_of",
    "hints",
    "is_symbolic",
    "negate",
    "same_size",
    "size_source",
    "sizes_are_static",
    "source",
    "specialize",
    "symbol",
    "symbol_name",
    "using_env",
]
