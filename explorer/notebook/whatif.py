"""The explorer's what-if control: executor lists to try, a button, the table.

The lists are typed as ``torch | torchcompile, torch`` (lists split by ``|``, executors in a
list by ``,``). The button compiles the explorer's function anew with each list and runs it on
the inputs the explorer was made with (``explore(jfn, args=...)`` or ``%thunder_trace``), then
shows ``explorer.views.whatif``'s table; without inputs it says how to give them. While it
runs, a progress bar and a line name the list and its phase (compiling, timing, checking,
memory), so a comparison of half a minute is not a silent kernel; ``kernel_progress`` does the
same for ``explorer.compare`` called in a cell (a line of text updated in place).
"""

from __future__ import annotations

from html import escape

import ipywidgets as w

from explorer.measure.whatif import compare, default_executor_lists
from explorer.views.html import wrap
from explorer.views.whatif import comparison_table_html


def parse_lists(text: str) -> list[list[str]]:
    """``"torch | torchcompile, torch"`` -> ``[["torch"], ["torchcompile", "torch"]]``."""
    lists = [[e.strip() for e in part.split(",") if e.strip()] for part in text.split("|")]
    lists = [x for x in lists if x]
    if not lists:
        raise ValueError("give executor lists such as: torch | torchcompile, torch")
    return lists


class WhatIfPanel:
    """The control; ``explorer`` is the Explorer it belongs to (its ``source`` and ``inputs``)."""

    def __init__(self, explorer, repeat: int = 5):
        self.explorer = explorer
        self.repeat = repeat
        self.comparison = None
        self.lists = w.Text(
            value=" | ".join(", ".join(x) for x in default_executor_lists()),
            description="what if",
            tooltip="executor lists to compare, split by |",
            layout=w.Layout(width="60%"),
        )
        self.button = w.Button(
            description="compare executors", icon="balance-scale", layout=w.Layout(width="auto")
        )
        self.out = w.HTML()
        self.bar = w.FloatProgress(value=0.0, min=0.0, max=1.0, layout=w.Layout(display="none"))
        self.status = w.HTML()
        self.button.on_click(lambda _: self.run())
        self.root = w.VBox([w.HBox([self.lists, self.button]), w.HBox([self.bar, self.status]), self.out])

    def report(self, fraction: float, message: str) -> None:
        """Progress of the comparison: the bar at ``fraction``, the message beside it."""
        self.bar.layout.display = "flex"
        self.bar.value = min(max(fraction, 0.0), 1.0)
        self.status.value = f'<span class="note">{escape(message)}</span>'

    def run(self) -> None:
        ex = self.explorer
        inputs = getattr(ex, "inputs", None)
        if ex.source is None or inputs is None:
            self.out.value = wrap(
                '<div class="note">The what-if needs the inputs: open the explorer with '
                "<code>explorer.explore(jfn, args=(...))</code> or <code>%thunder_trace fn(...)</code>.</div>"
            )
            return
        try:
            lists = parse_lists(self.lists.value)
        except ValueError as e:
            self.out.value = wrap(f'<div class="err">{escape(str(e))}</div>')
            return
        self.out.value = ""
        self.report(0.0, f"compiling and running {len(lists)} executor lists")
        args, kwargs = inputs
        self.button.disabled = True
        try:
            self.comparison = compare(
                ex.source, args, kwargs, executors=lists, repeat=self.repeat, progress=self.report
            )
        except Exception as e:
            self.out.value = wrap(
                f'<div class="err">what-if failed: {escape(f"{type(e).__name__}: {e}")}</div>'
            )
            return
        finally:
            self.button.disabled = False
            self.bar.layout.display = "none"
            self.status.value = ""
        self.out.value = wrap(comparison_table_html(self.comparison))


def kernel_progress():
    """For ``explorer.compare`` in a notebook: a ``progress(fraction, message)`` that shows one
    line of text, updated in place, removed when the comparison is done; None outside a kernel."""
    try:
        from IPython import get_ipython
        from IPython.display import HTML, display
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return None
    handle = None

    def progress(fraction: float, message: str) -> None:
        nonlocal handle
        if fraction >= 1.0:  # done: the comparison's own table follows
            if handle is not None:
                handle.update(HTML(""))
            return
        line = HTML(
            f'<div class="thx"><span class="note">what-if {fraction:.0%}: {escape(message)}</span></div>'
        )
        if handle is None:
            handle = display(line, display_id=True)
        else:
            handle.update(line)

    return progress
