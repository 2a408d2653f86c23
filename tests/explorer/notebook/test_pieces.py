"""The explorer of a thunderfx program: pieces in execution order with the graph breaks between
them (widget, static HTML, the page of ``to_html``, ``%thunder_trace``)."""

from __future__ import annotations

import html

import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import explorer
import explorer.notebook.magic as magic
from explorer.notebook.pieces import ProgramExplorer, is_program
from explorer.notebook.widget import Explorer
from thunder.dynamo import thunderfx


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def two_breaks(x):
    y = x.sin() * 2
    if y.sum() > 0:  # break 1: a branch on a tensor's value
        y = y + 1
    print("between the pieces")  # break 2: Python that runs every call
    z = torch.special.bessel_j0(y)  # thunder has no op for it: this piece runs eagerly
    return z.exp()


@pytest.fixture
def program(capsys):
    cfn = thunderfx(two_breaks)
    x = torch.ones(3)
    torch.testing.assert_close(cfn(x), two_breaks(x))
    capsys.readouterr()
    return cfn


def test_widget_shows_pieces_and_breaks_in_order(program):
    assert is_program(program) and not is_program(two_breaks)
    ex = explorer.explore(program)
    assert isinstance(ex, ProgramExplorer)
    kinds = ["piece" if hasattr(s, "piece") else "break" for s in ex.sections]
    assert kinds == ["piece", "break", "piece", "break", "piece"]
    breaks = [s.value for s in ex.sections if not hasattr(s, "piece")]
    assert "data-dependent" in breaks[0] and "if y.sum() &gt; 0:" in breaks[0]
    assert "print(&quot;between the pieces&quot;)" in breaks[1] or 'print("between the pieces")' in breaks[1]
    line = two_breaks.__code__.co_firstlineno + 2
    assert f"test_pieces.py:{line} in two_breaks" in breaks[0]
    # a piece opens into the explorer of its thunder function, built when opened
    first = ex.sections[0]
    assert first.children[0].value == "" and not ex.explorers
    first.selected_index = 0
    inner = ex.explorers[first.piece.index]
    assert isinstance(inner, Explorer) and first.children[0] is inner.root
    assert "The final program" in inner.main.value  # its overview first
    inner.view.value = "tree"
    assert "sin" in inner.main.value
    # the eager piece shows thunder's reason instead
    last = ex.sections[-1]
    last.selected_index = 0
    assert "bessel_j0" in last.children[0].value and "runs eagerly" in last.children[0].value
    bundle = ex._repr_mimebundle_()
    assert "graph break" in bundle["text/html"] and "piece 0" in bundle["text/plain"]


def test_report_page_has_every_step_and_each_piece_s_traces(program, tmp_path):
    path = tmp_path / "program.html"
    page = explorer.to_html(program, str(path))
    assert path.read_text(encoding="utf-8") == page
    assert page.count('class="brk"') == 2
    assert page.count("<iframe") == 2  # the two thunder pieces; the eager one shows its reason
    assert "torch.special.bessel_j0 is not supported" in page
    first, second = page.index("<summary>piece 0"), page.index('class="brk"')
    assert first < second
    # each piece's own report is inside, with its computation trace
    inner = html.unescape(page.split('srcdoc="')[1].split('"></iframe>')[0])
    assert inner.startswith("<!DOCTYPE html>") and "def computation" in html.unescape(inner)


def test_magic_with_thunderfx(capsys):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "explorer")
    ip.user_ns.update(two_breaks=two_breaks, torch=torch)
    with capture_output() as cap:
        res = ip.run_cell("%thunder_trace --thunderfx two_breaks(torch.ones(3))", store_history=False)
    assert res.success
    (out,) = [o.data for o in cap.outputs]
    assert "application/vnd.jupyter.widget-view+json" in out
    ex = magic.last_explorer
    assert isinstance(ex, ProgramExplorer) and len(ex.program.breaks) == 2
    torch.testing.assert_close(ex.result, two_breaks(torch.ones(3)))


def gives_up(x):
    y = x.sin()
    print(f"mean {y.mean().item():+.3f}")  # Dynamo runs the rest of this function eagerly
    return y.cos()


def test_functions_dynamo_gives_up_on_are_shown(capsys):
    cfn = thunderfx(gives_up)
    for _ in range(3):  # Dynamo gives up when it compiles the rest again for a new value
        cfn(torch.randn(3))
    assert cfn.skipped
    ex = explorer.explore(cfn)
    shown = "".join(c.value for c in ex.root.children if hasattr(c, "value"))
    assert "Dynamo runs gives_up eagerly" in shown
    assert "Dynamo runs gives_up eagerly" in explorer.to_html(cfn)
