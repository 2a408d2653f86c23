"""The search index finds what a walk over every node finds, in the same order."""

from __future__ import annotations

import os

import pytest
import torch
from support.explorer_builders import many_ops

import thunder
from explorer.model import search_index
from explorer.model.compilation import model_of
from explorer.notebook.widget import search


def _walked(p, q: str, by_name: bool) -> list[str]:
    if by_name:
        return [n.id for n in p.walk() if q in n.inputs or q in n.outputs]
    ql = q.lower()
    return [
        n.id
        for n in p.walk()
        if ql in n.sym_id.lower()
        or ql in n.line.lower()
        or (n.source is not None and ql in os.path.basename(n.source.file).lower())
    ]


@pytest.mark.parametrize("chunk", [7, 4096])
def test_index_matches_a_walk(monkeypatch, chunk):
    monkeypatch.setattr(search_index, "CHUNK", chunk)
    jf = thunder.jit(lambda x: many_ops(x, 40))
    jf(torch.ones(3))
    s = model_of(jf).series["computation"]
    for p in (s.passes[0], s.final):
        for q in ("sin", "SIN", "prims.add", "t3", "t12", "x", "explorer_builders", "0.5", "nothing-like-it"):
            by_name = q in s.proxies or q in p.args
            expected = _walked(p, q, by_name)
            assert [n.id for n in search(p, q, s.proxies)] == expected, q
            assert [n.id for n in search(p, q, s.proxies, limit=3)] == expected[:3], q
        assert search(p, "t3", s.proxies) and search(p, "sin", s.proxies)
