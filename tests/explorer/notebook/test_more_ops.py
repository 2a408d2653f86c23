"""A graph cut at its node limit ("... N more") says how to draw the rest, and in the widget a
button draws it: all of it, or up to ``MAX_DRAWN`` nodes at a time."""

from __future__ import annotations

import re
import shutil

import pytest
import torch
from support.explorer_builders import many_ops

import explorer
import thunder
from explorer.notebook import panes

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz `dot` is not installed")


@pytest.fixture(scope="module")
def long_fn():
    jfn = thunder.jit(many_ops)
    jfn(torch.randn(4), 60)
    return jfn


def _drawn(html: str) -> int:
    return len(
        re.findall(r'<g id="node\d+" class="node thx&#45;s&#45;', html)
    )  # (graphviz writes - as &#45;)


def test_graph_of_says_how_to_draw_what_it_left_out(long_fn):
    g = explorer.graph_of(long_fn, max_nodes=20)
    total = g.nodes + g.cut
    assert g.nodes == 20 and g.cut > 20
    hint = next(m for m in g.messages if "not drawn" in m)
    assert f"{g.cut} more are not drawn" in hint and f"max_nodes={total})" in hint
    whole = explorer.graph_of(long_fn, max_nodes=total)
    assert whole.cut == 0 and whole.nodes == total and not [m for m in whole.messages if "not drawn" in m]


def test_the_widget_button_draws_the_rest(long_fn):
    ex = explorer.explore(long_fn, modules=False)
    ex.max_nodes = 20
    ex.view.value = "graph"
    assert _drawn(ex.main.value) == 20 and "more are not drawn" in ex.main.value
    assert ex.more_button.layout.display == "flex"
    left = int(re.search(r"draw the other (\d+) ops", ex.more_button.description)[1])
    ex.more_button.click()
    assert _drawn(ex.main.value) == 20 + left and "more are not drawn" not in ex.main.value
    assert ex.more_button.layout.display == "none"
    ex.view.value = "tree"
    assert ex.more_button.layout.display == "none"


def test_the_button_draws_at_most_max_drawn_nodes(long_fn, monkeypatch):
    monkeypatch.setattr(panes, "MAX_DRAWN", 30)
    ex = explorer.explore(long_fn, modules=False)
    ex.max_nodes = 20
    ex.view.value = "graph"
    cut = int(re.search(r"(\d+) more are not drawn", ex.main.value)[1])
    assert ex.more_button.description == f"draw 10 more ops (of {cut} not drawn)"
    ex.more_button.click()
    assert _drawn(ex.main.value) == 30 and ex.more_button.layout.display == "none"
