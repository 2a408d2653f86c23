"""The explorer in a real browser: JupyterLab started here, driven in Debian's chromium.

A notebook cell runs ``%thunder_trace``; the explorer opens on its overview; in the tree the test
unfolds a BoundSymbol by its triangle, selects it by a click on its line (nothing folds), searches
as it types (what was unfolded stays so), steps back through the passes, clicks a pass by its
name and reads the diff, and saves a screenshot (``test-artifacts/explorer-lab.png``, which
git ignores, and the test's tmp_path). Another opens a tiny Llama grouped by module, unfolds
and collapses a layer in the tree, finds a layer by its path and collapses it in the graph. A
third opens the forward and backward side by side and follows the links between them (a
backward op to the forward op it differentiates, and back). It also steps through the passes of a saved report
(CSS radio buttons, no script). Never a downloaded browser: ``executable_path`` is the
system's chromium.
"""

from __future__ import annotations

import os
import re

import pytest
from support.lab import CHROMIUM, run_all, save

sync_api = pytest.importorskip("playwright.sync_api")
if not os.path.exists(CHROMIUM):
    pytest.skip("Debian chromium is not installed (make system installs it)", allow_module_level=True)

pytestmark = pytest.mark.slow
NB, MODULES_NB, PAIR_NB = "explore.ipynb", "modules.ipynb", "pair.ipynb"  # next to this file


def _fold(page, summary) -> None:
    """Click a tree line's disclosure triangle (the start of its summary): it folds or unfolds;
    a click on the line's text selects it instead."""
    box = summary.bounding_box()
    page.mouse.click(box["x"] + 5, box["y"] + min(box["height"] / 2, 9))


def test_thunder_trace_in_jupyterlab(lab, browser, tmp_path):
    page = browser
    ex = run_all(page, lab, NB)
    # it opens on the overview of the final program, the last pass pressed in the pipeline
    sync_api.expect(ex).to_contain_text("The final program")
    current = ex.locator(".thx-passes .mod-active")
    sync_api.expect(current).to_contain_text("Delete Last Used")
    ex.get_by_role("button", name="tree", exact=True).click()

    # unfold a BoundSymbol by its triangle: --depth 0 shows the tree closed
    node = ex.locator('details[data-id="t0"]').first
    node.wait_for()
    assert node.get_attribute("open") is None
    child = node.locator(':scope > .kids [data-id="t0/t0"]')
    assert not child.is_visible()
    _fold(page, node.locator(":scope > summary"))
    sync_api.expect(child).to_be_visible()
    assert "ltorch.sin(x)" in child.inner_text()

    # a click on a line selects it (its details below) and folds nothing
    node.locator(":scope > summary .ln").first.click()
    sync_api.expect(ex.locator('details.sel[data-id="t0"]')).to_be_visible()
    sync_api.expect(ex).to_contain_text("x.sin() * 2 + y")  # its source, in the details
    sync_api.expect(child).to_be_visible()
    # search filters as you type (no Enter); what was unfolded stays unfolded
    search = ex.locator("input[placeholder^='symbol']")
    search.press_sequentially("softm")
    sync_api.expect(ex.locator(".tree .hit").first).to_contain_text("softmax")
    sync_api.expect(ex).to_contain_text("bound symbols match")
    sync_api.expect(child).to_be_visible()
    search.fill("")

    # step back to dead code elimination, then to the next pass (a click on its name), its diff
    for _ in range(10):
        if "Dead Code Elimination" in current.inner_text():
            break
        before = current.inner_text()
        ex.get_by_role("button", name="previous pass").click()
        sync_api.expect(current).not_to_have_text(before)
    sync_api.expect(current).to_contain_text("Dead Code Elimination")
    ex.get_by_role("button", name="diff", exact=True).click()
    sync_api.expect(ex).to_contain_text("Dead Code Elimination changed nothing")
    ex.locator(".thx-passes button", has_text="Transform for execution").click()
    sync_api.expect(current).to_contain_text("Transform for execution")
    sync_api.expect(ex).to_contain_text("5 rewritten")
    sync_api.expect(ex.locator(".dadd").first).to_contain_text("torch.sin(x)")
    ex.scroll_into_view_if_needed()
    save(page, tmp_path, "explorer-lab.png")


def test_llama_by_module_in_jupyterlab(lab, browser, tmp_path):
    page = browser
    ex = run_all(page, lab, MODULES_NB)
    sync_api.expect(ex).to_contain_text("held at the peak")  # the overview: modules first
    ex.get_by_role("button", name="tree", exact=True).click()
    tree = ex.locator(".tree")
    model = tree.locator('details[data-id="module:model"]')
    sync_api.expect(model).to_have_attribute("open", "")  # the jitted module and its children open
    layer = tree.locator('details[data-id="module:model.layers.0"]')
    assert layer.get_attribute("open") is None
    summary = layer.locator(":scope > summary")
    assert "model.layers.0" in summary.inner_text() and "LlamaDecoderLayer" in summary.inner_text()
    attn = layer.locator(':scope > .kids > details[data-id="module:model.layers.0.self_attn"]')
    assert not attn.is_visible()
    _fold(page, summary)  # unfold the layer: its attention shows
    sync_api.expect(attn).to_be_visible()
    summary.locator(".mp").click()  # a click on its name selects it; it stays open
    sync_api.expect(ex).to_contain_text("module model.layers.0 (LlamaDecoderLayer)")
    sync_api.expect(attn).to_be_visible()
    _fold(page, summary)  # and collapse it again
    sync_api.expect(attn).to_be_hidden()

    # find the second layer by its path as typed, select it, and collapse it in the graph
    search = ex.locator("input[placeholder^='symbol']")
    search.press_sequentially("model.layers.1")
    sync_api.expect(ex).to_contain_text("modules and")
    layer1 = tree.locator('details[data-id="module:model.layers.1"]')
    sync_api.expect(layer1).to_have_class(re.compile(r"\bhit\b"))
    # the layer's op count follows the compiler's decompositions: read it, do not write it here
    ops = int(re.search(r"(\d+) ops", layer1.locator(":scope > summary .note").inner_text()).group(1))
    ex.get_by_role("button", name="next match").click()  # the first hit: the layer itself
    sync_api.expect(ex).to_contain_text("module model.layers.1 (LlamaDecoderLayer)")
    sync_api.expect(ex).to_contain_text("t_model_layers_1_self_attn_q_proj_weight")
    ex.get_by_role("button", name="graph", exact=True).click()
    graph = ex.locator(".graph svg")
    graph.wait_for()
    # a repeated layer is folded into one node: its attention is not drawn
    folded, inner = f"(LlamaDecoderLayer) {ops} ops", "model.layers.1.self_attn"
    sync_api.expect(graph).to_contain_text(folded)
    sync_api.expect(graph).not_to_contain_text(inner)
    ex.get_by_role("button", name="expand module model.layers.1").click()
    sync_api.expect(graph).to_contain_text(inner)
    sync_api.expect(graph).not_to_contain_text(folded)
    ex.get_by_role("button", name="collapse module model.layers.1").click()
    sync_api.expect(graph).to_contain_text(folded)
    sync_api.expect(graph).not_to_contain_text(inner)
    ex.scroll_into_view_if_needed()
    save(page, tmp_path, "explorer-lab-modules.png")


TARGET_BLUE = "rgb(187, 222, 251)"  # how the pair view lights the line a link leads to (#bbdefb)


def test_pair_links_backward_to_forward_in_jupyterlab(lab, browser, tmp_path):
    page = browser
    ex = run_all(page, lab, PAIR_NB)
    fw = ex.locator('.pcol[data-side="forward"]')
    bw = ex.locator('.pcol[data-side="backward"]')
    sin = fw.locator('.pl[data-id="t1"]')  # t1 = torch.sin(t0): saved for backward
    sync_api.expect(sin).to_have_class(re.compile(r"\bsaved\b"))
    sync_api.expect(bw.locator("div.ln", has_text="def backward(")).to_contain_text("t1")
    assert not sin.evaluate("e => e.matches(':target')")
    # click a backward op, the derivative of sin: the forward's sin lights up
    bw.locator('.pl[data-id="t13"] a.go').click()
    sync_api.expect(sin).to_have_css("background-color", TARGET_BLUE)
    assert sin.evaluate("e => e.matches(':target')")
    # and back: the forward's relu lists the backward op that differentiates it
    fw.locator('.pl[data-id="t4"] a.lk[data-to="t8"]').click()
    sync_api.expect(bw.locator('.pl[data-id="t8"]')).to_have_css("background-color", TARGET_BLUE)
    sync_api.expect(sin).not_to_have_css("background-color", TARGET_BLUE)
    # selecting a backward line in the widget lights up its forward op too
    ex.get_by_role("button", name="backward", exact=True).click()
    ex.locator("input[placeholder^='symbol']").press_sequentially("t8")  # the line that makes t8 first
    ex.get_by_role("button", name="next match").click()
    sync_api.expect(ex.locator('.pcol[data-side="forward"] .pl.linked[data-id="t4"]')).to_be_visible()
    ex.scroll_into_view_if_needed()
    save(page, tmp_path, "explorer-lab-pair.png")


def test_report_steps_through_passes_without_script(browser, tmp_path):
    import torch

    import explorer
    import thunder

    def fn(x):
        return (x.cos() * 3).softmax(-1)

    jfn = thunder.jit(fn)
    jfn(torch.ones(2, 3))
    path = tmp_path / "report.html"
    explorer.to_html(jfn, str(path))
    page = browser
    page.goto(path.as_uri())
    panes = page.locator(".kind.rk_computation .pane")
    last = panes.count() - 1
    # it opens on the overview; a pass of its pipeline is a click away from that pass's page
    sync_api.expect(page.locator(".kind.rk_overview")).to_contain_text("The final program")
    assert not panes.nth(last).is_visible()
    names = [t.provenance.pass_name if t.provenance else "acquisition" for t in thunder.last_traces(jfn)]
    claim = names.index("Transform for execution")
    page.locator('.tl[data-kind="computation"] label', has_text="Transform for execution").click()
    sync_api.expect(panes.nth(claim)).to_be_visible()
    assert not page.locator(".kind.rk_overview").is_visible()
    page.locator(".tabs label", has_text="computation").click()  # its tab: the final pass
    sync_api.expect(panes.nth(last)).to_be_visible()
    assert not panes.nth(0).is_visible()
    page.locator(".kind.rk_computation .pbar label", has_text="Transform for execution").click()
    sync_api.expect(panes.nth(claim)).to_be_visible()
    assert not panes.nth(last).is_visible()
    sync_api.expect(panes.nth(claim)).to_contain_text("rewritten")
    panes.nth(claim).get_by_text("next pass").click()
    sync_api.expect(panes.nth(claim + 1)).to_be_visible()
    page.locator(".tabs label", has_text="prologue").click()
    sync_api.expect(page.locator(".kind.rk_prologue")).to_be_visible()
    save(page, tmp_path, "explorer-report.png")
