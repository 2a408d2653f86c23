"""The what-if table: the spread of each list's timings with noisy ones flagged, the first
differing output by its path, random outputs said to be random."""

from __future__ import annotations

import re

import torch

import explorer
import thunder
from explorer.measure.outputs import difference, leaves
from explorer.measure.whatif import NOISY, Comparison, WhatIfRow
from explorer.views.whatif import comparison_table_html


def _row(label: str, times: list[float], **fields) -> WhatIfRow:
    return WhatIfRow([label], seconds=min(times), times=times, matched=True, **fields)


def _cells(html: str, label: str) -> list[str]:
    row = re.search(rf"<tr><td><code>{re.escape(label)}</code></td>(.*?)</tr>", html).group(1)
    return re.findall(r"<td[^>]*>(.*?)</td>", row)


def test_each_row_shows_the_median_and_slowest_call_and_flags_a_noisy_one():
    quiet = _row("quiet", [1.0e-3, 1.1e-3, 1.2e-3])
    noisy = _row("busy", [1.0e-3, 1.2e-3, 2.0e-3])
    assert quiet.median_seconds == 1.1e-3 and quiet.max_seconds == 1.2e-3 and not quiet.noisy
    assert noisy.spread == 2.0 > NOISY and noisy.noisy
    html = comparison_table_html(Comparison("f", [quiet, noisy], 3, "cpu"))
    assert "median / slowest" in html
    check, best, spread = _cells(html, "quiet")[:3]  # whether the outputs agree comes first
    assert check == "match"
    assert best == "1.00 ms" and spread == "1.10 ms / 1.20 ms"
    assert _cells(html, "busy")[2] == "1.20 ms / 2.00 ms noisy (2.0x)"
    assert html.count('class="num noisy"') == 1 and "2.0x the fastest" in html


def test_a_row_that_differs_names_the_first_differing_output_by_its_path():
    first = _row("torch", [1e-3])
    a = {"logits": torch.zeros(2), "cache": [torch.ones(3), torch.ones(3)]}
    b = {"logits": torch.zeros(2), "cache": [torch.ones(3), torch.tensor([1.0, 1.0, 3.0])]}
    other = WhatIfRow(
        ["other"], seconds=1e-3, times=[1e-3], matched=False, difference=difference(leaves(a), leaves(b))
    )
    html = comparison_table_html(Comparison("f", [first, other], 1, "cpu"))
    check = _cells(html, "other")[0]
    assert check.startswith("DIFFER: out[&#x27;cache&#x27;][1] differs: max abs error 2, max rel error 0.667")


def test_compare_keeps_every_timed_call():
    def f(x):
        return (x.sin() * 2).sum()

    jf = thunder.jit(f)
    x = torch.randn(64)
    jf(x)
    c = explorer.compare(
        jf, (x,), executors=[["torch"]], repeat=4, warmup=0, measure=False, progress=lambda *a: None
    )
    (row,) = c.rows
    assert len(row.times) == 4 and row.seconds == min(row.times)
    assert row.median_seconds <= row.max_seconds == max(row.times)
    d = c.to_dict()["rows"][0]
    assert d["times"] == row.times and d["noisy"] == row.noisy and d["max_seconds"] == row.max_seconds
