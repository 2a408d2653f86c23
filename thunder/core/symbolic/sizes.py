"""Symbolic sizes inside torch and inside one compilation.

``SizeEnv`` holds one compilation's symbols and the relations its traces relied on (what the
prologue checks, ``SizeRelations``). ``SizeNode`` is the node behind a ``torch.SymInt``: user code
and torch's own code compute with the size, every answer Python needs is its hint's, and the
relation it rests on is recorded in the current ``SizeEnv``. The functions at the end read a
size that may be symbolic (``hints``, ``is_symbolic``, ``concrete``, ``contiguous_strides``).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Iterable
from typing import Any

import torch

from thunder.core.proxies import NumberProxy
from thunder.core.symbolic.expressions import (
    _CMP,
    Expr,
    _atom,
    _binary,
    add,
    compare,
    evaluate,
    mul,
    neg,
    negate,
    source,
    sub,
    symbol,
)


# -- the environment of one compilation --------------------------------------------------------
class SymbolicSizeError(RuntimeError):
    """A relation between symbolic sizes that no prologue would check."""


class SizeEnv:
    """The symbols of one compilation and the relations its traces relied on."""

    def __init__(self):
        self.symbols: dict[str, NumberProxy] = {}  # name -> its proxy (an int input of the program)
        self.hints: dict[str, int] = {}
        self.relations: list = []  # boolean expressions that held, in the order found
        self._seen: set = set()
        self.specialized: set[str] = set()  # symbols a use pinned to their value
        self.origin: dict[str, tuple[str, int]] = {}  # symbol -> (the tensor input's name, its dimension)
        # set once the prologue that checks the relations is compiled: a relation found later (a
        # backward made on demand) would go unchecked, and is an error instead
        self.frozen = False

    def new_symbol(self, proxy: NumberProxy, origin: tuple[str, int] | None = None) -> torch.SymInt:
        """A symbol for a size of at least 2 (``proxy``: its name and value on this call)."""
        self.symbols[proxy.name] = proxy
        self.hints[proxy.name] = proxy.value
        if origin is not None:
            self.origin[proxy.name] = origin
        return torch.SymInt(SizeNode(symbol(proxy.name), proxy.value, self))

    def record(self, relation, outcome: bool) -> None:
        """``relation`` had the value ``outcome`` and the trace relies on it."""
        if isinstance(relation, bool):
            return
        held = relation if outcome else negate(relation)
        if isinstance(held, bool) or held in self._seen:
            return
        if self.frozen:
            raise SymbolicSizeError(
                f"thunder: a trace made after its entry's prologue relies on {source(held)}, a relation "
                "between symbolic sizes the prologue does not check; compile with thunder.jit(..., dynamic=False)"
            )
        self._seen.add(held)
        self.relations.append(held)

    def specialize(self, e, value: int) -> None:
        """A use needed the plain value of ``e``: the trace holds only where it is ``value``."""
        if isinstance(e, int):
            return
        self.record(compare("eq", e, value), True)
        if len(e.free()) == 1:  # (one symbol: the equality fixes it)
            self.specialized |= e.free()

    def proxies(self, e) -> list[NumberProxy]:
        """The symbols' proxies ``e`` reads."""
        if isinstance(e, int):
            return []
        return [self.symbols[n] for n in sorted(e.free()) if n in self.symbols]


class SizeRelations:
    """What a prologue's ``check_sizes`` tests: each symbol is at least 2 and every relation the
    compilation relied on holds, read from ``env`` when printed or tested (so relations found by
    passes after acquisition are checked too). Printed as the tuple of their sources."""

    def __init__(self, env: SizeEnv):
        self.env = env

    def all(self) -> list:
        env = self.env
        # (each symbol is at least 2 by this very check: ``compare`` would take it as known)
        at_least_2 = [Expr(("cmp", "ge", sub(symbol(n), 2).key)) for n in env.symbols]
        return at_least_2 + list(env.relations)

    def sources(self) -> tuple[str, ...]:
        return tuple(source(r) for r in self.all())


_CURRENT = threading.local()


def current_env() -> SizeEnv | None:
    return getattr(_CURRENT, "env", None)


class using_env:
    """``with using_env(env):`` relations found in the block go to ``env``."""

    def __init__(self, env: SizeEnv | None):
        self.env = env

    def __enter__(self):
        self.prev = getattr(_CURRENT, "env", None)
        _CURRENT.env = self.env
        return self.env

    def __exit__(self, *exc):
        _CURRENT.env = self.prev


# -- torch's symbolic ints over the expressions -----------------------------------------------
def _node_expr(x):
    """The expression of a SymInt, SymBool or node (a plain number as itself)."""
    if isinstance(x, (torch.SymInt, torch.SymBool)):
        x = x.node
    if isinstance(x, SizeNode):
        return x.expr
    if isinstance(x, (bool, int)):
        return x
    raise TypeError(f"thunder: a symbolic size combined with {type(x).__name__}")


def _node_hint(x):
    if isinstance(x, (torch.SymInt, torch.SymBool)):
        x = x.node
    return x.hint if isinstance(x, SizeNode) else x


class SizeNode:
    """The node behind a ``torch.SymInt``/``torch.SymBool`` of a symbolic size: torch calls its
    methods for arithmetic, comparisons, and where it needs a plain value."""

    def __init__(self, expr, hint, env: SizeEnv):
        self.expr = expr
        self.hint = hint
        self.env = env

    # what it is
    def is_int(self) -> bool:
        return not isinstance(self.hint, bool)

    def is_bool(self) -> bool:
        return isinstance(self.hint, bool)

    def is_float(self) -> bool:
        return False

    def is_nested_int(self) -> bool:
        return False

    def is_symbolic(self) -> bool:
        return not isinstance(self.expr, (int, bool))

    def is_constant(self) -> bool:
        return isinstance(self.expr, (int, bool))

    def has_hint(self) -> bool:
        return True

    def require_hint(self, fallback=None):
        return self.hint

    def maybe_as_int(self):
        return self.expr if isinstance(self.expr, int) and not isinstance(self.expr, bool) else None

    def maybe_as_bool(self):
        return self.expr if isinstance(self.expr, bool) else None

    def constant_int(self):
        return self.maybe_as_int()

    def constant_bool(self):
        return self.maybe_as_bool()

    def wrap_int(self, v: int) -> SizeNode:
        return SizeNode(v, v, self.env)

    def wrap_bool(self, v: bool) -> SizeNode:
        return SizeNode(v, v, self.env)

    def wrap_float(self, v: float):
        raise TypeError("thunder: a symbolic size combined with a float")

    def clone(self) -> SizeNode:
        return self

    def proxies(self) -> list[NumberProxy]:
        """The symbols' proxies it reads (what a pass sees of it in a BoundSymbol's arguments)."""
        return self.env.proxies(self.expr)

    def source(self) -> str:
        """The expression, as the printed programs compute it (``2*s0 + 1``)."""
        return source(self.expr)

    def str(self) -> str:
        # what ``str(n)``, ``f"{n}"`` and ``repr(n)`` give user code: the number, which the
        # trace then holds for this size only (a string made while tracing is a constant)
        return str(self.bool_() if self.is_bool() else self.int_())

    __str__ = str

    def _graph_repr(self) -> str:
        return self.str()

    def __repr__(self) -> str:
        return f"SizeNode({self.source()}, hint={self.hint})"

    # arithmetic
    def _op(self, other, fn, hint_fn) -> SizeNode:
        return SizeNode(fn(self.expr, _node_expr(other)), hint_fn(self.hint, _node_hint(other)), self.env)

    def add(self, other):
        return self._op(other, add, operator.add)

    def sub(self, other):
        return self._op(other, sub, operator.sub)

    def mul(self, other):
        return self._op(other, mul, operator.mul)

    def floordiv(self, other):
        return self._op(other, lambda a, b: _binary("floordiv", a, b), operator.floordiv)

    int_floordiv = floordiv

    def mod(self, other):
        return self._op(other, lambda a, b: _binary("mod", a, b), operator.mod)

    def pow(self, other):
        return self._op(other, lambda a, b: _binary("pow", a, b), operator.pow)

    pow_by_natural = pow

    def sym_max(self, other):
        return self._op(other, lambda a, b: _binary("max", a, b), max)

    def sym_min(self, other):
        return self._op(other, lambda a, b: _binary("min", a, b), min)

    def neg(self):
        return SizeNode(neg(self.expr), -self.hint, self.env)

    def sym_float(self):
        raise TypeError("thunder: a symbolic size used as a float (its value would be fixed)")

    def truediv(self, other):
        raise TypeError("thunder: a symbolic size divided with / (its value would be fixed)")

    # comparisons
    def _cmp(self, other, op):
        expr = compare(op, self.expr, _node_expr(other))
        return SizeNode(expr, _CMP[op](self.hint, _node_hint(other)), self.env)

    def eq(self, other):
        return self._cmp(other, "eq")

    def ne(self, other):
        return self._cmp(other, "ne")

    def lt(self, other):
        return self._cmp(other, "lt")

    def le(self, other):
        return self._cmp(other, "le")

    def gt(self, other):
        return self._cmp(other, "gt")

    def ge(self, other):
        return self._cmp(other, "ge")

    def and_(self, other):
        return self._logic(other, "and")

    def or_(self, other):
        return self._logic(other, "or")

    def _logic(self, other, op):
        a, b = self.expr, _node_expr(other)
        hint = (self.hint and _node_hint(other)) if op == "and" else (self.hint or _node_hint(other))
        if isinstance(a, bool) or isinstance(b, bool):
            known, rest = (a, b) if isinstance(a, bool) else (b, a)
            if op == "and":
                expr = rest if known else False
            else:
                expr = True if known else rest
        else:
            expr = Expr((op, a.key, b.key))
        return SizeNode(expr, hint, self.env)

    def sym_not(self):
        return SizeNode(negate(self.expr), not self.hint, self.env)

    sym_and = and_
    sym_or = or_

    def sym_ite(self, then, otherwise):
        return then if self.bool_() else otherwise

    def sym_sum(self, args):
        out = self
        for a in args:
            out = out.add(a)
        return out

    def pos(self):
        return self

    def sym_int(self):
        return self

    def abs(self):
        return self if self.bool_ge0() else self.neg()

    def bool_ge0(self) -> bool:
        return SizeNode(compare("ge", self.expr, 0), self.hint >= 0, self.env).bool_()

    # layouts of symbolic sizes and strides (the outcome on this call, its relations recorded)
    def is_contiguous(self, sizes, strides):
        return self.wrap_bool(_is_contiguous(sizes, strides))

    def is_channels_last_contiguous_2d(self, sizes, strides):
        return self.wrap_bool(len(sizes) == 4 and _is_contiguous(*_channels_last(sizes, strides)))

    def is_channels_last_contiguous_3d(self, sizes, strides):
        return self.wrap_bool(len(sizes) == 5 and _is_contiguous(*_channels_last(sizes, strides)))

    def is_channels_last_strides_2d(self, sizes, strides):
        return self.wrap_bool(len(sizes) == 4 and _is_contiguous(*_channels_last(sizes, strides)))

    def is_channels_last_strides_3d(self, sizes, strides):
        return self.wrap_bool(len(sizes) == 5 and _is_contiguous(*_channels_last(sizes, strides)))

    def is_non_overlapping_and_dense(self, sizes, strides):
        return self.wrap_bool(_non_overlapping_and_dense(sizes, strides))

    def is_non_overlapping_and_dense_indicator(self, sizes, strides):
        return self.wrap_int(int(_non_overlapping_and_dense(sizes, strides)))

    # where a plain value is needed: the hint's, and the relation it rests on recorded
    def bool_(self) -> bool:
        self.env.record(self.expr, self.hint)
        return self.hint

    def guard_bool(self, file=None, line=None) -> bool:
        return self.bool_()

    def expect_true(self, file=None, line=None) -> bool:
        return self.bool_()

    def guard_size_oblivious(self, file=None, line=None):
        return self.bool_() if self.is_bool() else self.int_()

    def statically_known_true(self, file=None, line=None) -> bool:
        return self.expr is True

    # (torch's "size-oblivious" tests: answered by the hint, with the relation recorded, which
    # is as sound and rarely narrower)
    def guard_or_false(self, file=None, line=None) -> bool:
        return self.bool_()

    def guard_or_true(self, file=None, line=None) -> bool:
        return self.bool_()

    def int_(self) -> int:
        self.env.specialize(self.expr, self.hint)
        return self.hint

    def guard_int(self, file=None, line=None) -> int:
        return self.int_()

    def expect_size(self, file=None, line=None) -> bool:
        return True  # (a symbol is at least 2: the prologue checks it)

    def guard_float(self, file=None, line=None) -> float:
        return float(self.int_())


def _is_contiguous(sizes, strides) -> bool:
    """Torch's test, on symbolic sizes (each comparison's outcome recorded)."""
    if any(bool(s == 0) for s in sizes):
        return True
    expected = 1
    for size, stride in zip(reversed(sizes), reversed(strides)):
        if bool(size != 1) and bool(stride != expected):
            return False
        expected = expected * size
    return True


def _channels_last(sizes, strides) -> tuple[list, list]:
    order = [0, *range(2, len(sizes)), 1]
    return [sizes[i] for i in order], [strides[i] for i in order]


def _non_overlapping_and_dense(sizes, strides) -> bool:
    if len(sizes) == 1:
        return bool(strides[0] == 1) or bool(sizes[0] < 2)
    order = sorted(range(len(sizes)), key=lambda i: (hint_of(strides[i]), hint_of(sizes[i])))
    expected = 1
    for i in order:
        if bool(sizes[i] == 1):
            continue
        if bool(strides[i] != expected):
            return False
        expected = expected * sizes[i]
    return True


def size_source(x) -> str:
    """A size as the printed programs write it: a symbolic size's expression, else ``str``."""
    if isinstance(x, (torch.SymInt, torch.SymBool)) and isinstance(x.node, SizeNode):
        return x.node.source()
    return str(x)


def is_symbolic(x) -> bool:
    """A ``torch.SymInt``/``SymBool`` over symbolic sizes."""
    return (
        isinstance(x, (torch.SymInt, torch.SymBool)) and isinstance(x.node, SizeNode) and x.node.is_symbolic()
    )


def expr_of(x):
    """The expression of a symbolic size (a plain int as itself)."""
    return _node_expr(x)


def hint_of(x):
    return _node_hint(x)


def symbol_name(x) -> str | None:
    """The name of the symbol a size is (``s0``), None for any other size (4, ``2*s0``)."""
    atom = _atom(expr_of(x))
    return atom[1] if atom is not None and atom[0] == "sym" else None


def same_size(a, b) -> bool:
    """Whether two sizes are the same expression (``s0`` and ``s0``, 4 and 4), without recording
    a relation: a comparison that would need one (``s0`` and ``s1``) is False."""
    return expr_of(a) == expr_of(b)


def sizes_are_static(shape: Iterable[Any]) -> bool:
    return not any(is_symbolic(d) for d in shape)


def has_symbols(x) -> bool:
    """Whether a symbolic size is among the leaves of ``x`` (nested tuples, lists, dicts)."""
    if isinstance(x, (torch.SymInt, torch.SymBool)):
        return is_symbolic(x)
    if isinstance(x, (tuple, list)):
        return any(has_symbols(v) for v in x)
    if isinstance(x, dict):
        return any(has_symbols(v) for v in x.values())
    if isinstance(x, slice):
        return has_symbols((x.start, x.stop, x.step))
    return False


def hints(x):
    """``x`` with each symbolic size replaced by its value on the call being traced (nothing
    recorded: the caller decides what the result may rest on)."""
    if isinstance(x, (torch.SymInt, torch.SymBool)):
        return hint_of(x)
    if isinstance(x, (tuple, list)) and not hasattr(type(x), "_fields"):
        return type(x)(hints(v) for v in x) if type(x) in (tuple, list) else tuple(hints(v) for v in x)
    if isinstance(x, dict):
        return {k: hints(v) for k, v in x.items()}
    if isinstance(x, slice):
        return slice(hints(x.start), hints(x.stop), hints(x.step))
    return x


def concrete(x, values: dict[str, int]):
    """``x`` with each symbolic size evaluated at ``values`` (symbol name -> size; a symbol not
    there at its value on the call traced): a shape for a call's own sizes, nothing recorded."""
    if isinstance(x, (torch.SymInt, torch.SymBool)):
        node = x.node
        if isinstance(node, SizeNode):
            return evaluate(node.expr, {**node.env.hints, **values})
        return hint_of(x)
    if isinstance(x, (tuple, list)):
        return (
            type(x)(concrete(v, values) for v in x)
            if type(x) in (tuple, list)
            else tuple(concrete(v, values) for v in x)
        )
    return x


def specialize(x) -> None:
    """Pin every symbolic size among the leaves of ``x`` to its value (the relations recorded)."""
    if isinstance(x, torch.SymInt):
        int(x)
    elif isinstance(x, (tuple, list)):
        for v in x:
            specialize(v)
    elif isinstance(x, dict):
        for v in x.values():
            specialize(v)
    elif isinstance(x, slice):
        specialize((x.start, x.stop, x.step))


def contiguous_strides(shape) -> tuple:
    """The strides of a contiguous tensor of ``shape`` (expressions of symbolic sizes)."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step = step * d
    return tuple(reversed(strides))
