"""Executors: every prim runs somewhere, the per-op tables agree with the declared ops, an op
defined late is claimed like any other, and claiming records who declined what."""

from __future__ import annotations

import pytest
import torch

import thunder
from thunder.core.symbol import SYMBOLS, TABLES, Symbol, SymbolTable, register, symbols_with, undeclared_keys
from thunder.core.tags import Tag
from thunder.executors.base import Executor
from thunder.executors.registry import resolve_executors
from thunder.executors.torchex import PRIM_IMPLS, unclaimed_prims
from thunder.ops import prims
from thunder.ops.langs import all_symbols


def test_every_prim_has_a_torch_implementation():
    assert unclaimed_prims() == []


def test_every_prim_has_an_implementation_in_some_executor():
    executors = resolve_executors(None)
    missing = [s.id for s in symbols_with(Tag.PRIM) if not any(e.implementations(s) for e in executors)]
    assert missing == []


def test_no_table_has_an_entry_for_an_undeclared_op():
    assert undeclared_keys() == []
    assert len(TABLES) >= 3  # eager implementations, prim implementations, executor tables


def test_a_table_entry_for_an_undeclared_op_is_reported():
    stray = Symbol("not_declared", "prims")  # never registered
    table = SymbolTable("a test table")
    try:
        table[stray] = 1
        assert undeclared_keys() == ["a test table: prims.not_declared"]
    finally:
        TABLES.remove(table)


def test_a_missing_entry_names_the_op_and_the_table():
    with pytest.raises(KeyError, match=r"prims\.add has no entry in a test table"):
        SymbolTable("a test table")[prims.add]
    TABLES.pop()


def test_tables_are_keyed_by_symbols_not_names():
    with pytest.raises(TypeError, match="keyed by Symbol objects"):
        PRIM_IMPLS["prims.mul"] = []


def test_the_torch_language_is_large():
    assert len(all_symbols()) >= 120


# An op declared after ``import thunder`` (as a user extending thunder would): the torch
# executor runs it through its ``torch_impl`` when ``impl_check`` allows, else the
# decomposition runs.
def _late_decomposition(a, b):
    bb = prims.mul(b, b) if isinstance(b, torch.Tensor) else b * b
    return prims.sqrt(prims.add(prims.mul(a, a), bb))


late_hypot = register(
    Symbol(
        "late_hypot",
        "test_executors",
        decomposition=_late_decomposition,
        torch_impl="torch.hypot",
        impl_check=lambda a, b: isinstance(b, torch.Tensor),
        module_path=__name__,
    )
)


def test_an_op_defined_after_import_is_claimed_by_its_torch_implementation():
    jfn = thunder.jit(lambda x, y: late_hypot(x, y))
    x, y = torch.randn(4), torch.randn(4)
    torch.testing.assert_close(jfn(x, y), torch.hypot(x, y))
    (bsym,) = [b for b in thunder.last_traces(jfn)[-1].bound_symbols if Tag.DEL not in b.tags]
    assert bsym.sym.id == "torch.hypot"
    assert bsym.subsymbols[0].sym is late_hypot


def test_an_op_whose_torch_implementation_declines_runs_its_decomposition():
    jfn = thunder.jit(lambda x: late_hypot(x, 2.0))
    x = torch.randn(4)
    torch.testing.assert_close(jfn(x), torch.hypot(x, torch.tensor(2.0)))
    ids = [b.sym.id for b in thunder.last_traces(jfn)[-1].bound_symbols if Tag.DEL not in b.tags]
    assert ids == ["torch.mul", "torch.add", "torch.sqrt"]
    assert "test_executors.late_hypot" in SYMBOLS


def test_claiming_records_who_declined():
    # an executor that knows only prims.mul declines ltorch.mul; the torch executor claims it
    only_mul = Executor("only_mul")
    for impl in PRIM_IMPLS[prims.mul]:
        only_mul.register(prims.mul, impl)
    jfn = thunder.jit(lambda x: x * 3, executors=[only_mul])
    torch.testing.assert_close(jfn(torch.ones(2)), torch.full((2,), 3.0))
    (bsym,) = thunder.last_traces(jfn)[-1].bound_symbols
    assert bsym.info.claimed_by == "torch"
    assert "only_mul" in bsym.info.declined


def test_unknown_executor_name():
    with pytest.raises(ValueError, match="unknown executor 'nvfuzer'"):
        thunder.jit(lambda x: x, executors=["nvfuzer"])


def test_tags_are_enum_members_never_strings():
    with pytest.raises(TypeError, match="Tag.INPLACE"):
        "inplace" in prims.copy_.tags  # noqa: B015
    with pytest.raises(TypeError, match="Tag members"):
        Symbol("bad_tags", "prims", tags=("inplace",))
    # and no source line of thunder/ asks a tag set about a string
    import pathlib
    import re

    values = "|".join(t.value for t in Tag)
    bad = re.compile(rf"""["']({values})["']\s+(not\s+)?in\s+[\w.]*tags|frozenset\(\{{["']({values})["']""")
    root = pathlib.Path(thunder.__file__).parent
    hits = [
        f"{p.relative_to(root)}:{i}: {line.strip()}"
        for p in root.rglob("*.py")
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if bad.search(line)
    ]
    assert hits == []
