"""A fusion region's details in the explorer carry its standalone nvFuser repro (formed here by
``nvfuserex.preview()``, the nvFuser executor's regions without CUDA)."""

from __future__ import annotations

import torch

import thunder
from explorer import model_of
from explorer.views.html import details_html
from thunder.executors.nvfuser import executor as nvfuserex


def _region_node(jfn):
    series = model_of(jfn).series["computation"]
    (node,) = [n for n in series.final.nodes if "fusion" in n.tags]
    return node, series


def test_an_nvfuser_regions_details_show_its_repro():
    ex = nvfuserex.preview()
    jfn = thunder.jit(lambda x: (x.sin() * 2).exp(), executors=[ex, "torch"])
    x = torch.randn(3, 4)
    torch.testing.assert_close(jfn(x), (x.sin() * 2).exp())
    node, series = _region_node(jfn)
    (region,) = ex.regions
    assert node.repro == region.repro()
    html = details_html(node, series)
    assert "standalone repro of this region (nvfuser)" in html
    assert "def nvfuser_fusion(fd: FusionDefinition)" in html and "fd.execute(inputs)" in html


def test_a_region_without_a_repro_shows_none():
    jfn = thunder.jit(lambda x: (x.sin() * 2).exp(), executors=["torchcompile", "torch"])
    jfn(torch.randn(3, 4))
    node, series = _region_node(jfn)
    assert node.repro is None and "<summary>standalone" not in details_html(node, series)
