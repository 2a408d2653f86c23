"""The tutorial notebooks (``notebooks/``): run one top to bottom in a fresh kernel, list its
errors, and strip what reads only with a kernel. ``tests/explorer/notebook/test_notebooks.py``
runs them; this file, as a script, regenerates their committed outputs after changing a
notebook or the explorer::

    .venv/bin/python tests/support/notebooks.py --write          # every notebook
    .venv/bin/python tests/support/notebooks.py --write 01 07    # those two

Saved outputs keep the static HTML of each explorer and drop the live-widget view and the
widget state (a viewer without the kernel would show "model not found" for those).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = [
    ROOT / "notebooks" / name
    for name in (
        "01_first_trace.ipynb",
        "02_dataclass_outputs.ipynb",
        "03_setattr_and_kv_cache.ipynb",
        "04_tensor_subclasses.ipynb",
        "05_autograd.ipynb",
        "06_fusion_and_cuda.ipynb",
        "07_real_models.ipynb",
        "08_distributed.ipynb",
        "09_thunderfx.ipynb",
    )
]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def run_notebook(path: Path, timeout: int = 120):
    """Execute ``path`` in a fresh kernel; raises CellExecutionError on the first failing cell."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    return nb


def strip_widgets(nb):
    """Keep what reads without a kernel: static HTML and text, no widget views or state."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data:
                data.pop(WIDGET_VIEW, None)
                data.pop(WIDGET_STATE, None)
        cell.get("metadata", {}).pop("execution", None)
    return nb


def notebook_errors(nb) -> list[str]:
    return [
        f"{o.ename}: {o.evalue}"
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.output_type == "error"
    ]


def main(argv: list[str]) -> int:
    if argv[1:2] != ["--write"]:
        print(__doc__)
        return 2
    wanted = argv[2:]  # notebook numbers or names (01, 07_real_models); none: every notebook
    paths = [p for p in NOTEBOOKS if not wanted or any(p.stem.startswith(w) for w in wanted)]
    if not paths:
        print(f"no notebook named {' or '.join(wanted)}")
        return 2
    for path in paths:
        t0 = time.perf_counter()
        nb = strip_widgets(run_notebook(path))
        errors = notebook_errors(nb)
        if errors:
            print(f"{path.name}: {errors}")
            return 1
        nbformat.write(nb, path)
        print(f"{path.name}: ran in {time.perf_counter() - t0:.1f} s, written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
