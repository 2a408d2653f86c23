"""The import map of ``thunder/`` and ``explorer/`` stays one-way, folder by folder.

Every module's imports are read with ``ast`` (imports inside functions included) and checked
against the layers, lowest first:

    thunder:  core <- ops <- executors <- {frontend, transforms} <- autograd <- runtime
              <- the public API (``thunder/__init__.py``) <- dynamo
    frontend: stand_ins <- distributed <- torch_calls <- subclasses <- prologue <- effects
              <- modules <- epilogue <- acquire.py
    explorer: model <- measure <- views <- notebook <- the package's ``__init__.py``

and ``explorer`` above all of ``thunder``. ``frontend`` (acquisition) and ``transforms``
(passes) are peers that never import each other: a pass gets what it needs from acquisition
through the pass context. A module may import its own folder and the layers below; a circle of
imports is an error even inside one folder. ``thunder`` never imports ``explorer``. A module
in a folder no layer names is an error too, so a new folder is placed here when it is made.

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

# Each layer is a module prefix (a folder, or one module); a module belongs to the layer of its
# longest prefix here. Layers are numbered in order, lowest first.
LAYER_ORDER: list[tuple[str, ...]] = [
    ("thunder.core",),
    ("thunder.ops",),
    ("thunder.executors",),
    ("thunder.transforms",),
    ("thunder.frontend.stand_ins",),
    ("thunder.frontend.distributed",),
    ("thunder.frontend.torch_calls",),
    ("thunder.frontend.subclasses",),
    ("thunder.frontend.prologue",),
    ("thunder.frontend.effects",),
    ("thunder.frontend.modules",),
    ("thunder.frontend.epilogue",),
    ("thunder.frontend.acquire",),
    ("thunder.autograd",),
    ("thunder.runtime",),
    ("thunder",),
    ("thunder.dynamo",),
    ("explorer.model",),
    ("explorer.measure",),
    ("explorer.views",),
    ("explorer.notebook",),
    ("explorer",),
]
# Folders that are peers though their layers differ: no import between them in either way.
PEERS = [("thunder.frontend", "thunder.transforms")]


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
    """The layer of a module (its number, lowest first, and its prefix in ``LAYER_ORDER``)."""
    best: tuple[int, str] | None = None
    for number, prefixes in enumerate(LAYER_ORDER):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > len(best[1])
            ):
                best = (number, prefix)
    if best is None:
        raise AssertionError(f"{module} is in no layer of tests/test_layers.py: place its folder there")
    return best


def _peers(a: str, b: str) -> bool:
    return any(
        (a.startswith(x + ".") or a == x) and (b.startswith(y + ".") or b == y)
        for p, q in PEERS
        for x, y in ((p, q), (q, p))
    )


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
    assert any(i.source == "thunder.runtime.jit" and i.target == "thunder.core.trace" for i in imports)
    assert any(i.source.startswith("explorer") and i.target.startswith("thunder") for i in imports)
    assert layer_of("thunder.core.trace") < layer_of("thunder.ops.prims") < layer_of("thunder.runtime.jit")
    assert layer_of("thunder.frontend.stand_ins.unpack") < layer_of("thunder.frontend.prologue.inputs")
    assert layer_of("explorer.model.traces") < layer_of("explorer.views.html") < layer_of("explorer")
    assert _peers("thunder.frontend.acquire", "thunder.transforms.grad")
    assert not _peers("thunder.frontend.acquire", "thunder.frontend.prologue.inputs")
    fake = [Import("a", "b", 1, None, ""), Import("b", "c", 1, None, ""), Import("c", "a", 1, None, "")]
    assert circles(fake) == [["a", "b", "c"]]


def test_no_import_points_up():
    wrong = []
    for i in _all_imports():
        (src_layer, src_name), (dst_layer, dst_name) = layer_of(i.source), layer_of(i.target)
        if dst_layer > src_layer:
            wrong.append(f"{_where(i)}  ({src_name} must not import {dst_name}: a higher layer)")
        elif _peers(i.source, i.target):
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


# A folder a reader takes in at once; ``ops/ltorch`` is one file per op family, read by name.
MAX_MODULES_PER_FOLDER = 15
LARGE_FOLDERS = {"thunder/ops/ltorch"}


def test_folders_stay_small():
    counts: dict[str, int] = defaultdict(int)
    for path in MODULES.values():
        if path.name != "__init__.py":
            counts[str(path.parent.relative_to(ROOT))] += 1
    large = {d: n for d, n in counts.items() if n > MAX_MODULES_PER_FOLDER and d not in LARGE_FOLDERS}
    assert not large, f"folders of more than {MAX_MODULES_PER_FOLDER} modules (make sub-folders): {large}"


# Test folders with no source folder of the same path: helpers, whole models, the executor
# registry's own tests (``tests/executors`` holds no module: see tests/README.md), the browser.
NOT_MIRRORED = {"support", "support/opdb", "models", "executors/registry", "explorer/browser"}


def test_tests_mirror_the_source():
    tests = ROOT / "tests"
    folders = {str(p.relative_to(tests)) for p in tests.rglob("*") if p.is_dir() and p.name != "__pycache__"}
    unmatched = []
    for folder in sorted(folders - NOT_MIRRORED):
        source = ROOT / folder if folder.startswith("explorer") else ROOT / "thunder" / folder
        if not (source.is_dir() and any(source.glob("*.py"))):
            unmatched.append(folder)
    assert not unmatched, (
        f"test folders with no source folder of their path (see tests/README.md): {unmatched}"
    )
    # and each package of the source with tests of its own has its folder
    for package in ("core", "ops", "frontend", "transforms", "executors", "autograd", "runtime", "dynamo"):
        assert (tests / package).is_dir(), package
    for package in ("model", "measure", "views", "notebook"):
        assert (tests / "explorer" / package).is_dir(), package
