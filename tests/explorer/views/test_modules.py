"""The explorer by module: a pass's BoundSymbols grouped by the nn.Module call they were
recorded in, in the tree (HTML and text), the graph (module clusters, a module collapsed to one
node, repeated layers folded) and the widget (toggle, module search, module details), on the
GPT of the tests and a tiny transformers Llama."""

from __future__ import annotations

import re

import pytest
import torch
from support.explorer_builders import many_ops, tiny_llama
from support.models import GPT

import thunder
from explorer.model.compilation import model_of
from explorer.model.modules import ModuleGroup, layer_runs
from explorer.notebook.magic import parse_line
from explorer.notebook.widget import Explorer
from explorer.views.graph import ModulePlan, graph_dot
from explorer.views.html import model_html, module_details_html
from explorer.views.text import modules_text
from explorer.views.tree import tree_html


def _gpt(layers: int = 2):
    torch.manual_seed(0)
    jm = thunder.jit(GPT(layers=layers))
    jm(torch.randint(0, 50, (2, 8)))
    return model_of(jm)


@pytest.fixture(scope="module")
def gpt():
    return _gpt()


@pytest.fixture(scope="module")
def llama():
    return model_of(tiny_llama())


def _final(model):
    s = model.series["computation"]
    return s, s.final


def _tree_nodes(items):
    for i in items:
        if isinstance(i, ModuleGroup):
            yield from _tree_nodes(i.items)
        else:
            yield i


def test_gpt_grouped_by_module(gpt):
    _, p = _final(gpt)
    tree = p.modules()
    assert tree is p.modules()  # made once per pass
    assert [i.path for i in tree.items] == [""]  # everything runs inside the jitted GPT
    root = tree.groups[""]
    assert root.cls == "GPT" and root.parent is None
    assert [i.path for i in root.items if isinstance(i, ModuleGroup)] == [
        "tok",
        "pos",
        "blocks.0",
        "blocks.1",
        "ln",
        "head",
    ]
    attn = tree.groups["blocks.1.attn"]
    assert attn.cls == "Attention" and [g.path for g in tree.chain(attn)] == ["", "blocks.1", "blocks.1.attn"]
    assert [i.path for i in attn.items if isinstance(i, ModuleGroup)] == [
        "blocks.1.attn.qkv",
        "blocks.1.attn.proj",
    ]
    # every top-level line is in the tree exactly once, each module's lines in trace order
    assert sorted(n.id for n in _tree_nodes(tree.items)) == sorted(n.id for n in p.nodes)
    order = {n.id: i for i, n in enumerate(p.nodes)}
    for g in tree.groups.values():
        own = [order[i.id] for i in g.items if not isinstance(i, ModuleGroup)]
        assert own == sorted(own)
    # ops are counted without del lines, and a del goes with the line before it
    assert root.op_count() == sum(1 for n in p.nodes if "del" not in n.tags)
    assert tree.groups["blocks.0"].op_count() == tree.groups["blocks.1"].op_count() > 20
    for n in p.nodes:
        if "del" in n.tags:
            before = p.nodes[order[n.id] - 1]
            assert tree.group_of[n.id] is tree.group_of[before.id]
    softmax = next(n for n in p.nodes if n.sym == "softmax")
    assert tree.group_of[softmax.id] is tree.groups["blocks.0.attn"]
    assert [g.path for g in tree.search("attn.q")] == ["blocks.0.attn.qkv", "blocks.1.attn.qkv"]
    assert [g.path for g in tree.search("LayerNorm")][:2] == ["blocks.0.ln1", "blocks.0.ln2"]
    assert [r[0].path for r in layer_runs(root.items)] == ["blocks.0"]


def test_module_time_is_the_sum_of_its_lines(gpt):
    _, p = _final(gpt)
    tree = p.modules()
    times = {n.id: 0.001 for n in p.nodes if "del" not in n.tags}
    mlp = tree.groups["blocks.0.mlp"]
    assert mlp.seconds(times) == pytest.approx(0.001 * mlp.op_count())
    assert mlp.seconds({}) is None
    assert mlp.summary(times) == "blocks.0.mlp (Sequential), 3 ops, 3.00 ms"
    html = tree_html(p.nodes, modules=tree, times=times)
    assert re.search(
        r'data-id="module:blocks\.0\.mlp"><summary>.*?3 ops</span><span class="tm">3\.00 ms', html
    )


def test_tree_html_folds_modules(gpt):
    _, p = _final(gpt)
    tree = p.modules()
    html = tree_html(p.nodes, modules=tree, open_depth=0)
    opened = set(re.findall(r'<details class="n mod[^"]*" data-id="module:([^"]*)" open>', html))
    closed = set(re.findall(r'<details class="n mod[^"]*" data-id="module:([^"]*)">', html))
    assert opened == {"", "blocks.0", "blocks.1", "tok", "pos", "ln", "head"}  # two levels open
    assert {"blocks.0.attn", "blocks.1.mlp", "blocks.0.mlp.0"} <= closed
    html = tree_html(p.nodes, modules=tree, open_depth=0, collapsed={"blocks.0"}, expanded={"blocks.1.attn"})
    assert 'data-id="module:blocks.0">' in html and 'data-id="module:blocks.1.attn" open>' in html
    # a hit deep in a closed module opens the modules above it
    qkv = tree.groups["blocks.1.attn.qkv"].items[0]
    html = tree_html(
        p.nodes, modules=tree, open_depth=0, hits=[qkv.id + "/" + qkv.children[0].id.split("/")[-1]]
    )
    assert (
        'data-id="module:blocks.1.attn" open>' in html and 'data-id="module:blocks.1.attn.qkv" open>' in html
    )
    html = tree_html(p.nodes, modules=tree, hits=["module:blocks.1.mlp.2"], selected="module:blocks.0.ln2")
    assert 'class="n mod hit" data-id="module:blocks.1.mlp.2"' in html
    assert 'class="n mod sel" data-id="module:blocks.0.ln2"' in html
    assert 'data-id="module:blocks.1.mlp" open>' in html
    # the budget counts groups like lines
    small = tree_html(p.nodes, modules=tree, budget=12)
    assert small.count("data-id=") == 12 and '<div class="more">' in small


GOLDEN_GPT_1_LAYER = """\
[<root> (GPT), 34 ops]
  [tok (Embedding), 1 op]
    t0 = torch.nn.functional.embedding(idx, t_tok_weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False)  # t0: "cpu f32[2, 8, 32]"    [torch]
  t1 = torch.arange(8, device=torch.device('cpu'))  # t1: "cpu i64[8]"    [torch] {saved_for_backward}
  [pos (Embedding), 1 op]
    t2 = torch.nn.functional.embedding(t1, t_pos_weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False)  # t2: "cpu f32[8, 32]"    [torch]
  t3 = torch.add(t0, t2)  # t3: "cpu f32[2, 8, 32]"    [torch] {saved_for_backward}
  del t0, t2    {del}
  [blocks.0 (Block), 28 ops]
    [blocks.0.ln1 (LayerNorm), 1 op]
      (t14, t92, t93) = torch.ops.aten.native_layer_norm.default(t3, (32,), t_blocks_0_ln1_weight, t_blocks_0_ln1_bias, 1e-05)  # t14: "cpu f32[2, 8, 32]", t92: "cpu f32[2, 8, 1]", t93: "cpu f32[2, 8, 1]"    [torch] {saved_for_backward}
    [blocks.0.attn (Attention), 21 ops]
      [blocks.0.attn.qkv (Linear), 1 op]
        t15 = torch.nn.functional.linear(t14, t_blocks_0_attn_qkv_weight, t_blocks_0_attn_qkv_bias)  # t15: "cpu f32[2, 8, 96]"    [torch]
      (t16, t17, t18) = torch.split(t15, 32, dim=2)  # t16: "cpu f32[2, 8, 32]", t17: "cpu f32[2, 8, 32]", t18: "cpu f32[2, 8, 32]"    [torch]
      del t15    {del}
      t19 = torch.Tensor.reshape(t16, 2, 8, 4, 8)  # t19: "cpu f32[2, 8, 4, 8]"    [torch]
      del t16    {del}
      t20 = torch.transpose(t19, 1, 2)  # t20: "cpu f32[2, 4, 8, 8]"    [torch]
      del t19    {del}
      t21 = torch.Tensor.reshape(t17, 2, 8, 4, 8)  # t21: "cpu f32[2, 8, 4, 8]"    [torch]
      del t17    {del}
      t22 = torch.transpose(t21, 1, 2)  # t22: "cpu f32[2, 4, 8, 8]"    [torch]
      del t21    {del}
      t23 = torch.Tensor.reshape(t18, 2, 8, 4, 8)  # t23: "cpu f32[2, 8, 4, 8]"    [torch]
      del t18    {del}
      t24 = torch.transpose(t23, 1, 2)  # t24: "cpu f32[2, 4, 8, 8]"    [torch]
      del t23    {del}
      t25 = torch.transpose(t22, -2, -1)  # t25: "cpu f32[2, 4, 8, 8]"    [torch]
      del t22    {del}
      (t26, t94, t95) = torchex.batched_matmul(t20, t25)  # t26: "cpu f32[2, 4, 8, 8]", t94: "cpu f32[8, 8, 8]", t95: "cpu f32[8, 8, 8]"    [torch] {saved_for_backward}
      del t20, t25    {del}
      t27 = torch.div(t26, 2.8284271247461903)  # t27: "cpu f32[2, 4, 8, 8]"    [torch]
      del t26    {del}
      t28 = torch.ones(8, 8, dtype=torch.bool, device=torch.device('cpu'))  # t28: "cpu b8[8, 8]"    [torch]
      t34 = torch.tril(t28)  # t34: "cpu b8[8, 8]"    [torch]
      del t28    {del}
      t35 = torch.bitwise_not(t34)  # t35: "cpu b8[8, 8]"    [torch] {saved_for_backward}
      del t34    {del}
      t36 = torch.masked_fill(t27, t35, float('-inf'))  # t36: "cpu f32[2, 4, 8, 8]"    [torch]
      del t27    {del}
      t43 = torch.softmax(t36, dim=-1)  # t43: "cpu f32[2, 4, 8, 8]"    [torch] {saved_for_backward}
      del t36    {del}
      (t44, t98, t99) = torchex.batched_matmul(t43, t24)  # t44: "cpu f32[2, 4, 8, 8]", t98: "cpu f32[8, 8, 8]", t99: "cpu f32[8, 8, 8]"    [torch] {saved_for_backward}
      del t24    {del}
      t45 = torch.transpose(t44, 1, 2)  # t45: "cpu f32[2, 8, 4, 8]"    [torch]
      del t44    {del}
      t46 = torch.clone(t45, memory_format=torch.contiguous_format)  # t46: "cpu f32[2, 8, 4, 8]"    [torch]
      del t45    {del}
      t47 = torch.Tensor.reshape(t46, 2, 8, 32)  # t47: "cpu f32[2, 8, 32]"    [torch] {saved_for_backward}
      del t46    {del}
      [blocks.0.attn.proj (Linear), 1 op]
        t48 = torch.nn.functional.linear(t47, t_blocks_0_attn_proj_weight, t_blocks_0_attn_proj_bias)  # t48: "cpu f32[2, 8, 32]"    [torch]
    t49 = torch.add(t3, t48)  # t49: "cpu f32[2, 8, 32]"    [torch] {saved_for_backward}
    del t48    {del}
    [blocks.0.ln2 (LayerNorm), 1 op]
      (t60, t113, t114) = torch.ops.aten.native_layer_norm.default(t49, (32,), t_blocks_0_ln2_weight, t_blocks_0_ln2_bias, 1e-05)  # t60: "cpu f32[2, 8, 32]", t113: "cpu f32[2, 8, 1]", t114: "cpu f32[2, 8, 1]"    [torch] {saved_for_backward}
    [blocks.0.mlp (Sequential), 3 ops]
      [blocks.0.mlp.0 (Linear), 1 op]
        t61 = torch.nn.functional.linear(t60, t_blocks_0_mlp_0_weight, t_blocks_0_mlp_0_bias)  # t61: "cpu f32[2, 8, 128]"    [torch] {saved_for_backward}
      [blocks.0.mlp.1 (GELU), 1 op]
        t66 = torch.nn.functional.gelu(t61, approximate='none')  # t66: "cpu f32[2, 8, 128]"    [torch] {saved_for_backward}
      [blocks.0.mlp.2 (Linear), 1 op]
        t67 = torch.nn.functional.linear(t66, t_blocks_0_mlp_2_weight, t_blocks_0_mlp_2_bias)  # t67: "cpu f32[2, 8, 32]"    [torch]
    t68 = torch.add(t49, t67)  # t68: "cpu f32[2, 8, 32]"    [torch] {saved_for_backward}
    del t67    {del}
  [ln (LayerNorm), 1 op]
    (t79, t126, t127) = torch.ops.aten.native_layer_norm.default(t68, (32,), t_ln_weight, t_ln_bias, 1e-05)  # t79: "cpu f32[2, 8, 32]", t126: "cpu f32[2, 8, 1]", t127: "cpu f32[2, 8, 1]"    [torch] {saved_for_backward}
  [head (Linear), 1 op]
    t80 = torch.nn.functional.linear(t79, t_head_weight, None)  # t80: "cpu f32[2, 8, 50]"    [torch]
"""


def test_golden_of_a_module_grouped_tree():
    _, p = _final(_gpt(layers=1))
    assert modules_text(p.modules(), sources=False) + "\n" == GOLDEN_GPT_1_LAYER


def test_graph_draws_module_clusters_and_folds_repeated_layers(gpt):
    s, p = _final(gpt)
    dot, count, _, messages = graph_dot(p, s.proxies, modules=True)
    assert not messages
    clusters = re.findall(r'subgraph cluster_\d+ \{ label="([^"]*)"', dot)
    assert clusters[:4] == ["<root> (GPT)", "tok (Embedding)", "pos (Embedding)", "blocks.0 (Block)"]
    assert "blocks.0.attn (Attention)" in clusters and "blocks.1 (Block)" not in clusters
    # blocks.1 repeats blocks.0: one node, and its weights are not drawn as inputs
    (folded,) = re.findall(r'(n\d+) \[label="blocks\.1\\n\(Block\) 28 ops" shape=folder', dot)
    assert "t_blocks_0_attn_qkv_weight" in dot and "t_blocks_1_attn_qkv_weight" not in dot
    assert re.search(rf"n\d+ -> {folded} ", dot) and re.search(rf"{folded} -> n\d+ ", dot)
    # modules deeper than the module depth are one node, unless they hold one line only
    assert re.search(r'label="blocks\.0\.mlp\.0\\n\(Linear\)', dot) is None  # one op: drawn as it is
    assert "blocks.0.mlp.0 (Linear)" in clusters
    flat, flat_count, _, _ = graph_dot(p, s.proxies)
    assert count < flat_count and "(Block)" not in flat
    # collapse blocks.0 by hand, open blocks.1
    dot, count2, _, _ = graph_dot(
        p, s.proxies, modules=True, plan=ModulePlan(collapsed={"blocks.0"}, expanded={"blocks.1"})
    )
    assert 'label="blocks.0\\n(Block) 28 ops" shape=folder' in dot and "blocks.1 (Block)" in dot
    assert count2 == count
    # highlighting a module
    dot, *_ = graph_dot(p, s.proxies, modules=True, highlight={"module:blocks.1", "module:blocks.0.attn"})
    assert re.search(r'blocks\.1\\n\(Block\) 28 ops" shape=folder [^\]]*penwidth=3\.5', dot)
    assert re.search(r'label="blocks\.0\.attn \(Attention\)"[^;]*penwidth=2\.5', dot)
    # a line found inside a folded layer lights up that layer's node
    softmax = next(n for n in p.nodes if n.sym == "softmax" and "blocks.1" in p.modules().group_of[n.id].path)
    dot, *_ = graph_dot(p, s.proxies, modules=True, highlight={softmax.id + "/" + softmax.children[0].id})
    assert re.search(r'blocks\.1\\n\(Block\) 28 ops" shape=folder [^\]]*penwidth=3\.5', dot)
    dot, *_ = graph_dot(p, s.proxies, modules=True)
    assert not re.search(r'blocks\.1\\n\(Block\) 28 ops" shape=folder [^\]]*penwidth=3\.5', dot)


def test_a_deep_stack_folds_its_layers_into_one_node():
    s, p = _final(_gpt(layers=5))
    dot, *_ = graph_dot(p, s.proxies, modules=True)
    assert 'label="blocks.1 \u2026 blocks.4\\n4 \u00d7 Block, 112 ops" shape=folder' in dot
    dot, *_ = graph_dot(p, s.proxies, modules=True, plan=ModulePlan(expanded={"blocks.2"}))
    assert 'label="blocks.1\\n(Block) 28 ops"' in dot and "blocks.2 (Block)" in dot
    assert 'label="blocks.3 \u2026 blocks.4\\n2 \u00d7 Block, 56 ops"' in dot
    dot, *_ = graph_dot(p, s.proxies, modules=True, plan=ModulePlan(repeats=5))
    assert "shape=folder" not in dot and "blocks.4 (Block)" in dot  # every layer open


def test_graph_without_scopes_says_so():
    jfn = thunder.jit(lambda x: many_ops(x, 8))
    jfn(torch.rand(3))
    s = model_of(jfn).series["computation"]
    dot, _, _, messages = graph_dot(s.final, s.proxies, modules=True)
    assert messages == ["No module scopes were recorded in this trace: drawn without module clusters."]
    assert "cluster_1" not in dot


def test_llama_by_module(llama):
    s, p = _final(llama)
    tree = p.modules()
    assert tree.groups[""].cls == "LlamaForCausalLM" and tree.groups["model"].cls == "LlamaModel"
    layer = tree.groups["model.layers.0"]
    assert layer.cls == "LlamaDecoderLayer" and layer.parent is tree.groups["model"]
    subs = [i.path for i in layer.items if isinstance(i, ModuleGroup)]
    assert subs == [
        "model.layers.0.input_layernorm",
        "model.layers.0.self_attn",
        "model.layers.0.post_attention_layernorm",
        "model.layers.0.mlp",
    ]
    assert tree.groups["model.layers.0.self_attn.q_proj"].cls == "Linear"
    assert layer.op_count() == tree.groups["model.layers.1"].op_count()
    assert [r[0].path for r in layer_runs(tree.groups["model"].items)] == ["model.layers.0"]
    dot, *_ = graph_dot(p, s.proxies, modules=True)
    assert "model.layers.0 (LlamaDecoderLayer)" in dot and re.search(
        r'label="model\.layers\.1\\n\(LlamaDecoderLayer\)', dot
    )
    assert re.search(r'label="model\.layers\.0\.self_attn\\n\(LlamaAttention\) \d+ ops" shape=folder', dot)
    dot, *_ = graph_dot(p, s.proxies, modules=True, plan=ModulePlan(collapsed={"model.layers.0"}))
    assert "model.layers.0 (LlamaDecoderLayer)" not in dot and re.search(r'label="model\.layers\.0\\n', dot)
    # the attention's details: its weights and the cache tensors it reads, unpacked by the prologue
    html = module_details_html(tree.groups["model.layers.0.self_attn"], p, llama, "computation")
    assert "<code>t_model_layers_0_self_attn_q_proj_weight</code>" in html
    assert "model.layers.0.self_attn.q_proj</td>" in html
    assert "m_model_layers_0_self_attn_q_proj._parameters[&#x27;weight&#x27;]" in html
    assert "pythonex.check_tensors(..., t_model_layers_0_self_attn_q_proj_weight, ...)" in html
    assert "m_model_layers_0_self_attn_q_proj = " not in html  # the module unpacks above it are left out


def test_widget_by_module(gpt):
    assert Explorer(gpt).by_module.value  # a jitted module opens grouped by module
    ex = Explorer(gpt, modules=False, view="tree")
    assert 'data-id="module:' not in ex.main.value and not ex.by_module.value
    ex.by_module.value = True
    assert 'data-id="module:blocks.0"' in ex.main.value
    ex.query.value = "blocks.1.attn"
    assert [g.path for g in ex.module_hits] == ["blocks.1.attn", "blocks.1.attn.qkv", "blocks.1.attn.proj"]
    assert ex.module_hits[0].summary() == "blocks.1.attn (Attention), 21 ops"
    assert "3 modules and 0 bound symbols match" in ex.status.value
    assert 'class="n mod hit" data-id="module:blocks.1.attn"' in ex.main.value
    ex.main.selected = "module:blocks.1.attn"  # a click on the module's line
    assert ex.selected == "module:blocks.1.attn"
    assert "module blocks.1.attn (Attention)" in ex.details.value
    assert (
        "t_blocks_1_attn_qkv_weight" in ex.details.value
        and "_parameters[&#x27;weight&#x27;]" in ex.details.value
    )
    assert (
        ex.fold_button.layout.display == "flex"
        and ex.fold_button.description == "expand module blocks.1.attn"
    )
    ex.fold_button.click()
    assert "blocks.1.attn" in ex.expanded and 'data-id="module:blocks.1.attn" open>' in ex.main.value
    assert ex.fold_button.description == "collapse module blocks.1.attn"
    ex.fold_button.click()
    assert "blocks.1.attn" in ex.collapsed
    ex.view.value = "graph"
    drawn = ex.main.value.split("<svg", 1)[1]  # (the canvas names the selected module, to show it)
    assert "blocks.1.attn" not in drawn and "blocks.1 (Block)" not in drawn  # in the folded layer
    assert ">blocks.1</text>" in ex.main.value
    ex.toggle_module("blocks.1")  # folded as a repeated layer: opens
    assert "blocks.1" in ex.expanded and "blocks.1 (Block)" in ex.main.value
    assert ">blocks.1.attn</text>" in ex.main.value  # collapsed by hand above
    static = ex._repr_mimebundle_()["text/html"]
    assert 'data-id="module:blocks.0"' in static and "grouped by module" in static
    ex.by_module.value = False
    assert 'cluster_1 { label="&lt;root&gt;' not in ex.main.value


def test_static_html_by_module(gpt):
    html = model_html(gpt, modules=True)
    comp = html.split('data-kind="computation"')[1].split('<details class="kind"')[0]
    assert 'data-id="module:blocks.1.mlp"' in comp and comp.count('data-id="t0"') == 1  # one tree, by module
    assert 'data-id="module:' not in model_html(gpt)


def test_magic_option():
    opts, call = parse_line("--modules --view graph f(x)")
    assert opts.modules and opts.view == "graph" and call == "f(x)"
    assert not parse_line("f(x)")[0].modules


def test_report_by_module(gpt):
    from explorer.views.report import report_html

    page = report_html(gpt, modules=True, graphs="final")
    assert "<summary>Bound symbols by module</summary>" in page
    assert 'data-id="module:blocks.1.attn"' in page and "blocks.0 (Block)" in page
    assert "<summary>Bound symbols by module</summary>" in report_html(gpt, graphs="none")  # the default
    assert "by module" not in report_html(gpt, graphs="none", modules=False)


def test_a_region_without_a_scope_goes_with_the_module_holding_its_members():
    """A pass that fuses BoundSymbols into one region (its own scope unset) keeps it in the
    innermost module holding all its members."""
    import dataclasses

    from explorer.model.traces import TraceModel

    jm = thunder.jit(GPT(layers=1))
    jm(torch.randint(0, 50, (2, 8)))
    trace = thunder.last_traces(jm)[-1]
    bsyms = [b for b in trace.bound_symbols if "del" not in {t.value for t in b.tags}]
    mlp = [b for b in bsyms if b.scope is not None and b.scope.path.startswith("blocks.0.mlp")]
    block = [b for b in bsyms if b.scope is not None and b.scope.path.startswith("blocks.0")]
    region = dataclasses.replace(mlp[0], output=mlp[-1].output, subsymbols=mlp, scope=None)
    wide = dataclasses.replace(block[0], output=block[-1].output, subsymbols=[block[0], mlp[0]], scope=None)
    other = dataclasses.replace(
        bsyms[0], subsymbols=[bsyms[0], bsyms[-1]], scope=None
    )  # tok and head: the GPT
    fused = trace.derive("fuse")
    fused.bound_symbols = [region, wide, other]
    tree = TraceModel.from_trace(fused).series[fused.name].final.modules()
    ids = [n.id for n in tree.groups["blocks.0.mlp"].items]
    assert len(ids) == 1 and tree.group_of[ids[0]].path == "blocks.0.mlp"
    assert [i.path for i in tree.groups["blocks.0"].items if isinstance(i, ModuleGroup)] == ["blocks.0.mlp"]
    assert len([i for i in tree.groups["blocks.0"].items if not isinstance(i, ModuleGroup)]) == 1
    assert len([i for i in tree.groups[""].items if not isinstance(i, ModuleGroup)]) == 1
