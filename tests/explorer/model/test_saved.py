"""A TraceModel saved as JSON and loaded back draws as the original did."""

from __future__ import annotations

import json
import re

import pytest
import torch
from support.explorer_builders import Stack, small_fn, tagged_passes

import thunder
from explorer.measure.runner import measure
from explorer.model.compilation import model_of
from explorer.model.saved import FORMAT, SavedModelError
from explorer.model.traces import TraceModel
from explorer.notebook.widget import VIEWS, Explorer
from explorer.views.columns.pair import pair_text
from explorer.views.graph import graph_dot
from explorer.views.html import details_html, model_html
from explorer.views.text import diff_text, model_text, source_diff, tree_text
from explorer.views.tree import tree_html


def _reload(m: TraceModel) -> TraceModel:
    return TraceModel.from_json(m.to_json())


def _same_html(a: str, b: str) -> bool:
    # the pair view numbers its anchors per rendering (thxp1-f0, thxp2-f0, ...)
    return re.sub(r"thxp\d+", "thxp", a) == re.sub(r"thxp\d+", "thxp", b)


def _every_pass(m: TraceModel):
    for kind, s in m.series.items():
        for p in s.passes:
            yield kind, s, p


@pytest.fixture
def grad_jfn():
    """A forward and a backward: the pair and saved-for-backward values."""
    f = thunder.jit(small_fn)
    f(torch.ones(3, requires_grad=True), torch.ones(3))
    return f


def test_a_loaded_model_renders_the_html_text_and_graphs_of_the_original(grad_jfn):
    m = model_of(grad_jfn)
    again = _reload(m)
    assert again.kinds == m.kinds == ["prologue", "computation", "epilogue", "backward"]
    assert _same_html(model_html(m), model_html(again))
    assert model_text(again) == model_text(m)
    for (kind, s, p), (_, s2, q) in zip(_every_pass(m), _every_pass(again)):
        assert q.trace is None and q.source == p.source and q.return_line == p.return_line
        assert tree_text(q.nodes) == tree_text(p.nodes), (kind, p.index)
        assert tree_html(q.nodes, open_depth=3) == tree_html(p.nodes, open_depth=3), (kind, p.index)
        for depth in (0, 2):
            assert graph_dot(q, s2.proxies, depth=depth)[0] == graph_dot(p, s.proxies, depth=depth)[0]
        if p.diff is not None:
            before, before2 = s.passes[p.index - 1], s2.passes[p.index - 1]
            assert diff_text(q) == diff_text(p)
            assert source_diff(before2, q) == source_diff(before, p)
    for n, n2 in zip(m.series["computation"].final.nodes, again.series["computation"].final.nodes):
        assert details_html(n2, again.series["computation"]) == details_html(n, m.series["computation"])


def test_the_forward_backward_pair_is_made_again_from_the_saved_links(grad_jfn):
    m = model_of(grad_jfn)
    pair, again = m.pair(), _reload(m).pair()
    assert again is not None and again.saved == pair.saved and again.saved
    assert again.to_dict() == pair.to_dict() and again.to_dict()["links"]
    assert pair_text(again) == pair_text(pair)


def test_saving_again_gives_the_same_data(jfn):
    d = model_of(jfn).to_dict()
    assert d["format"] == FORMAT
    assert json.loads(TraceModel.from_dict(d).to_json()) == json.loads(json.dumps(d))


def test_a_line_a_pass_kept_is_saved_once_and_shared_again_when_loaded(jfn):
    m = model_of(jfn)
    d = m.to_dict()
    passes = d["series"]["computation"]["passes"]
    first = passes[0]["nodes"][0]
    kept = [p["nodes"][0] for p in passes[1:] if p["nodes"][0].get("as_in_pass") == 0]
    assert "line" in first and kept and all(set(k) == {"id", "as_in_pass"} for k in kept)
    again = TraceModel.from_dict(d).series["computation"]
    shared = [q.nodes[0] for q, p in zip(again.passes, passes) if p["nodes"][0].get("as_in_pass") == 0]
    assert shared and all(n is again.passes[0].nodes[0] for n in shared)
    # what the original shares (a pass that kept the line), the loaded model shares too
    orig = m.series["computation"]
    assert [p.nodes[0] is orig.passes[0].nodes[0] for p in orig.passes] == [
        p.nodes[0] is again.passes[0].nodes[0] for p in again.passes
    ]


def test_subclass_fusion_dataclass_and_writeback_lines_load_with_their_tags_and_info():
    m = TraceModel.from_traces({"computation": tagged_passes()})
    again = _reload(m)
    s, s2 = m.series["computation"], again.series["computation"]
    for p, q in zip(s.passes, s2.passes):
        assert tree_html(q.nodes, open_depth=4) == tree_html(p.nodes, open_depth=4)
        assert graph_dot(q, s2.proxies, depth=2)[0] == graph_dot(p, s.proxies, depth=2)[0]
    region = s2.final.nodes[0]
    assert "fusion" in region.tags and region.info["declined"] == {"torchcompile": "not available <here>"}
    assert region.bsym_info.declined == {"torchcompile": "not available <here>"}
    assert region.children[0].tags == ("tensor_subclass",) and region.size() == s.final.nodes[0].size()
    assert region.repro is None  # a repro needs the live region


def test_module_groups_load_with_their_classes():
    jm = thunder.jit(Stack(12))
    jm(torch.ones(2, 3))
    m = model_of(jm)
    again = _reload(m)
    p, q = m.series["computation"].final, again.series["computation"].final
    assert [g.path for g in q.modules().groups.values()] == [g.path for g in p.modules().groups.values()]
    assert q.modules().groups["layers.0"].cls == "Layer"
    assert tree_html(q.nodes, modules=q.modules()) == tree_html(p.nodes, modules=p.modules())
    proxies, proxies2 = m.series["computation"].proxies, again.series["computation"].proxies
    assert graph_dot(q, proxies2, modules=True)[0] == graph_dot(p, proxies, modules=True)[0]


def test_measured_times_survive_saving(jfn):
    args = (torch.ones(2, 4), torch.ones(2, 4))
    m = measure(jfn, args, repeat=1).attach(model_of(jfn))
    again = _reload(m)
    assert again.timings == m.timings and again.timing_device == "cpu"
    p, q = m.series["computation"].final, again.series["computation"].final
    times = again.timings["computation"]
    assert times and tree_html(q.nodes, times=times) == tree_html(p.nodes, times=m.timings["computation"])
    assert 'class="tm"' in tree_html(q.nodes, times=times)


def test_the_explorer_widget_shows_every_view_of_a_loaded_model(grad_jfn):
    m = _reload(
        measure(grad_jfn, (torch.ones(3, requires_grad=True), torch.ones(3))).attach(model_of(grad_jfn))
    )
    ex = Explorer(m)
    for view in VIEWS:
        ex.view.value = view
        assert ex.main.value, view
    ex.view.value = "memory"  # computed from the trace, which a loaded model does not have
    assert "no trace" in ex.main.value
    ex.view.value = "tree"
    ex.query.value = "sin"
    assert ex.hits and 'hit" data-id="' in ex.main.value
    ex.select(ex.hits[0].id)
    assert "torch.sin" in ex.details.value


def test_loading_something_else_says_what_it_expected():
    with pytest.raises(SavedModelError, match="expected a saved TraceModel"):
        TraceModel.from_dict({"title": "x"})
    with pytest.raises(SavedModelError, match="saved in format 99"):
        TraceModel.from_dict({"format": 99, "series": {}})
