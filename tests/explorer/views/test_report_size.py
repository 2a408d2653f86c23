"""Reports stay small: the page of a 2-layer Llama's training step is under 2 MB (it was 6.1 MB
when every pass repeated its whole tree, graph and printed trace), and what made it big does
not come back."""

from __future__ import annotations

import re

import pytest
from support.explorer_builders import tiny_llama_training_step

from explorer.views.report import report_html

MB = 1_000_000


@pytest.fixture(scope="module", params=[True, False], ids=["use_cache", "no_cache"])
def llama_step(request):
    pytest.importorskip("transformers")
    return tiny_llama_training_step(use_cache=request.param)


def test_a_llama_training_report_is_under_2_mb(llama_step):
    page = report_html(llama_step)
    assert len(page.encode()) < 2 * MB
    panes = re.split(r'<div class="pane ', page)[1:]
    finals = [p for p in panes if "<summary>Printed trace</summary>" in p]
    earlier = [p for p in panes if p not in finals]
    assert len(finals) == 4 and len(earlier) > 10  # prologue, computation, epilogue, backward
    for pane in earlier:  # a pass before the final lists its lines: no tree, no printed trace
        assert '<div class="tree">' not in pane and "<summary>Its lines" in pane
        if pane.startswith(("rpane_computation", "rpane_backward", "rpane_prologue")):
            assert "<svg" not in pane  # (the epilogue, 4 lines, has a graph per pass)
    # graphs: the final computation and backward (the prologue, a line per parameter, has none)
    prologue = page.split('<div class="kind rk_prologue">')[1].split('<div class="kind rk_')[0]
    assert "<svg" not in prologue
    for kind in ("computation", "backward"):
        section = page.split(f'<div class="kind rk_{kind}">')[1].split('<div class="kind rk_')[0]
        assert section.count("<svg") == 1
    assert "<!--" not in page  # graphviz's own comments
    # a subsymbol from its parent's source line does not repeat it
    assert page.count('class="src"') < 2 * sum(p.count('<details class="n ') for p in finals)
