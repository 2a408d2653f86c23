"""The memory tab of a saved report in a real browser (Debian's chromium; the page's only script is the
graph canvas's): the plot is drawn, its peak marker leads to the peak's line, and the what-if table is
there. Saves ``test-artifacts/explorer-memory.png`` (git ignores it) and one in tmp_path."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip("Debian chromium is not installed (make system installs it)", allow_module_level=True)

pytestmark = pytest.mark.slow
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"


def test_memory_tab_plot_and_peak_link(tmp_path):
    import torch

    import explorer
    import thunder

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.GELU(), torch.nn.Linear(128, 8))
    jm = thunder.jit(model)
    x = torch.randn(16, 32)
    jm(x).sum().backward()
    comparison = explorer.compare(jm, (x,), executors=[["torch"], ["torch", "python"]], repeat=2)
    path = tmp_path / "report.html"
    page_text = explorer.to_html(jm, str(path), comparison=comparison)
    from explorer.views.canvas import canvas_script

    assert "<script" not in page_text.replace(canvas_script(), "")  # (the memory view needs none)
    with sync_api.sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            viewport={"width": 1200, "height": 900},
        )
        try:
            page = ctx.new_page()
            page.set_default_timeout(60_000)
            page.goto(path.as_uri())
            section = page.locator(".kind.rk_memory")
            assert not section.is_visible()
            page.locator(".tabs label", has_text="memory").click()
            sync_api.expect(section).to_be_visible()
            plots = section.locator("svg.memplot")
            assert plots.count() == 2
            box = plots.first.bounding_box()
            assert box["width"] > 600 and box["height"] > 150  # drawn at its size
            sync_api.expect(section).to_contain_text("Saved for backward")
            sync_api.expect(section.locator(".whatif")).to_contain_text("torch + python")
            peak = plots.nth(1).locator("a.peak")
            target = peak.get_attribute("href")
            peak.locator("circle").click()
            assert page.url.endswith(target)
            row = page.locator(f"tr{target}")
            sync_api.expect(row).to_be_visible()
            assert "peak" in row.get_attribute("class")
            page.screenshot(path=str(tmp_path / "explorer-memory.png"), full_page=True)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "explorer-memory.png"), full_page=True)
        finally:
            ctx.close()
