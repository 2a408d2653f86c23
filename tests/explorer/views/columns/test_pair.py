"""The forward and backward as a pair: the saved values, the links from each backward line to
the forward op it differentiates (and back), in text, HTML, the widget, the report and a graph,
on a small function, the MLP and the GPT of the tests, and hand-built traces with a fusion region."""

from __future__ import annotations

import re

import pytest
import torch
from support.explorer_builders import make_symbol
from support.models import GPT, MLP

import explorer
import thunder
from explorer.model.compilation import model_of
from explorer.model.pair import walk_shown
from explorer.model.traces import TraceModel
from explorer.notebook.widget import Explorer
from explorer.views.columns.pair import pair_dot, pair_html, pair_text
from explorer.views.html import compilation_html
from explorer.views.report import report_html
from thunder.core.passinfo import BoundSymbolInfo
from thunder.core.symbol import BoundSymbol
from thunder.core.tags import Tag
from thunder.core.trace import Trace


def small(x, w):
    y = x * 2
    z = torch.sin(y) @ w
    return z.relu().sum()


@pytest.fixture(scope="module")
def small_jfn():
    jfn = thunder.jit(small)
    jfn(torch.randn(2, 3, requires_grad=True), torch.randn(3, 2, requires_grad=True))
    return jfn


@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    jm = thunder.jit(MLP(d=8, layers=2))
    jm(torch.randn(4, 8)).sum().backward()
    return jm


@pytest.fixture(scope="module")
def gpt():
    torch.manual_seed(0)
    jm = thunder.jit(GPT(layers=1))
    jm(torch.randint(0, 50, (2, 8)))
    return jm


GOLDEN_SMALL = """\
forward pass 6 (Delete Last Used) and backward pass 3 (Delete Last Used); 4 saved for backward, 1 recomputed in the backward
saved for backward: x, w, t1, t4
def forward(x, w):
  t0 = torch.mul(x, 2)  # t0: "cpu f32[2, 3]"    <- t0, t15
  t1 = torch.sin(t0)  # t1: "cpu f32[2, 3]"    {saved_for_backward} <- t13, t14
  t2 = torch.matmul(t1, w)  # t2: "cpu f32[2, 2]"    <- t9, t10, t11, t12
  t4 = torch.relu(t2)  # t4: "cpu f32[2, 2]"    {saved_for_backward} <- t8
  t5 = torch.sum(t4)  # t5: "cpu f32[]"    <- t6
  return ((t5,), (x, w, t1, t4))
def backward(x, w, t1, t4, g_t5):
  # cotangents: g_t5
  t6 = torchex.broadcast_in_dim(g_t5, (2, 2), ())  # t6: "cpu f32[2, 2]"    -> t5
  t8 = torch.ops.aten.threshold_backward.default(t6, t4, 0)  # t8: "cpu f32[2, 2]"    reads saved: t4 -> t4
  t9 = torch.permute(w, (1, 0))  # t9: "cpu f32[2, 3]"    reads saved: w -> t2
  t10 = torch.mm(t8, t9)  # t10: "cpu f32[2, 3]"    -> t2
  t11 = torch.permute(t1, (1, 0))  # t11: "cpu f32[3, 2]"    reads saved: t1 -> t2
  t12 = torch.mm(t11, t8)  # t12: "cpu f32[3, 2]"    -> t2
  t0 = torch.mul(x, 2)  # t0: "cpu f32[2, 3]"    {recomputed} reads saved: x -> t0
  t13 = torch.cos(t0)  # t13: "cpu f32[2, 3]"    -> t1
  t14 = torch.mul(t10, t13)  # t14: "cpu f32[2, 3]"    -> t1
  t15 = torch.mul(t14, 2)  # t15: "cpu f32[2, 3]"    -> t0
  return (t15, t12)"""


def test_golden_of_the_text_pair(small_jfn):
    pair = explorer.pair_of(small_jfn)
    assert pair_text(pair) == GOLDEN_SMALL
    assert pair.text() == GOLDEN_SMALL and str(pair._repr_mimebundle_()["text/plain"]) == GOLDEN_SMALL


def _saved_of(jfn) -> list[str]:
    fw, bw = thunder.last_traces(jfn)[-1], thunder.last_backward_traces(jfn)[-1]
    names = [p.name for p in fw.output[1]]
    assert names == [p.name for p in bw.args[: len(names)]]  # what crosses the cut, in both signatures
    return names


@pytest.mark.parametrize("which", ["small_jfn", "mlp", "gpt"])
def test_the_pair_lists_exactly_the_saved_values(which, request):
    jfn = request.getfixturevalue(which)
    pair = model_of(jfn).pair()
    assert pair.saved == _saved_of(jfn) and pair.saved
    assert pair.forward.name == pair.backward.name == "Delete Last Used"
    assert pair.cotangents == [a for a in pair.backward.args if a.startswith("g_")]
    html = pair_html(pair)
    fw, bw = html.split('data-side="backward">', 1)
    # the backward's signature marks each saved value, and no cotangent
    sig = re.search(r"def backward\((.*?)\):", bw).group(1)
    assert re.findall(r'<span class="sv">(\w+)</span>', sig) == pair.saved
    # the forward lines marked saved are those that make a saved value
    made = {n.id for n in walk_shown(pair.forward) if set(n.outputs) & set(pair.saved)}
    assert (
        set(re.findall(r'<div class="pl saved[^"]*" id="[^"]+" data-side="forward" data-id="([^"]+)"', fw))
        == made
    )
    # every backward line that reads a saved value shows it marked
    for n in walk_shown(pair.backward):
        for s in pair.saved_in(n):
            row = re.search(rf'data-side="backward" data-id="{re.escape(n.id)}">(.*?)</div>', bw).group(1)
            assert f'<span class="sv">{s}</span>' in row


def _forward_syms(pair, forward_id: str) -> set[str]:
    return {m.sym_id for m in pair.forward.find(forward_id).walk()}


def test_each_backward_op_links_to_the_op_it_differentiates(small_jfn, gpt):
    pair = model_of(small_jfn).pair()
    links = pair.to_dict()["links"]
    by_line = {n.id: n for n in walk_shown(pair.forward)}
    assert "torch.sin" in by_line[links["t13"]].line  # cos(t0): the derivative of sin
    assert "torch.relu" in by_line[links["t8"]].line  # threshold_backward: of relu
    assert "torch.matmul" in by_line[links["t11"]].line and "torch.sum" in by_line[links["t6"]].line
    assert pair.recomputed == ["t0"] and links["t0"] == "t0"  # recomputed from x, not saved
    assert pair.sources("t2") == ["t9", "t10", "t11", "t12"]

    # the GPT: every backward line that names its rule links to a forward op made of that rule's op
    pair = model_of(gpt).pair()
    linked = 0
    for n in walk_shown(pair.backward):
        vjp = n.bsym_info.vjp
        if vjp is None:
            continue
        t = pair.target(n)
        assert t is not None, n.line
        assert vjp in _forward_syms(pair, t), (n.line, vjp, t)
        linked += 1
    assert linked > 50
    softmax = next(n for n in pair.forward.nodes if "torch.softmax" in n.line)
    assert pair.sources(softmax.id)
    for b in pair.sources(softmax.id):
        assert pair.backward.find(b).bsym_info.differentiates == tuple(softmax.outputs)
    gelu = next(n for n in pair.forward.nodes if "gelu" in n.line)
    assert {pair.backward.find(b).bsym_info.vjp for b in pair.sources(gelu.id)} <= _forward_syms(
        pair, gelu.id
    )


def test_links_are_anchors_both_ways(small_jfn):
    pair = model_of(small_jfn).pair()
    html = pair_html(pair, prefix="p")
    anchor = dict(re.findall(r'id="(p-[fb]\d+)" data-side="\w+" data-id="([^"]+)"', html))
    by_side = {
        (side, node_id): a
        for a, side, node_id in re.findall(r'id="(p-[fb]\d+)" data-side="(\w+)" data-id="([^"]+)"', html)
    }
    assert len(anchor) == 5 + 10  # the forward's and the backward's lines, no del
    # the backward's t13 (cos) leads to the forward's t1 (sin): its line and its chip
    row = re.search(r'data-side="backward" data-id="t13">(.*?)</div>', html).group(1)
    to = by_side[("forward", "t1")]
    assert (
        row.startswith(f'<a class="go" href="#{to}">') and f'<a class="lk" href="#{to}" data-to="t1"' in row
    )
    # and the forward's t1 lists the backward's t13 and t14
    row = re.search(r'data-side="forward" data-id="t1">(.*?)</div>', html).group(1)
    for b in ("t13", "t14"):
        assert f'href="#{by_side[("backward", b)]}" data-to="{b}"' in row
    assert re.search(r'class="pl recomp" id="p-b\d+" data-side="backward" data-id="t0"', html)
    assert ":target" in html and "<script" not in html
    # a selection lights up what it links to
    html = pair_html(pair, selected=("backward", "t8"), prefix="q")
    assert re.search(r'class="pl sel" id="q-b\d+" data-side="backward" data-id="t8"', html)
    assert re.search(r'class="pl saved linked" id="q-f\d+" data-side="forward" data-id="t4"', html)
    html = pair_html(pair, selected=("forward", "t1"), prefix="r")
    assert len(re.findall(r'class="pl linked" id="r-b\d+"', html)) == 2


def test_pairs_follow_the_passes(small_jfn):
    m = model_of(small_jfn)
    first = m.pair(0)
    assert (first.forward.name, first.backward.name) == ("Split: forward", "Split: backward")
    assert first.saved == ["w", "t0", "t1", "t4"]  # before t0 was rematerialized (from x)
    assert m.pair(-1) is m.pair(3) and m.pair(1).forward.name == "Rematerialization"
    assert model_of(small_jfn).to_dict()["pair"]["saved"] == ["x", "w", "t1", "t4"]


def test_no_backward_no_pair(jfn):
    m = model_of(jfn)
    assert m.pair() is None and explorer.pair_of(jfn) is None
    ex = Explorer(m, view="pair")
    assert "No backward trace" in ex.main.value
    assert 'class="pairs"' not in compilation_html(jfn) and "forward + backward" not in report_html(m)


def test_widget_pair_views(small_jfn):
    ex = Explorer(model_of(small_jfn), view="pair")
    assert 'class="pcols"' in ex.main.value and 'class="lk"' in ex.main.value
    ex.kind.value = "backward"
    ex.select("t13")
    assert re.search(r'class="pl sel" id="\S+" data-side="backward" data-id="t13"', ex.main.value)
    assert re.search(r'class="pl saved linked" id="\S+" data-side="forward" data-id="t1"', ex.main.value)
    ex.pass_slider.value = 0  # the split itself: t0 still saved
    assert "Split: backward" in ex.main.value and 'data-id="t0"' in ex.main.value
    assert ex.current_pair().forward.name == "Split: forward"
    ex.view.value = "pair-graph"
    assert "cluster_forward" in ex.current_pair().graph().dot and 'class="graph"' in ex.main.value
    static = ex._repr_mimebundle_()["text/html"]
    assert '<details class="pairs" open>' in static and 'class="lk" href="#' in static


def test_static_html_and_report_carry_the_pair(small_jfn):
    html = compilation_html(small_jfn)
    assert '<details class="pairs"><summary><b>forward and backward</b>' in html
    assert re.search(r'<a class="go" href="#thxp\d+-f\d+">', html)
    page = report_html(small_jfn, kind="pair")
    assert '<label for="rpair">forward + backward</label>' in page
    assert '<input type="radio" class="rad" name="kind" id="rpair" checked>' in page
    section = page.split('<div class="kind rk_pair">')[1]
    assert 'class="pcols"' in section and "Dataflow graph of both" in section
    assert "saved t1" in section or "<svg" not in section  # the crossing edges are labelled


def test_pair_graph_crosses_the_cut_with_the_saved_values(small_jfn, gpt):
    for jfn in (small_jfn, gpt):
        pair = model_of(jfn).pair()
        dot, count, _, _ = pair_dot(pair)
        crossing = re.findall(r"  (f\w+) -> (b\w+) \[label=\"saved ([^\"]+)\"", dot)
        names = {n for *_, label in crossing for n in re.findall(r"\w+", label.split(" +")[0])}
        read = {s for n in walk_shown(pair.backward) for s in pair.saved_in(n)}
        assert names <= set(pair.saved) and read <= names  # each saved value read crosses the cut
        assert "subgraph cluster_forward" in dot and "subgraph cluster_backward" in dot
    small_dot, count, _, messages = pair_dot(pair, max_nodes=20)
    assert "fbefore" in small_dot and "bmore" in small_dot and count == 20
    assert any("its last 10 bound symbols, where the backward starts" in m for m in messages)
    # the end of the forward is drawn: the head, and the layer norm before it
    assert "torch.nn.functional.linear" in small_dot.split("cluster_backward")[0].split("fbefore")[1]


def _fused_pair() -> TraceModel:
    """A hand-built forward and backward whose backward runs in a fusion region."""
    fw = Trace("forward")
    x = fw.tensor((2,), torch.float32, "cpu", name="x")
    t0 = fw.tensor((2,), torch.float32, "cpu")
    t1 = fw.tensor((2,), torch.float32, "cpu")
    sin = BoundSymbol(make_symbol("sin", "torch"), (x,), {}, t0, tags=frozenset({Tag.SAVED_FOR_BACKWARD}))
    exp = BoundSymbol(make_symbol("exp", "torch"), (t0,), {}, t1)
    fw.args, fw.output, fw.bound_symbols = [x], ((t1,), (x, t0)), [sin, exp]
    fw.info.saved_for_backward = ["x", "t0"]
    bw = Trace("backward")
    g = bw.tensor((2,), torch.float32, "cpu", name="g_t1")
    t2, t3, t4 = (bw.tensor((2,), torch.float32, "cpu", name=f"t{i}") for i in (2, 3, 4))
    parts = [
        BoundSymbol(make_symbol("exp", "torch"), (t0,), {}, t2, info=BoundSymbolInfo(differentiates=("t1",))),
        BoundSymbol(
            make_symbol("mul", "torch"), (g, t2), {}, t3, info=BoundSymbolInfo(differentiates=("t1",))
        ),
        BoundSymbol(make_symbol("cos", "torch"), (x,), {}, t4, info=BoundSymbolInfo(differentiates=("t0",))),
    ]
    fusion = BoundSymbol(
        make_symbol("fusion0", "torchcompile", tags=(Tag.FUSION,)), (x, t0, g), {}, (t3, t4), parts
    )
    bw.args, bw.output, bw.bound_symbols = [x, t0, g], (t4,), [fusion]
    bw.info.saved_for_backward = ["x", "t0"]
    return TraceModel.from_traces({"computation": [fw], "backward": [bw]})


def test_links_inside_a_fusion_region():
    pair = _fused_pair().pair()
    region = pair.backward.nodes[0]
    assert pair.target(region) is None and pair.targets(region) == ["t1", "t0"]
    assert pair.sources("t1") == [f"{region.id}/t2", f"{region.id}/t3"]
    assert pair.sources("t0") == [f"{region.id}/t4"]
    text = pair_text(pair)
    assert '    t4 = torch.cos(x)  # t4: "cpu f32[2]"    reads saved: x -> t0' in text
    html = pair_html(pair, prefix="z")
    assert f'data-side="backward" data-id="{region.id}/t4">' in html
    assert len(re.findall(r'class="lk" href="#z-b\d+"', html)) == 3  # the forward's, to the parts
    assert "\u2192 2 forward ops, below" in html and "-> 2 forward ops, below" in text


@pytest.mark.slow  # Inductor compiles the regions on the first call (seconds)
def test_links_between_torch_compile_regions():
    jfn = thunder.jit(small, executors=["torchcompile", "torch"])
    jfn(torch.randn(2, 3, requires_grad=True), torch.randn(3, 2, requires_grad=True)).backward()
    pair = model_of(jfn).pair()
    (fw_region,) = [n for n in pair.forward.nodes if "fusion" in n.tags]
    (bw_region,) = [n for n in pair.backward.nodes if "fusion" in n.tags]
    assert pair.saved == _saved_of(jfn)
    linked = 0
    for n in bw_region.children:  # each part links to a part of the forward's region made of its rule's op
        t = pair.target(n)
        assert t is not None and t.startswith(fw_region.id + "/"), n.line
        vjp = n.bsym_info.vjp
        assert vjp is None or vjp in _forward_syms(pair, t), (n.line, vjp, t)
        linked += vjp is not None
    assert linked >= 5
    cos = next(n for n in bw_region.children if n.sym_id == "prims.cos")
    assert pair.forward.find(pair.target(cos)).sym_id == "ltorch.sin"
    html = pair_html(pair, prefix="c")
    assert f'data-side="forward" data-id="{fw_region.id}/t1">' in html
    assert f'data-to="{fw_region.id}/t1"' in html
