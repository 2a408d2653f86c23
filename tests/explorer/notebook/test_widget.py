"""The widget explorer's state after simulated use: change pass, search, select, views."""

from __future__ import annotations

import re

import pytest
import torch
from support.explorer_builders import SMALL_FN_LINE

import explorer
from explorer.model.compilation import model_of
from explorer.model.traces import TraceModel
from explorer.notebook.widget import Explorer, search
from explorer.views.report import report_html


@pytest.fixture
def ex(jfn):
    return Explorer(model_of(jfn), view="tree")


def test_opens_on_the_overview_of_the_final_computation_pass(jfn):
    ex = Explorer(model_of(jfn))
    assert ex.view.value == "overview" and ex.view.options[0] == "overview"
    assert ex.kind.value == "computation" and ex.kind.options == ("prologue", "computation", "epilogue")
    s = ex.series
    assert ex.pass_slider.max == ex.pass_slider.value == len(s.passes) - 1
    assert ex.next_button.disabled and not ex.prev_button.disabled
    assert "The final program" in ex.main.value and "first compilation" in ex.main.value
    assert 'data-id="t0"' not in ex.main.value  # not the tree, nor the last pass's del lines
    # the pipeline: a button per pass, the final one pressed; a click shows that pass
    assert ex.pass_buttons.value == len(s.passes) - 1
    assert [v for _, v in ex.pass_buttons.options] == list(range(len(s.passes)))
    labels = [label for label, _ in ex.pass_buttons.options]
    assert labels[-1].startswith(f"{len(s.passes) - 1} Delete Last Used")
    dce = next(i for i, p in enumerate(s.passes) if not p.changed)  # dead code elimination changed nothing
    assert labels[dce].endswith("(no change)")
    ex.pass_buttons.value = 1  # from the overview, a pass clicked shows what it changed
    assert ex.pass_slider.value == 1 and ex.current.index == 1 and ex.view.value == "diff"
    assert s.passes[1].name in ex.passes.value and f"{s.passes[1].name} changed nothing" in ex.main.value
    ex.prev_button.click()
    assert ex.pass_buttons.value == 0
    # asked for a kind, it opens on that kind's tree
    assert Explorer(model_of(jfn), kind="prologue").view.value == "tree"


def test_one_widget_tree(ex):
    import ipywidgets as w

    def count(widget):
        kids = getattr(widget, "children", ())
        return 1 + sum(count(k) for k in kids)

    # a fixed set of controls, however many bound symbols the trace has (no list repeating the tree)
    assert count(ex.root) < 34
    assert not any(isinstance(c, w.Select) for c in _walk(ex.root))
    buttons = (ex.prev_button, ex.next_button, ex.fold_button, ex.peak_button, ex.whatif.button, ex.next_hit)
    buttons += (ex.more_button,)  # "draw more ops" under a graph cut at its node limit
    assert all(not isinstance(c, w.Button) or c in buttons for c in _walk(ex.root))


def _walk(widget):
    yield widget
    for k in getattr(widget, "children", ()):
        yield from _walk(k)


def test_step_through_passes(ex):
    names = [p.name for p in ex.series.passes]
    last = ex.pass_slider.value
    claim = names.index("Transform for execution")
    ex.pass_slider.value = claim + 1
    ex.prev_button.click()
    assert ex.pass_slider.value == claim and ex.current.name == "Transform for execution"
    assert not ex.next_button.disabled
    ex.view.value = "diff"
    assert "rewritten" in ex.main.value and "torch.sin(x)" in ex.main.value
    assert "Text diff" in ex.main.value and 'class="dadd"' in ex.main.value
    ex.pass_slider.value = names.index("Dead Code Elimination")
    assert "Dead Code Elimination changed nothing" in ex.main.value
    ex.pass_slider.value = 0
    assert ex.prev_button.disabled and "The first trace" in ex.main.value
    for _ in names:
        ex.next_button.click()
    assert ex.pass_slider.value == last and ex.next_button.disabled


def test_views(ex):
    ex.view.value = "source"
    assert "def computation(x, y):" in ex.main.value
    ex.view.value = "graph"
    assert 'class="graph"' in ex.main.value
    ex.view.value = "timing"
    assert "No measured times" in ex.main.value
    ex.depth.value = 0
    ex.view.value = "tree"
    assert " open>" not in ex.main.value


def test_search_highlights_and_lists(ex):
    ex.query.value = "t1"
    hits = {n.id for n in ex.hits}
    assert "t1" in hits and "t2" in hits  # t1 is made by one and read by another
    assert all("t1" in ex.current.find(i).inputs + ex.current.find(i).outputs for i in hits)
    assert 'class="n hit" data-id="t1"' in ex.main.value
    assert "bound symbols match" in ex.status.value
    # "next match" selects the hits in turn, in trace order
    ex.next_hit.click()
    assert ex.selected == ex.hits[0].id and ex.main.selected == ex.hits[0].id
    ex.next_hit.click()
    assert ex.selected == ex.hits[1].id
    ex.query.value = "softmax"
    assert ex.hits and all("softmax" in n.sym_id for n in ex.hits)
    ex.query.value = f"explorer_builders.py:{SMALL_FN_LINE}"
    assert ex.hits and all(n.source.line == SMALL_FN_LINE for n in ex.hits)
    ex.query.value = ""
    assert not ex.hits and ex.status.value == "" and ex.next_hit.layout.display == "none"


def test_select_shows_details(ex):
    assert "Select a bound symbol" in ex.details.value
    ex.main.selected = "t0"  # what a click on its line in the tree sends
    assert ex.selected == "t0"
    d = ex.details.value
    assert "t0 = torch.sin(x)" in d and "torch.sin" in d and "cpu f32[2, 4]" in d
    assert "Source" in d and "x.sin() * 2 + y" in d and f"explorer_builders.py:{SMALL_FN_LINE}" in d
    assert 'class="n sel" data-id="t0"' in ex.main.value
    ex.view.value = "graph"
    assert "penwidth=3.5" not in ex.main.value  # highlight goes into DOT, SVG shows the result
    # the selection survives a pass change while the BoundSymbol exists
    ex.prev_button.click()
    assert ex.selected == "t0" and ex.main.selected == "t0"


def test_declined_executors_in_details(passes):
    ex = Explorer(TraceModel.from_traces({"computation": passes}))
    ex.select("t1")
    assert "declined by" in ex.details.value and "not available &lt;here&gt;" in ex.details.value


def test_change_trace_kind(ex):
    ex.query.value = "x"
    ex.kind.value = "prologue"
    assert ex.pass_slider.max == len(ex.model.series["prologue"].passes) - 1
    assert any("unpack" in n.tags for n in ex.hits)
    ex.kind.value = "epilogue"
    assert ex.current is ex.model.series["epilogue"].final


def test_cache_panel(ex):
    assert "2 compiled entries" in ex.cache.value
    assert "expected shape (3,), got (2, 4)" in ex.cache.value


def test_switch_cache_entry(jfn):
    ex = explorer.explore(jfn)
    assert ex.entry.layout.display == "flex" and [v for _, v in ex.entry.options] == [0, 1]
    assert "check_tensor(x" in ex.entry.options[1][0]
    ex.kind.value = "prologue"
    ex.entry.value = 0
    assert ex.model.entry_index == 0 and ex.kind.value == "prologue"
    assert 'x: "cpu f32[3]"' in ex.current.nodes[2].line  # entry 0 was traced for shape (3,)
    assert "(shown)" in ex.cache.value
    ex.show_entry(1)
    assert ex.entry.value == 1 and 'x: "cpu f32[2, 4]"' in ex.current.nodes[2].line


def test_timings_show_after_explore_with_args(jfn):
    ex = explorer.explore(jfn, args=(torch.ones(2, 4), torch.ones(2, 4)))
    assert ex.model.timings["computation"]
    assert "Slowest lines" in ex.main.value and "times measured on cpu" in ex.main.value  # the overview
    ex.view.value = "tree"
    assert '<span class="tm">' in ex.main.value
    ex.view.value = "timing"
    assert "Measured on cpu" in ex.main.value and "torch.softmax" in ex.main.value


def test_mimebundle_has_a_static_fallback(ex):
    b = ex._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in b
    assert "<details" in b["text/html"] and "thunder compilation" in b["text/plain"]


def test_search_function_directly(passes):
    p = TraceModel.from_traces({"computation": passes}).series["computation"].passes[0]
    assert [n.id for n in search(p, "flatten")] == ["t0/a", "t0/t0#1"]
    assert search(p, "  ") == []


def test_bad_view_is_explained(jfn):
    with pytest.raises(ValueError, match="unknown view 'trees'"):
        Explorer(model_of(jfn), view="trees")


def test_static_copy_shows_the_kind_explored(jfn):
    """A saved notebook keeps the static copy: it opens the trace kind the explorer shows."""
    ex = explorer.explore(jfn, kind="epilogue")
    assert ex.kind.value == "epilogue" and ex.current is ex.model.series["epilogue"].final
    static = ex._repr_mimebundle_()["text/html"]
    assert re.findall(r'<details class="kind" data-kind="(\w+)" open>', static) == ["epilogue"]
    ex.kind.value = "prologue"
    static = ex._repr_mimebundle_()["text/html"]
    assert re.findall(r'<details class="kind" data-kind="(\w+)" open>', static) == ["prologue"]
    # without a kind, the overview (a saved notebook shows what the explorer opened on), kinds closed
    static = explorer.explore(jfn)._repr_mimebundle_()["text/html"]
    assert "The final program" in static and '<div class="tl" data-kind="computation">' in static
    assert re.findall(r'<details class="kind" data-kind="(\w+)" open>', static) == []
    # on the tree, the computation
    static = explorer.explore(jfn, view="tree")._repr_mimebundle_()["text/html"]
    assert re.findall(r'<details class="kind" data-kind="(\w+)" open>', static) == ["computation"]


def test_report_of_an_explorer_opens_where_it_is(jfn):
    ex = explorer.explore(jfn, kind="prologue")
    ex.pass_slider.value = 0
    page = report_html(ex, graphs="none")
    # one group of radios: the pass the explorer shows is the one checked
    assert re.findall(r'name="kind" id="r(\w+)" checked', page) == ["prologue_0"]
    last = len(ex.model.series["computation"].passes) - 1
    assert f'<label for="rcomputation_{last}">computation' in page  # its tab opens on the final pass
    page = report_html(jfn, graphs="none", kind="epilogue")
    last = len(ex.model.series["epilogue"].passes) - 1
    assert re.findall(r'name="kind" id="r(\w+)" checked', page) == [f"epilogue_{last}"]
    # the explorer on its overview: so is the page
    ex.view.value = "overview"
    assert re.findall(r'name="kind" id="r(\w+)" checked', report_html(ex, graphs="none")) == ["overview"]
    with pytest.raises(
        ValueError, match="no backward trace here; there are: prologue, computation, epilogue"
    ):
        report_html(jfn, kind="backward")


def test_a_kind_that_is_not_there_is_explained(jfn):
    with pytest.raises(
        ValueError, match="no backward trace here; there are: prologue, computation, epilogue"
    ):
        explorer.explore(jfn, kind="backward")
