"""The answer first: the report opens on an overview (modules with time and memory, the
cache, the pipeline as a clickable timeline), ``del``-only diffs fold away, saved-for-backward
lists what costs memory first, and names a PyTorch user can read."""

from __future__ import annotations

import re
from html import escape

import pytest
import torch

import thunder
from explorer.model.compilation import model_of
from explorer.model.memory import memory_of
from explorer.views.html import details_html, diff_html
from explorer.views.memory import saved_html
from explorer.views.overview import overview_html
from explorer.views.report import report_html
from explorer.views.text import diff_text, tree_text
from explorer.views.tree import tree_html


def rotate(x):
    return x.sin() * 2


class Attn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        class Func(torch.nn.Module):  # a module made while tracing, as kernels' use_kernelized_func makes
            def forward(self, *args):
                return rotate(*args)

        return Func()(self.proj(x))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attn()
        self.out = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.out(self.attn(x).relu()).pow(2).mean()


@pytest.fixture(scope="module")
def trained():
    torch.manual_seed(0)
    jnet = thunder.jit(Net())
    jnet(torch.randn(3, 8)).backward()
    return jnet


def test_report_opens_on_the_overview(trained):
    page = report_html(trained)
    assert re.findall(r'<input type="radio" class="rad" name="kind" id="(\w+)" checked>', page) == [
        "roverview"
    ]
    overview = page.split('<div class="kind rk_overview">')[1].split('<div class="kind rk_')[0]
    # the module tree with ops, time, bytes allocated and held at the peak
    assert '<th class="num">allocates</th><th class="num">held at the peak</th>' in overview
    assert 'data-id="module:attn.proj"' in overview and "peak " in overview
    # the cache and why each entry was compiled
    assert "first compilation" in overview
    # the pipeline: every pass of every kind a label that selects it
    m = model_of(trained)
    for kind, s in m.series.items():
        for p in s.passes:
            assert f'<label class="tp{"" if p.changed else " same"}" for="r{kind}_{p.index}"' in overview
            assert f'<input type="radio" class="rad" name="kind" id="r{kind}_{p.index}">' in page
            # selecting a pass shows its kind's section and its pane
            assert f"#r{kind}_{p.index}:checked~.kind.rk_{kind}{{display:block}}" in page
            assert f"#r{kind}_{p.index}:checked~.kind .rpane_{kind}_{p.index}{{display:block}}" in page
    # asked for a kind, it opens on that kind's final pass
    page = report_html(trained, kind="backward")
    last = len(m.series["backward"].passes) - 1
    assert re.findall(r'class="rad" name="kind" id="(\w+)" checked>', page) == [f"rbackward_{last}"]


def test_overview_without_modules_or_memory_still_reads():
    jfn = thunder.jit(lambda x: x.sin() + 1)
    jfn(torch.ones(2))
    html = overview_html(model_of(jfn))
    assert "The final program" in html and "times not measured" in html
    assert "Modules" not in html and '<div class="tl" data-kind="computation">' in html


def test_a_del_only_diff_folds_into_one_line(trained):
    s = model_of(trained).series["computation"]
    last, before = s.final, s.passes[-2]
    assert last.name == "Delete Last Used"
    d = last.diff
    assert d.del_only and d.added and set(d.added) <= d.dels
    assert d.summary() == f"{len(d.dels)} del lines only"
    html = diff_html(last, before)
    # one closed fold whose summary says what it is; nothing outside it
    assert html.startswith(f'<details class="dels"><summary>{len(d.dels)} del lines only: values freed')
    assert html.endswith("</details>") and html.count('<details class="dels">') == 1
    assert '<details class="dels" open' not in html
    assert diff_text(last) == f"{len(d.dels)} del lines only (values freed after their last use)"


def test_saved_for_backward_lists_what_costs_memory_first(trained):
    prof = memory_of(model_of(trained), "computation")
    extra = [v.extra_bytes for v in prof.saved]
    assert extra == sorted(extra, reverse=True) and extra[0] > 0
    inputs = [v for v in prof.saved if v.is_input]
    assert inputs and all(v.extra_bytes == 0 for v in inputs)
    assert prof.saved[-len(inputs) :] == inputs  # the weights come last
    html = saved_html(prof)
    costly, _, folded = html.partition('<details class="free">')
    assert "no extra memory" not in costly  # the table holds only what costs memory
    assert f"and {len(inputs)} inputs of the forward, saved at no extra memory" in folded
    assert all(v.name in folded for v in inputs)


def test_a_module_made_while_tracing_is_named_by_its_function(trained):
    m = model_of(trained)
    tree = m.series["computation"].final.modules()
    g = tree.groups["attn.<Func>"]
    assert g.label == "attn: rotate()" and g.cls == "Func"
    assert tree.search("rotate") == [g]
    html = tree_html(m.series["computation"].final.nodes, modules=tree)
    assert '<span class="ln mp">attn: rotate()</span>' in html and "&lt;Func&gt;</span>" not in html
    assert "attn: rotate()" in overview_html(m)


def test_an_executor_helper_shows_as_the_torch_call_it_makes():
    jfn = thunder.jit(lambda x: x.pow(2).mean())
    x = torch.ones(3, requires_grad=True)
    jfn(x).backward()
    p = model_of(jfn).series["backward"].final
    n = next(n for n in p.nodes if n.via is not None)
    assert n.line.startswith(f"{n.outputs[0]} = torchex.scalar_first(torch.mul, 2, ")
    assert n.shown_line.startswith(f"{n.outputs[0]} = torch.mul(2, ") and n.via == "torchex.scalar_first"
    html = tree_html(p.nodes)
    shown = re.findall(r'<span class="ln">([^<]*)</span>', html)
    assert not any("scalar_first" in line for line in shown)
    assert f'<span class="ln">{n.shown_line.split("  # ")[0]}</span>' in html
    assert ">via torchex.scalar_first</span>" in html
    assert "torchex.scalar_first" in tree_text(p.nodes)  # the text view prints the trace as it is
    details = details_html(n, model_of(jfn).series["backward"])
    assert details.startswith(f'<div class="hd ln">{escape(n.shown_line)}</div>')
    assert f"<tr><th>runs as</th><td><code>{escape(n.line)}</code></td></tr>" in details
