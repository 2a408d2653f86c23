"""Sizes as symbols: a dimension that changes between calls is a symbolic int (``s0``).

A tensor input whose dimension is dynamic gets a proxy whose size there is a ``torch.SymInt``
backed by a ``SizeNode``: user code reads it (``x.shape[0]``, ``x.size(1) * 2``), torch's own
code computes with it (a wrapper tensor's strides, ``numel()``), and the meta functions pass it
on (``f32[s0, 8]``, ``f32[2*s0 + 1]``). Each node holds an expression over the symbols (``Expr``,
a small normal form: sums of terms with integer coefficients) and its value on the call being
traced (the ``hint``).

Where Python needs a plain answer, the answer is the hint's and the relation it rests on is
recorded in the current ``SizeEnv``: ``if x.shape[0] > 8`` records ``s0 > 8`` (or its negation),
a broadcast that needed equal sizes records ``s0 == s1``, ``int(n)`` records ``n == 5`` (the
size is specialised). The prologue checks every recorded relation on every call (a call that
violates one is a cache miss, never a wrong value), and each symbol is at least 2: sizes 0 and 1
stay specialised, as torch.compile does, since broadcasting depends on them.

A relation that holds for every value of the symbols (``s0 + 1 > s0``, ``s0 == s0``) records
nothing: the difference of the two sides is a constant.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Iterable
from typing import Any

import torch

from thunder.core.proxies import NumberProxy

# -- expressions -----------------------------------------------------------------------------
# An expression is an ``int``, or an ``Expr``. ``Expr`` kinds:
#   "sum":  c + sum(k * t for t, k in terms): ``terms`` a sorted tuple of (atom, coefficient)
#   atoms:  ("sym", name), ("mul", a, b, ...) a product of atoms, ("floordiv", a, b),
#           ("mod", a, b), ("max", a, b), ("min", a, b), ("pow", a, b)
#   bools:  ("cmp", op, diff) for ``diff <op> 0``, ("and", a, b), ("or", a, b), ("not", a)


class Expr:
    """A symbolic expression; ``key`` is its canonical form (hashable, comparable)."""

    __slots__ = ("key", "_free", "_source")

    def __init__(self, key: tuple):
        self.key = key
        self._free = None
        self._source = None

    def __eq__(self, other) -> bool:
        return isinstance(other, Expr) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return source(self)

    def free(self) -> frozenset[str]:
        """The names of the symbols in it."""
        if self._free is None:
            names: set[str] = set()
            _collect_free(self.key, names)
            self._free = frozenset(names)
        return self._free


def _collect_free(key, names: set[str]) -> None:
    if isinstance(key, tuple):
        if key and key[0] == "sym":
            names.add(key[1])
            return
        for k in key:
            _collect_free(k, names)


def symbol(name: str) -> Expr:
    return _sum(((("sym", name), 1),), 0)


def _sum(terms: tuple, const: int):
    if not terms:
        return const
    if const == 0 and len(terms) == 1 and terms[0][1] == 1:
        atom = terms[0][0]
        return Expr(("sum", ((atom, 1),), 0))
    return Expr(("sum", terms, const))


def _linear(e) -> tuple[dict, int]:
    """``e`` as (atom -> coefficient, constant)."""
    if isinstance(e, int):
        return {}, e
    if e.key[0] == "sum":
        return dict(e.key[1]), e.key[2]
    return {e.key: 1}, 0


def _from_linear(terms: dict, const: int):
    kept = tuple(sorted(((a, k) for a, k in terms.items() if k != 0), key=lambda x: repr(x[0])))
    return _sum(kept, const)


def _atom(e) -> tuple | None:
    """The single atom ``e`` is (coefficient 1, no constant), or None."""
    if (
        isinstance(e, Expr)
        and e.key[0] == "sum"
        and e.key[2] == 0
        and len(e.key[1]) == 1
        and e.key[1][0][1] == 1
    ):
        return e.key[1][0][0]
    return None


def _as_atom(e) -> tuple:
    a = _atom(e)
    return a if a is not None else e.key


def add(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    ta, ca = _linear(a)
    tb, cb = _linear(b)
    for k, v in tb.items():
        ta[k] = ta.get(k, 0) + v
    return _from_linear(ta, ca + cb)


def neg(a):
    return mul(a, -1)


def sub(a, b):
    return add(a, neg(b))


def mul(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if isinstance(a, int) or isinstance(b, int):
        k, e = (a, b) if isinstance(a, int) else (b, a)
        if k == 0:
            return 0
        terms, const = _linear(e)
        return _from_linear({t: c * k for t, c in terms.items()}, const * k)
    # a product of sums, expanded: (2*s0 + 1) * s1 is 2*s0*s1 + s1
    ta, ca = _linear(a)
    tb, cb = _linear(b)
    out: dict = {}
    for x, kx in ta.items():
        for y, ky in tb.items():
            atom = ("mul", *sorted([*_factors(x), *_factors(y)], key=repr))
            out[atom] = out.get(atom, 0) + kx * ky
        if cb:
            out[x] = out.get(x, 0) + kx * cb
    if ca:
        for y, ky in tb.items():
            out[y] = out.get(y, 0) + ca * ky
    return _from_linear(out, ca * cb)


def _factors(atom: tuple) -> list:
    return list(atom[1:]) if atom[0] == "mul" else [atom]


def _binary(op: str, a, b):
    fn = {"floordiv": operator.floordiv, "mod": operator.mod, "max": max, "min": min, "pow": operator.pow}[op]
    if isinstance(a, int) and isinstance(b, int):
        return fn(a, b)
    if op == "floordiv" and b == 1:
        return a
    if op == "mod" and b == 1:
        return 0
    if op in ("floordiv", "mod"):
        cancelled = _cancel(a, b)
        if cancelled is not None:
            quotient, exact = cancelled
            if exact:
                return quotient if op == "floordiv" else 0
            if op == "floordiv":  # (k*X*Y) // (m*X) is (k*Y) // m for X > 0
                a, b = quotient
    if op in ("max", "min") and a == b:
        return a
    key_a = a if isinstance(a, int) else _as_atom(a)
    key_b = b if isinstance(b, int) else _as_atom(b)
    return _from_linear({(op, key_a, key_b): 1}, 0)


def _cancel(a, b):
    """``a`` divided by ``b`` where ``b`` is a multiple of a product of symbols (each at least
    2, so positive) that every term of ``a`` holds: ``(q, True)`` where the division is exact
    (``(6*s0*s1) // (3*s0)`` is ``2*s1``), else ``((a', k), False)`` with the product cancelled
    (``(s0*s1) // (2*s0)`` is ``s1 // 2``); None where nothing cancels."""
    terms_b, const_b = _linear(b)
    if const_b != 0 or len(terms_b) > 1 if terms_b else const_b <= 0:
        return None
    if terms_b:
        ((atom_b, k_b),) = terms_b.items()
        common = _factors(atom_b)
        if k_b <= 0 or any(f[0] != "sym" for f in common):
            return None
    else:
        k_b, common = const_b, []
    terms_a, const_a = _linear(a)
    if common and const_a != 0:
        return None
    rest: dict = {}
    for atom, k in terms_a.items():
        factors = _factors(atom)
        for f in common:
            if f not in factors:
                return None
            factors.remove(f)
        key = ("mul", *factors) if len(factors) > 1 else factors[0] if factors else None
        if key is None:
            const_a += k
        else:
            rest[key] = rest.get(key, 0) + k
    if all(k % k_b == 0 for k in rest.values()) and const_a % k_b == 0:
        return _from_linear({t: k // k_b for t, k in rest.items()}, const_a // k_b), True
    if not common:
        return None
    return (_from_linear(rest, const_a), k_b), False


def compare(op: str, a, b):
    """``a <op> b`` as a boolean expression, or a plain bool where the difference of the two
    sides is a constant."""
    diff = sub(a, b)
    if isinstance(diff, int):
        return _CMP[op](diff, 0)
    known = _known_sign(diff).get(op)
    if known is not None:
        return known
    return Expr(("cmp", op, diff.key))


def _known_sign(diff: Expr) -> dict[str, bool]:
    """The outcome of comparing ``diff`` with 0 for every value of its symbols (each at least
    2), where bounds decide it: ``s0 - 1 > 0``, ``s0 // 2 != 0`` always."""
    if diff.key[0] != "sum":
        return {}
    low = _lower_bound(diff.key)
    if low is not None:
        if low > 0:
            return {"eq": False, "ne": True, "lt": False, "le": False, "gt": True, "ge": True}
        if low == 0:
            return {"lt": False, "ge": True}
    high = _lower_bound(neg(diff).key) if isinstance(neg(diff), Expr) else None
    if high is not None:  # (the least value of -diff)
        if high > 0:
            return {"eq": False, "ne": True, "lt": True, "le": True, "gt": False, "ge": False}
        if high == 0:
            return {"gt": False, "le": True}
    return {}


def _lower_bound(key) -> int | None:
    """The least value of an expression over symbols of at least 2, where its parts give one
    (sums with coefficients of one sign, products and quotients by positive constants)."""
    if isinstance(key, int):
        return key
    kind = key[0]
    if kind == "sym":
        return 2
    if kind == "sum":
        total = key[2]
        for atom, k in key[1]:
            low = _lower_bound(atom)
            if low is None or k < 0:
                return None
            total += k * low
        return total
    if kind == "mul":
        out = 1
        for f in key[1:]:
            low = _lower_bound(f)
            if low is None or low < 0:
                return None
            out *= low
        return out
    if kind == "floordiv" and isinstance(key[2], int) and key[2] > 0:
        low = _lower_bound(key[1])
        return None if low is None else low // key[2]
    if kind == "mod" and isinstance(key[2], int) and key[2] > 0:
        return 0
    if kind == "max":
        lows = [_lower_bound(k) for k in key[1:]]
        return max((x for x in lows if x is not None), default=None)
    return None


_CMP = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}
_NEGATED = {"eq": "ne", "ne": "eq", "lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}
_CMP_SOURCE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def negate(e):
    if isinstance(e, bool):
        return not e
    if e.key[0] == "cmp":
        return Expr(("cmp", _NEGATED[e.key[1]], e.key[2]))
    return Expr(("not", e.key))


# -- evaluation and source --------------------------------------------------------------------
def evaluate(e, values: dict[str, int]):
    """The value of ``e`` with the symbols at ``values`` (ints, or torch's symbolic ints: the
    Inductor executor builds its own symbolic sizes from ours this way)."""
    if isinstance(e, (int, bool)):
        return e
    return _eval(e.key, values)


def _eval(key, values):
    if isinstance(key, int):
        return key
    kind = key[0]
    if kind == "sum":
        return key[2] + sum(_eval(a, values) * k for a, k in key[1])
    if kind == "sym":
        return values[key[1]]
    if kind == "mul":
        out = 1
        for f in key[1:]:
            out *= _eval(f, values)
        return out
    if kind in ("floordiv", "mod", "max", "min", "pow"):
        fn = {
            "floordiv": operator.floordiv,
            "mod": operator.mod,
            "max": torch.sym_max,  # (symbolic ints too: no comparison that would guard)
            "min": torch.sym_min,
            "pow": operator.pow,
        }[kind]
        return fn(_eval(key[1], values), _eval(key[2], values))
    if kind == "cmp":
        return _CMP[key[1]](_eval(key[2], values), 0)
    if kind == "and":
        return _eval(key[1], values) and _eval(key[2], values)
    if kind == "or":
        return _eval(key[1], values) or _eval(key[2], values)
    if kind == "not":
        return not _eval(key[1], values)
    raise AssertionError(f"unknown size expression {key!r}")


def fold(e, *, symbol, number, add, scale, mul, binary, memo: dict | None = None):
    """The size expression ``e`` (an ``Expr`` over the symbols) computed in another domain (the
    nvFuser executor's scalar ops): ``symbol(name)`` and ``number(n)`` make its leaves; ``add(a,
    b)``, ``scale(a, k)`` (``a`` times the int ``k``), ``mul(a, b)`` and ``binary(op, a, b)``
    (``op`` one of ``floordiv``, ``mod``, ``max``, ``min``, ``pow``) combine them. Each
    subexpression is computed once (``memo``: what was computed, kept across calls)."""
    memo = {} if memo is None else memo

    def rec(key):
        if isinstance(key, int):
            return number(key)
        v = memo.get(key)
        if v is not None:
            return v
        kind = key[0]
        if kind == "sym":
            v = symbol(key[1])
        elif kind == "sum":
            v = number(key[2]) if key[2] or not key[1] else None
            for atom, k in key[1]:
                term = rec(atom) if k == 1 else scale(rec(atom), k)
                v = term if v is None else add(v, term)
        elif kind == "mul":
            v = rec(key[1])
            for f in key[2:]:
                v = mul(v, rec(f))
        elif kind in _BINARY:
            v = binary(kind, rec(key[1]), rec(key[2]))
        else:
            raise ValueError(f"fold: {source(Expr(key))} is a relation, not a size")
        memo[key] = v
        return v

    return rec(e) if isinstance(e, int) else rec(e.key)


_BINARY = ("floordiv", "mod", "max", "min", "pow")


def source(e) -> str:
    """``e`` as Python source over the symbols' names (``2*s0 + 1``, ``s0 > 8``)."""
    if isinstance(e, (int, bool)):
        return repr(e)
    if e._source is None:
        e._source = _source(e.key)
    return e._source


def _source(key) -> str:
    if isinstance(key, int):
        return repr(key)
    kind = key[0]
    if kind == "sum":
        parts = []
        for a, k in key[1]:
            text = _source(a)
            if a[0] in ("sum", "floordiv", "mod", "pow") and k != 1:
                text = f"({text})"  # (``2*(s0 // 2)``, ``-(s0 % 3)``: as the expression means)
            elif a[0] == "sum":
                text = f"({text})"
            if k == 1:
                parts.append(("+", text))
            elif k == -1:
                parts.append(("-", text))
            else:
                parts.append(("-" if k < 0 else "+", f"{abs(k)}*{text}"))
        if key[2]:
            parts.append(("-" if key[2] < 0 else "+", str(abs(key[2]))))
        sign, first = parts[0]
        out = ("-" if sign == "-" else "") + first
        for sign, text in parts[1:]:
            out += f" {sign} {text}"
        return out
    if kind == "sym":
        return key[1]
    if kind == "mul":
        return "*".join(_paren(f) for f in key[1:])
    if kind in ("floordiv", "mod"):
        return f"{_paren(key[1])} {'//' if kind == 'floordiv' else '%'} {_paren(key[2])}"
    if kind == "pow":
        return f"{_paren(key[1])}**{_paren(key[2])}"
    if kind in ("max", "min"):
        return f"{kind}({_source(key[1])}, {_source(key[2])})"
    if kind == "cmp":
        terms, const = dict(key[2][1]), key[2][2]
        # ``diff <op> 0`` printed as ``lhs <op> rhs``: the positive terms left, the rest right
        lhs = _from_linear({a: k for a, k in terms.items() if k > 0}, 0)
        rhs = _from_linear({a: -k for a, k in terms.items() if k < 0}, -const)
        return f"{source(lhs)} {_CMP_SOURCE[key[1]]} {source(rhs)}"
    if kind == "and":
        return f"({_source(key[1])}) and ({_source(key[2])})"
    if kind == "or":
        return f"({_source(key[1])}) or ({_source(key[2])})"
    if kind == "not":
        return f"not ({_source(key[1])})"
    raise AssertionError(f"unknown size expression {key!r}")


def _paren(key) -> str:
    """An operand of ``*``, ``//``, ``%`` or ``**``: in parentheses unless a name or a number."""
    text = _source(key)
    if (
        isinstance(key, tuple)
        and key[0] in ("sum", "floordiv", "mod", "mul", "pow")
        and not text.isidentifier()
    ):
        return f"({text})"
    return text


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
