"""How an aten operator is declared: ``@aten(torch.ops.aten.<op>.<overload>)`` makes the
decorated function its decomposition, the tables mapping overloads to symbols, and the two
questions the frontend asks of an in-place or ``out=`` overload (which symbol gives the value
it writes)."""

from __future__ import annotations

import types
from collections.abc import Callable

import torch

from thunder.core.symbol import Symbol, register
from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import alias, inplace_base_name
from thunder.ops.meta import is_tensor

A = torch.ops.aten

# OpOverload -> its symbol: what a subclass's dispatch and user code reach
ATEN: dict = {}
# op name -> {overload name: symbol}: ``aten.add.Tensor`` in printed traces resolves here
PACKETS: dict[str, types.SimpleNamespace] = {}

ADD_AN_OP = "aten operators are declared in thunder/ops/aten/ (with an entry in tests/support/aten_opdb.py)"

_OVERLOAD = "the overload itself"


def aten(overload, *, tags: tuple[Tag, ...] = (), torch_impl: str | None = _OVERLOAD):
    """Declare the decorated function as the decomposition of ``overload`` (an OpOverload).

    ``torch_impl``: what the torch executor calls for the whole op (by default the overload;
    ``None``: the decomposition runs)."""

    def deco(fn: Callable) -> Symbol:
        op = overload._schema.name.split("::", 1)[1]
        name = overload._overloadname
        sym = register(
            Symbol(
                f"{op}.{name}",
                "aten",
                decomposition=fn,
                tags=(Tag.ATEN, *tags),
                module_path="thunder.ops.aten",  # the package: printed traces import it as ``aten``
                torch_impl=f"torch.ops.aten.{op}.{name}" if torch_impl is _OVERLOAD else torch_impl,
                doc=f"torch.ops.aten.{op}.{name}: {overload._schema}",
            )
        )
        ATEN[overload] = sym
        PACKETS.setdefault(op, types.SimpleNamespace())
        setattr(PACKETS[op], name, sym)
        alias(sym, overload)  # user code may call the overload directly
        return sym

    return deco


def _alpha(x, alpha):
    if alpha == 1:
        return x
    return prims.mul(x, alpha) if is_tensor(x) else x * alpha


def written_value(overload) -> Symbol | None:
    """The symbol computing the value an in-place overload leaves in its first argument: its
    own, where it is declared as that value (``copy_.default``), or its functional twin's of
    the same overload (``add_.Tensor`` writes what ``add.Tensor`` returns); None if neither."""
    sym = ATEN.get(overload)
    if sym is not None:
        return sym
    op = overload._schema.name.split("::", 1)[1]
    base = inplace_base_name(op)
    twin = getattr(getattr(A, base, None), overload._overloadname, None) if base is not None else None
    return ATEN.get(twin) if isinstance(twin, torch._ops.OpOverload) else None


def out_value(overload) -> tuple[torch._ops.OpOverload, str] | None:
    """For an overload writing one keyword argument (``add.out``: ``out``): its functional
    overload of the same other arguments (``add.Tensor``, which has a symbol), whose result the
    write leaves there, and the written argument's name; None if there is none."""
    arguments = overload._schema.arguments
    written = [a for a in arguments if a.alias_info is not None and a.alias_info.is_write]
    if len(written) != 1 or not written[0].kwarg_only or str(written[0].type) != "Tensor":
        return None
    want = [(a.name, str(a.type)) for a in arguments if a is not written[0]]
    packet = overload.overloadpacket
    for name in packet.overloads():
        twin = getattr(packet, name)
        if twin in ATEN and [(a.name, str(a.type)) for a in twin._schema.arguments] == want:
            return twin, written[0].name
    return None
