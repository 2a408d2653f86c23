"""The import map of ``thunder/`` and ``explorer/`` stays one-way.

Every module's imports are read with ``ast`` (imports inside functions included) and checked
against the layers, lowest first:

    core  <-  ops  <-  executors  <-  {frontend, transforms}  <-  runtime  <-  explorer

``runtime`` is everything directly in ``thunder/`` (``jit``, the autograd bridge, the cache,
the public API). ``frontend`` (acquisition) and ``transforms`` (passes) are peers that never
import each other: a pass gets what it needs from acquisition through the pass context. A
module may import its own layer and the layers below; a circle of imports is an error even
inside one layer. ``thunder`` never imports ``explorer``.

An ``import thunder...`` inside a function in ``thunder/`` must say on its line why it is
not at the top of the module (``# lazy: ...``): where nothing else breaks a circle, or where
it keeps an optional, slow dependency from loading with thunder.
"""

from __future__ import annotations

import ast
import pathlib
from collections import defaultdict
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("thunder", "explorer")

LAYERS = {"core": 0, "ops": 1, "executors": 2, "frontend": 3, "transforms": 3}
RUNTIME, EXPLORER = 4, 5
# Peers of one layer that must not import each other.
PEERS = {"frontend", "transforms"}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module of thunder or explorer
    line: int
    function: str | None  # the enclosing function, when the import is inside one
    text: str  # the source line


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module of ours that ``name`` (a module or a name in one) lives in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _enclosing_functions(tree: ast.AST) -> dict[ast.AST, str]:
    inside: dict[ast.AST, str] = {}

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if function is not None:
                inside[child] = function
            visit(child, name)

    visit(tree, None)
    return inside


def imports_of(module: str) -> list[Import]:
    path = MODULES[module]
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    inside = _enclosing_functions(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            # ``from a.b import c`` imports the module a.b.c when there is one, else a.b.
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] not in PACKAGES:
                continue
            target = _resolve(name)
            if target is not None and target != module:
                found.append(Import(module, target, node.lineno, inside.get(node), lines[node.lineno - 1]))
    return found


def layer_of(module: str) -> tuple[int, str]:
    parts = module.split(".")
    if parts[0] == "explorer":
        return EXPLORER, "explorer"
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS[parts[1]], parts[1]
    return RUNTIME, "runtime"


def _all_imports() -> list[Import]:
    return list(dict.fromkeys(i for m in sorted(MODULES) for i in imports_of(m)))


def circles(imports: list[Import]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    edges = defaultdict(set)
    for i in imports:
        edges[i.source].add(i.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return found


def _where(i: Import) -> str:
    return f"{MODULES[i.source].relative_to(ROOT)}:{i.line}: {i.text.strip()}"


def test_the_map_reads_real_imports():
    # The checker itself: it sees top-level imports, imports inside functions and relative ones.
    imports = _all_imports()
    assert any(i.source == "thunder.jit" and i.target == "thunder.core.trace" for i in imports)
    assert any(i.source.startswith("explorer") and i.target.startswith("thunder") for i in imports)
    assert layer_of("thunder.core.trace") < layer_of("thunder.ops.prims") < layer_of("thunder.jit")
    fake = [Import("a", "b", 1, None, ""), Import("b", "c", 1, None, ""), Import("c", "a", 1, None, "")]
    assert circles(fake) == [["a", "b", "c"]]


def test_no_import_points_up():
    wrong = []
    for i in _all_imports():
        (src_layer, src_name), (dst_layer, dst_name) = layer_of(i.source), layer_of(i.target)
        if dst_layer > src_layer:
            wrong.append(f"{_where(i)}  ({src_name} must not import {dst_name}: a higher layer)")
        elif src_name != dst_name and {src_name, dst_name} <= PEERS:
            wrong.append(
                f"{_where(i)}  ({src_name} and {dst_name} are peers: hand it through the pass context)"
            )
    assert not wrong, "imports that point up:\n" + "\n".join(wrong)


def test_no_circle_of_imports():
    found = circles(_all_imports())
    in_thunder = [c for c in found if c[0].startswith("thunder")]
    in_explorer = [c for c in found if c[0].startswith("explorer")]
    assert not in_thunder, "import circles in thunder/:\n" + "\n".join(" <-> ".join(c) for c in in_thunder)
    assert not in_explorer, "import circles in explorer/:\n" + "\n".join(" <-> ".join(c) for c in in_explorer)


def test_imports_inside_functions_say_why():
    unexplained = [
        _where(i)
        for i in _all_imports()
        if i.function is not None and i.source.startswith("thunder") and "# lazy:" not in i.text
    ]
    assert not unexplained, (
        "imports of thunder inside functions without a '# lazy: <reason>' on their line "
        "(import at the top of the module instead):\n" + "\n".join(unexplained)
    )
