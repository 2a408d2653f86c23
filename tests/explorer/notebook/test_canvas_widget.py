"""The graph canvas's widget by its state: what the front end reports (a click, a module
double-clicked) reaches the explorer; the script it runs is the bundled canvas."""

from __future__ import annotations

import types
from html import escape

import ipywidgets as w
import torch

import thunder
from explorer.notebook.canvas_widget import CanvasDriver, attach_canvas
from explorer.views.canvas import asset


def _stand_in(timings):
    calls = []
    ex = types.SimpleNamespace(
        root=w.VBox([w.HTML("graph")]),
        model=types.SimpleNamespace(timings=timings),
        select=lambda node_id: calls.append(("select", node_id)),
        toggle_module=lambda path: calls.append(("toggle", path)),
    )
    return ex, calls


def test_clicks_and_double_clicks_reach_the_explorer():
    ex, calls = _stand_in({})
    driver = attach_canvas(ex)
    assert ex.root.children[-1] is driver and ex.canvas is driver
    driver.set_state({"selected": "t8", "clicks": 1})  # what the front end sends on a click
    driver.set_state({"selected": "t8", "clicks": 2})  # the same node again: selected again
    driver._handle_custom_msg({"toggle": "module:layers.0.mlp"}, [])
    driver._handle_custom_msg({"toggle": "t8"}, [])  # not a module: nothing to fold
    assert calls == [("select", "t8"), ("select", "t8"), ("toggle", "layers.0.mlp")]


def test_the_front_end_is_the_bundled_script():
    d = CanvasDriver()
    assert d._esm.startswith(asset("canvas.js")) and "export default" in d._esm
    assert "thx-select" in d._esm and "model.send({ toggle" in d._esm
    assert d._css == asset("canvas.css")


def test_a_timed_run_gets_a_timeline_box():
    ex, _ = _stand_in({"computation": {"t0": 1e-3}})
    attach_canvas(ex)
    assert ex.timeline_box in ex.root.children and ex.timeline_box.selected_index is None


def test_a_line_of_another_kind_selected_switches_to_that_kind():
    """A click on a backward span of the timeline selects a backward line: the explorer shows
    the backward's final pass with that line's details."""
    import explorer

    def f(x):
        return (x.sin() * 2).sum()

    jf = thunder.jit(f)
    x = torch.randn(3, requires_grad=True)
    jf(x).backward()
    ex = explorer.explore(jf)
    assert ex.kind.value == "computation"
    backward = ex.model.series["backward"].final
    line = next(n for n in backward.nodes if "del" not in n.tags and ex.current.find(n.id) is None)
    ex.select(line.id)
    assert ex.kind.value == "backward" and ex.current is backward and ex.selected == line.id
    assert escape(line.shown_line) in ex.details.value
