"""The graph canvas by its text: the script and stylesheet bundled and carried once, every node
and cluster carrying the id a click selects, labels at torch level at every depth, a 1,000-op
backward drawn whole beside its forward."""

from __future__ import annotations

import re
import shutil
from urllib.parse import unquote

import pytest
import torch

import thunder
from explorer.model.compilation import model_of
from explorer.views.canvas import MIN_TEXT_PX, asset, canvas_html, canvas_script
from explorer.views.columns.pair import pair_graph
from explorer.views.graph import graph_dot, render_graph

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz `dot` is not installed")


def _ids(text: str) -> list[str]:
    return [unquote(x) for x in re.findall(r"thx-s-([^\s\"]+)", text.replace("&#45;", "-"))]


def attention_like(x):
    pos = torch.arange(x.shape[-1], dtype=x.dtype)
    return torch.softmax(x + pos, -1).sum()


@pytest.fixture(scope="module")
def softmax_model():
    jfn = thunder.jit(attention_like)
    jfn(torch.randn(3, 4, requires_grad=True)).backward()
    return model_of(jfn)


def test_assets_are_bundled_and_self_contained():
    js, css = asset("canvas.js"), asset("canvas.css")
    assert "window.thxCanvas" in js and "thx-select" in js and "thx-toggle" in js
    assert f"MIN_TEXT_PX = {MIN_TEXT_PX}" in js  # the readable floor is the same on both sides
    assert "</script" not in js and "http" not in js.replace("http://www.w3.org/2000/svg", "")  # offline
    assert ".thx-cv-mini" in css
    page = canvas_script()
    assert page.count("<script>") == 1 and page.startswith("<style>")


def test_labels_stay_at_torch_level_at_every_depth(softmax_model):
    for kind in ("computation", "backward"):
        s = softmax_model.series[kind]
        for depth in (1, 2, 3):
            dot, *_ = graph_dot(s.final, s.proxies, depth=depth)
            labels = re.findall(r'label="([^"]*)"', dot)
            assert not [x for x in labels if "prims." in x], (kind, depth)
        if kind == "computation":
            assert "torch.arange" in dot and "torch.softmax" in dot
    s = softmax_model.series["computation"]
    deep, *_ = graph_dot(s.final, s.proxies, depth=1, decompose=True)
    assert "prims.iota" in deep and "prims.amax" in deep  # the decomposition, when asked for


def test_every_drawn_op_carries_its_id(softmax_model):
    s = softmax_model.series["computation"]
    p = s.final
    dot, count, *_ = graph_dot(p, s.proxies, depth=1)
    ids = _ids(dot)
    assert len(ids) == count and all(p.find(i) is not None for i in ids)
    drawn = {n.id for n in p.nodes if "del" not in n.tags}
    assert set(ids) == drawn


@needs_dot
def test_graph_html_is_a_canvas_and_its_display_carries_the_script(softmax_model):
    s = softmax_model.series["computation"]
    g = render_graph(s.final, s.proxies, depth=1)
    html = g.html()
    assert html.count('<div class="thx-canvas"') == 1 and "<script" not in html
    assert '<svg style="max-width:none"' in html  # no script: the size graphviz drew it, scrolled
    assert set(_ids(html)) == set(_ids(g.dot))
    assert g._repr_html_().count("<script>") == 1
    assert canvas_html("<svg></svg>").startswith('<div class="thx-canvas" tabindex="0">')
    # what the page selected rides along, for the canvas to bring into view
    assert 'data-thx-reveal="module:a&lt;b&gt;"' in canvas_html("<svg></svg>", "module:a<b>")
    softmax = next(n.id for n in s.final.nodes if n.sym_id == "torch.softmax")
    assert f'data-thx-reveal="{softmax}"' in g.html(selected=softmax)


def long_chain(x):
    for _ in range(250):
        x = torch.sin(x) * 1.01 + x
    return x.sum()


@needs_dot
def test_a_1000_op_backward_is_drawn_whole_beside_its_forward():
    jfn = thunder.jit(long_chain)
    jfn(torch.randn(8, requires_grad=True)).backward()
    model = model_of(jfn)
    pair = model.pair()
    backward_ops = sum(1 for n in pair.backward.nodes if "del" not in n.tags)
    assert backward_ops >= 1000
    g = pair_graph(pair)
    assert g.svg is not None and g.nodes >= backward_ops + 700, g.messages
    assert not [m for m in g.messages if "not drawn" in m or "failed" in m]
    assert "bmore" not in g.dot and "fbefore" not in g.dot
    # the saved values' long edges are notes by the backward lines that read them
    assert "from far above" in g.dot or "nodes far above" in g.dot
    s = model.series["backward"]
    alone = render_graph(s.final, s.proxies)
    assert alone.nodes >= backward_ops and not [m for m in alone.messages if "not drawn" in m]


@needs_dot
def test_report_carries_the_script_once_and_the_ids_and_timeline():
    from explorer.measure.runner import measure
    from explorer.views.report import report_html

    jfn = thunder.jit(attention_like)
    x = torch.randn(3, 4, requires_grad=True)
    jfn(x)
    model = model_of(jfn)
    measure(jfn, (x,)).attach(model)
    page = report_html(model)
    assert page.count("<script>") == 1 and page.count(asset("canvas.js")) == 1
    assert page.rindex("<script>") > page.rindex('class="thx-canvas"')  # after the canvases it enhances
    final = model.series["computation"].final
    softmax = next(n.id for n in final.nodes if n.sym_id == "torch.softmax")
    assert softmax in _ids(page)
    assert "Timeline of a run" in page
