"""The executor what-if: one row per executor list, outputs checked against the first."""

from __future__ import annotations

import torch
import torch.nn as nn

import explorer
import thunder
from explorer.views.whatif import comparison_html


class GeluMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.proj = nn.Linear(32, 128), nn.Linear(128, 32)

    def forward(self, x):
        return self.proj(nn.functional.gelu(self.fc(x) * 1.5 + 0.5))


def test_gelu_mlp_torch_against_torchcompile():
    torch.manual_seed(0)
    jm = thunder.jit(GeluMLP())
    x = torch.randn(16, 32)
    with torch.no_grad():
        jm(x)
    entries = len(thunder.compile_stats(jm).entries)
    with torch.no_grad():
        c = explorer.compare(jm, (x,), executors=[["torch"], ["torchcompile", "torch"]], repeat=3)
    assert [r.executors for r in c.rows] == [["torch"], ["torchcompile", "torch"]]
    eager, fused = c.rows
    assert eager.error is None and fused.error is None, (eager.error, fused.error)
    assert eager.matched and fused.matched, fused.note
    assert eager.fusion_regions == 0 and fused.fusion_regions >= 1
    assert fused.lines < eager.lines  # the elementwise chain is one region
    for r in c.rows:
        # measured, not compared: which is faster on a busy machine is not what this checks
        assert 0 < r.seconds and 0 < r.first_call_seconds
        assert r.peak_bytes > 0 and r.measured_peak_bytes is not None
    # the MLP's hidden [16, 128] float32 activations: two of them at once unfused
    assert eager.peak_bytes >= 2 * 16 * 128 * 4
    assert len(thunder.compile_stats(jm).entries) == entries  # the user's cache is untouched
    html = comparison_html(c)
    assert "<script" not in html and "torchcompile + torch" in html and "match" in html


def test_a_list_that_cannot_run_is_reported_in_its_row():
    def f(x):
        return torch.sin(x) * 2

    jf = thunder.jit(f)
    jf(torch.ones(4))
    c = explorer.compare(
        jf, (torch.ones(4),), executors=[["torch"], ["nvfuser"], ["no-such-executor"]], repeat=1
    )
    assert c.rows[0].matched
    assert all(r.error is not None for r in c.rows[1:])
    assert "unknown executor 'no-such-executor'" in c.rows[2].error
    html = comparison_html(c)
    assert html.count("did not run") == 2


def test_outputs_that_differ_are_not_a_match():
    from explorer.measure.whatif import _difference

    a = (torch.zeros(3), 2)
    assert _difference(a, (torch.zeros(3), 2))[:2] == (True, 0.0)
    ok, worst, why = _difference(a, (torch.tensor([0.0, 0.5, 0.0]), 2))
    assert not ok and worst == 0.5 and "not close" in why
    assert _difference(a, (torch.zeros(3), 3)) == (False, None, "2 against 3")
    assert _difference(a, (torch.zeros(4), 2))[0] is False
