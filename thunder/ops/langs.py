"""How torch-language ops are declared and found.

``@torchsymbol(torch.sin, torch.Tensor.sin, torch_impl="torch.sin")`` registers a composite
Symbol printed as ``ltorch.sin`` and maps the given torch callables to it, so the acquisition
mode can translate what user code calls. ``torch_impl`` names the torch callable the torch
executor may run for the whole op (so the executed trace calls ``torch.sin`` once rather
than the decomposition); ``impl_check`` says when that is allowed for given arguments.
``number_operands`` lists the positions (and keywords: ``alpha``) where the op takes a number
that changes between calls as a traced value (``torch.mul(x, i0)``): its decomposition, and the grad rules of the
prims it makes, pass that operand on without looking at its value (``prims.pow``'s rule
does: ``if b == 0``), so the trace holds for every value of the same type.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable

import torch

from thunder.core.symbol import Symbol, SymbolTable, register, symbols_with
from thunder.core.tags import Tag

# torch callable (function, method descriptor) -> thunder callable
TORCH_TO_THUNDER: dict = {}
# names of getset descriptors (``x.T``) -> thunder callable taking the tensor
PROPERTY_TO_THUNDER: dict[str, Callable] = {}
# op -> positions (or keywords) of its number operands that may be a traced value (a counter); default:
# none, so a number that changes between calls reaching any other op is specialised
NUMBER_OPERANDS = SymbolTable("number operands")


def resolve_path(path: str):
    """``"torch.nn.functional.linear"`` -> the callable."""
    obj = {"torch": torch}[path.split(".")[0]]
    for part in path.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def torchsymbol(
    *torch_fns,
    torch_impl: str | None = None,
    impl_check: Callable | None = None,
    tags: tuple[Tag, ...] = (),
    name: str | None = None,
    number_operands: tuple[int | str, ...] = (),
):
    """Declare the decorated function as the decomposition of the op ``ltorch.<name>``."""

    def deco(fn: Callable) -> Symbol:
        if torch_impl is not None:
            resolve_path(torch_impl)  # fail at import if the path is wrong
        sym = register(
            Symbol(
                name or fn.__name__,
                "ltorch",
                decomposition=fn,
                tags=(Tag.LTORCH, *tags),
                module_path="thunder.ops.ltorch",
                torch_impl=torch_impl,
                impl_check=impl_check,
            )
        )
        _map(torch_fns, sym)
        if number_operands:
            NUMBER_OPERANDS[sym] = number_operands
        return sym

    return deco


def result_type(name: str, fields: list[str]) -> type:
    """The namedtuple a torch-language op returns in traces (``max`` -> values, indices); the
    compiled code builds eager's class for it (``torch.return_types.max``, its
    ``__torch_return_type__``), so a caller's ``type(out)`` and ``isinstance`` see eager's."""
    cls = namedtuple(name, fields)
    cls.__torch_return_type__ = getattr(torch.return_types, name, None)
    return cls


def inplace_base_name(name: str) -> str | None:
    """The out-of-place name of an in-place op's: ``add_`` -> ``add``, ``_foreach_mul_`` ->
    ``_foreach_mul``; None when ``name`` is not one (``add``, ``__add__``, ``__iadd__``)."""
    if name.endswith("_") and not name.endswith("__"):
        return name[:-1]
    return None


def out_of_place(func, namespace=torch) -> Callable | None:
    """The thunder op of the out-of-place twin, in ``namespace`` (``torch``,
    ``torch.Tensor``, an aten packet's namespace), of the in-place callable ``func``
    (``Tensor.add_`` -> ``ltorch.add``); None when it is not in-place or has no twin."""
    base = inplace_base_name(getattr(func, "__name__", ""))
    twin = getattr(namespace, base, None) if base is not None else None
    return TORCH_TO_THUNDER.get(twin) if twin is not None else None


def alias(sym_or_fn: Callable, *torch_fns) -> None:
    """Map more torch callables (``Tensor.__rsub__``) to an existing op or a small adapter."""
    _map(torch_fns, sym_or_fn)


def _map(torch_fns, target) -> None:
    for f in torch_fns:
        prev = TORCH_TO_THUNDER.get(f)
        if prev is not None and prev is not target:
            raise ValueError(f"thunder: {f} is mapped to both {prev} and {target}")
        TORCH_TO_THUNDER[f] = target


def tensor_property(name: str):
    def deco(fn: Callable) -> Callable:
        PROPERTY_TO_THUNDER[name] = fn
        return fn

    return deco


def property_name(fn) -> str | None:
    """The name of the tensor property ``fn`` reads (torch calls a property's getter as its
    getset descriptor's ``__get__``: ``x.T``), or None for any other callable."""
    if getattr(fn, "__name__", None) == "__get__" and hasattr(fn, "__self__"):
        return fn.__self__.__name__
    return None


def first_is_tensor(*args, **kwargs) -> bool:
    return bool(args) and isinstance(args[0], torch.Tensor)


def all_symbols() -> list[Symbol]:
    """Every torch-language op."""
    return list(symbols_with(Tag.LTORCH))
