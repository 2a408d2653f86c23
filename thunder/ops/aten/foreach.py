"""The ``aten._foreach_*`` overloads, one per torch-language foreach op."""

from __future__ import annotations

from thunder.core.symbol import Symbol
from thunder.core.tags import Tag
from thunder.ops import ltorch
from thunder.ops.aten.declare import A, aten


# -- foreach ---------------------------------------------------------------------------------
def _declare_foreach(sym: Symbol) -> None:
    """The overloads of ``aten._foreach_<name>`` for the torch-language ``sym``
    (``ltorch.foreach_add``), sharing its decomposition: the one elementwise op over each tensor
    of the list, returning a list as aten does. A subclass's dispatch receives them for
    ``torch._foreach_add_`` on subclass values (an optimizer's foreach step), and writes its
    inner tensors with their in-place forms. Declared: the overloads whose operands are lists
    and numbers (``Scalar``, ``List``, ``ScalarList``), not those taking one tensor operand."""
    packet = getattr(A, sym.torch_impl.rsplit(".", 1)[1])

    def decomposition(*args, **kwargs):
        return list(sym.decomposition(*args, **kwargs))

    for name in packet.overloads():
        overload = getattr(packet, name)
        arguments = overload._schema.arguments
        if (
            not arguments
            or str(arguments[0].type) != "List[Tensor]"
            or any(str(a.type) == "Tensor" for a in arguments)
            or any(a.alias_info is not None and a.alias_info.is_write for a in arguments)
        ):
            continue
        aten(overload, tags=(Tag.ELEMENTWISE,))(decomposition)


for _sym in vars(ltorch.foreach).values():
    if isinstance(_sym, Symbol) and (_sym.torch_impl or "").startswith("torch._foreach_"):
        _declare_foreach(_sym)
