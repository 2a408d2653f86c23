"""The graph canvas in a real JupyterLab (Debian's chromium), on a 2-layer Llama's training step
(``canvas.ipynb``): the explorer's graph is zoomed and panned until its labels read, a node
clicked selects its line in the tree (and a line selected in the tree is brought into view in
the graph), a folded layer is opened in place by a double-click, the memory view renders without
a JavaScript error with its long table folded, the timeline of the measured run opens, and a
what-if against an executor that gets its regions slightly wrong says which output differs and
by how much; a backward span clicked in the timeline opens the backward with that line selected.
Any console error of the page fails the test. With ``EXPLORER_SCREENSHOTS=<dir>``
the screenshots go there too (``docs/screenshots`` is made that way; see its README)."""

from __future__ import annotations

import os
import re

import pytest
from support.lab import CHROMIUM, run_all, save

sync_api = pytest.importorskip("playwright.sync_api")
if not os.path.exists(CHROMIUM):
    pytest.skip("Debian chromium is not installed (make system installs it)", allow_module_level=True)

pytestmark = pytest.mark.slow
NB = "canvas.ipynb"  # next to this file
expect = sync_api.expect

# the on-screen size of a node label: its font size through the SVG's transform to the screen
LABEL_PX = """cv => { const t = cv.querySelector('g.node text'); const m = t.getScreenCTM();
  return parseFloat(t.getAttribute('font-size')) * Math.hypot(m.a, m.b); }"""
VIEW_BOX = "cv => cv.querySelector('svg').getAttribute('viewBox').split(' ').map(Number)"
# the graph nodes whose box lies inside the canvas's view: [id, label, x, y] (screen centre; the
# canvas scrolled to the middle of the window first)
VISIBLE = """cv => { cv.scrollIntoView({block: 'center'}); const v = cv.querySelector('.thx-cv-view').getBoundingClientRect(); const out = [];
  for (const g of cv.querySelectorAll('g.node')) {
    const ids = window.thxCanvas.idsOf(g); const r = g.getBoundingClientRect();
    if (ids.length && r.left > v.left + 4 && r.right < v.right - 4 && r.top > v.top + 4
        && r.bottom < v.bottom - 4 && r.width > 0)
      out.push([ids[0], g.querySelector('text').textContent, r.left + r.width / 2, r.top + r.height / 2]);
  }
  return out; }"""
# where the node or cluster standing for an id is on the screen (the canvas scrolled to the middle
# of the window first), and whether its centre is in the canvas's view
PLACE = """(cv, id) => { cv.scrollIntoView({block: 'center'}); const g = cv.querySelector('.thx-s-' + CSS.escape(encodeURIComponent(id)));
  if (!g) return null; const r = g.getBoundingClientRect(); const v = cv.querySelector('.thx-cv-view').getBoundingClientRect();
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  return {x, y, inView: x > v.left && x < v.right && y > v.top && y < v.bottom, sel: g.classList.contains('thx-sel')}; }"""


def _live_canvas(page, ex, selected: str | None = None):
    """The explorer's graph canvas once its script made it live (zoom bar, minimap); with
    ``selected``, the one drawn after the explorer selected that id."""
    which = f'[data-thx-reveal="{selected}"]' if selected else ""
    cv = ex.locator(f".graph .thx-canvas.thx-cv-live{which}")
    try:
        cv.wait_for(timeout=30_000)
    except sync_api.Error as e:
        state = page.evaluate(
            "() => ({script: typeof window.thxCanvas, canvases: document.querySelectorAll('.thx-canvas').length,"
            " drivers: document.querySelectorAll('[data-thx-canvas-driver]').length})"
        )
        raise AssertionError(
            f"the graph canvas never came alive: {state}; console errors: {page.errors}"
        ) from e
    return cv


def _place(cv, node_id: str) -> dict:
    place = cv.evaluate(PLACE, node_id)
    assert place is not None, f"no node or cluster of {node_id} in the graph"
    return place


def test_graph_canvas_memory_timeline_and_whatif_in_jupyterlab(lab, browser, tmp_path):
    page = browser
    ex = run_all(page, lab, NB)
    expect(ex).to_contain_text("The final program")
    ex.get_by_role("button", name="graph", exact=True).click()
    cv = _live_canvas(page, ex)
    cv.scroll_into_view_if_needed()
    fit_px, fit_box = cv.evaluate(LABEL_PX), cv.evaluate(VIEW_BOX)
    assert fit_px >= 8.9, f"fit drew labels at {fit_px:.1f} px"
    assert cv.evaluate(VISIBLE), "fit shows no node of the graph"

    # zoom with the wheel over the canvas: the view narrows, the labels grow
    view = cv.locator(".thx-cv-view").bounding_box()
    page.mouse.move(view["x"] + view["width"] / 3, view["y"] + view["height"] / 3)
    for _ in range(3):
        page.mouse.wheel(0, -120)
        page.wait_for_timeout(50)
    expect(cv.locator(".thx-cv-info")).not_to_have_text(f"text {fit_px:.0f} px")
    zoomed_px, zoomed_box = cv.evaluate(LABEL_PX), cv.evaluate(VIEW_BOX)
    assert zoomed_px >= 9 and zoomed_px > fit_px * 1.3, (fit_px, zoomed_px)
    assert zoomed_box[2] < fit_box[2] * 0.8, (fit_box, zoomed_box)
    # pan by dragging: the view moves by the drag over the scale, its size stays
    x, y = view["x"] + view["width"] / 2, view["y"] + view["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 120, y - 90, steps=6)
    page.mouse.up()
    page.wait_for_timeout(100)
    panned = cv.evaluate(VIEW_BOX)
    assert panned[2:] == zoomed_box[2:] and panned[:2] != zoomed_box[:2], (zoomed_box, panned)
    save(page, tmp_path, "canvas-zoomed.png", cv)

    # click a node: its line is selected (details below; the tree marks it)
    shown = cv.evaluate(VISIBLE)
    assert shown, "no node in view after zooming and panning"
    node_id, label, nx, ny = next((s for s in shown if not s[0].startswith("module:")), shown[0])
    page.mouse.click(nx, ny)
    details = ex.locator(".thx-details")
    expect(details).to_contain_text(node_id if node_id.startswith("module:") else label.split(" =")[0])
    cv = _live_canvas(page, ex, node_id)  # drawn again with the node highlighted, where the view was
    assert _place(cv, node_id)["sel"]
    ex.get_by_role("button", name="tree", exact=True).click()
    row = ex.locator(f'.tree .sel[data-id="{node_id}"]')
    expect(row).to_be_visible()

    # the other way: a line picked in the tree is brought into view in the graph
    other = ex.locator(".tree .leaf[data-id] .ln, .tree details[data-id] > summary .ln")
    pick = None
    for i in range(min(other.count(), 60)):
        rid = other.nth(i).evaluate("e => e.closest('[data-id]').dataset.id")
        if rid != node_id and not rid.startswith("module:") and "/" not in rid and other.nth(i).is_visible():
            pick = (rid, other.nth(i))
    assert pick is not None, "no other line in the tree to pick"
    rid, line = pick
    line.click()
    expect(ex.locator(f'.tree .sel[data-id="{rid}"]')).to_be_visible()
    ex.get_by_role("button", name="graph", exact=True).click()
    cv = _live_canvas(page, ex, rid)
    expect(cv.locator(f".thx-s-{rid}.thx-sel")).to_have_count(1)
    place = _place(cv, rid)
    assert place["inView"], f"the line picked in the tree ({rid}) is not in the graph's view: {place}"

    # a folded layer opens in place on a double-click (found by its path, which selects it)
    graph = ex.locator(".graph svg")
    folded = re.compile(r"model\.layers\.1\s+\(LlamaDecoderLayer\)")
    expect(graph).to_contain_text(folded)
    expect(graph).not_to_contain_text("model.layers.1.self_attn")
    ex.locator("input[placeholder^='symbol']").press_sequentially("model.layers.1")
    expect(ex).to_contain_text("bound symbols match model.layers.1;")  # searched to the last key
    ex.get_by_role("button", name="next match").click()
    expect(ex.locator(".thx-details")).to_contain_text("module model.layers.1 (LlamaDecoderLayer)")
    cv = _live_canvas(page, ex, "module:model.layers.1")
    layer = _place(cv, "module:model.layers.1")
    assert layer["inView"], layer
    page.mouse.dblclick(layer["x"], layer["y"])
    expect(graph).to_contain_text("model.layers.1.self_attn")
    cv = _live_canvas(page, ex)
    cluster = "(cv, id) => !!cv.querySelector('g.cluster.' + CSS.escape('thx-s-' + encodeURIComponent(id)))"
    assert cv.evaluate(cluster, "module:model.layers.1")  # a cluster now, its modules inside
    save(page, tmp_path, "canvas-layer-opened.png", ex)

    # the timeline of the measured run, below the explorer
    box = ex.locator(".thx-timeline-box")
    box.get_by_text("timeline of the measured run").click()
    timeline = box.locator("svg.thx-timeline")
    expect(timeline).to_be_visible()
    expect(box).to_contain_text("forward")
    assert box.locator("g.node").count() > 50  # a span per line run
    save(page, tmp_path, "timeline.png", box)
    # a click on a backward line's span (the last span: the backward's lines come after the
    # forward's) opens the backward trace with that line selected
    spans = box.locator(".thx-canvas.thx-cv-live")
    last = spans.evaluate("cv => window.thxCanvas.idsOf([...cv.querySelectorAll('g.node')].pop())[0]")
    spans.evaluate("(cv, id) => cv.thxCanvas.reveal(id)", last)
    page.wait_for_timeout(100)  # (the view moves on the next frame)
    span = _place(spans, last)
    assert span["inView"], span
    page.mouse.click(span["x"], span["y"])
    expect(ex.locator(".widget-toggle-buttons button.mod-active", has_text="backward")).to_have_count(1)
    expect(ex.locator(".thx-details")).to_contain_text(last)

    # the what-if: the skewed executor's outputs differ; the table names the first that does
    whatif = ex.get_by_label("what if")
    whatif.fill("torch | skewed, torch")
    ex.get_by_role("button", name="compare executors").click()
    bad = ex.locator(".whatif td.bad")
    expect(bad).to_contain_text("DIFFER", timeout=120_000)
    text = bad.inner_text()
    found = re.search(r"(out[\w.\[\]]*) differs: max abs error ([\d.e+-]+)", text)
    assert found is not None, text
    assert found[1] == "out.loss" and float(found[2]) > 0, text
    cell, right = bad.bounding_box(), ex.bounding_box()
    assert cell["x"] + cell["width"] <= right["x"] + right["width"], "the answer is cut off on the right"
    save(page, tmp_path, "whatif.png", ex.locator(".whatif"))

    # explorer.memory(...): drawn, no "Javascript Error", every line listed only in a fold
    memory = page.locator(".jp-OutputArea-output", has=page.locator("svg.memplot")).last
    memory.scroll_into_view_if_needed()
    expect(memory.locator("svg.memplot").first).to_be_visible()
    assert page.get_by_text("Javascript Error").count() == 0
    every = memory.locator("details.allrows")
    expect(every).to_have_count(1)
    assert every.get_attribute("open") is None
    assert not every.locator("table.memrows").is_visible()
    save(page, tmp_path, "memory.png", memory)
    # (its 504 lines listed open were over 10,000 px; the plots, the lines around the peak and the
    # costliest saved values are about 1,800)
    height = memory.bounding_box()["height"]
    assert height < 2200, f"the memory output is {height:.0f} px tall"
    assert not page.errors, f"console errors: {page.errors}"
