"""TraceModel: ids stable across passes, tags, per-pass diffs, dataflow, JSON, cache info."""

from __future__ import annotations

import json

import thunder
from explorer.model.compilation import model_of
from explorer.model.traces import TraceModel


def _pass(series, name):
    return next(p for p in series.passes if p.name == name)


def test_all_kinds_and_passes(jfn):
    m = model_of(jfn)
    assert m.kinds == ["prologue", "computation", "epilogue"]
    s = m.series["computation"]
    assert len(s.passes) == len(thunder.last_traces(jfn))
    assert s.passes[0].name == "acquisition" and s.passes[0].diff is None
    assert [p.name for p in s.passes[1:]] == [t.provenance.pass_name for t in thunder.last_traces(jfn)[1:]]
    assert all(p.seconds is not None for p in s.passes[1:])
    assert m.entry_index == 1 and len(m.entries) == 2


def test_ids_stable_across_passes(jfn):
    s = model_of(jfn).series["computation"]
    first, last = s.passes[0], s.final
    ids0 = [n.id for n in first.nodes]
    ids_last = [n.id for n in last.nodes if "del" not in n.tags]
    assert ids0 == ids_last  # the same BoundSymbols keep their ids through claiming
    # a BoundSymbol is keyed by its outputs
    for n in first.nodes:
        assert n.id == ",".join(n.outputs)
    # the executor's claim is a rewrite, not an add + remove
    claim = _pass(s, "Transform for execution")
    assert set(claim.diff.rewritten) == set(ids0)
    assert not claim.diff.added and not claim.diff.removed


def test_nodes_shared_when_a_pass_keeps_them(jfn):
    s = model_of(jfn).series["computation"]
    dce = _pass(s, "Dead Code Elimination")
    before = s.passes[dce.index - 1]
    assert not dce.changed and dce.diff.summary() == "no change"
    assert all(a is b for a, b in zip(before.nodes, dce.nodes))


def test_delete_last_used_adds_dels(jfn):
    s = model_of(jfn).series["computation"]
    dlu = _pass(s, "Delete Last Used")
    d = dlu.diff
    assert d.added and all(k.startswith("python_del(") for k in d.added)
    assert all("del" in dlu.find(k).tags for k in d.added)


def test_node_fields(jfn):
    s = model_of(jfn).series["computation"]
    n = s.final.nodes[0]
    assert n.executor == "torch" and n.sym == "sin" and n.module == "torch"
    assert n.inputs == ("x",) and n.outputs == ("t0",)
    assert (
        n.source is not None and n.source.file.endswith("explorer_builders.py") and "x.sin()" in n.source.code
    )
    assert n.children and n.children[0].sym_id == "ltorch.sin" and n.children[0].id == "t0/t0"
    assert n.line.startswith("t0 = torch.sin(x)")
    x = s.proxies["x"]
    assert (x.kind, x.shape, x.dtype, x.device) == ("tensor", [2, 4], "f32", "cpu")
    assert x.label() == "f32[2, 4]"


def test_tags_from_bsyms_and_symbols(passes):
    s = TraceModel.from_traces({"computation": passes}).series["computation"]
    first = s.passes[0]
    sub = first.find("t0")
    assert "tensor_subclass" in sub.tags  # it has flatten/unflatten below it
    assert [c.tags for c in sub.children] == [
        ("flatten_tensor_subclass",),
        (),
        ("unflatten_tensor_subclass",),
    ]
    assert first.find("any0").tags == ("dataclass_new",)
    assert "writeback" in first.nodes[-1].tags
    fused = s.final.find("t1")
    assert fused.tags == ("fusion",) and fused.executor == "nvfuser"
    assert fused.info["declined"] == {"torchcompile": "not available <here>"}


def test_fusion_diff(passes):
    s = TraceModel.from_traces({"computation": passes}).series["computation"]
    d = s.final.diff
    assert d.removed == ["t0"] and d.added == []
    old, new = d.rewritten["t1"]
    assert "ltorch.mul" in old and "nvFusion0" in new
    assert d.summary() == "1 removed, 1 rewritten"


def test_edges(passes):
    p = TraceModel.from_traces({"computation": passes}).series["computation"].passes[0]
    assert ("input:x", "t0", "x") in p.edges()
    assert ("t0", "t1", "t0") in p.edges()
    assert ("any0", "return", "any0") in p.edges()


def test_json_round_trip(jfn, passes):
    for m in (model_of(jfn), TraceModel.from_traces({"computation": passes})):
        d = json.loads(m.to_json())
        comp = d["series"]["computation"]
        assert comp["passes"][-1]["nodes"][0]["id"] == m.series["computation"].final.nodes[0].id
        assert "def computation" in comp["passes"][-1]["source"]
    d = json.loads(model_of(jfn).to_json())
    assert d["input_links"]["x"][0] == "x"
    assert d["entries"][1]["miss_reasons"]


def test_cache_entries_and_miss_reasons(jfn):
    m = model_of(jfn)
    e0, e1 = m.entries
    assert e0.miss_reasons == [] and e0.inputs == ["x", "y"]
    assert len(e1.miss_reasons) == 1 and "check_tensor(x" in e1.miss_reasons[0]
    assert model_of(jfn, entry=0).series["computation"].proxies["x"].shape == [3]


def test_input_links_to_prologue(jfn):
    m = model_of(jfn)
    links = m.input_links()
    assert set(links) == {"x", "y"}
    pro = m.series["prologue"].final
    lines = [pro.find(i).line for i in links["x"]]
    assert lines[0].startswith("x = args[0]")
    assert any(line.startswith("pythonex.check_tensors(_tensors, x, y)") for line in lines)


def test_from_single_trace_and_list(jfn):
    trs = thunder.last_traces(jfn)
    m = TraceModel.from_trace(trs[-1])
    assert m.kinds == ["computation"] and len(m.series["computation"].passes) == 1
    assert len(model_of(trs).series["computation"].passes) == len(trs)


def test_dataclass_output_in_epilogue(container_jfn):
    m = model_of(container_jfn)
    epi = m.series["epilogue"].final
    new = [n for n in epi.walk() if "dataclass_new" in n.tags]
    assert new and "MyContainer(res=" in new[0].line
    assert not any("dataclass_new" in n.tags for n in m.series["computation"].final.walk())


def test_proxies_deep_in_subsymbols_are_known(jfn):
    s = model_of(jfn).series["computation"]
    softmax = s.final.find("t10")
    inner = [c.outputs[0] for c in softmax.children[0].children]  # prims of the decomposition
    assert inner[0] == "t4" and "t4" not in {o for n in s.final.nodes for o in n.outputs}
    fresh = model_of(jfn).series["computation"]  # no node below the top level made yet
    assert all(name in fresh.proxies for name in inner) and fresh.proxies["t4"].shape == [2]
    assert set(inner) <= set(fresh.proxies) and "nothing" not in fresh.proxies


def test_double_backward_is_shown_after_create_graph():
    import torch

    from explorer.views.html import model_html

    def f(x, w):
        return (x.sin() * w).sum()

    jf = thunder.jit(f)
    x = torch.randn(3, requires_grad=True)
    w = torch.randn(3, requires_grad=True)
    jf(x, w).backward()
    assert model_of(jf).kinds == ["prologue", "computation", "epilogue", "backward"]  # not differentiated
    (gx,) = torch.autograd.grad(jf(x, w), x, create_graph=True)
    gx.pow(2).sum().backward()  # a gradient penalty: the backward of the backward
    m = model_of(jf)
    assert m.kinds[-2:] == ["double_backward", "backward_of_backward"]
    final = m.series["backward_of_backward"].final
    assert any("cos" in n.line or "sin" in n.line for n in final.walk())
    assert "backward_of_backward" in model_html(m)


def test_each_input_shows_its_own_part_of_the_line_checking_several_tensors():
    import re

    import torch

    from explorer.views.html import model_html

    jm = thunder.jit(torch.nn.Linear(3, 2))
    jm(torch.randn(4, 3))
    html = model_html(model_of(jm))
    rows = dict(re.findall(r"<summary><code>(\w+)</code></summary><pre>(.*?)</pre>", html, re.S))
    assert (
        "pythonex.check_tensors(..., t_weight, ...)  # shapes, dtypes and devices as unpacked"
        in rows["t_weight"]
    )
    assert "t_bias" not in rows["t_weight"] and "pythonex.check_tensors(..., t_bias, ...)" in rows["t_bias"]
