"""A collective's call read off a BoundSymbol, as plain data: what ``Node.collective`` is.

A collective (``thunder/ops/collectives.py``) is a prim tagged ``Tag.COMMUNICATION``; an
executor that claims one runs it from a line whose only subsymbol it is, so the executed line
is a collective too (the model gives its node the ``communication`` tag). This module reads
only thunder, so that ``explorer.model.nodes`` can use it and still import nothing of the views.
"""

from __future__ import annotations

import inspect

from thunder.core.proxies import Proxy, TensorProxy, proxies_in
from thunder.core.tags import Tag
from thunder.ops import collectives

COMMUNICATION = Tag.COMMUNICATION.value  # the tag's name, as a node's tags hold it
_SIGNATURES: dict = {}  # Symbol -> its parameters (inspect.Signature), or None
_COMMUNICATING_SYMS: dict = {}  # Symbol -> whether it is tagged COMMUNICATION
_UNSET = object()


def communicates(b) -> bool:
    """``b.has_tag(Tag.COMMUNICATION)``, with the symbol's answer kept: this runs for every node
    a view reads, and asking a TagSet hashes the Tag in Python (a third of reading tags)."""
    sym = b.sym
    yes = _COMMUNICATING_SYMS.get(sym)
    if yes is None:
        yes = _COMMUNICATING_SYMS[sym] = Tag.COMMUNICATION in sym.tags
    return yes or bool(b.tags) and Tag.COMMUNICATION in b.tags


def collective_call(b) -> dict | None:
    """A collective's call, found on ``b`` or down the chain of claims below it:
    ``{"kind": "all_reduce", "args": {"a": "t0", "op": "sum", "group": "0"}, "bytes": 4096,
    "group_size": 8}``: the prim's arguments by parameter name (proxies by name), the bytes one
    rank sends or receives (``collectives.bytes_moved``: 0 for a wait) and the size of the
    group when this process knows it. None for any other BoundSymbol."""
    top = b
    while not communicates(b):
        if len(b.subsymbols) != 1:
            return None
        b = b.subsymbols[0]
    if b is not top and _names(b.output) != _names(top.output):
        return None  # a composite of one collective that makes something else
    sig = _SIGNATURES.get(b.sym, _UNSET)
    if sig is _UNSET:
        try:
            sig = inspect.signature(b.sym.meta or b.sym.impl)
        except (TypeError, ValueError):
            sig = None
        _SIGNATURES[b.sym] = sig
    try:
        args = dict(sig.bind(*b.args, **b.kwargs).arguments) if sig is not None else None
    except TypeError:
        args = None
    if args is None:  # no signature to read the names from: by position
        args = {**{f"arg{i}": a for i, a in enumerate(b.args)}, **b.kwargs}
    inputs = [p for p in proxies_in((b.args, b.kwargs)) if isinstance(p, TensorProxy)]
    outputs = [p for p in proxies_in(b.output) if isinstance(p, TensorProxy)]
    call = {
        "kind": b.sym.name,
        "args": _plain(args),
        "bytes": collectives.bytes_moved(b.sym, inputs, outputs),
    }
    size = group_size(args.get("group"))
    if size is not None:
        call["group_size"] = size
    return call


def group_size(name) -> int | None:
    """The size of the process group named ``name`` in this process; None when
    torch.distributed is not initialised here or knows no such group (a model of a trace
    read after its group was destroyed)."""
    if not isinstance(name, str):
        return None
    try:
        return collectives.group_of(name).size()
    except Exception:  # unknown here: the size is left out, the name is still shown
        return None


def _names(x) -> list[str]:
    return [p.name for p in proxies_in(x)]


def _plain(x):
    """Arguments as JSON-able data: proxies by name (a collective's are names, numbers, lists)."""
    if isinstance(x, Proxy):
        return x.name
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x if x is None or isinstance(x, (bool, int, float, str)) else repr(x)
