"""The memory view and the what-if control in the widget and the report; modules by default."""

from __future__ import annotations

import re

import torch
import torch.nn as nn

import explorer
import thunder
from explorer.notebook.whatif import parse_lists
from explorer.views.canvas import canvas_script
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
    assert "<script" not in page.replace(
        canvas_script(), ""
    )  # (the plots need none: only the canvas has one)
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


def _profile(lines: int, peak: int):
    """A made-up profile of ``lines`` lines whose live bytes rise to ``peak`` and fall."""
    from explorer.model.memory import MemoryProfile, MemoryRow

    rows = [MemoryRow(i, f"line_{i}", 4, 0, 4 * (i if i <= peak else 2 * peak - i)) for i in range(lines)]
    return MemoryProfile("computation", 3, "del_last_used", rows, 4 * peak, peak, 0, 0)


def _ids(html: str) -> list[str]:
    return re.findall(r' id="([^"]+)"', html)


def test_a_long_memory_table_lists_the_peak_and_folds_all_its_lines():
    from explorer.views.memory import AROUND_PEAK, FULL_TABLE, memory_html

    prof = _profile(300, 150)
    html = memory_html(prof)
    top, fold = html.split('<details class="allrows">')
    assert "<summary>show all 300 lines</summary>" in fold and "<script" not in html
    listed = re.findall(r'<td class="num">(\d+)</td>', top)
    assert str(150) in listed and str(150 - AROUND_PEAK) in listed and str(150 + AROUND_PEAK) in listed
    assert "line_60<" not in top and "line_240<" not in top  # far from the peak: only in the fold
    assert all(f">line_{i}</td>" in fold for i in range(300))
    ids = _ids(html)
    assert len(ids) == len(set(ids)) and _ids(fold) == []  # the fold repeats rows, not their anchors
    assert 'href="#mem-computation-3-150"' in top and 'id="mem-computation-3-150"' in top
    short = memory_html(_profile(FULL_TABLE, 10))
    assert (
        '<details class="allrows">' not in short
        and "... " not in short.split('<table class="kv memrows">')[1]
    )


def test_a_very_long_memory_table_folds_its_first_lines_and_says_where_the_rest_are():
    from explorer.views.memory import ALL_LINES, memory_html

    html = memory_html(_profile(ALL_LINES + 500, 1200))
    fold = html.split('<details class="allrows">')[1]
    assert f"<summary>show the first {ALL_LINES} of {ALL_LINES + 500} lines</summary>" in fold
    assert f">line_{ALL_LINES - 1}</td>" in fold and f">line_{ALL_LINES}</td>" not in fold
    assert "500 more lines" in fold and "explorer.memory(...).rows" in fold


def test_long_lists_of_saved_and_recomputed_values_fold_past_the_costliest():
    from explorer.model.memory import RecomputedValue, SavedValue
    from explorer.views.memory import SHORT_LIST, saved_html

    prof = _profile(10, 5)
    prof.saved = [SavedValue(f"s{i}", 1000 - i, f"s{i} = f()", None, False) for i in range(SHORT_LIST + 5)]
    prof.saved.append(SavedValue("w", 64, None, None, True))
    prof.rematerialized = [
        RecomputedValue(f"r{i}", 8, f"r{i} = g()", None, None) for i in range(SHORT_LIST + 1)
    ]
    html = saved_html(prof)
    shown, _, rest = html.partition('<details class="more-saved"><summary>and 5 more saved values</summary>')
    assert all(f">s{i}<" in shown for i in range(SHORT_LIST)) and f">s{SHORT_LIST}<" not in shown
    assert all(f">s{i}<" in rest for i in range(SHORT_LIST, SHORT_LIST + 5))
    assert f"<details><summary>Rematerialized: {SHORT_LIST + 1} values" in rest  # long: starts folded
    prof.rematerialized = prof.rematerialized[:SHORT_LIST]
    assert f"<details open><summary>Rematerialized: {SHORT_LIST} values" in saved_html(prof)
