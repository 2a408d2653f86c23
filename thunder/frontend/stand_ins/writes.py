"""What the traced code did to state it did not make, as the epilogue makes it again on every
call: one frozen record per kind of write.

Stand-ins (object wrappers, module shadows, tracked containers) and the effects recorder note
the writes while tracing; the epilogue turns each into its step with ``Write.step``. A record
knows its own step, so the epilogue has no list of kinds, and a new kind of write is a new
record here:

    SetAttr(m, "calls", 2)                       ->  pythonex.python_setattr(m, 'calls', 2)
    SetItem(g, "n", 3)                           ->  pythonex.python_setitem(g, 'n', 3)
    ContainerCall(L, list, "append", "L", (t0,))  ->  pythonex.python_call(list.append, L, t0)
    ReplaceContents(L, "L", [1, t0])             ->  pythonex.python_replace(L, [1, t0])
    PythonCall(print, ("loss", t3), {})          ->  pythonex.python_call(print, 'loss', t3)

``holder`` is the proxy that names the written object in the epilogue (or, until the effects
recorder gives it its name, the object itself: ``ObjectState.restore``); ``value`` is what the
traced code left there, which the epilogue builds from the computation's outputs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

from thunder.core.proxies import TensorProxy
from thunder.core.symbol import BoundSymbol
from thunder.ops import python as pyops


class EpilogueSteps(Protocol):
    """What a write needs from the epilogue being built (``frontend/epilogue/outputs.py``)."""

    recorded_values: bool  # (building a print's arguments: tensors as recorded)

    def input_object(self, holder) -> Any: ...

    def build(self, value, path: str, name: str | None = None) -> Any: ...

    def effect_value(self, value, path: str, line) -> Any: ...


@dataclass(frozen=True)
class Write(ABC):
    """One write the epilogue makes on every call."""

    @abstractmethod
    def step(self, epilogue: EpilogueSteps) -> BoundSymbol:
        """The epilogue's BoundSymbol that makes the write (its values built by ``epilogue``)."""

    def values(self) -> tuple:
        """The values the step builds (objects they share are built once)."""
        return ()


@dataclass(frozen=True)
class HolderWrite(Write):
    """A write into one object: ``holder`` names it in the epilogue."""

    holder: Any


@dataclass(frozen=True)
class SetAttr(HolderWrite):
    """``obj.name = value``."""

    name: str
    value: Any

    def values(self) -> tuple:
        return (self.value,)

    def step(self, epilogue: EpilogueSteps) -> BoundSymbol:
        obj = epilogue.input_object(self.holder)
        value = epilogue.build(self.value, f"{self.holder.name}.{self.name}", self.name)
        return BoundSymbol(pyops.python_setattr, (obj, self.name, value), {}, None)


@dataclass(frozen=True)
class DelAttr(HolderWrite):
    """``del obj.name``."""

    name: str

    def step(self, epilogue: EpilogueSteps) -> BoundSymbol:
        return BoundSymbol(pyops.python_delattr, (epilogue.input_object(self.holder), self.name), {}, None)


@dataclass(frozen=True)
class SetItem(HolderWrite):
    """``obj[key] = value`` (a list's whole contents: ``key`` the full slice)."""

    key: Any
    value: Any

    def values(self) -> tuple:
        return (self.value,)

    def step(self, epilogue: EpilogueSteps) -> BoundSymbol:
        obj = epilogue.input_object(self.holder)
        value = epilogue.build(self.value, f"{self.holder.name}[{self.key!r}]")
        return BoundSymbol(pyops.python_setitem, (obj, _key(epilogue, self.key), value), {}, None)


@dataclass(frozen=True)
class DelItem(HolderWrite):
    """``del obj[key]``."""

    key: Any

    def step(self, epilogue: EpilogueSteps) -> BoundSymbol:
        obj = epilogue.input_object(self.holder)
        return BoundSymbol(pyops.python_delitem, (obj, _key(epilogue, self.key)), {}, None)


def _key(epilogue: EpilogueSteps, key):
    """A dict's key in the epilogue: a tensor key (an optimizer's state, keyed by the
    parameters) is the input tensor itself."""
    return epilogue.build(key, "a key") if isinstance(key, TensorProxy) else key


@dataclass(frozen=True)
class ReplaceContents(HolderWrite):
    """A container the code read and wrote gets its final contents (``label``: how errors name it)."""

    label: str | None
    contents: Any

    def values(self) -> tuple:
        return (self.contents,)

    def step(self, epilogue: EpilogueSteps) -> BoundSymbol:
        obj = epilogue.input_object(self.holder)
        built = epilogue.effect_value(self.contents, f"the contents of {self.label}", None)
        return BoundSymbol(pyops.python_replace, (obj, built), {}, None)


@dataclass(frozen=True)
class ContainerCall(HolderWrite):
    """A container the code did not read gets the calls it logged (``list.append(L, t0)``), made
    at the user's ``line``."""

    cls: type
    method: str
    label: str
    line: Any
    args: tuple

    def values(self) -> tuple:
        return self.args

    def step(self, epilogue: EpilogueSteps) -> BoundSymbol:
        obj = epilogue.input_object(self.holder)
        where = f"the value given to {self.label}.{self.method}()"
        args = [epilogue.effect_value(a, where, self.line) for a in self.args]
        return BoundSymbol(pyops.python_call, (getattr(self.cls, self.method), obj, *args), {}, None)


@dataclass(frozen=True)
class SetHook(HolderWrite):
    """A hook the code registered on a module: ``table`` (``_forward_hooks``), the handle's id,
    and whether it was registered to run first."""

    table: str
    handle: int
    hook: Any
    first: bool

    def values(self) -> tuple:
        return (self.hook,)

    def step(self, epilogue: EpilogueSteps) -> BoundSymbol:
        obj = epilogue.input_object(self.holder)
        hook = epilogue.build(self.hook, f"{self.holder.name}.{self.table}[{self.handle}]")
        kwargs = {"first": True} if self.first else {}
        return BoundSymbol(pyops.set_module_hook, (obj, self.table, self.handle, hook), kwargs, None)


@dataclass(frozen=True)
class DelHook(HolderWrite):
    """A hook the code removed from a module's ``table``."""

    table: str
    handle: int

    def step(self, epilogue: EpilogueSteps) -> BoundSymbol:
        obj = epilogue.input_object(self.holder)
        return BoundSymbol(pyops.del_module_hook, (obj, self.table, self.handle), {}, None)


@dataclass(frozen=True)
class PythonCall(Write):
    """A print, a log record or a warning of the traced code, made again with each call's values."""

    fn: Any
    args: tuple
    kwargs: dict

    def values(self) -> tuple:
        return (*self.args, *self.kwargs.values())

    def step(self, epilogue: EpilogueSteps) -> BoundSymbol:
        name = getattr(self.fn, "__qualname__", "call")
        # (each tensor as it was at the call: the frontend recorded that value, not the object's last)
        epilogue.recorded_values = True
        try:
            built = [epilogue.build(a, f"the argument {i} of {name}") for i, a in enumerate(self.args)]
            kw = {k: epilogue.build(a, f"the argument {k} of {name}") for k, a in self.kwargs.items()}
        finally:
            epilogue.recorded_values = False
        return BoundSymbol(pyops.python_call, (self.fn, *built), kw, None)
