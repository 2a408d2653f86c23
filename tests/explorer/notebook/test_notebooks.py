"""The tutorial notebooks run top to bottom in a fresh kernel, and are committed so that they
read well where no script runs (the runner, and the script that regenerates the committed
outputs, are in ``tests/support/notebooks.py``)."""

from __future__ import annotations

import re
import time

import nbformat
import pytest
from support.notebooks import NOTEBOOKS, WIDGET_VIEW, notebook_errors, run_notebook


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path):
    t0 = time.perf_counter()
    nb = run_notebook(path)
    assert not notebook_errors(nb)
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
    assert not notebook_errors(nb)
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


SHOWS_THE_VIEWS = ("01_first_trace", "05_autograd", "07_real_models", "08_distributed")


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.stem in SHOWS_THE_VIEWS], ids=lambda p: p.stem)
def test_committed_notebook_shows_the_overview_the_canvas_and_a_timeline(path):
    """The tutorials that open explorers show what they open on (the overview), graphs in the
    canvas, and a run on a time axis, in their saved outputs."""
    nb = nbformat.read(path, as_version=4)
    html = "".join(
        o.get("data", {}).get("text/html", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    assert '<div class="hd">The final program</div>' in html, "no explorer opened on the overview"
    assert '<div class="thx-canvas"' in html, "no graph drawn in the canvas"
    assert 'class="thx-timeline"' in html and "<script>" in html, "no timeline (with the canvas script)"
