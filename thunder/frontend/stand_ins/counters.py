"""Numbers that change from call to call: a step counter read from an input and written
back (``self.calls += 1``, ``self.t += 0.1``).

Specialising such a value makes every call trace again, so once a cached trace misses
because a number it wrote back changed, the next trace reads it as a ``DynamicNumber``: the
prologue checks only its type (an int stays an int, a float a float; a bool is never one),
arithmetic on it is recorded (``i1 = i0 + 1``), and the epilogue writes the result back.
Any use that needs the concrete value (``if``, ``range``, a shape) specialises it again:
the prologue then checks the value of every input it came from.

A counter in tensor arithmetic (``x * self.calls``, ``x + n``, ``x > n``) stays a value: the
op takes the number as its operand (``t0 = torch.mul(x, i1)``) where the op declares it can
(``number_operands`` of ``thunder/ops/langs.py``: its decomposition never looks at the
value). An op that does not, or a torch function that parses its arguments in C
(``torch.full((2,), n)``), gets the value and the prologue checks it. ``x *= n`` writes into
``x`` as eager does (the bytecode tells it from ``x * n``, which reach the same reflected
method); a call that shows neither (``operator.imul(x, n)``) traces again with the numbers
specialised. A counter where Python asks for a plain number in C (``round(n)``) does too.

The counters are globals, closure cells, attributes of modules, of the plain objects modules
hold and of objects read through globals; ``isinstance(n, int)`` answers as for the number,
``type(n)`` names this class.

A float traced as a value is a ``DynamicFloat``, a subclass of ``torch.SymFloat``: torch's C
argument parser takes a SymFloat where a number goes (``alpha=-lr`` of ``torch._foreach_add_``,
``param.add_(grad, alpha=-lr)``, ``addcdiv(..., value=-step_size)``) and hands the object itself
to the acquisition mode, which passes it on as a traced value where the op takes one (keyword
operands such as ``alpha`` included) and otherwise specialises it. A learning rate a schedule
changes on every step is one: the optimizer's step compiles once for every rate.

A comparison of a counter plus a constant with a number (``if self.length >= self.max_len:``
in transformers' sliding-window StaticCache layers) needs only its outcome: the prologue
checks ``i0 >= 32`` is still False (``pythonex.check_int_compare(i0, '>=', 32, False)``)
rather than the value, so the next positions hit the same trace until the outcome changes.
"""

from __future__ import annotations

import dis
import operator
import sys

import torch

from thunder.core.errors import at
from thunder.core.proxies import NumberProxy
from thunder.core.pytree import tree_flatten
from thunder.core.source import user_location
from thunder.ops import python as pyops
from thunder.ops.langs import NUMBER_OPERANDS, TORCH_TO_THUNDER, out_of_place

# ``d <op> x`` as eager's reflected method computes it: ``d + x`` is ``x + d``, ``d - x`` is
# ``torch.rsub(x, d)``, ``d / x`` is ``torch.div(d, x)`` (the number first: ``_NUMBER_FIRST``)
_NUMBER_LEFT = {
    "add": torch.Tensor.__add__,
    "mul": torch.Tensor.__mul__,
    "sub": torch.rsub,
    "truediv": torch.div,
    "floordiv": torch.floor_divide,
    "mod": torch.remainder,
}
_NUMBER_FIRST = frozenset({"truediv", "floordiv", "mod"})
# ``x *= d``: eager writes into ``x``
_IN_PLACE = {
    "add": torch.Tensor.add_,
    "sub": torch.Tensor.sub_,
    "mul": torch.Tensor.mul_,
    "truediv": torch.Tensor.div_,
    "floordiv": torch.Tensor.floor_divide_,
    "mod": torch.Tensor.remainder_,
}
# ``d < x`` is ``x > d``
_REFLECTED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_BINARY_OP = dis.opmap.get("BINARY_OP")  # (Python 3.11 on: one opcode for ``*`` and ``*=``)


def _written_in_place(op: str) -> bool:
    """Whether the user's operator that reached a DynamicNumber's reflected method is the
    augmented one (``x *= n``: the tensor's own method declined the number, and Python falls
    back to ``n.__rmul__(x)`` as it does for ``x * n``). A call the bytecode does not show
    (``operator.imul(x, n)``) raises: the trace is made again with the number specialised."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    code, i = (f.f_code.co_code, f.f_lasti) if f is not None else (b"", -1)
    if _BINARY_OP is None or not 0 <= i < len(code) - 1 or code[i] != _BINARY_OP:
        raise TypeError(
            f"thunder: a tensor's {op} with a number traced as a value, called in a way the bytecode "
            "does not show (operator.i"
            + op
            + "?): traced again with the number specialised"
            + at(user_location())
        )
    return dis._nb_ops[code[i + 1]][1].endswith("=")


def is_counter(v) -> bool:
    """An int or a float (never a bool): a value that may be traced as a ``DynamicNumber``."""
    return type(v) is int or type(v) is float


def is_counter_value(v) -> bool:
    """An int, a float, or a counter traced as a value."""
    return is_counter(v) or isinstance(v, DynamicNumber)


class DynamicNumber:
    """An int or float standing for ``proxy`` (its value while tracing: ``value``)."""

    __slots__ = ("proxy", "value", "roots", "state", "offset")

    def __init__(self, proxy: NumberProxy, value: int | float, roots: tuple, state, offset: int | None = 0):
        self.proxy = proxy
        self.value = value
        self.roots = roots  # the input NumberProxies this value is computed from
        self.state = state
        # ``value == roots[0] + offset`` (one int root, counted up or down); None: any other
        # form (a float's sums round: its comparisons check the value)
        self.offset = offset if len(roots) == 1 and type(value) is int else None

    def compare(self, other, op: str) -> bool:
        """``self <op> other``, with the prologue checking the outcome (or the value)."""
        fn = getattr(operator, op)
        if isinstance(other, DynamicNumber):
            if self.offset is not None and other.offset is not None and self.roots[0] is other.roots[0]:
                return fn(self.offset, other.offset)  # the same counter: the outcome is fixed
            return fn(self.concrete(), other.concrete())
        if isinstance(other, torch.Tensor) and torch._C._is_torch_function_mode_enabled():  # ``x > n``
            return self._with_tensor(other, getattr(torch.Tensor, f"__{_REFLECTED[op]}__"))
        if type(other) is not int or self.offset is None:
            return fn(self.concrete(), other)
        result = fn(self.value, other)
        # root + offset <op> other  <=>  root <op> other - offset
        self.state.guard_compare(self.roots[0], pyops.COMPARE_OPS[op], other - self.offset, result)
        return result

    def concrete(self) -> int | float:
        """The value, with the prologue now checking every input it depends on."""
        self.state.specialize(self)
        return self.value

    def _with_tensor(self, t: torch.Tensor, func, number_first: bool = False):
        """``func(t, self)`` (``func(self, t)``) through the acquisition mode, which passes the
        number to the op as a traced value where the op takes one (``NUMBER_OPERANDS``), else
        its value."""
        args = (self, t) if number_first else (t, self)
        return torch.overrides.handle_torch_function(func, (t,), *args)

    def _op(self, other, op: str, reverse: bool = False):
        if isinstance(other, torch.Tensor):  # ``x * n``, ``x *= n`` (reverse) or ``n - x``
            if not torch._C._is_torch_function_mode_enabled():  # (not under the mode: its value)
                fn = getattr(operator, op)
                return fn(other, self.concrete()) if reverse else fn(self.concrete(), other)
            if not reverse:
                return self._with_tensor(other, _NUMBER_LEFT[op], op in _NUMBER_FIRST)
            if _written_in_place(op):
                return self._with_tensor(other, _IN_PLACE[op])
            return self._with_tensor(other, getattr(torch.Tensor, f"__{op}__"))
        if isinstance(other, DynamicNumber):
            arg, roots = other.proxy, self.roots + other.roots
        elif is_counter(other):
            arg, roots = other, self.roots
        else:  # (a complex, a string: no longer a counter)
            fn = getattr(operator, op)
            return fn(other, self.concrete()) if reverse else fn(self.concrete(), other)
        sym = pyops.NUMBER_OPS[op]
        out = sym(arg, self.proxy) if reverse else sym(self.proxy, arg)
        offset = None
        if self.offset is not None and type(other) is int and not reverse and op in ("add", "sub"):
            offset = self.offset + other if op == "add" else self.offset - other
        elif self.offset is not None and type(other) is int and reverse and op == "add":
            offset = self.offset + other
        return dynamic_number(out, out.value, roots, self.state, offset)

    def __neg__(self):
        return self._op(-1, "mul")

    @property
    def __class__(self):
        # ``isinstance(n, int)`` as eager answers it: the prologue checks the type (not the
        # value). ``type(n)`` cannot be answered so: it names DynamicNumber
        return type(self.value)

    # uses that need the value itself
    def __index__(self):
        return self.concrete()  # (a float's: a TypeError, as eager's)

    def __int__(self):
        return int(self.concrete())

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


class DynamicFloat(DynamicNumber, torch.SymFloat):
    """A float traced as a value, which torch's C argument parsing takes as a number (a
    ``torch.SymFloat``) and hands to the acquisition mode as it is. SymFloat's methods this
    class does not record (``round``, ``math.floor``, ``is_integer``) use the value, which the
    prologue then checks."""

    __slots__ = ()


class DynamicInt(DynamicNumber, torch.SymInt):
    """An int traced as a value, which torch's C argument parsing takes as a number or a size
    (a ``torch.SymInt``): an op that takes a size (``torch.arange(n)``, ``x.view(n, -1)``) gets
    a symbolic size for it where it is one counter plus a constant (``as_size``), else its
    value. SymInt's methods this class does not record use the value."""

    __slots__ = ()

    def as_size(self):
        """``self`` as a symbolic size (the counter it counts from made a symbol of the sizes,
        plus the constant), or None where it cannot be one (the prologue then checks the value)."""
        return self.state.counter_size(self) if self.offset is not None else None


def dynamic_number(proxy: NumberProxy, value, roots: tuple, state, offset: int | None = 0) -> DynamicNumber:
    """The stand-in for a number traced as a value: a ``DynamicFloat`` for a float, a
    ``DynamicInt`` for an int."""
    cls = DynamicFloat if type(value) is float else DynamicInt if type(value) is int else DynamicNumber
    return cls(proxy, value, roots, state, offset)


def _by_value(name: str):
    def method(self, *args):
        return getattr(self.concrete(), name)(*args)

    method.__name__ = name
    return method


def _recorded(op: str, reverse: bool):
    return lambda self, o: self._op(o, op, reverse)


def _compared(op: str):
    return lambda self, o: self.compare(o, op)


# ``d + 1``, ``1 + d`` ... are recorded; ``d == 1``, ``d < n`` ... use (and so check) the value
for _op in pyops.NUMBER_OPS:
    setattr(DynamicNumber, f"__{_op}__", _recorded(_op, False))
    setattr(DynamicNumber, f"__r{_op}__", _recorded(_op, True))
for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(DynamicNumber, f"__{_op}__", _compared(_op))
for _cls, _sym in ((DynamicFloat, torch.SymFloat), (DynamicInt, torch.SymInt)):  # (the rest: by the value)
    for _name, _v in vars(_sym).items():
        if callable(_v) and _name not in ("__init__", "__class__") and not hasattr(DynamicNumber, _name):
            setattr(_cls, _name, _by_value(_name))


def refuse_stand_ins(bsyms) -> None:
    """Raise if a DynamicNumber was recorded as itself (a handler kept the object rather than
    its proxy or its value): printed, it would read the value after the prologue's checks were
    made, a value frozen unchecked. The trace is made again with the numbers specialised."""
    for bsym in bsyms:
        for leaf in tree_flatten((bsym.args, bsym.kwargs))[0]:
            if isinstance(leaf, DynamicNumber):
                raise TypeError(
                    f"thunder: {bsym.sym.name} took a number traced as a value as itself "
                    f"(from {bsym.source}); traced again with the number specialised"
                )
        refuse_stand_ins(bsym.subsymbols)


def traced_operands(func, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``args`` and ``kwargs`` of the torch function ``func`` with each counter the op takes as a
    traced number (by position, or by keyword: ``alpha``) replaced by its proxy, also in a list
    of numbers there (``_foreach_addcdiv_(ps, a, b, [s0, s1])``); the others are specialised when
    the arguments are resolved."""
    target = TORCH_TO_THUNDER.get(func)
    if target is None:  # ``x.mul_(n)``: as ``mul``
        target = out_of_place(func, torch.Tensor)
    positions = NUMBER_OPERANDS.get(target)
    if not positions:
        return args, kwargs
    args = tuple(_proxied(a) if i in positions else a for i, a in enumerate(args))
    if kwargs:
        kwargs = {k: _proxied(v) if k in positions else v for k, v in kwargs.items()}
    return args, kwargs


def _proxied(v):
    if isinstance(v, DynamicNumber):
        return v.proxy
    if type(v) in (list, tuple) and any(isinstance(x, DynamicNumber) for x in v):
        return type(v)(x.proxy if isinstance(x, DynamicNumber) else x for x in v)
    return v
