"""The executor what-if: one row per executor list, outputs checked against the first."""

from __future__ import annotations

import torch
import torch.nn as nn

import explorer
import thunder
from explorer.measure.outputs import Difference, difference, leaves
from explorer.measure.whatif import Comparison
from explorer.views.whatif import comparison_html, comparison_table_html


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
    a = leaves((torch.zeros(3), 2))
    assert difference(a, leaves((torch.zeros(3), 2))) == Difference(True, 0.0)
    d = difference(a, leaves((torch.tensor([0.0, 0.5, 0.0]), 2)))
    assert not d.matched and d.max_abs == 0.5 and d.path == "out[0]" and "not close" in d.why
    assert difference(a, leaves((torch.zeros(3), 3))) == Difference(False, 0.0, "out[1]", why="2 against 3")
    assert difference(a, leaves((torch.zeros(4), 2))).matched is False


def _dropout(x):
    return torch.nn.functional.dropout(x * 2, 0.5) + 1


def test_every_list_draws_the_same_random_numbers_and_the_users_rng_is_left_as_it_was():
    jf = thunder.jit(_dropout)
    x = torch.randn(256)
    jf(x)
    torch.manual_seed(3)
    rng = torch.get_rng_state()
    c = explorer.compare(jf, (x,), executors=[["torch"], ["torch"]], repeat=1, warmup=1)
    assert torch.equal(torch.get_rng_state(), rng)
    for r in c.rows:
        assert r.draws is not None and r.draws.startswith("dropout"), r.draws
        assert r.matched and not r.random, (r.note, r.difference)
    # each list drew what the user's next call draws
    torch.testing.assert_close(jf(x), _dropout_reference(x, rng))


def _dropout_reference(x, rng):
    torch.set_rng_state(rng)
    return _dropout(x)


def test_outputs_that_differ_between_two_runs_from_the_same_state_are_random(monkeypatch):
    from explorer.measure import whatif
    from explorer.measure.hands_off import Snapshot

    draws = iter(range(100))

    class NotSeeded:  # stands for an executor whose numbers no seed fixes
        def __call__(self, x):
            return x + next(draws)

    monkeypatch.setattr(whatif.thunder, "jit", lambda target, executors: NotSeeded())
    monkeypatch.setattr(whatif, "_finish_regions", lambda jx: None)
    x = torch.zeros(2)
    row = whatif.WhatIfRow(["torch"])
    whatif._run(row, None, (x,), {}, Snapshot([(x,)]), repeat=1, warmup=0, step=lambda phase, message: None)
    assert row.random and "two runs from the same inputs and RNG state differ" in row.note
    assert "out differs: max abs error" in row.note


def test_values_that_differ_where_the_program_draws_random_numbers_are_random_not_a_mismatch():
    from explorer.measure.whatif import WhatIfRow, _judge

    first = WhatIfRow(["torch"], seconds=1e-3, matched=True, draws="dropout (t4)")
    d = difference(leaves(torch.zeros(3)), leaves(torch.ones(3)))
    row = WhatIfRow(["nvfuser", "torch"], seconds=1e-3, draws="nvFusion0 (t4)")
    _judge(row, first, d)
    assert row.matched is None and row.random and "outputs are random" in row.note
    assert "nvFusion0 (t4)" in row.note and "out differs: max abs error 1" in row.note
    html = comparison_table_html(Comparison("f", [first, row], 1, "cpu"))
    assert "random" in html and "DIFFER" not in html
    # a shape that differs is a mismatch whatever the program draws
    shaped = WhatIfRow(["nvfuser", "torch"], draws="nvFusion0 (t4)")
    _judge(shaped, first, difference(leaves(torch.zeros(3)), leaves(torch.zeros(4))))
    assert shaped.matched is False and not shaped.random
    # and without random numbers, other values are a mismatch
    plain = WhatIfRow(["nvfuser", "torch"])
    _judge(plain, WhatIfRow(["torch"], matched=True), d)
    assert plain.matched is False and plain.difference.path == "out"
