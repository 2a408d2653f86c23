"""The what-if reports its progress while it runs: each list and its phase, in the widget (a
progress bar and a line) and for ``explorer.compare`` in a notebook cell (a line updated in place)."""

from __future__ import annotations

import torch

import explorer
import thunder
from explorer.notebook import whatif as panel_module


def _gelu(x):
    return torch.nn.functional.gelu(x * 2 + 1).sum(-1)


def _jitted():
    jf = thunder.jit(_gelu)
    x = torch.randn(4, 8)
    jf(x)
    return jf, x


def test_compare_reports_each_list_and_phase_in_order():
    jf, x = _jitted()
    seen: list[tuple[float, str]] = []
    explorer.compare(
        jf,
        (x,),
        executors=[["torch"], ["torch", "python"]],
        repeat=1,
        warmup=0,
        progress=lambda f, m: seen.append((f, m)),
    )
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    messages = [m for _, m in seen]
    assert messages[0] == "torch (1 of 2): compiling and running the first call"
    for phase in ("timing 1 call", "checking its outputs", "measuring its memory"):
        assert f"torch + python (2 of 2): {phase}" in messages
    assert messages[-1] == "compared 2 executor lists"


def test_the_widget_shows_a_bar_and_the_phase_while_it_runs():
    jf, x = _jitted()
    ex = explorer.explore(jf, args=(x,))
    panel = ex.whatif
    panel.lists.value = "torch | torch, python"
    bars, lines, shown = [], [], []
    panel.bar.observe(lambda ch: bars.append(ch["new"]), names="value")
    panel.status.observe(lambda ch: lines.append(ch["new"]), names="value")
    panel.bar.layout.observe(lambda ch: shown.append(ch["new"]), names="display")
    panel.button.click()
    assert shown[0] == "flex" and shown[-1] == "none"  # shown while it ran, hidden after
    assert len(bars) >= 6 and bars == sorted(bars) and 0 < bars[len(bars) // 2] < 1
    assert any("torch + python (2 of 2): timing" in line for line in lines)
    assert panel.status.value == "" and not panel.button.disabled
    assert "torch + python" in panel.out.value  # then the table


def test_compare_in_a_notebook_cell_shows_one_line_updated_in_place(monkeypatch):
    assert panel_module.kernel_progress() is None  # not in a kernel: nothing to show it in
    import IPython
    import IPython.display

    class Handle:
        def __init__(self):
            self.shown = []

        def update(self, obj):
            self.shown.append(obj.data)

    handles: list[Handle] = []

    def display(obj, display_id=False):
        assert display_id is True
        handles.append(Handle())
        handles[-1].shown.append(obj.data)
        return handles[-1]

    monkeypatch.setattr(IPython, "get_ipython", lambda: type("Shell", (), {"kernel": object()})())
    monkeypatch.setattr(IPython.display, "display", display)
    jf, x = _jitted()
    explorer.compare(jf, (x,), executors=[["torch"]], repeat=1, warmup=0, measure=False)
    (handle,) = handles  # one line, updated in place
    assert "what-if 0%: torch (1 of 1): compiling" in handle.shown[0]
    assert any("checking its outputs" in text for text in handle.shown)
    assert handle.shown[-1] == ""  # gone once the table is there
