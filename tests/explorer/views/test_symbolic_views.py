"""The explorer of a compilation with symbolic sizes: the sizes as the traces print them in
every view, and in the cache panel which dimension became a symbol after which miss and the
relations the prologue checks."""

from __future__ import annotations

import torch

import explorer
import thunder
from explorer.model.traces import TraceModel
from explorer.views.html import cache_html


def _jfn():
    def fn(x, w):
        n = x.shape[0]
        return (x.view(n // 2, -1) @ w).sum(1) + n

    jfn = thunder.jit(fn)
    w = torch.randn(16, 3)
    for n in (4, 6, 8):
        jfn(torch.randn(n, 8), w)
    return jfn, w


def test_the_cache_panel_says_which_sizes_are_symbols_and_why():
    jfn, _ = _jfn()
    model = explorer.model_of(jfn)
    entry = model.entries[-1]
    assert entry.symbols == {"s0": "x.shape[0]: 4 in an earlier call, 6 in this one"}
    # (each symbol at least 2; the view needs (s0 // 2) rows of 16: s0 even)
    assert entry.relations[0] == "s0 >= 2" and "(8*s0) // (s0 // 2) == 16" in entry.relations
    html = cache_html(model)
    assert "x.shape[0]: 4 in an earlier call, 6 in this one" in html and "checked: <code>s0 &gt;= 2" in html
    assert not model.entries[0].symbols  # the first call is specialised
    again = TraceModel.from_json(model.to_json())  # (saved and loaded)
    assert again.entries[-1].symbols == entry.symbols and again.entries[-1].relations == entry.relations


def test_every_view_shows_the_sizes_as_the_traces_print_them():
    jfn, w = _jfn()
    model = explorer.model_of(jfn)
    comp = model.series["computation"].final
    assert any("s0 // 2" in n.line for n in comp.nodes)
    info = model.series["computation"].proxies["x"]
    assert info.shape == ["s0", 8] and info.label() == "f32[s0, 8]"
    assert "f32[s0, 8]" in explorer.graph_of(jfn).dot
    # measured on a call of another size than the one traced
    profile = explorer.memory(jfn, "computation", args=(torch.randn(10, 8), w))
    assert profile.rows and profile.measured is not None
