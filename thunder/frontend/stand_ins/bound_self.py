"""The object a jitted bound method belongs to (``thunder.jit(optimizer.step)``).

Its state is neither an input object with write-back nor a module shadow: what the traced
method stores in it (an optimizer's ``state[p]["momentum_buffer"] = buf``) would be a proxy
left in the user's object. Until such writes are replayed, a trace that leaves a proxy
anywhere in that object's attributes (three levels of dicts, lists and tuples deep) is refused
with the attribute's path, and the object is put back as it was (its attributes and the
containers they hold, two levels deep).

    opt = torch.optim.SGD(params, lr=0.1)                 # stateless: traced, written back
    thunder.jit(opt.step)()
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9)   # momentum buffers in opt.state
    thunder.jit(opt.step)()   # UnsupportedValueError: ... SGD.state[<tensor (4, 3)>]['momentum_buffer']
"""

from __future__ import annotations

import inspect

import torch

from thunder.core.errors import UnsupportedValueError
from thunder.core.proxies import Proxy

_CONTAINERS = (dict, list)
_DEPTH = 3


def _shallow(value):
    # a defaultdict's or OrderedDict's copy keeps its class (and factory)
    return value.copy() if isinstance(value, dict) else list(value)


class BoundSelf:
    """The snapshot of a bound method's object, taken before tracing."""

    def __init__(self, fn):
        obj = getattr(fn, "__self__", None)
        self.obj = None
        if not inspect.ismethod(fn) or isinstance(obj, torch.nn.Module) or not hasattr(obj, "__dict__"):
            return  # (a module runs as a shadow; a function has no such object)
        self.obj = obj
        self.method = fn.__qualname__
        self.attrs = dict(vars(obj))
        # attribute -> (container, its items as they were, and those of the containers it holds)
        self.held = {}
        for name, value in self.attrs.items():
            if isinstance(value, _CONTAINERS):
                inner = [(v, _shallow(v)) for v in _values(value) if isinstance(v, _CONTAINERS)]
                self.held[name] = (value, _shallow(value), inner)

    def put_back_if_leaked(self) -> str | None:
        """Where the trace left a proxy in the object (its path), after putting the object back
        as it was; None when it left none."""
        if self.obj is None:
            return None
        where = _proxy_path(vars(self.obj), type(self.obj).__name__, _DEPTH)
        if where is not None:
            self._restore()
        return where

    def refusal(self, where: str) -> UnsupportedValueError:
        return UnsupportedValueError(
            f"thunder: the traced method {self.method} stores a traced tensor in {where}, the state of "
            f"the object it is bound to ({type(self.obj).__qualname__}); such writes are not replayed on later "
            "calls. The object was put back as it was. Keep the state in an nn.Module (its buffers "
            "are written back), or pass it as an argument"
        )

    def _restore(self) -> None:
        d = vars(self.obj)
        d.clear()
        d.update(self.attrs)
        for container, items, inner in self.held.values():
            for c, was in [(container, items), *inner]:
                if isinstance(c, dict):
                    c.clear()
                    c.update(was)
                else:
                    c[:] = was


def _values(container) -> list:
    return list(container.values()) if isinstance(container, dict) else list(container)


def _proxy_path(value, path: str, depth: int) -> str | None:
    if isinstance(value, Proxy):
        return path
    if depth < 0:
        return None
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for k, v in items:
        found = _proxy_path(v, path + _key(k, depth == _DEPTH), depth - 1)
        if found is not None:
            return found
    return None


def _key(k, attribute: bool) -> str:
    if attribute and isinstance(k, str):
        return f".{k}"
    if isinstance(k, torch.Tensor):  # (an optimizer's state is keyed by its parameters)
        return f"[<tensor {tuple(k.shape)}>]"
    text = repr(k)
    return f"[{text if len(text) <= 40 else text[:39] + '...'}]"
