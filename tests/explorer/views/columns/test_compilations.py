"""``explorer.diff``: two cache entries of one function (which check of the older one the newer
one's inputs failed, the sizes that became symbols, the lines that differ) and the same program
under two executor lists (the lines each executor runs, the fusion regions), as text and as a
page with the two trees and the two graphs in columns."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

import explorer
import thunder


def f(x, w):
    return F.gelu(x @ w) * 2 + 1


def test_two_entries_of_one_function_say_which_check_failed_and_what_became_a_symbol():
    jfn = thunder.jit(f)
    w = torch.randn(8, 8)
    for n in (4, 5, 6):
        jfn(torch.randn(n, 8), w)
    d = explorer.diff(jfn)
    assert d.same_function and (d.left.entry, d.right.entry) == (0, 1)
    assert "check_tensor(x, (4, 8)" in d.why and "got (5, 8)" in d.why
    assert d.symbols == {"s0": "x.shape[0]: 4 in an earlier call, 5 in this one"}
    pro = d.kinds["prologue"]
    assert any("check_sizes({'s0': s0}" in line for line in pro.only_right)
    assert not any("check_sizes" in line for line in pro.only_left)
    comp = d.kinds["computation"]
    assert any("f32[s0, 8]" in line for line in comp.only_right) and "+t7 = torch.add(t6, 1)" in comp.diff
    text = d.text()
    assert "entry 1 was compiled because: pythonex.check_tensor(x, (4, 8)" in text
    # the entries given, in either order: the newer one is the one compiled because of the older
    back = explorer.diff(jfn, entries=(1, 0))
    assert back.why == d.why and back.left.entry == 1


def test_the_same_program_under_two_executor_lists():
    ja = thunder.jit(f, executors=["torch"])
    jb = thunder.jit(f, executors=["torchcompile", "torch"])
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    torch.testing.assert_close(ja(x, w), jb(x, w))
    d = explorer.diff(ja, jb)
    assert not d.same_function and d.why is None
    assert d.kinds["prologue"].same
    assert d.left.executors("computation") == {"torch": 4}
    assert d.right.executors("computation") == {"torchcompile": 1} and d.right.regions("computation") == 1
    assert d.kinds["computation"].only_right == ['t7 = TorchCompile0(x, w)  # t7: "cpu f32[4, 8]"']
    text = d.text()
    assert "1 line (torchcompile 1), 1 fusion regions" in text and "4 lines (torch 4)" in text


def test_the_page_shows_both_trees_and_both_graphs_in_columns():
    jfn = thunder.jit(f, dynamic=False)
    w = torch.randn(8, 8)
    jfn(torch.randn(4, 8), w)
    jfn(torch.randn(6, 8), w)
    html = explorer.diff(jfn)._repr_mimebundle_()["text/html"]
    assert "was compiled because" in html and "expected shape (4, 8), got (6, 8)" in html
    columns = re.findall(r'<div class="rank"><div class="hd">([^<]+)</div>', html)
    assert columns == ["f entry 0", "f entry 1"] * 2  # the trees, then the graphs
    assert html.count("<svg") >= 2 and "computation graphs side by side" in html
    assert 'class="dadd ln">+ t' in html and 'class="drem ln">- t' in html


def test_asking_for_what_is_not_there_says_so():
    jfn = thunder.jit(f)
    with pytest.raises(ValueError, match="has 0 cache entry"):
        explorer.diff(jfn)
    jfn(torch.randn(4, 8), torch.randn(8, 8))
    with pytest.raises(ValueError, match="two are needed"):
        explorer.diff(jfn)
    other = thunder.jit(f)
    with pytest.raises(ValueError, match="no compilation yet"):
        explorer.diff(jfn, other)
