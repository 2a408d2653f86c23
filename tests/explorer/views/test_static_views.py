"""Static views read by their text: the HTML tree, trace/compilation HTML, text, the report."""

from __future__ import annotations

import re

import torch
from support.explorer_builders import hand_trace, make_symbol

import thunder
from explorer.model.compilation import model_of
from explorer.model.traces import TraceModel
from explorer.views.canvas import canvas_script
from explorer.views.html import LISTED_PROXIES, compilation_html, details_html, trace_html
from explorer.views.report import report_html
from explorer.views.text import model_text, source_diff, tree_text
from explorer.views.tree import tree_html
from thunder.core.symbol import BoundSymbol
from thunder.core.trace import Trace


def test_tree_folds_without_script(passes):
    p = TraceModel.from_traces({"computation": passes}).series["computation"].final
    h = tree_html(p.nodes, open_depth=1)
    assert "<script" not in h
    # the fusion region folds, open at depth 0; the subclass op below it folds, closed
    assert re.search(r'<details class="n[^"]*" data-id="t1" open><summary>', h)
    assert re.search(r'<details class="n[^"]*" data-id="t1/t0"><summary>', h)
    assert '<div class="leaf ' in h
    assert h.count("<details") == h.count("</details>")
    closed = tree_html(p.nodes, open_depth=0)
    assert " open>" not in closed
    everything = tree_html(p.nodes, open_depth=9)
    assert everything.count(" open>") == everything.count("<details")


def test_tree_badges_source_and_marks(passes):
    p = TraceModel.from_traces({"computation": passes}).series["computation"].final
    h = tree_html(p.nodes, marks={"t1": "rewritten"}, times={"t1": 0.0015}, hits={"t1/t0/a"}, selected="any0")
    assert '<span class="b x-nvfuser">nvfuser</span>' in h
    assert '<span class="b g-fusion">fusion</span>' in h
    assert '<span class="b g-flatten_tensor_subclass">flatten</span>' in h
    assert '<span class="b g-dataclass_new">dataclass</span>' in h
    assert '<span class="b g-writeback">write-back</span>' in h
    assert '<span class="tm">1.50 ms</span>' in h
    assert re.search(r'class="n rewritten" data-id="t1"', h)
    assert re.search(r'class="leaf sel" data-id="any0"', h)
    assert re.search(r'class="leaf hit" data-id="t1/t0/a"', h)
    # a hit deep down opens its parents even when the tree is closed
    closed = tree_html(p.nodes, open_depth=0, hits={"t1/t0/a"})
    assert re.search(r'data-id="t1" open>', closed) and re.search(r'data-id="t1/t0" open>', closed)


def test_budget_keeps_a_huge_trace_light():
    t = hand_trace(10_000)
    p = TraceModel.from_trace(t).series["computation"].final
    h = tree_html(p.nodes, budget=500)
    assert h.count("data-id=") == 500
    assert '<div class="more">... 9500 more</div>' in h
    assert len(h) < 200_000
    # breadth first: top-level lines come before anyone's subsymbols
    h2 = tree_html(p.nodes[:100], budget=150)
    assert h2.count('<details class="n') == 100 and h2.count('class="leaf') == 50
    assert h2.count('<div class="more">... 1 more</div>') == 50


def test_an_ipython_shell_shows_traces_and_jitted_functions_as_the_tree(jfn):
    from IPython.core.interactiveshell import InteractiveShell

    from explorer.notebook.display import register_displays

    shell = InteractiveShell.instance()
    assert register_displays(shell)
    t = thunder.last_traces(jfn)[-1]
    bundle, _ = shell.display_formatter.format(t)
    assert bundle["text/plain"] == str(t)  # the program, not the repr
    html = bundle["text/html"]
    assert html.startswith('<div class="thx"><style>') and "<details" in html
    assert "torch.sin(x)" in html and "Delete Last Used" in html
    assert trace_html(t) == html
    bundle, _ = shell.display_formatter.format(jfn)
    assert bundle["text/html"] == compilation_html(jfn)


def test_thunder_never_imports_the_explorer():
    import subprocess
    import sys

    code = (
        "import sys, torch, thunder\n"
        "f = thunder.jit(lambda x: x + 1)\n"
        "f(torch.ones(2)); str(thunder.last_traces(f)[-1])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'explorer'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_compilation_html(jfn):
    h = compilation_html(jfn)
    for kind in ("prologue", "computation"):
        assert f"<b>{kind}</b>" in h
    assert "What each pass changed" in h and "no change" in h
    assert "2 compiled entries" in h and "expected shape (3,), got (2, 4)" in h
    assert "Where the prologue unpacks and checks each input" in h
    assert "<script" not in h
    bad = compilation_html(object())
    assert 'class="err"' in bad and "thunder.jit" in bad


def test_model_displays_itself(jfn):
    b = model_of(jfn)._repr_mimebundle_()
    assert "thunder compilation: small_fn" in b["text/plain"] and "<details" in b["text/html"]


def test_text_views(jfn, passes):
    m = model_of(jfn)
    s = model_text(m)
    assert f"computation: {len(thunder.last_traces(jfn))} passes" in s and "no change" in s
    t = tree_text(m.series["computation"].final.nodes, depth=0)
    assert "t0 = torch.sin(x)" in t and "[torch]" in t and "ltorch.sin" not in t
    assert "ltorch.sin" in tree_text(m.series["computation"].final.nodes)
    fused = TraceModel.from_traces({"computation": passes}).series["computation"]
    diff = source_diff(fused.passes[0], fused.final)
    assert "+  t1 = nvfuser.nvFusion0(x)" in diff and "-  t1 = ltorch.mul(t0, 2)" in diff


def test_report_is_self_contained(jfn, tmp_path):
    import explorer

    path = tmp_path / "report.html"
    page = explorer.to_html(jfn, str(path))
    assert path.read_text() == page
    assert page.startswith("<!DOCTYPE html>")
    # its one script is the bundled graph canvas, inlined (nothing is fetched)
    assert page.count("<script") == 1 and canvas_script() in page
    assert "http://" not in page.replace("http://www.w3.org", "")
    assert "https://" not in page
    # pass stepping: one radio per pass of each kind (in the page's one group, so that a label
    # anywhere selects a pass and shows its kind), labels for them, previous/next
    s = model_of(jfn).series["computation"]
    radios = re.findall(r'<input type="radio" class="rad" name="kind" id="(rcomputation_\d+)"', page)
    assert len(radios) == len(s.passes)
    assert all(f'<label for="{r}"' in page for r in radios)
    assert "next pass &rarr;" in page and "&larr; previous pass" in page
    assert page.count("<svg") >= len(s.passes)  # a small trace gets a graph per pass
    assert f"Diff against pass {len(s.passes) - 2}" in page


def test_report_of_tagged_passes(passes):
    page = report_html(TraceModel.from_traces({"computation": passes}), graphs="final")
    assert page.count("<svg") - page.count('<svg class="memplot"') == 1
    assert "not available &lt;here&gt;" not in page or "<here>" not in page


def test_details_list_a_few_hundred_inputs():
    t = Trace("computation")
    xs = [t.tensor((2,), torch.float32, "cpu") for _ in range(LISTED_PROXIES + 5)]
    t.args = xs
    out = t.tensor((2,), torch.float32, "cpu")
    t.bound_symbols = [BoundSymbol(make_symbol("fused", "test"), tuple(xs), {}, out)]
    t.output = out
    s = TraceModel.from_trace(t).series["computation"]
    html = details_html(s.final.nodes[0], s)
    assert len(re.findall(r"<code>t\d+</code>: cpu f32\[2\]", html)) == LISTED_PROXIES + 1  # and the output
    assert '<span class="more">... 5 more</span>' in html
