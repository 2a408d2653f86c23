"""The aten language: ``torch.ops.aten`` operators as symbols of their own.

A tensor subclass's ``__torch_dispatch__`` calls aten operators on its inner tensors, and
user code may call them directly (``torch.ops.aten.mm.default(a, b)``). Each overload is one
symbol, printed as torch names it (``aten.add.Tensor(t1, 1)``), declared with its
decomposition into prims, from which its output metadata comes as for every composite. The
torch executor runs it whole as ``torch.ops.aten.<op>.<overload>``.

An aten operator is never mapped onto a torch-language op. Where the two have the same
semantics for these arguments, the decomposition is shared explicitly
(``ltorch.gelu.decomposition``), so the prims appear directly below the aten op.

The operators are declared by section: ``elementwise`` (with matrix products), ``shape``
(shapes, views of one output, copies, fills), ``views`` (views reading memory in other ways,
views with several outputs, the scatters that invert views), ``reductions`` (with indexing),
``foreach``; ``declare`` holds how one is declared. To add an operator: declare it in its
section with ``@aten(torch.ops.aten.<op>.<overload>)`` and add an entry to
``tests/support/aten_opdb.py``.

Printed traces import this package as ``aten`` and read ``aten.add.Tensor``: a name that is not
bound here resolves to the op's overloads (``__getattr__``), so this module binds no name that
is an aten operator's.
"""

from __future__ import annotations

import torch

from thunder.core.errors import UnsupportedOpError
from thunder.core.symbol import Symbol
from thunder.ops import langs

# isort: off
# (imported in the order the operators register: the order of thunder.core.symbol.SYMBOLS)
from thunder.ops.aten import elementwise, shape, views, reductions, foreach  # noqa: F401
from thunder.ops.aten.declare import ADD_AN_OP, ATEN, PACKETS, out_value, written_value  # noqa: F401
# isort: on

# How a value written into a view an aten op made reaches its base: ``VIEW_WRITES`` for an op
# of one output, ``PIECE_WRITES`` (with the output's ``index``) for one of several.
VIEW_WRITES = {**shape.VIEW_WRITES, **views.VIEW_WRITES}
PIECE_WRITES = views.PIECE_WRITES
MULTI_OUTPUT_VIEWS = views.MULTI_OUTPUT_VIEWS
READS_MEMORY = views.READS_MEMORY


def __getattr__(name: str):
    # printed traces call ``aten.add.Tensor(...)``: the module's ``add`` is the op's overloads
    try:
        return PACKETS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


# -- calls of a whole op (``torch.ops.aten.add(a, b)``) ---------------------------------------
def _packet(packet):
    """Resolve the overload as torch does (by the arguments' types), then call its symbol."""

    def call(*args, **kwargs):
        overload = getattr(packet, torch._C._jit_resolve_packet(packet._qualified_op_name, *args, **kwargs))
        sym = ATEN.get(overload)
        if sym is None:
            raise UnsupportedOpError(f"thunder has no symbol for {overload}; {ADD_AN_OP}")
        return sym(*args, **kwargs)

    return call


for _op in sorted({o.overloadpacket for o in ATEN}, key=str):
    langs.alias(_packet(_op), _op)


def symbols() -> list[Symbol]:
    """Every aten symbol."""
    return list(ATEN.values())
