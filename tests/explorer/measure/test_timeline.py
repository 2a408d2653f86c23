"""The timeline of a run and its Chrome / Perfetto export, read as the trace-event format asks:
valid JSON, complete events with ts and dur, memory counters, the forward and the backward."""

from __future__ import annotations

import json

import pytest
import torch

import explorer
import thunder
from explorer.measure.timeline import Span, Timeline, timeline_of
from explorer.model.compilation import model_of
from explorer.views.timeline import timeline_html, timeline_section_html, timeline_svg


def step(x, w):
    pos = torch.arange(x.shape[-1], dtype=x.dtype)
    return torch.softmax((x + pos) @ w, -1).sum()


@pytest.fixture(scope="module")
def run():
    jfn = thunder.jit(step)
    x, w = torch.randn(3, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True)
    return jfn, explorer.timeline(jfn, x, w)


def test_export_is_a_chrome_trace_with_both_sides(run, tmp_path):
    jfn, tl = run
    path = tl.save(str(tmp_path / "trace.json"))
    data = json.loads(open(path, encoding="utf-8").read())
    events = data["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert spans and all(
        isinstance(e["name"], str)
        and isinstance(e["ts"], (int, float))
        and isinstance(e["dur"], (int, float))
        and e["dur"] >= 0
        and {"pid", "tid", "args"} <= e.keys()
        for e in spans
    )
    threads = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    sides = {threads[e["tid"]] for e in spans}
    assert {"forward lines", "backward lines"} <= sides
    # one span per timed line, laid end to end: each starts where the one before ended
    model = model_of(jfn)
    forward = [e for e in spans if threads[e["tid"]] == "forward lines"]
    assert len(forward) == sum(1 for n in model.series["computation"].final.nodes if "del" not in n.tags)
    for a, b in zip(forward, forward[1:]):
        assert b["ts"] == pytest.approx(a["ts"] + a["dur"], abs=0.01)
    assert any(e["name"] == "torch.softmax" for e in forward)  # named as the trace prints it
    names = {e["name"] for e in spans}
    assert "default" not in names and "aten._softmax_backward_data" in names
    backward_start = min(e["ts"] for e in spans if threads[e["tid"]] == "backward lines")
    assert backward_start >= max(e["ts"] + e["dur"] for e in forward) - 0.01
    counters = [e for e in events if e["ph"] == "C"]
    assert counters and all(isinstance(e["args"]["computed"], int) for e in counters)
    assert max(e["args"]["computed"] for e in counters) > 0
    assert all(e["args"]["line"] and e["args"]["id"] for e in spans)


def test_view_draws_the_spans_and_memory(run):
    _, tl = run
    svg = timeline_svg(tl)
    assert svg.count("<rect") == len(tl.spans) and "<polyline" in svg
    assert "<a " not in svg  # no links inside an SVG: JupyterLab rejects them
    assert "forward lines" in svg and "backward lines" in svg and "memory live" in svg
    html = timeline_html(tl)
    assert 'class="thx-canvas"' in html and "trace.json" in html
    assert tl._repr_html_().count("<script>") == 1


def test_fusion_regions_and_collectives_have_rows_of_their_own():
    jfn = thunder.jit(step, executors=["torchcompile", "torch"])
    x, w = torch.randn(3, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True)
    jfn(x, w).backward()
    model = model_of(jfn)
    s = model.series["computation"].final
    model.timings = {"computation": {n.id: 1e-3 for n in s.nodes if "del" not in n.tags}}
    tl = timeline_of(model)
    regions = [x for x in tl.spans if x.track == "fusion regions"]
    assert regions and all(x.detail["ops"] for x in regions)
    assert "ltorch.softmax" in regions[0].detail["ops"]
    assert tl.notes == ["the backward was not timed"]
    # a collective is a span from its start to the end of its wait
    spans = [
        Span("forward", "lines", "a", 0.0, 1.0, "t0", "a"),
        Span("forward", "lines", "b", 1.0, 2.0, "t1", "b"),
    ]
    c = Span("forward", "collectives", "all_reduce sum", 0.0, 3.0, "t0", "all_reduce", detail={"wait": "t1"})
    events = Timeline([*spans, c], [], [0], None, "t").to_chrome_trace()["traceEvents"]
    (ev,) = [e for e in events if e.get("cat") == "forward,collectives"]
    assert (ev["ts"], ev["dur"]) == (0.0, 3e6)


def test_untimed_model_says_so(run):
    jfn, _ = run
    model = model_of(jfn)
    model.timings = {}
    tl = explorer.timeline(model)
    assert tl.spans == [] and "explorer.timeline(jfn, x)" in tl.notes[-1]
    assert timeline_section_html(model) == ""
