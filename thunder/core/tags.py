"""Tags: the one vocabulary that symbols, BoundSymbols, passes and the explorer share.

A Symbol's tags say what the op is (``Tag.ELEMENTWISE``, ``Tag.INPLACE``); a BoundSymbol's
tags say how this one call was made (``Tag.NO_GRAD``: recorded inside ``with
torch.no_grad():``). Passes test membership (``Tag.INPLACE in bsym.sym.tags``) and the
explorer shows ``tag.value``. Tags are enum members, never strings, so a misspelt tag is an
``AttributeError`` at import rather than a test that silently never matches.
"""

from __future__ import annotations

import enum


class Tag(enum.Enum):
    # what an op is
    PRIM = "prim"  # a primitive: executors must run it
    PYTHON = "python"  # a Python-level primitive of prologues and epilogues
    LTORCH = "ltorch"  # a torch-language op (a composite of prims)
    ATEN = "aten"  # a ``torch.ops.aten`` operator (a composite of prims)
    ELEMENTWISE = "elementwise"
    UNARY = "unary"
    BINARY = "binary"
    SHAPE = "shape"
    VIEW = "view"  # aliases its first argument in eager
    REDUCTION = "reduction"
    FACTORY = "factory"
    RANDOM = "random"
    CAST = "cast"
    COPY = "copy"
    INDEXING = "indexing"
    MATMUL = "matmul"
    CONV = "conv"
    POOL = "pool"
    NORM = "norm"
    LOSS = "loss"
    ACTIVATION = "activation"
    ATTENTION = "attention"
    RESAMPLE = "resample"  # interpolation and sampling at computed positions
    RECURRENT = "recurrent"  # a cell composed over time steps (LSTM, GRU)
    TRANSCENDENTAL = "transcendental"  # costly per element (exp, erf, roots): saved, not recomputed
    BACKWARD_OP = "backward_op"  # mirrors an aten backward kernel (thunder/ops/ltorch/backward.py)
    NUMBER = "number"  # arithmetic on Python ints that change from call to call
    AUTOGRAD_FUNCTION = "autograd_function"  # a custom torch.autograd.Function's apply
    CUSTOM = "custom"  # a library's torch.ops operator, opaque: run whole by the torch executor
    COMMUNICATION = "communication"  # a collective of torch.distributed, or the wait that ends one
    # effects and roles (never removed by dead-code elimination, shown by the explorer)
    INPLACE = "inplace"
    WRITEBACK = "writeback"
    PROLOGUE_CHECK = "prologue_check"
    UNPACK = "unpack"
    DATACLASS_NEW = "dataclass_new"
    DEL = "del"
    FUSION = "fusion"
    # how one call was recorded
    NO_GRAD = "no_grad"
    ENABLE_GRAD = "enable_grad"
    # gradients and tensor subclasses
    BACKWARD = "backward"
    SAVED_FOR_BACKWARD = "saved_for_backward"
    RECOMPUTED = "recomputed"
    # its outputs are not kept from the forward to the backward: the backward recomputes them
    # (FSDP's unshard of a group that reshards after forward: thunder/frontend/distributed/fsdp.py)
    RECOMPUTE_IN_BACKWARD = "recompute_in_backward"
    FLATTEN_TENSOR_SUBCLASS = "flatten_tensor_subclass"
    UNFLATTEN_TENSOR_SUBCLASS = "unflatten_tensor_subclass"
    TENSOR_SUBCLASS = "tensor_subclass"

    def __repr__(self) -> str:
        return f"Tag.{self.name}"

    # members are equal only to themselves: hashed by identity, in C (Enum's hash is a Python
    # call, and passes test tags on every BoundSymbol of a model)
    __hash__ = object.__hash__


class TagSet(frozenset):
    """A Symbol's tags: a frozenset of ``Tag`` members that refuses to be asked about a string
    (a test for the string ``inplace`` would silently be False)."""

    __slots__ = ()

    def __contains__(self, item) -> bool:
        if isinstance(item, str):
            raise TypeError(f"thunder: tags are Tag members; ask for Tag.{item.upper()}, not {item!r}")
        return frozenset.__contains__(self, item)


def tags(*members: Tag) -> TagSet:
    """``tags(Tag.INPLACE, Tag.WRITEBACK)``: a set checked to hold only tags."""
    for t in members:
        if not isinstance(t, Tag):
            raise TypeError(f"thunder: tags must be thunder.core.tags.Tag members, got {t!r}")
    return TagSet(members)


# Effects: BoundSymbols with these tags (on themselves or their symbol) are never removed.
EFFECT_TAGS = frozenset({Tag.INPLACE, Tag.WRITEBACK, Tag.PROLOGUE_CHECK})
# The grad mode a BoundSymbol was recorded under, when it differs from the trace's.
GRAD_MODE_TAGS = frozenset({Tag.NO_GRAD, Tag.ENABLE_GRAD})


def inherit(child: frozenset, parent: frozenset, kept: frozenset) -> frozenset:
    """A subsymbol's tags once it stands in for its parent (claiming, flattening): the
    parent's ``kept`` tags added, but not the parent's grad mode where the subsymbol was
    recorded under a grad mode of its own (``detach``'s ``no_grad`` copy)."""
    add = parent & kept
    if child & GRAD_MODE_TAGS:
        add = add - GRAD_MODE_TAGS
    return frozenset(child) | add
