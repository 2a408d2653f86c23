"""The symbols of ops on tensor-subclass values: ``ScaleTensor.torch.add`` is ``torch.add``
on ScaleTensor values, as the class's ``__torch_dispatch__`` resolves it.

One symbol per class and op, registered when first met (its module the class's name, unique
in the process). It prints as the torch function with the class's name in front; the torch
executor may run it whole on real instances; its decomposition runs the call being traced
(``_Call``, in ``_ACTIVE`` while thunder/frontend/subclasses/ops.py records it), whose
dispatch's aten ops become its subsymbols.
"""

from __future__ import annotations

import functools
import threading

import torch

from thunder.core.errors import describe
from thunder.core.printing import output_str, type_comment
from thunder.core.pytree import tree_leaves
from thunder.core.subclass import subclass_name
from thunder.core.symbol import Symbol, register
from thunder.core.tags import Tag
from thunder.ops.langs import inplace_base_name, property_name, resolve_path

T = torch.Tensor

# Python's operators on a tensor reach the mode as these methods (``x + 1`` as ``Tensor.add``),
# which are the same op as the torch function: a subclass op prints as the function
# (``ScaleTensor.torch.add``) and runs it.
_OPERATORS = {
    getattr(T, name): getattr(torch, name)
    for name in (
        "add", "sub", "mul", "div", "matmul", "neg", "pow", "abs", "eq", "ne", "lt", "le", "gt", "ge",
        "floor_divide", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    )
}  # fmt: skip
_INPLACE_OPERATORS = {
    "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
    "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imatmul__", "__setitem__",
}  # fmt: skip


_SYMBOLS: dict[tuple[type, str], Symbol] = {}
_MODULE_NAMES: dict[type, str] = {}


def _module_name(cls: type) -> str:
    """A name for ``cls`` unique in this process (the symbols' ids); printing uses the class's
    own name, made unique per trace."""
    name = _MODULE_NAMES.get(cls)
    if name is None:
        base, name, i = cls.__name__, cls.__name__, 1
        taken = set(_MODULE_NAMES.values())
        while name in taken:
            i += 1
            name = f"{base}_{i}"
        _MODULE_NAMES[cls] = name
    return name


def _torch_path(func) -> tuple[str, object, bool]:
    """(how ``func`` prints, what runs, whether the printed path resolves to it)."""
    if isinstance(func, Symbol):  # a thunder op of a backward (``ScaleTensor.prims.mul``)
        return func.id, _runnable(func), False
    func = _OPERATORS.get(func, func)
    prop = property_name(func)
    if prop is not None:
        return f"torch.Tensor.{prop}.__get__", func, True
    path = describe(func)
    try:
        resolves = resolve_path(path) is func
    except (AttributeError, KeyError):
        resolves = False
    return path, func, resolves


def _print_op(cls: type, path: str, bsym, printer) -> str:
    call = printer.call(f"{subclass_name(printer, cls)}.{path}", bsym.args, bsym.kwargs)
    out = output_str(printer, bsym.output)
    line = f"{out} = {call}" if out else call
    comment = type_comment(tree_leaves(bsym.output))
    return f"{line}  # {comment}" if comment else line


def subclass_symbol(cls: type, func, *, writes: bool = False) -> Symbol:
    """``ScaleTensor.torch.add``: ``func`` on values of ``cls``, resolved by its dispatch.
    ``writes``: an in-place op (``TwoTensor.torch.Tensor.add_``), whose output is the value
    its first argument holds afterwards; never run whole (it would write its argument)."""
    path, fn, resolves = _torch_path(func)
    sym = _SYMBOLS.get((cls, path, writes))
    if sym is None:
        # (``F.relu(x, inplace=True)`` is a symbol apart from ``F.relu(x)``)
        leaf = path.rsplit(".", 1)[-1]
        in_place_name = inplace_base_name(leaf) is not None or leaf in _INPLACE_OPERATORS
        sym = _SYMBOLS[(cls, path, writes)] = register(
            Symbol(
                f"{path}.inplace" if writes and not in_place_name else path,
                _module_name(cls),
                decomposition=functools.partial(_decompose, fn),
                impl=fn,
                tags=(Tag.TENSOR_SUBCLASS,),
                printer=functools.partial(_print_op, cls, path),
                # the torch executor may run it whole on real instances (when autograd must
                # see the subclass op itself)
                torch_impl=path if resolves and not writes else None,
                doc=f"{path} on {cls.__qualname__} values, as its __torch_dispatch__ resolves it",
            )
        )
    return sym


def _runnable(sym: Symbol):
    """What computes the thunder op ``sym`` on tensors: the torch callable of a torch-language
    op, or a prim's eager implementation."""
    if sym.torch_impl is not None:
        return resolve_path(sym.torch_impl)
    return sym.eager


# -- the call being traced, which a symbol's decomposition runs -----------------------------
class _Call:
    """One subclass op being traced."""

    def __init__(self, subclasses, fn, cls, loc, rargs, rkwargs, pleaves, writes=None):
        self.subclasses = subclasses
        self.writes = writes  # an in-place op: the object it writes (an instance or a proxy)
        self.changed: list = []  # of an in-place op: (instance, its new value) for each value it wrote
        self.fn = fn
        self.cls = cls
        self.loc = loc  # the user's line
        self.rargs = rargs  # what ``fn`` runs on: instances and proxies
        self.rkwargs = rkwargs
        self.inputs = pleaves  # the proxies of the call's arguments
        self.recorded = 0  # aten ops recorded by the dispatch
        self.produced: set[str] = set()  # the names of their outputs
        self.result = None  # what the dispatch returned (instances), for user code
        self.what = f"{describe(fn)} on a {cls.__qualname__}"


_ACTIVE = threading.local()


def _decompose(fn, *args, **kwargs):
    call = getattr(_ACTIVE, "call", None)
    if call is None:
        raise RuntimeError(
            "thunder: subclass ops are recorded by the acquisition mode, not called in a trace"
        )
    return call.subclasses._run(call, args, kwargs)
