"""Integers that change from call to call: a step counter read from an input and written
back (``self.calls += 1``).

Specialising such a value makes every call trace again, so once a cached trace misses
because a number it wrote back changed, the next trace reads it as a ``DynamicInt``: the
prologue checks only that it is an int, arithmetic on it is recorded (``i1 = i0 + 1``), and
the epilogue writes the result back. Any use that needs the concrete value (``if``,
``range``, a shape, a torch op) specialises it again: the prologue then checks the value of
every input it came from.

A comparison of a counter plus a constant with a number (``if self.length >= self.max_len:``
in transformers' sliding-window StaticCache layers) needs only its outcome: the prologue
checks ``i0 >= 32`` is still False (``pythonex.check_int_compare(i0, '>=', 32, False)``)
rather than the value, so the next positions hit the same trace until the outcome changes.
"""

from __future__ import annotations

import operator

from thunder.core.proxies import NumberProxy
from thunder.ops import python as pyops


class DynamicInt:
    """An int-like value standing for ``proxy`` (its value while tracing: ``value``)."""

    __slots__ = ("proxy", "value", "roots", "state", "offset")

    def __init__(self, proxy: NumberProxy, value: int, roots: tuple, state, offset: int | None = 0):
        self.proxy = proxy
        self.value = value
        self.roots = roots  # the input NumberProxies this value is computed from
        self.state = state
        # ``value == roots[0] + offset`` (one root, counted up or down); None: any other form
        self.offset = offset if len(roots) == 1 else None

    def compare(self, other, op: str) -> bool:
        """``self <op> other``, with the prologue checking the outcome (or the value)."""
        fn = getattr(operator, op)
        if isinstance(other, DynamicInt):
            if self.offset is not None and other.offset is not None and self.roots[0] is other.roots[0]:
                return fn(self.offset, other.offset)  # the same counter: the outcome is fixed
            return fn(self.concrete(), other.concrete())
        if type(other) is not int or self.offset is None:
            return fn(self.concrete(), other)
        result = fn(self.value, other)
        # root + offset <op> other  <=>  root <op> other - offset
        self.state.guard_compare(self.roots[0], pyops.COMPARE_OPS[op], other - self.offset, result)
        return result

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
        offset = None
        if self.offset is not None and type(other) is int and not reverse and op in ("add", "sub"):
            offset = self.offset + other if op == "add" else self.offset - other
        elif self.offset is not None and type(other) is int and reverse and op == "add":
            offset = self.offset + other
        return DynamicInt(out, out.value, roots, self.state, offset)

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
    return lambda self, o: self.compare(o, op)


# ``d + 1``, ``1 + d`` ... are recorded; ``d == 1``, ``d < n`` ... use (and so check) the value
for _op in pyops.NUMBER_OPS:
    setattr(DynamicInt, f"__{_op}__", _recorded(_op, False))
    setattr(DynamicInt, f"__r{_op}__", _recorded(_op, True))
for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(DynamicInt, f"__{_op}__", _compared(_op))
