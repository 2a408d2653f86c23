"""The tutorial notebooks run top to bottom in a fresh kernel, and are committed so that they
read well where no script runs.

Regenerate the committed outputs after changing a notebook or the explorer::

    .venv/bin/python tests/explorer/test_notebooks.py --write

Saved outputs keep the static HTML of each explorer and drop the live-widget view and the
widget state (a viewer without the kernel would show "model not found" for those).
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import nbformat
import pytest

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


def _errors(nb) -> list[str]:
    return [
        f"{o.ename}: {o.evalue}"
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.output_type == "error"
    ]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path):
    t0 = time.perf_counter()
    nb = run_notebook(path)
    assert not _errors(nb)
    assert time.perf_counter() - t0 < 60, "a tutorial should run in under a minute on a CPU"
    html = [
        o["data"]["text/html"]
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "data" in o and "text/html" in o["data"]
    ]
    assert html, "the notebook shows no HTML"
    assert any("<details" in h for h in html) and any("<svg" in h for h in html)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_reads_without_a_kernel(path):
    nb = nbformat.read(path, as_version=4)
    assert "widgets" not in nb.metadata
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "committed without running it"
    assert not _errors(nb)
    for c in code:
        for o in c.outputs:
            assert WIDGET_VIEW not in o.get("data", {}), "a widget view that no viewer can show"
    assert any("<details" in o.get("data", {}).get("text/html", "") for c in code for o in c.outputs)
    for c in code:  # an explorer opened on a trace kind is saved open on that kind
        asked = re.search(r"explore\(.*kind=[\"'](\w+)[\"']", c.source)
        if asked:
            html = "".join(o.get("data", {}).get("text/html", "") for o in c.outputs)
            assert re.findall(r'<details class="kind" data-kind="(\w+)" open>', html) == [asked[1]]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_is_small(path):
    """A saved explorer keeps a budgeted static copy (explorer.notebook.panes.STATIC_BYTES): a notebook
    stays small enough to review and to load in a browser."""
    assert path.stat().st_size < 1_000_000, f"{path.name} is {path.stat().st_size / 1e6:.2f} MB"


def main(argv: list[str]) -> int:
    if argv[1:] != ["--write"]:
        print(__doc__)
        return 2
    for path in NOTEBOOKS:
        t0 = time.perf_counter()
        nb = strip_widgets(run_notebook(path))
        errors = _errors(nb)
        if errors:
            print(f"{path.name}: {errors}")
            return 1
        nbformat.write(nb, path)
        print(f"{path.name}: ran in {time.perf_counter() - t0:.1f} s, written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
