"""The graphviz view read by its DOT text; layout, the timeout fallback, a missing ``dot``,
tensor-subclass values drawn with their inner tensors."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import torch
from support.explorer_builders import hand_trace
from support.subclasses import scale_tensor

import explorer.views.graph as graph
import thunder
from explorer.model.compilation import model_of
from explorer.model.traces import TraceModel
from explorer.views.graph import count_nodes, graph_dot, render_graph
from thunder.core.symbol import BoundSymbol, Symbol
from thunder.core.tags import Tag
from thunder.core.trace import Trace

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz `dot` is not installed")


def _series(passes):
    return TraceModel.from_traces({"computation": passes}).series["computation"]


def test_dot_nodes_edges_and_tuning(jfn):
    s = model_of(jfn).series["computation"]
    dot, count, depth, msgs = graph_dot(s.final, s.proxies)
    assert (count, depth, msgs) == (5, 0, [])  # sin, mul, add, exp, softmax; del lines are not dataflow
    assert "nslimit=0" in dot and "mclimit=0.1" in dot and "splines=true" in dot
    assert 'in_0 [label="x\\nf32[2, 4]" shape=ellipse' in dot
    assert re.search(r'n0 \[label="t0 =\\ntorch.sin\\n\[torch\]" shape=box style="filled,solid"', dot)
    assert 'in_0 -> n0 [label="f32[2, 4]" tooltip="x"];' in dot
    assert '-> ret [label="f32[2, 4]"' in dot
    assert "python_del" not in dot
    assert 'subgraph cluster_legend { label="legend"' in dot and 'lg0 [label="torch" shape=box' in dot


def test_depth_dial_keeps_torch_level_labels(jfn):
    s = model_of(jfn).series["computation"]
    dot0, count0, _, _ = graph_dot(s.final, s.proxies)
    dot1, count1, _, _ = graph_dot(s.final, s.proxies, depth=1)
    # a torch-language op is drawn whole at every depth, under the name the trace prints
    assert re.search(r'label="t0 =\\ntorch.sin\\n\[torch\]"', dot1)
    assert "torch.softmax" in dot1 and "prims." not in dot1 and "cluster_1" not in dot1
    assert count1 == count0 == count_nodes(s.final.nodes, 1)
    # asked for, the decomposition: softmax a cluster of its prims, sin its prim
    deep, count_deep, _, _ = graph_dot(s.final, s.proxies, depth=1, decompose=True)
    assert 'subgraph cluster_1 { label="torch.softmax -> t' in deep
    assert re.search(r'label="t0 =\\nprims.sin\\n\[torch\]"', deep)
    assert count_deep == count_nodes(s.final.nodes, 1, decompose=True) > count1


def test_fusion_and_subclass_stand_out(passes):
    s = _series(passes)
    dot, *_ = graph_dot(s.final, s.proxies, depth=0)
    assert re.search(
        r'label="t1 =\\nnvfuser.nvFusion0\\n\[nvfuser\]" shape=box3d', dot
    )  # shape, not only colour
    assert re.search(r'label="any0 =\\nprims.construct" shape=note .* penwidth=2.2', dot)
    assert re.search(r'label="prims.python_setattr\\nx, \'cache\', t1" shape=cds .* penwidth=2.2', dot)
    assert 'style="filled,dashed"' in dot  # not claimed by any executor: dashed border
    deep, *_ = graph_dot(s.final, s.proxies, depth=2)
    assert 'style="filled,bold" fillcolor="#f3faf0"' in deep  # the fusion region is a cluster
    assert "shape=invtrapezium" in deep and "shape=trapezium" in deep  # flatten / unflatten
    assert 'label="fusion region"' in deep and 'label="flatten"' in deep  # in the legend


def test_a_flat_graph_is_drawn_left_to_right():
    t = Trace("epilogue")
    xs = [t.tensor((2,), torch.float32, "cpu", name=f"v{i}") for i in range(14)]
    obj = t.tensor((1,), torch.float32, "cpu", name="obj")
    t.args = [*xs, obj]
    sym = Symbol("python_setattr", "prims", meta=lambda *a: None, tags=(Tag.WRITEBACK,))
    t.bound_symbols = [BoundSymbol(sym, (obj, f"a{i}", x), {}, None) for i, x in enumerate(xs)]
    s = TraceModel.from_trace(t).series["epilogue"]
    dot, *_ = graph_dot(s.final, s.proxies)
    assert "rankdir=LR" in dot
    chain = TraceModel.from_trace(hand_trace(20)).series["computation"]
    assert "rankdir=TB" in graph_dot(chain.final, chain.proxies)[0]


def test_collapsed_to_fit(monkeypatch):
    t = hand_trace(40)
    s = TraceModel.from_trace(t).series["computation"]
    dot, count, depth, msgs = graph_dot(s.final, s.proxies, depth=3, max_nodes=30)
    assert depth == 0 and count == 30
    assert msgs[0] == "Collapsed to depth 0 to keep the graph under 30 nodes."
    assert "10 more are not drawn" in msgs[1] and 'more [label="... 10 more"' in dot


@needs_dot
def test_layout_gives_svg(jfn):
    s = model_of(jfn).series["computation"]
    g = render_graph(s.final, s.proxies, depth=1, decompose=True)
    assert g.svg.startswith("<svg") and "prims.sin" in g.svg and not g.messages
    assert '<div class="graph"><div class="thx-canvas"' in g.html() and "<svg" in g.html()


@needs_dot
def test_timeout_falls_back_to_collapsed_view(jfn, monkeypatch):
    s = model_of(jfn).series["computation"]
    real = subprocess.run
    calls = []

    def slow_first(cmd, *a, **k):
        calls.append(k["timeout"])
        if len(calls) == 1:
            raise subprocess.TimeoutExpired(cmd, k["timeout"])
        return real(cmd, *a, **k)

    monkeypatch.setattr(graph.subprocess, "run", slow_first)
    graph._SVG_CACHE.clear()
    g = render_graph(s.final, s.proxies, depth=2, timeout=1.5)
    assert calls == [1.5, 1.5]
    assert g.depth == 0 and g.svg.startswith("<svg")
    assert "took longer than 1.5 s; showing the collapsed view" in g.messages[0]


def test_missing_dot_says_how_to_install(jfn, monkeypatch):
    s = model_of(jfn).series["computation"]
    monkeypatch.setattr(graph, "DOT", "dot-that-is-not-installed")
    graph._SVG_CACHE.clear()
    g = render_graph(s.final, s.proxies)
    assert g.svg is None
    assert "apt-get install graphviz" in g.messages[-1] and "brew install graphviz" in g.messages[-1]
    assert "apt-get install graphviz" in g.html()


def test_subclass_values_are_drawn_with_their_inner_tensors():
    jfn = thunder.jit(lambda x: (x + 1) * 2)
    jfn(scale_tensor(2, 2))
    model = model_of(jfn)
    s = model.series["computation"]
    first = s.passes[0]
    info = s.proxies["x"]
    assert (info.label(), info.inner_labels()) == ("ScaleTensor f32[2, 2]", ["_x f32[2, 2]", "_scale f32[]"])
    dot, *_ = graph_dot(first, s.proxies)
    # the input: the subclass and its inner tensors, with the subclass's border
    assert (
        'in_0 [label="x\\nScaleTensor f32[2, 2]\\n_x f32[2, 2]\\n_scale f32[]" shape=ellipse style=filled '
        'fillcolor="#f1f8e9" color="#b0127a" penwidth=2.2];'
    ) in dot
    # a subclass value between two subclass ops, and the one returned
    inner = "ScaleTensor f32[2, 2]\\n(_x f32[2, 2], _scale f32[])"
    assert f'in_0 -> n0 [label="{inner}" tooltip="x"];' in dot
    assert f'n0 -> n1 [label="{inner}" tooltip="t3"];' in dot and f'n1 -> ret [label="{inner}"' in dot
    # opened, the flatten reads the subclass and makes plain tensors
    opened, *_ = graph_dot(first, s.proxies, depth=1)
    flatten = re.search(r'(n\d+) \[label="x__x, x__scale =\\nprims.flatten_tensor_subclass"', opened).group(1)
    assert f'in_0 -> {flatten} [label="{inner}" tooltip="x"];' in opened
    assert re.search(rf'{flatten} -> n\d+ \[label="f32\[2, 2\]" tooltip="x__x"\];', opened)
    # after the flattening pass the inputs are the inner tensors, drawn as plain tensors
    final, *_ = graph_dot(s.final, s.proxies)
    assert 'in_0 [label="x__x\\nf32[2, 2]" shape=ellipse style=filled fillcolor="#f1f8e9"];' in final
    assert "ScaleTensor" not in final
    assert model.to_dict()["series"]["computation"]["proxies"]["x"]["inner"]["_scale"]["dtype"] == "f32"
