"""The memory view and the what-if control in the widget and the report; modules by default."""

from __future__ import annotations

import re

import torch
import torch.nn as nn

import explorer
import thunder
from explorer.notebook.whatif import parse_lists
from explorer.views.report import report_html


def _step():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    jm = thunder.jit(m)
    x = torch.randn(2, 8)
    jm(x).sum().backward()
    return jm, x


def test_widget_memory_view_and_peak_button():
    jm, x = _step()
    ex = explorer.explore(jm, args=(x,))
    ex.kind.value = "backward"
    ex.view.value = "memory"
    assert "<svg" in ex.main.value and "measured on cpu" in ex.main.value
    assert ex.peak_button.layout.display == "flex"
    prof = ex.memory()
    ex.peak_button.click()
    assert ex.view.value == "tree" and ex.selected == prof.rows[prof.peak_index].node_id
    assert 'class="leaf sel' in ex.main.value or 'class="n sel' in ex.main.value
    assert ex.peak_button.layout.display == "none"


def test_widget_whatif_control():
    def f(x):
        return torch.nn.functional.gelu(x * 2 + 1).sum(-1)

    jf = thunder.jit(f)
    x = torch.randn(4, 8)
    ex = explorer.explore(jf)
    ex.whatif.button.click()  # no inputs: says how to give them
    assert "needs the inputs" in ex.whatif.out.value
    ex = explorer.explore(jf, args=(x,))
    ex.whatif.lists.value = "torch | torch, python"
    ex.whatif.button.click()
    c = ex.whatif.comparison
    assert [r.executors for r in c.rows] == [["torch"], ["torch", "python"]]
    assert all(r.matched for r in c.rows)
    assert "torch + python" in ex.whatif.out.value
    page = report_html(ex)  # the report of that explorer has the table
    assert "what if another executor ran it" in page and "torch + python" in page


def test_parse_lists():
    assert parse_lists(" torch | torchcompile, torch |") == [["torch"], ["torchcompile", "torch"]]


def test_report_has_the_memory_plots_without_script():
    jm, _ = _step()
    page = explorer.to_html(jm)
    assert "<script" not in page
    section = page[page.index('class="kind rk_memory"') :]
    assert section.count('<svg class="memplot"') == 2  # the forward and the backward
    assert "Saved for backward: 3 values" in section
    peak = re.search(r'<a class="peak" href="#([^"]+)"', section).group(1)
    assert f'id="{peak}"' in section


def test_a_jitted_module_opens_grouped_by_module():
    jm, _ = _step()
    assert explorer.explore(jm).by_module.value is True
    assert explorer.explore(jm, modules=False).by_module.value is False
    clusters = re.compile(r"subgraph (cluster_\w+)")
    assert len(set(clusters.findall(explorer.graph_of(jm).dot)) - {"cluster_legend"}) == 4  # 3 layers + root
    assert set(clusters.findall(explorer.graph_of(jm, modules=False).dot)) == {"cluster_legend"}
    jf = thunder.jit(lambda x: x.sin())
    jf(torch.ones(2))
    assert explorer.explore(jf).by_module.value is False
