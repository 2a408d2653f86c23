"""A small pytree: flatten and rebuild nested Python values.

Unlike torch's pytree it also opens dataclass instances (so proxies stored in a dataclass
are seen) and namedtuples, and treats everything else as a leaf. ``torch.Size`` stays a leaf
only when it holds no proxies (it cannot).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _is_dataclass_instance(x) -> bool:
    return dataclasses.is_dataclass(x) and not isinstance(x, type)


class _Leaf:
    __slots__ = ()

    def __repr__(self) -> str:
        return "*"


LEAF = _Leaf()


def _tuple(context, kids: list):
    return tuple(kids)


def _list(context, kids: list):
    return kids


def _dict(keys, kids: list):
    return dict(zip(keys, kids))


def _slice(context, kids: list):
    return slice(*kids)


def _namedtuple(cls, kids: list):
    return cls(*kids)


def _dataclass(context, kids: list):
    cls, names = context
    obj = object.__new__(cls)
    for n, v in zip(names, kids):
        object.__setattr__(obj, n, v)
    return obj


def _mapping(context, kids: list):
    cls, keys = context
    obj = cls()
    for k, v in zip(keys, kids):
        obj[k] = v
    return obj


@dataclasses.dataclass(frozen=True)
class Spec:
    """How to rebuild a value: ``rebuild(context, children's values)``, the context (type,
    keys) and the children's specs."""

    rebuild: Callable[[Any, list], Any]
    context: Any
    children: tuple


# Types whose values are leaves, by exact type: no container test for them (a proxy's module
# adds its tensor proxy type). Every pass flattens the arguments of every BoundSymbol.
LEAF_TYPES: set[type] = {type(None), bool, int, float, complex, str, bytes, type(Ellipsis)}


def tree_flatten(x) -> tuple[list, Any]:
    leaves: list = []
    spec = _flatten(x, leaves)
    return leaves, spec


def _flatten(x, leaves: list):
    t = type(x)
    if t in LEAF_TYPES:
        leaves.append(x)
        return LEAF
    if t is tuple or t is list:
        return Spec(_tuple if t is tuple else _list, None, tuple([_flatten(c, leaves) for c in x]))
    if t is dict:
        keys = tuple(x.keys())
        return Spec(_dict, keys, tuple([_flatten(x[k], leaves) for k in keys]))
    if t is slice:
        return Spec(_slice, None, tuple([_flatten(c, leaves) for c in (x.start, x.stop, x.step)]))
    if _is_namedtuple(x):
        return Spec(_namedtuple, t, tuple(_flatten(c, leaves) for c in x))
    if _is_dataclass_instance(x) and not isinstance(x, dict):
        names = tuple(f.name for f in dataclasses.fields(x) if hasattr(x, f.name))
        return Spec(_dataclass, (t, names), tuple(_flatten(getattr(x, n), leaves) for n in names))
    if isinstance(x, dict):  # OrderedDict and other mappings, transformers' ModelOutput
        keys = tuple(x.keys())
        return Spec(_mapping, (t, keys), tuple(_flatten(x[k], leaves) for k in keys))
    leaves.append(x)
    return LEAF


def tree_unflatten(leaves, spec):
    it = iter(leaves)
    return _unflatten(it, spec)


def _unflatten(it, spec):
    if spec is LEAF:
        return next(it)
    return spec.rebuild(spec.context, [_unflatten(it, c) for c in spec.children])


def tree_map(fn: Callable, x):
    leaves, spec = tree_flatten(x)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)


def tree_leaves(x) -> list:
    """The leaves of ``x``, in ``tree_flatten``'s order (without making its spec)."""
    leaves: list = []
    _leaves(x, leaves)
    return leaves


def _leaves(x, leaves: list) -> None:
    # ``_flatten``'s walk, keeping only the leaves
    t = type(x)
    if t in LEAF_TYPES:
        leaves.append(x)
    elif t is tuple or t is list:
        for c in x:
            _leaves(c, leaves)
    elif t is dict:
        for c in x.values():
            _leaves(c, leaves)
    elif t is slice:
        _leaves(x.start, leaves)
        _leaves(x.stop, leaves)
        _leaves(x.step, leaves)
    elif _is_namedtuple(x):
        for c in x:
            _leaves(c, leaves)
    elif _is_dataclass_instance(x) and not isinstance(x, dict):
        for f in dataclasses.fields(x):
            if hasattr(x, f.name):
                _leaves(getattr(x, f.name), leaves)
    elif isinstance(x, dict):
        for k in tuple(x.keys()):
            _leaves(x[k], leaves)
    else:
        leaves.append(x)
