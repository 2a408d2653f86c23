"""Pass diffs: the text diff matched by node id against the printed traces, and budgets."""

from __future__ import annotations

import random
import re

import pytest
from support.explorer_builders import hand_trace, make_symbol

from explorer.model.traces import TraceModel
from explorer.views.text import diff_text, source_diff
from thunder.core.symbol import BoundSymbol

TWICE = make_symbol("twice", "test")
MARK = make_symbol("mark", "test")


def _body(trace) -> list[str]:
    """The printed trace's lines below ``def``, without the argument type comments."""
    lines = str(trace).splitlines()
    body = lines[next(i for i, line in enumerate(lines) if line.startswith("def ")) + 1 :]
    while body and re.match(r'  # \w+: "', body[0]):
        body.pop(0)
    return body


def _changed_variant(rng: random.Random, base):
    """A pass over ``base`` that deletes, moves, rewrites and adds lines at random."""
    t = base.derive("shuffle")
    bsyms = list(base.bound_symbols)
    for _ in range(rng.randint(1, 5)):
        what = rng.choice(("delete", "move", "rewrite", "mark"))
        i = rng.randrange(len(bsyms))
        if what == "delete" and len(bsyms) > 1:
            bsyms.pop(i)
        elif what == "move":
            bsyms.insert(rng.randrange(len(bsyms)), bsyms.pop(i))
        elif what == "rewrite":
            bsyms[i] = bsyms[i].from_bsym(sym=TWICE, subsymbols=[bsyms[i]])
        else:
            bsyms.insert(i, BoundSymbol(MARK, (bsyms[i].output,), {}, None))
    t.bound_symbols = bsyms
    return t


def _apply(old: list[str], diff: str) -> list[str]:
    """Apply a unified diff to ``old`` (checking every context and removed line)."""
    new, at = [], 0
    lines = diff.splitlines()[2:]
    i = 0
    while i < len(lines):
        m = re.fullmatch(r"@@ -(\d+),(\d+) \+(\d+),(\d+) @@", lines[i])
        assert m, lines[i]
        start = int(m[1]) - 1
        new += old[at:start]
        at = start
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            tag, text = lines[i][0], lines[i][1:]
            if tag in " -":
                assert old[at] == text
                at += 1
            if tag in " +":
                new.append(text)
            i += 1
    return new + old[at:]


@pytest.mark.parametrize("seed", range(40))
def test_text_diff_is_the_diff_of_the_printed_traces(seed):
    rng = random.Random(seed)
    base = hand_trace(rng.randint(1, 12))
    after = _changed_variant(rng, base)
    before_p, after_p = TraceModel.from_traces({"computation": [base, after]}).series["computation"].passes
    old, new = _body(base), _body(after)
    whole = source_diff(before_p, after_p, context=10**6)
    if old == new:
        assert whole == ""
        return
    lines = whole.splitlines()[3:]  # one hunk: every line of both traces, in order
    assert [line[1:] for line in lines if line[0] in " -"] == old
    assert [line[1:] for line in lines if line[0] in " +"] == new
    for context in (0, 1, 2):
        assert _apply(old, source_diff(before_p, after_p, context=context)) == new


def test_text_diff_keeps_to_its_limit():
    base = hand_trace(400)
    t = base.derive("claim")
    t.bound_symbols = [b.from_bsym(sym=TWICE, subsymbols=[b]) for b in base.bound_symbols]
    before, after = TraceModel.from_traces({"computation": [base, t]}).series["computation"].passes
    full = source_diff(before, after)
    total = sum(1 for line in full.splitlines()[3:] if line[0] in "+-")
    for limit in (1, 7, 100):
        cut = source_diff(before, after, limit=limit).splitlines()
        assert len(cut) <= limit + 4  # the file names, a hunk header, the note
        shown = sum(1 for line in cut[2:-1] if line[0] in "+-")
        m = re.fullmatch(r"\.\.\. (\d+) more changed lines not shown", cut[-1])
        assert m and shown + int(m[1]) == total


def test_changes_share_the_budget(passes):
    fused = TraceModel.from_traces({"computation": passes}).series["computation"].final
    d = fused.diff  # one removed, one rewritten
    assert d.shown(None).left == 0 and d.shown(2) == d.shown(None)
    one = d.shown(1)
    assert len(one.removed) + len(one.rewritten) == 1 and one.left == 1
    base = hand_trace(50)
    t = base.derive("mixed")
    t.bound_symbols = [b.from_bsym(sym=TWICE) for b in base.bound_symbols[:40]] + [
        BoundSymbol(MARK, (b.output,), {}, None) for b in base.bound_symbols[:5]
    ]
    p = TraceModel.from_traces({"computation": [base, t]}).series["computation"].final
    shown = p.diff.shown(12)  # 10 removed, 5 added, 40 rewritten: what the added leave goes to the others
    assert (len(shown.removed), len(shown.added), len(shown.rewritten)) == (4, 4, 4)
    shown = p.diff.shown(30)
    assert (len(shown.removed), len(shown.added), len(shown.rewritten)) == (10, 5, 15)
    assert shown.left == 55 - 30
    text = diff_text(p, budget=30)
    lines = text.splitlines()
    assert sum(line.startswith("~ ") for line in lines) == 15 and lines[-1] == "... 25 more changes"
