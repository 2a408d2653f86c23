"""The expressions symbolic sizes are made of (``Expr``): a small normal form over the symbols
(sums of terms with integer coefficients, products, floor division, modulo, max, min, powers),
the comparisons between them (a relation that holds for every value of the symbols is decided
here, ``s0 + 1 > s0``), their values for given sizes (``evaluate``), their Python source
(``source``) and their fold into another domain (``fold``: an nvFuser definition). Nothing here
knows a compilation or the nodes behind torch's symbolic ints (``sizes.py``)."""

from __future__ import annotations

import operator

import torch

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
