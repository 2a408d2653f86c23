"""What the model knows about named values: ``ProxyInfo`` for one proxy, ``ProxyTable`` for
all of a series (read from its traces on first lookup), the proxies in a BoundSymbol's
arguments, and ``jsonable`` (proxies written by name)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from thunder.core.proxies import AnyProxy, NumberProxy, Proxy, TensorProxy, dtype_short
from thunder.core.pytree import tree_leaves
from thunder.core.subclass import SubclassProxy
from thunder.core.symbolic import size_source


def _is_proxy(x) -> bool:
    return isinstance(x, Proxy)


@dataclasses.dataclass
class ProxyInfo:
    """What is known about one named value: ``kind`` is tensor, number or object. A tensor
    subclass value also has its class's name in ``subclass`` and its inner tensors (attribute
    -> ProxyInfo, in ``__tensor_flatten__``'s order) in ``inner``."""

    name: str
    kind: str
    type: str
    shape: list[int] | None = None
    dtype: str | None = None
    device: str | None = None
    requires_grad: bool | None = None
    subclass: str | None = None
    inner: dict[str, ProxyInfo] | None = None

    @staticmethod
    def of(p) -> ProxyInfo:
        if isinstance(p, TensorProxy):
            shape = [d if type(d) is int else size_source(d) for d in p.meta_shape]  # (``s0``: a symbol)
            info = ProxyInfo(
                p.name,
                "tensor",
                p.type_string(),
                shape,
                dtype_short(p.meta_dtype),
                str(p.meta_device),
                bool(p.meta_requires_grad),
            )
            if isinstance(p, SubclassProxy):
                info.subclass = p.subclass.__name__
                info.inner = {k: ProxyInfo.of(v) for k, v in p.inner.items()}
            return info
        kind = "number" if isinstance(p, NumberProxy) else "object" if isinstance(p, AnyProxy) else "value"
        return ProxyInfo(p.name, kind, p.type_string())

    def label(self) -> str:
        """``f32[2, 3]`` for a tensor, ``ScaleTensor f32[2, 3]`` for a tensor subclass, the
        type's own name for anything else (edge labels)."""
        if self.kind == "tensor":
            plain = f"{self.dtype}[{', '.join(str(s) for s in self.shape)}]"
            return f"{self.subclass} {plain}" if self.subclass else plain
        return self.type.rsplit(".", 1)[-1]

    def inner_labels(self) -> list[str]:
        """A tensor subclass's inner tensors, ``["_x f32[2, 2]", "_scale f32[]"]`` ([] for others)."""
        return [f"{k} {v.label()}" for k, v in (self.inner or {}).items()]


_PROXY_TYPES = Proxy
_PLAIN = frozenset({int, float, bool, str, complex, type(None)})


def _proxies_in(x, out: list) -> list:
    """The proxies in ``x``, in ``tree_leaves`` order. The common shapes (a proxy, tuples,
    lists, dicts, plain numbers) are read here; anything else goes through ``tree_leaves``,
    which costs ten times more and is a third of building a model when used for everything."""
    t = type(x)
    if t is TensorProxy or isinstance(x, _PROXY_TYPES):
        out.append(x)
    elif t is tuple or t is list:
        for v in x:
            _proxies_in(v, out)
    elif t is dict:
        for v in x.values():
            _proxies_in(v, out)
    elif t not in _PLAIN:
        out.extend(v for v in tree_leaves(x) if isinstance(v, _PROXY_TYPES))
    return out


class ProxyTable(Mapping):
    """name -> ProxyInfo for every proxy of a series, made on first lookup.

    The names a built node reads or makes are known at once; the rest (deep in subsymbols no
    view has opened yet) are read from the traces the first time a name is not found.
    """

    def __init__(self):
        self._objects: dict[str, object] = {}  # name -> the first proxy seen by that name
        self._infos: dict[str, ProxyInfo] = {}
        self._pending: list[list] = []  # lists of BoundSymbols not read yet

    def note(self, proxies) -> tuple[str, ...]:
        """Remember ``proxies``; their names."""
        names = tuple(p.name for p in proxies)
        known = self._objects
        for name, p in zip(names, proxies):
            if name not in known:
                known[name] = p
        return names

    def __getitem__(self, name: str) -> ProxyInfo:
        info = self._infos.get(name)
        if info is None:
            p = self._objects.get(name)
            if p is None and self._pending:
                self._read_pending()
                p = self._objects.get(name)
            if p is None:
                raise KeyError(name)
            info = self._infos[name] = ProxyInfo.of(p)
        return info

    def __iter__(self):
        self._read_pending()
        return iter(self._objects)

    def __len__(self) -> int:
        self._read_pending()
        return len(self._objects)

    def _read_pending(self) -> None:
        seen: set[int] = set()
        stack, self._pending = self._pending, []
        while stack:
            for b in stack.pop():
                if id(b) in seen:  # passes share BoundSymbols
                    continue
                seen.add(id(b))
                self.note(_proxies_in(b.output, _proxies_in((b.args, b.kwargs), [])))
                if b.subsymbols:
                    stack.append(b.subsymbols)


def jsonable(x):
    """``x`` as JSON-able data: proxies by name, anything not plain by its ``repr``."""
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in x]
    if _is_proxy(x):
        return x.name
    return repr(x)
