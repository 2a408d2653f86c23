"""Outputs compared value by value, each named by its path from the output.

``leaves(out)`` opens what a program returns -- tuples, lists, dicts, dataclasses, a
transformers ``ModelOutput`` and the objects in it (a ``DynamicCache`` and its layers) -- down
to tensors and plain values, each with the path that reaches it::

    out.logits                                   # an attribute (a ModelOutput's key reads as one too)
    out.past_key_values.layers[0].keys           # an object's attribute, a list's item
    out[1]['scale']                              # a tuple's item, a plain dict's key

Tensors are copied as they are read (detached), so a later run that writes the same storage
does not change what was kept. ``difference(a, b)`` compares two such lists and names the first
value that differs, with its largest absolute and relative error, as
``torch.testing.assert_close`` judges with float32 tolerances loosened for fused arithmetic.
"""

from __future__ import annotations

import dataclasses
import math

import torch

_PLAIN = (int, float, complex, bool, str, bytes, type(None), torch.dtype, torch.device, torch.Size)
_DEPTH = 32
RTOL, ATOL = 1e-4, 1e-5


def _key(k) -> str:
    return f"[{k!r}]"


def _opened(obj):
    """(path step, value) for each part of ``obj``; None for a value compared whole."""
    if isinstance(obj, (_PLAIN, torch.Tensor)):
        return None
    if isinstance(obj, tuple) and hasattr(type(obj), "_fields"):  # a namedtuple (torch.return_types too)
        return [(f".{f}", v) for f, v in zip(obj._fields, obj)]
    if isinstance(obj, (list, tuple)):
        return [(f"[{i}]", v) for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        # a dict that reads its keys as attributes (a ModelOutput) is shown as it is read
        attrs = type(obj) is not dict and all(
            isinstance(k, str) and k.isidentifier() and getattr(obj, k, None) is v for k, v in obj.items()
        )
        return [(f".{k}" if attrs else _key(k), v) for k, v in obj.items()]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [(f".{f.name}", getattr(obj, f.name)) for f in dataclasses.fields(obj)]
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict) and d and type(obj).__module__.partition(".")[0] not in ("torch", "builtins"):
        return [(f".{k}", v) for k, v in d.items() if not k.startswith("__")]
    return None


def leaves(out, root: str = "out") -> list[tuple[str, object]]:
    """Every tensor and plain value in ``out`` with its path (tensors detached copies)."""
    found: list[tuple[str, object]] = []
    stack = [(root, out, 0, ())]
    while stack:
        path, v, depth, above = stack.pop()
        parts = None if depth >= _DEPTH or id(v) in above else _opened(v)
        if parts is None:
            if isinstance(v, torch.Tensor):
                v = v.detach().clone()
            elif not isinstance(v, _PLAIN) and id(v) in above:
                v = f"<the object at {path} holds itself>"
            found.append((path, v))
            continue
        inner = (*above, id(v))
        stack += [(path + step, x, depth + 1, inner) for step, x in reversed(parts)]
    return found


@dataclasses.dataclass
class Difference:
    """How two outputs compare: ``matched``; the first differing value's ``path``, its largest
    absolute and relative error (tensors) and why it differs; ``max_abs`` over all tensors."""

    matched: bool
    max_abs: float | None = None
    path: str | None = None
    abs_error: float | None = None
    rel_error: float | None = None
    why: str = ""

    def describe(self) -> str:
        """One line: where the outputs first differ and by how much."""
        if self.matched:
            return ""
        errors = []
        if self.abs_error is not None:
            errors.append(f"max abs error {self.abs_error:.3g}")
        if self.rel_error is not None:
            errors.append(f"max rel error {self.rel_error:.3g}")
        where = f"{self.path} differs" if self.path else "the outputs differ"
        detail = ", ".join(errors) if errors else self.why
        return f"{where}: {detail}" if detail else where


def _errors(x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """Largest absolute and relative difference (NaN against NaN is no difference)."""
    a, b = x.double(), y.double()
    if a.is_complex() or b.is_complex():
        a, b = torch.view_as_real(a.to(torch.complex128)), torch.view_as_real(b.to(torch.complex128))
    both_nan = a.isnan() & b.isnan()
    d = (a - b).abs().masked_fill(both_nan, 0)
    d = d.masked_fill(d.isnan(), math.inf)  # a NaN against a number: as far as can be
    rel = d / b.abs().clamp_min(torch.finfo(torch.float64).tiny)
    rel = rel.masked_fill(d == 0, 0)
    return d.max().item(), rel.max().item()


def difference(a: list[tuple[str, object]], b: list[tuple[str, object]]) -> Difference:
    """Compare two ``leaves`` lists (the second against the first) value by value."""
    worst = 0.0
    first: Difference | None = None
    if [p for p, _ in a] != [p for p, _ in b]:
        pa, pb = {p for p, _ in a}, {p for p, _ in b}
        odd = next((p for p, _ in a if p not in pb), None) or next((p for p, _ in b if p not in pa), None)
        return Difference(False, None, odd, why=f"{len(a)} output values against {len(b)}")
    for (path, x), (_, y) in zip(a, b):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype:
                why = f"{x.dtype}{list(x.shape)} against {y.dtype}{list(y.shape)}"
                first = first or Difference(False, path=path, why=why)
                continue
            if not x.numel():
                continue
            y = y.to(x.device)
            abs_error, rel_error = _errors(x, y)
            worst = max(worst, abs_error)
            try:
                torch.testing.assert_close(y, x, rtol=RTOL, atol=ATOL, equal_nan=True)
            except AssertionError as e:
                why = str(e).splitlines()[0]
                first = first or Difference(False, None, path, abs_error, rel_error, why)
        elif isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor) or not _same(x, y):
            first = first or Difference(False, path=path, why=f"{_short(x)} against {_short(y)}")
    if first is not None:
        first.max_abs = worst
        return first
    return Difference(True, worst)


def _same(x, y) -> bool:
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    try:
        return bool(x == y)
    except Exception:  # an object whose == is not a truth value
        return x is y


def _short(v, limit: int = 80) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."
