"""Graph labels at torch level on a 2-layer Llama's training step: no torch-executor helper
(``torchex.scalar_first``, ``torchex.amax``), no thunder-internal ``ltorch.`` name and no module
made while tracing (``self_attn.<Func>``) is named in the graph's DOT labels or its SVG text; the
torch call a helper makes (``torch.mul``), the torch function a torch-language op stands for and
the function a ``<Func>`` module ran (``self_attn: apply_rotary_pos_emb()``) are. With every module open, the backward's nested clusters lay out
(graphviz's "trouble in init_rank", retried with its newer ranking)."""

from __future__ import annotations

import re
import shutil

import pytest
from support.explorer_builders import tiny_llama_training_step

import explorer
import thunder
from explorer.model.compilation import model_of
from explorer.views.dot_writer import op_name

HELPER = re.compile(r"torchex\.|pythonex\.|scalar_first|<Func>|&lt;Func&gt;|\bltorch\.")


@pytest.fixture(scope="module")
def llama_step():
    pytest.importorskip("transformers")
    return tiny_llama_training_step(use_cache=False)


def _labels(dot: str) -> list[str]:
    return [x.replace("\\n", " ") for x in re.findall(r'label="((?:[^"\\]|\\.)*)"', dot)]


def test_the_trace_has_the_names_the_graph_must_not_show(llama_step):
    # (else the test below could not fail)
    text = str(thunder.last_backward_traces(llama_step)[-1])
    assert "torchex.scalar_first(torch.mul, 2," in text and "torchex.amax(" in text
    backward = model_of(llama_step).series["backward"].final
    assert any(g.path.endswith(".<Func>") for g in backward.modules().groups.values())


@pytest.mark.parametrize("kind", ["computation", "backward"])
def test_graph_labels_name_torch_calls_and_wrapped_functions(llama_step, kind):
    for depth in (0, 1):
        for modules in (False, True):
            g = explorer.graph_of(llama_step, kind, depth=depth, modules=modules, module_depth=6)
            bad = [x for x in _labels(g.dot) if HELPER.search(x)]
            assert not bad, (depth, modules, bad[:5])
    labels = _labels(explorer.graph_of(llama_step, kind, modules=True, module_depth=6).dot)
    assert any(x.startswith("model.layers.0.self_attn: apply_rotary_pos_emb()") for x in labels), labels
    if kind == "backward":
        assert any(x.endswith("= torch.mul [torch]") for x in labels)  # torchex.scalar_first(torch.mul, ...)
        assert any(x.endswith("= amax [torch]") for x in labels)  # torchex.amax: the prim it runs


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz `dot` is not installed")
def test_the_laid_out_svg_shows_no_helper_names(llama_step):
    for kind in ("computation", "backward"):
        # every module open: the backward's nested clusters were "trouble in init_rank" for dot
        g = explorer.graph_of(llama_step, kind, depth=1, modules=True, module_depth=6)
        assert g.svg is not None, g.messages
        texts = re.findall(r"<text[^>]*>([^<]*)</text>", g.svg)
        assert texts and not [t for t in texts if HELPER.search(t)], [t for t in texts if HELPER.search(t)][
            :5
        ]


def test_op_name_keeps_what_users_know(llama_step):
    final = model_of(llama_step).series["backward"].final
    names = {n.sym_id: op_name(n) for n in final.nodes}
    assert names["torchex.scalar_first"] == "torch.mul"
    forward = model_of(llama_step).series["computation"].final
    inner = {op_name(c) for n in forward.nodes for c in n.children if c.module == "ltorch"}
    assert "torch.unsqueeze" in inner and "ltorch.unsqueeze" not in inner  # torch-language ops: torch's name
    assert all(not HELPER.search(v) for v in names.values()), names
