"""Integers that change from call to call: a step counter read from an input and written
back (``self.calls += 1``).

Specialising such a value makes every call trace again, so once a cached trace misses
because a number it wrote back changed, the next trace reads it as a ``DynamicInt``: the
prologue checks only that it is an int, arithmetic on it is recorded (``i1 = i0 + 1``), and
the epilogue writes the result back. Any use that needs the concrete value (``if``,
``range``, a shape, a torch op) specialises it again: the prologue then checks the value of
every input it came from.
"""

from __future__ import annotations

import operator

from thunder.core.proxies import NumberProxy
from thunder.ops import python as pyops


class DynamicInt:
    """An int-like value standing for ``proxy`` (its value while tracing: ``value``)."""

    __slots__ = ("proxy", "value", "roots", "state")

    def __init__(self, proxy: NumberProxy, value: int, roots: tuple, state):
        self.proxy = proxy
        self.value = value
        self.roots = roots  # the input NumberProxies this value is computed from
        self.state = state

    def concrete(self) -> int:
        """The value, with the prologue now checking every input it depends on."""
        self.state.specialize(self)
        return self.value

    def _op(self, other, op: str, reverse: bool = False):
        if isinstance(other, DynamicInt):
            arg, roots = other.proxy, self.roots + other.roots
        elif type(other) is int:
            arg, roots = other, self.roots
        else:  # a float, a tensor: no longer an integer counter
            fn = getattr(operator, op)
            return fn(other, self.concrete()) if reverse else fn(self.concrete(), other)
        sym = pyops.NUMBER_OPS[op]
        out = sym(arg, self.proxy) if reverse else sym(self.proxy, arg)
        return DynamicInt(out, out.value, roots, self.state)

    def __neg__(self):
        return self._op(-1, "mul")

    # uses that need the value itself
    def __index__(self):
        return self.concrete()

    __int__ = __index__

    def __float__(self):
        return float(self.concrete())

    def __bool__(self):
        return bool(self.concrete())

    def __hash__(self):
        return hash(self.concrete())

    def __format__(self, spec: str) -> str:
        return format(self.concrete(), spec)

    def __repr__(self) -> str:
        return repr(self.concrete())

    __str__ = __repr__


def _recorded(op: str, reverse: bool):
    return lambda self, o: self._op(o, op, reverse)


def _compared(op: str):
    fn = getattr(operator, op)
    return lambda self, o: fn(self.concrete(), o.concrete() if isinstance(o, DynamicInt) else o)


# ``d + 1``, ``1 + d`` ... are recorded; ``d == 1``, ``d < n`` ... use (and so check) the value
for _op in pyops.NUMBER_OPS:
    setattr(DynamicInt, f"__{_op}__", _recorded(_op, False))
    setattr(DynamicInt, f"__r{_op}__", _recorded(_op, True))
for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(DynamicInt, f"__{_op}__", _compared(_op))
