"""A program of 40,000 BoundSymbols, compiled by thunder through every pass, read by the model,
the tree, the diffs, the report and the widget: each view stays within its element budget.

(How fast this is, is measured by ``bench/explorer.py``, not here.)
"""

from __future__ import annotations

import re

import pytest
import torch
from support.explorer_builders import Stack, many_ops

import thunder
from explorer.model.compilation import model_of
from explorer.model.pair import shown
from explorer.notebook.panes import MIN_STATIC_BUDGET, STATIC_BYTES, TIMING_ROWS
from explorer.notebook.widget import MAX_LISTED, Explorer
from explorer.views.columns.pair import LISTED_NAMES, pair_graph, pair_html, pair_text
from explorer.views.columns.pair import MAX_NODES as PAIR_MAX_NODES
from explorer.views.graph import DEFAULT_MAX_NODES, graph_dot, render_graph
from explorer.views.html import (
    STATIC_BUDGET,
    compilation_html,
    diff_html,
    source_html,
    trace_html,
)
from explorer.views.report import TIMING_ROWS as REPORT_TIMING_ROWS
from explorer.views.report import report_html
from explorer.views.text import source_diff
from explorer.views.tree import DEFAULT_BUDGET, tree_html

OPS = 40_000
MB = 1_000_000

pytestmark = pytest.mark.slow  # tracing 40,000 ops takes several seconds


@pytest.fixture(scope="module")
def big():
    jfn = thunder.jit(lambda x: many_ops(x, OPS))
    x = torch.rand(4)
    assert torch.allclose(jfn(x), many_ops(x, OPS))
    return jfn


@pytest.fixture(scope="module")
def model(big):
    return model_of(big)


def _ids(html: str) -> int:
    return html.count("data-id=")


def _changed_lines(html: str) -> int:
    return html.count('class="drem') + html.count('class="dadd')


def test_model_of_every_pass(big, model):
    traces = thunder.last_traces(big)
    s = model.series["computation"]
    assert [len(p.nodes) for p in s.passes] == [len(t.bound_symbols) for t in traces]
    assert len(s.passes[0].nodes) == OPS
    names = [p.name for p in s.passes]
    claim = s.passes[names.index("Transform for execution")]
    assert len(claim.diff.rewritten) == OPS and not claim.diff.added and not claim.diff.removed
    old, new = claim.diff.rewritten["t0"]
    assert old.startswith("t0 = ltorch.cos(x)") and new.startswith("t0 = torch.cos(x)")
    dlu = s.final
    assert len(dlu.diff.added) == len(dlu.nodes) - OPS and all(
        "del" in dlu.find(k).tags for k in dlu.diff.added
    )
    assert not dlu.diff.rewritten and not dlu.diff.removed
    # a subsymbol deep in the last line is found, and its proxies are known
    last = dlu.nodes[-1] if "del" not in dlu.nodes[-1].tags else dlu.nodes[-2]
    deepest = list(last.walk())[-1]
    assert deepest.id.count("/") == 2 and dlu.find(deepest.id) is deepest
    assert all(name in s.proxies for name in deepest.inputs + deepest.outputs)


def test_tree_keeps_to_its_budget(model):
    p = model.series["computation"].final
    h = tree_html(p.nodes)
    assert _ids(h) == DEFAULT_BUDGET
    assert re.search(rf'<div class="more">\.\.\. {len(p.nodes) - DEFAULT_BUDGET} more</div>', h)
    # a hit at the end of the trace is shown, opened down to it, within the budget
    deep = list(p.nodes[-2].walk())[-1]
    h = tree_html(p.nodes, hits=[deep.id], open_depth=0)
    assert _ids(h) == DEFAULT_BUDGET and f'data-id="{deep.id}"' in h


def test_diffs_keep_to_their_budget(model):
    s = model.series["computation"]
    for before, after in zip(s.passes, s.passes[1:]):
        if not after.changed:
            continue
        h = diff_html(after, before)
        rows = h.split('<div class="hd">Text diff</div>')[0]
        assert rows.count('<div class="drem') + rows.count('<div class="dadd') + rows.count(
            '<div class="ln">'
        ) <= (DEFAULT_BUDGET)
        assert "more changes</div>" in rows
        text = source_diff(before, after, limit=DEFAULT_BUDGET)
        lines = text.splitlines()
        assert DEFAULT_BUDGET - 10 <= len(lines) <= DEFAULT_BUDGET + 8  # file names, context, the note
        assert re.fullmatch(r"\.\.\. \d+ more changed lines not shown", lines[-1])
    dels = source_diff(s.passes[-2], s.final, limit=50)
    assert "+  del t0" in dels.splitlines()[3:12]


def test_printed_trace_keeps_to_its_budget(model):
    p = model.series["computation"].final
    pre = source_html(p)
    lines = pre.removeprefix("<pre>").removesuffix("</pre>").splitlines()
    assert DEFAULT_BUDGET - 10 <= len(lines) <= DEFAULT_BUDGET + 12  # imports, def, the note, return
    assert re.fullmatch(r"  # \.\.\. \d+ more bound symbols \(\d+ lines\) not shown", lines[-2])
    assert lines[-1] == "  " + p.return_line


def test_notebook_displays_keep_to_the_static_budget(big):
    html = compilation_html(big)  # what a jitted function shows in a notebook
    kinds = html.split('<details class="kind"')[1:]
    assert len(kinds) == 3 and all(_ids(k) <= STATIC_BUDGET for k in kinds)
    assert _ids(kinds[1]) == STATIC_BUDGET and len(html) < 2 * MB
    html = trace_html(thunder.last_traces(big)[-1])  # what a trace shows
    assert _ids(html) == STATIC_BUDGET and len(html) < MB


def test_graph_keeps_to_its_budget(model):
    s = model.series["computation"]
    g = render_graph(s.final, s.proxies, depth=1)
    assert g.nodes == DEFAULT_MAX_NODES and g.depth == 0
    assert any("more are not drawn" in m for m in g.messages)


def test_report_stays_small_and_budgeted(model):
    page = report_html(model)
    assert len(page) < 10 * MB
    panes = re.split(r'<div class="pane ', page)[1:]
    assert len(panes) == sum(len(s.passes) for s in model.series.values())
    finals = 0
    for pane in panes:
        assert _ids(pane) <= DEFAULT_BUDGET
        assert _changed_lines(pane) <= 3 * DEFAULT_BUDGET  # the rows (- and + each) and the text diff
        if "<summary>Printed trace</summary>" not in pane:  # a pass before the final: its lines
            listed = pane.split("<summary>Its lines")[1]
            assert listed.count("\n") <= DEFAULT_BUDGET + 4
            continue
        finals += 1
        printed = pane.split("<summary>Printed trace</summary>")[1]
        assert printed.count("\n") <= DEFAULT_BUDGET + 12
    assert finals == len(model.series)
    plots = sum(k in model.series for k in ("computation", "backward"))  # the memory tab's
    assert (
        page.count("<svg") == 1 + sum(len(model.series[k].passes) for k in ("prologue", "epilogue")) + plots
    )


def test_widget_views_keep_to_their_budgets(model):
    ex = Explorer(model, view="tree")
    assert _ids(ex.main.value) == DEFAULT_BUDGET and ex.status.value == ""
    for view in ("overview", "graph", "source", "diff", "timing", "tree"):
        ex.view.value = view
        html = ex.main.value
        assert _ids(html) <= DEFAULT_BUDGET
        assert _changed_lines(html) <= 3 * DEFAULT_BUDGET
        if view == "graph":  # svg nodes: the bound symbols drawn, the inputs, return, the legend
            assert DEFAULT_MAX_NODES <= html.count('class="node') <= DEFAULT_MAX_NODES + 20
        else:
            text = html.split("</style>", 1)[1]
            assert text.count("\n") <= (2 if view == "diff" else 1) * DEFAULT_BUDGET + 20
    ex.query.value = "cos"
    assert len(ex.hits) == MAX_LISTED and ex.more_hits
    assert "more than 1000 bound symbols match" in ex.status.value
    assert _ids(ex.main.value) <= DEFAULT_BUDGET and 'class="n hit"' in ex.main.value
    made = model.series["computation"].final.nodes[-4]
    ex.query.value = name = made.outputs[0]  # a proxy name: its maker and its readers, at the end
    assert made in ex.hits and not ex.more_hits and len(ex.hits) < 10
    assert all(name in n.inputs + n.outputs for n in ex.hits)
    ex.select(ex.hits[0].id)
    assert re.search(rf'class="n hit sel" data-id="{ex.hits[0].id}"', ex.main.value)
    static = ex._repr_mimebundle_()["text/html"]
    kinds = static.split('<details class="kind"')[1:]
    assert len(kinds) == 3 and all(_ids(k) <= STATIC_BUDGET for k in kinds)  # only trees have ids
    assert len(static) < 2 * MB


def test_timing_view_keeps_to_its_budget(model):
    final = model.series["computation"].final
    model.timings["computation"] = {n.id: 1e-6 * (i % 997) for i, n in enumerate(final.nodes)}
    try:
        ex = Explorer(model, view="timing")
        rows = ex.main.value.count("<tr><td>")
        assert rows == TIMING_ROWS and f"... {len(final.nodes) - TIMING_ROWS} more" in ex.main.value
        page = report_html(model, graphs="none")
        assert page.count("<tr><td>") <= REPORT_TIMING_ROWS + 100  # and the cache table's
        assert f"... {len(final.nodes) - REPORT_TIMING_ROWS} more" in page
    finally:
        model.timings.clear()


STACK_OPS = 12_000  # 3,000 modules of 4 ops each (tracing 40,000 through module hooks takes ~25 s)


def test_module_views_keep_to_their_budgets():
    jm = thunder.jit(Stack(STACK_OPS))
    x = torch.rand(4)
    torch.testing.assert_close(jm(x), Stack(STACK_OPS)(x))  # no parameters: the same function
    model = model_of(jm)
    s = model.series["computation"]
    p = s.final
    tree = p.modules()
    assert len(tree.groups) == STACK_OPS // 4 + 2  # the Stack, its Sequential, each Layer
    h = tree_html(p.nodes, modules=tree)
    assert _ids(h) == DEFAULT_BUDGET and len(h) < MB
    # the repeated layers after the first are one node
    dot, count, _, _ = graph_dot(p, s.proxies, modules=True)
    assert count == 5 and f"{STACK_OPS // 4 - 1} \u00d7 Layer, {STACK_OPS - 4} ops" in dot
    ex = Explorer(model, modules=True, view="tree")
    assert _ids(ex.main.value) == DEFAULT_BUDGET
    last = f"layers.{STACK_OPS // 4 - 1}"
    ex.query.value = last
    assert [g.path for g in ex.module_hits] == [last]
    assert (
        f'class="n mod hit" data-id="module:{last}"' in ex.main.value
        and _ids(ex.main.value) <= DEFAULT_BUDGET
    )
    ex.main.selected = f"module:{last}"  # a click on the module's line
    assert f"module {last} (Layer)" in ex.details.value
    ex.view.value = "graph"
    assert ex.main.value.count('class="node') < 20
    static = ex._repr_mimebundle_()["text/html"]
    kinds = static.split('<details class="kind"')[1:]
    assert all(_ids(k) <= 2 * STATIC_BUDGET for k in kinds) and len(static) < 2 * MB


GRAD_OPS = 4_000  # the grad pass over 40,000 ops takes minutes; 4,000 still overflow every budget


def test_pair_views_keep_to_their_budgets():
    jfn = thunder.jit(lambda x: many_ops(x, GRAD_OPS))
    jfn(torch.rand(4, requires_grad=True))
    model = model_of(jfn)
    pair = model.pair()
    fw, bw = shown(pair.forward.nodes), shown(pair.backward.nodes)
    assert len(fw) == GRAD_OPS and len(bw) > GRAD_OPS and len(pair.saved) > LISTED_NAMES
    text = pair_text(pair).splitlines()
    assert (
        text[1].endswith(f", ... {len(pair.saved) - LISTED_NAMES} more")
        and text[1].count(",") == LISTED_NAMES
    )
    assert all(len(line) < 10_000 for line in text)
    assert len(text) <= DEFAULT_BUDGET + 12  # the summary, saved, signatures, cotangents, returns, the cuts
    assert f"  ... {GRAD_OPS - DEFAULT_BUDGET // 2} more" in text
    html = pair_html(pair)
    assert html.count('<div class="pl') == DEFAULT_BUDGET and len(html) < 2 * MB
    assert f"... {len(bw) - DEFAULT_BUDGET // 2} more" in html
    # links to lines beyond the budget name them without an anchor
    assert 'class="lk" title=' in html and "(not shown here)" in html
    g = pair_graph(pair)
    assert g.nodes == PAIR_MAX_NODES and g.svg is not None
    assert any("where the backward starts" in m for m in g.messages)
    ex = Explorer(model, view="pair")
    assert ex.main.value.count('<div class="pl') == DEFAULT_BUDGET
    static = ex._repr_mimebundle_()["text/html"]
    # the saved static copy shrinks its budget until it fits STATIC_BYTES
    lines = static.split('<details class="pairs" open>')[1].count('<div class="pl')
    assert MIN_STATIC_BUDGET <= lines < STATIC_BUDGET
    assert len(static) <= STATIC_BYTES or lines == MIN_STATIC_BUDGET
    page = report_html(model, graphs="none")
    section = page.split('<div class="kind rk_pair">')[1]
    assert section.count('<div class="pl') == DEFAULT_BUDGET
