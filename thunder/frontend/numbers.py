"""Integers that change from call to call: a step counter read from an input and written
back (``self.calls += 1``).

Specialising such a value makes every call trace again, so once a cached trace misses
because a number it wrote back changed, the next trace reads it as a ``DynamicInt``: the
prologue checks only that it is an int, arithmetic on it is recorded (``i1 = i0 + 1``), and
the epilogue writes the result back. Any use that needs the concrete value (``if``,
``range``, a shape) specialises it again: the prologue then checks the value of every input
it came from.

A counter in tensor arithmetic (``x * self.calls``, ``x + n``, ``x > n``) stays a value: the
op takes the number as its operand (``t0 = torch.mul(x, i1)``) where the op declares it can
(``number_operands`` of ``thunder/ops/langs.py``: its decomposition never looks at the
value). An op that does not, or a torch function that parses its arguments in C
(``torch.full((2,), n)``), gets the value and the prologue checks it.

A comparison of a counter plus a constant with a number (``if self.length >= self.max_len:``
in transformers' sliding-window StaticCache layers) needs only its outcome: the prologue
checks ``i0 >= 32`` is still False (``pythonex.check_int_compare(i0, '>=', 32, False)``)
rather than the value, so the next positions hit the same trace until the outcome changes.
"""

from __future__ import annotations

import operator

import torch

from thunder.core.proxies import NumberProxy
from thunder.ops import python as pyops
from thunder.ops.langs import NUMBER_OPERANDS, TORCH_TO_THUNDER

# ``x <op> d`` as eager calls it, the tensor first: the torch function and whether the
# operands swap (``d - x`` is ``torch.rsub(x, d)``; ``d * x`` is ``x * d``)
_TENSOR_FIRST = {"add": torch.Tensor.__add__, "mul": torch.Tensor.__mul__}
_TENSOR_SECOND = {**_TENSOR_FIRST, "sub": torch.rsub}
# ``d < x`` is ``x > d``
_REFLECTED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


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
        if isinstance(other, torch.Tensor):  # ``x > n``: an elementwise comparison
            return self._with_tensor(other, getattr(torch.Tensor, f"__{_REFLECTED[op]}__"))
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

    def _with_tensor(self, t: torch.Tensor, func):
        """``func(t, self)`` through the acquisition mode, which passes the number to the op as
        a traced value where the op takes one (``NUMBER_OPERANDS``), else its value."""
        if not torch._C._is_torch_function_mode_enabled():  # (not under the mode: its value)
            return func(t, self.concrete())
        return torch.overrides.handle_torch_function(func, (t,), t, self)

    def _op(self, other, op: str, reverse: bool = False):
        if isinstance(other, torch.Tensor):  # ``x * n`` (reverse) or ``n - x``
            func = _TENSOR_FIRST.get(op) if reverse else _TENSOR_SECOND.get(op)
            if func is None:
                func = getattr(torch.Tensor, f"__{op}__" if reverse else f"__r{op}__")
            return self._with_tensor(other, func)
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

    def __truediv__(self, other):  # a float, no longer an integer counter (a tensor: the op)
        if isinstance(other, torch.Tensor):
            return self._with_tensor(other, torch.Tensor.__rtruediv__)
        return self.concrete() / other

    def __rtruediv__(self, other):
        if isinstance(other, torch.Tensor):
            return self._with_tensor(other, torch.Tensor.__truediv__)
        return other / self.concrete()

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


def is_int_value(v) -> bool:
    """An int, or a counter traced as a value."""
    return type(v) is int or isinstance(v, DynamicInt)


def traced_operands(func, args: tuple) -> tuple:
    """``args`` of the torch function ``func`` with each counter the op takes as a traced number
    replaced by its proxy (the others are specialised when the arguments are resolved)."""
    positions = NUMBER_OPERANDS.get(TORCH_TO_THUNDER.get(func))
    if not positions:
        return args
    return tuple(a.proxy if i in positions and isinstance(a, DynamicInt) else a for i, a in enumerate(args))
