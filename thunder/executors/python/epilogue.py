"""The epilogue's work: write-backs onto the user's objects (attributes, items, deletions,
torch's global state, module hooks, calls with effects, a container's new contents) and the
constructors of the return values (dataclasses, ModelOutputs, plain objects)."""

from __future__ import annotations

import torch


def python_setattr(obj, name, value):
    object.__setattr__(obj, name, value) if _is_frozen(obj) else setattr(obj, name, value)


def _is_frozen(obj) -> bool:
    params = getattr(type(obj), "__dataclass_params__", None)
    return bool(params is not None and params.frozen)


def python_setitem(obj, key, value):
    obj[key] = value


def python_delattr(obj, name):
    object.__delattr__(obj, name) if _is_frozen(obj) else delattr(obj, name)


def python_delitem(obj, key):
    del obj[key]


_TORCH_STATE_SETTERS = {"grad_enabled": torch._C._set_grad_enabled, "default_dtype": torch.set_default_dtype}


def set_torch_state(name, value):
    _TORCH_STATE_SETTERS[name](value)


def set_module_hook(module, table: str, key: int, hook, first: bool = False):
    hooks = module.__dict__[table]
    hooks[key] = hook
    if first:
        hooks.move_to_end(key, last=False)


def del_module_hook(module, table: str, key: int):
    module.__dict__[table].pop(key, None)


def python_call(fn, *args, **kwargs):
    fn(*args, **kwargs)


def python_replace(obj, contents):
    """``obj`` (a list, dict, set or deque) holds ``contents`` (its own kind, or a dict)."""
    if isinstance(obj, list):
        obj[:] = contents
    else:
        obj.clear()
        obj.update(contents) if isinstance(obj, (dict, set)) else obj.extend(contents)


def dataclass_new(cls, **attrs):
    """An instance of ``cls`` with exactly these attributes (no ``__init__``/``__post_init__``)."""
    obj = cls.__new__(cls)
    for k, v in attrs.items():
        object.__setattr__(obj, k, v)
    return obj


def mapping_new(cls, items, attrs):
    """A ModelOutput (or a dataclass that subclasses dict) with these keys in this order, and
    these attributes."""
    try:
        obj = cls()
    except TypeError:  # required fields: allocated without __init__, as dataclass_new does
        obj = cls.__new__(cls)
    for k, v in items.items():
        obj[k] = v
    for k, v in attrs.items():
        object.__setattr__(obj, k, v)
    return obj


def object_new(cls, /, **attrs):
    """An object of the Python class ``cls`` with exactly these attributes (no ``__init__``)."""
    obj = object.__new__(cls)
    for k, v in attrs.items():
        object.__setattr__(obj, k, v)
    return obj


def object_setattr(obj, name, value):
    object.__setattr__(obj, name, value)


def construct(cls, *args, **kwargs):
    return cls(*args, **kwargs)
