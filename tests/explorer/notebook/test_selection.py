"""Selection that behaves: the tree is the selector (a click selects, the triangle folds), folds
survive selecting and searching, search filters as you type and finds notebook locations
written as the tree writes them (``In[3] line 2``)."""

from __future__ import annotations

import re

import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell

import explorer
import thunder
from explorer.model.compilation import model_of
from explorer.model.nodes import cell_number
from explorer.notebook.tree_pane import TreePane
from explorer.notebook.widget import Explorer
from explorer.views.text import location, tree_text


@pytest.fixture
def ex(jfn):
    return Explorer(model_of(jfn), view="tree")


def _open(html: str, node_id: str) -> bool | None:
    m = re.search(rf'<details class="[^"]*" data-id="{re.escape(node_id)}"( open)?>', html)
    return None if m is None else bool(m[1])


def test_the_main_pane_is_the_tree_selector(ex):
    assert isinstance(ex.main, TreePane)
    assert "function render" in TreePane._esm and "selected" in TreePane._esm  # a click sends the id
    ex.main.selected = "t1"  # a click on the line of t1
    assert ex.selected == "t1" and "t1 = " in ex.details.value
    assert 'class="n sel" data-id="t1"' in ex.main.value or 'class="leaf sel" data-id="t1"' in ex.main.value


def test_folds_survive_selection_search_and_passes(ex):
    assert _open(ex.main.value, "t0") is True and _open(ex.main.value, "t0/t0") is False  # open_depth 1
    ex.main.opened = ["t0/t0"]  # unfolded by hand
    ex.main.closed = ["t1"]  # folded by hand
    assert _open(ex.main.value, "t0/t0") is True and _open(ex.main.value, "t1") is False
    ex.main.selected = "t2"
    assert _open(ex.main.value, "t0/t0") is True and _open(ex.main.value, "t1") is False
    ex.query.value = "softmax"
    assert ex.hits and _open(ex.main.value, "t0/t0") is True and _open(ex.main.value, "t1") is False
    ex.query.value = ""
    ex.prev_button.click()  # another pass: the same lines keep their folds
    assert _open(ex.main.value, "t0/t0") is True and _open(ex.main.value, "t1") is False
    assert ex.opened == ["t0/t0"] and ex.closed == ["t1"]


def test_a_hit_inside_a_folded_line_is_still_shown(ex):
    ex.main.closed = ["t0"]
    ex.query.value = "prims.sin"
    assert ex.hits and _open(ex.main.value, "t0") is True  # opened for the hit below it


def test_search_filters_as_you_type(ex):
    assert ex.query.continuous_update
    for typed in ("s", "so", "sof", "soft"):
        ex.query.value = typed  # each keystroke searches
    assert ex.hits and all("soft" in (n.sym_id + n.line).lower() for n in ex.hits)
    assert 'class="n hit"' in ex.main.value or 'class="leaf hit"' in ex.main.value


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "explorer")
    yield ip


def test_notebook_cells_show_and_search_as_in_n_line_k(shell):
    shell.run_cell("x0 = 1", store_history=True)
    count = shell.execution_count
    res = shell.run_cell("def cell_fn(x):\n    y = x.sin()\n    return y * 2\n", store_history=True)
    assert res.success
    fn = shell.user_ns["cell_fn"]
    assert cell_number(fn.__code__.co_filename) == count
    jfn = thunder.jit(fn)
    jfn(torch.ones(3))
    m = model_of(jfn)
    p = m.series["computation"].final
    sin = next(n for n in p.nodes if "sin" in n.line)
    assert location(sin.source) == f"In[{count}] line 2"
    ex = Explorer(m, view="tree")
    assert f">In[{count}] line 2</span>" in ex.main.value and f">In[{count}] line 3</span>" in ex.main.value
    assert f"@ In[{count}] line 2" in tree_text(p.nodes)
    ex.query.value = f"In[{count}] line 2"
    ex.step_hit(+1)  # the details name the cell as the tree does
    assert f"In[{count}] line 2 in cell_fn" in ex.details.value
    assert ex.hits and all(n.source.line == 2 for n in ex.hits) and sin in ex.hits
    ex.query.value = f"in[{count}]"
    assert {n.source.line for n in ex.hits} == {2, 3}
    ex.query.value = f"In[{count}] li"  # on the way there, as typed
    assert ex.hits


def test_ipykernel_cells_are_numbered_by_ipython(shell):
    path = "/tmp/ipykernel_4242/918273645.py"
    shell.compile._filename_map[path] = 7  # what ipykernel's compiler notes for In[7]
    ns: dict = {}
    exec(compile("def k(x):\n    return x.cos()\n", path, "exec"), ns)
    jfn = thunder.jit(ns["k"])
    jfn(torch.ones(2))
    p = model_of(jfn).series["computation"].final
    cos = next(n for n in p.nodes if "cos" in n.line)
    assert location(cos.source) == "In[7] line 2"
    ex = explorer.explore(jfn, view="tree")
    ex.query.value = "In[7] line 2"
    assert cos.id in [n.id for n in ex.hits]


def test_a_thunder_trace_cell_is_numbered_by_its_execution(shell):
    from IPython.utils.capture import capture_output

    count = shell.execution_count
    with capture_output():
        res = shell.run_cell(
            "%%thunder_trace --view tree\nimport torch\ndef g(x):\n    return x.tanh()\ng(torch.ones(2))\n",
            store_history=True,
        )
    assert res.success
    ex = explorer.notebook.magic.last_explorer
    tanh = next(n for n in ex.current.nodes if "tanh" in n.line)
    assert location(tanh.source) == f"In[{count}] line 3"  # (the cell's line 3: below the magic's line)


def test_del_lines_are_not_marked_as_changes(ex):
    assert ex.current.name == "Delete Last Used" and ex.current.diff.del_only
    assert 'class="leaf added del"' not in ex.main.value and 'class="leaf del"' in ex.main.value
    ex.pass_buttons.value = next(p.index for p in ex.series.passes if p.name == "Transform for execution")
    assert 'class="n rewritten"' in ex.main.value  # a real change still is
