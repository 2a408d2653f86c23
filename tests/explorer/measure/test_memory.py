"""The memory view: bytes per line checked by hand, against torch's profiler, and as HTML."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import explorer
import thunder
from explorer.model.compilation import model_of
from explorer.model.memory import MemoryProfile, compute, fmt_bytes, memory_of
from explorer.views.memory import memory_html, plot_svg

F32 = 4


def mlp_step():
    """Linear(8, 16) -> ReLU -> Linear(16, 4) on a batch of 2, one training step."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    jm = thunder.jit(m)
    x = torch.randn(2, 8)
    jm(x).sum().backward()
    return jm, x


def _table(prof: MemoryProfile) -> list[tuple[str, int, int, int]]:
    """(the line up to its first space after the name, allocated, freed, live after)."""
    return [(r.text.split("  #")[0], r.allocated, r.freed, r.live) for r in prof.rows]


def test_mlp_training_step_forward_by_hand():
    jm, _ = mlp_step()
    prof = explorer.memory(jm, "computation")
    hidden, out = 2 * 16 * F32, 2 * 4 * F32  # [2, 16] and [2, 4] float32
    assert _table(prof) == [
        ("t0 = torch.nn.functional.linear(input, t_0_weight, t_0_bias)", hidden, 0, hidden),
        ("t2 = torch.relu(t0)", hidden, 0, 2 * hidden),
        ("del t0", 0, hidden, hidden),
        ("t3 = torch.nn.functional.linear(t2, t_2_weight, t_2_bias)", out, 0, hidden + out),
    ]
    assert (prof.peak, prof.peak_index) == (2 * hidden, 1)
    assert prof.peak_line.startswith("t2 = torch.relu(t0)")
    assert prof.input_bytes == (2 * 8 + 16 * 8 + 16 + 4 * 16 + 4) * F32  # x and the parameters
    assert prof.output_bytes == hidden + out  # t2 (saved for backward) and t3 stay alive
    assert not prof.measured
    saved = {v.name: v for v in prof.saved}
    assert set(saved) == {"input", "t_2_weight", "t2"}
    assert saved["input"].is_input and saved["t_2_weight"].is_input
    assert (saved["t2"].bytes, saved["t2"].is_input) == (hidden, False)
    assert saved["t2"].line.startswith("t2 = torch.relu(t0)")
    assert prof.saved_bytes == hidden
    assert prof.rematerialized == []
    assert _table(explorer.memory(jm, "forward")) == _table(prof)  # the forward is the computation trace


def test_mlp_training_step_backward_by_hand():
    jm, _ = mlp_step()
    prof = explorer.memory(jm, "backward")
    h, o = 2 * 16 * F32, 4 * 16 * F32  # [2, 16] activations; the [4, 16] weight's gradient
    rows = _table(prof)
    assert rows == [
        ("t4 = torch.mm(g_t3, t_2_weight)", h, 0, h),
        ("t5 = torch.permute(g_t3, (1, 0))", 0, 0, h),  # a view of an input: no bytes
        ("t6 = torch.mm(t5, t2)", o, 0, h + o),
        ("del t5", 0, 0, h + o),  # the view goes, g_t3 (an input) stays
        ("t7 = torch.sum(g_t3, (0,))", 4 * F32, 0, h + o + 16),
        ("t9 = torch.ops.aten.threshold_backward.default(t4, t2, 0)", h, 0, 2 * h + o + 16),
        ("del t4", 0, h, h + o + 16),
        ("t11 = torch.permute(t9, (1, 0))", 0, 0, h + o + 16),
        ("t12 = torch.mm(t11, input)", 16 * 8 * F32, 0, h + o + 16 + 512),
        ("del t11", 0, 0, h + o + 16 + 512),  # t9 still names the storage
        ("t13 = torch.sum(t9, (0,))", 16 * F32, 0, h + o + 16 + 512 + 64),
        ("del t9", 0, h, o + 16 + 512 + 64),  # now the storage t9 and t11 shared is freed
    ]
    assert prof.peak == h + o + 16 + 512 + 64 and prof.peak_index == 10


def test_measured_on_cpu_agrees_line_by_line_on_the_mlp():
    jm, x = mlp_step()
    for kind in ("computation", "backward"):
        prof = explorer.memory(jm, kind, args=(x,))
        assert prof.measured and "torch.profiler" in prof.measured_on
        assert [r.measured for r in prof.rows] == [r.live for r in prof.rows], kind


def test_measured_under_another_grad_mode_than_traced():
    jm, x = mlp_step()  # traced with grad enabled
    with torch.no_grad():
        prof = explorer.memory(jm, "computation", args=(x,))
    assert prof.measured and [r.measured for r in prof.rows] == [r.live for r in prof.rows]


class Block(nn.Module):
    def __init__(self, d: int = 64, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, layers: int = 4, d: int = 64, vocab: int = 128, ctx: int = 64):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def test_gpt_forward_peak_against_torch_profiler():
    torch.manual_seed(0)
    jm = thunder.jit(GPT(4).eval())
    idx = torch.randint(0, 128, (8, 64))
    with torch.no_grad():
        jm(idx)
    prof = explorer.memory(jm, "computation", args=(idx,))
    # torch's profiler gives figures on this CPU build; if it gave none, the profile says so
    assert prof.measured, f"torch's profiler gave no memory figures: {prof.note}"
    assert abs(prof.peak - prof.measured_peak) <= 0.10 * prof.measured_peak, (prof.peak, prof.measured_peak)
    # the split / view / transpose lines of attention allocate nothing
    views = [
        r
        for r in prof.rows
        if re.match(r"\(?t\d+.*= torch\.(split|transpose|Tensor\.reshape)\(t\d+, 8, 64, 4", r.text)
    ]
    assert views and all(r.allocated == 0 for r in views)
    # the peak is in a block's MLP: the fc output and its GELU ([8, 64, 256] floats each)
    assert prof.rows[prof.peak_index].scope.startswith("blocks.")
    top_module, top_bytes = prof.modules[0]
    assert top_module.startswith("blocks.") and top_bytes > 0
    assert sum(b for _, b in prof.modules) == prof.peak


def test_rematerialization_is_reported_with_its_bytes():
    def f(x, w):
        a = F.linear(x, w)
        b = a * 2
        return a * b

    jf = thunder.jit(f)
    jf(torch.randn(4, 8, requires_grad=True), torch.randn(8, 8, requires_grad=True)).sum().backward()
    prof = explorer.memory(jf, "computation")
    assert [(v.name, v.bytes) for v in prof.rematerialized] == [("t1", 4 * 8 * F32)]
    assert prof.rematerialized[0].line.startswith("t1 = torch.mul(t0, 2)")  # the backward's recomputation
    assert "t1" not in {v.name for v in prof.saved} and "t0" in {v.name for v in prof.saved}
    html = memory_html(prof)
    assert "Rematerialized: 1 values" in html and "t1 = torch.mul(t0, 2)" in html


def test_a_pass_without_del_lines_frees_at_last_use():
    jm, _ = mlp_step()
    m = model_of(jm)
    comp = m.series["computation"]
    before = next(p for p in comp.passes if p.name == "Transform for execution")
    prof = compute(before, "computation")
    assert "no del lines" in prof.note
    final = memory_of(m, "computation")
    assert prof.peak == final.peak  # the same frees, made where del_last_used puts them


def test_memory_html_is_static_and_links_the_peak():
    jm, x = mlp_step()
    prof = explorer.memory(jm, "backward", args=(x,))
    html = memory_html(prof)
    assert "<script" not in html
    svg = plot_svg(prof)
    assert svg.startswith("<svg") and "<polyline" in svg and 'class="measured"' in svg
    assert "<a " not in svg  # (JupyterLab rejects an anchor inside an SVG: the output turned into an error)
    target = re.search(r'<a class="peak" href="#([^"]+)"', html).group(1)
    assert f'id="{target}" class="peak"' in html
    assert fmt_bytes(prof.peak) in html


def test_plot_keeps_the_peak_of_a_long_trace():
    jf = thunder.jit(lambda x: ((x.sin() * 2).cos() + 1).exp())
    jf(torch.ones(4))
    prof = explorer.memory(jf)
    prof.rows = prof.rows * 500  # more lines than points: one point per bucket, its largest
    svg = plot_svg(prof)
    points = re.search(r'class="computed" [^>]*points="([^"]+)"', svg).group(1).split()
    assert len(points) <= 2 * 800  # two points per step
    top = min(float(pt.split(",")[1]) for pt in points)
    assert abs(top - 12) < 0.5  # the highest point reaches the top of the plot (PAD_T)


def test_memory_of_an_unknown_kind_says_what_there_is():
    jm, _ = mlp_step()
    with pytest.raises(ValueError, match="no epilog trace here.*computation"):
        explorer.memory(jm, "epilog")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA: memory_allocated after each line")
def test_measured_on_cuda():
    torch.manual_seed(0)
    jm = thunder.jit(GPT(2).cuda().eval())
    idx = torch.randint(0, 128, (8, 64), device="cuda")
    with torch.no_grad():
        jm(idx)
    prof = explorer.memory(jm, "computation", args=(idx,))
    assert prof.measured and "memory_allocated" in prof.measured_on
    assert abs(prof.peak - prof.measured_peak) <= 0.10 * prof.measured_peak


def _flat_plus_one(x):
    return x.flatten() + 1


def _scaled_flat_plus_one(x):
    return (x * 2).flatten() + 1


def test_a_reshape_of_an_input_laid_out_otherwise_is_a_copy():
    # a transposed input: flatten cannot be a view, so it allocates what the add allocates again
    jf = thunder.jit(_flat_plus_one)
    x = torch.randn(20, 30).t()
    jf(x)
    size = 600 * F32
    assert _table(explorer.memory(jf))[:2] == [
        ("t0 = torch.flatten(x)", size, 0, size),  # from the prologue's check of x's strides
        ("t1 = torch.add(t0, 1)", size, 0, 2 * size),
    ]
    prof = explorer.memory(jf, args=(x,))
    assert prof.peak == prof.measured_peak == 2 * size
    # the same program on a contiguous input is a view: its own cache entry, half the peak
    y = torch.randn(30, 20)
    jf(y)
    assert explorer.memory(jf, args=(y,)).peak == explorer.memory(jf, args=(y,)).measured_peak == size


def test_a_reshape_of_a_value_computed_from_an_input_laid_out_otherwise_is_a_copy():
    # x * 2 keeps x's transposed layout, so flattening it copies; the prologue does not check
    # x's strides here, the call's inputs say what they are
    jf = thunder.jit(_scaled_flat_plus_one)
    x = torch.randn(20, 30).t()
    jf(x)
    size = 600 * F32
    prof = explorer.memory(jf, args=(x,))
    assert [r.allocated for r in prof.rows if not r.text.startswith("del")] == [size, size, size]
    assert [r.live for r in prof.rows] == [r.measured for r in prof.rows]
    # without inputs the layout is not known: taken as contiguous, the flatten a view
    assert [r.allocated for r in explorer.memory(jf).rows if not r.text.startswith("del")] == [size, 0, size]


@pytest.mark.parametrize(
    "fn, inputs",
    [
        # softmax is run on meta: its result is contiguous, the flatten a view
        (lambda x: torch.softmax(x, 1).flatten() + 1, lambda: (torch.randn(20, 30).t(),)),
        (lambda x: x.sin().reshape(-1, 5) * 2, lambda: (torch.randn(4, 5, 6).permute(2, 0, 1),)),
        (lambda x, y: (x + y).flatten() + 1, lambda: (torch.randn(20, 30).t(), torch.randn(30, 20))),
        (
            lambda x, y: (y + x).flatten() + 1,
            lambda: (torch.randn(20, 30).t(), torch.randn(30, 20)),
        ),  # a view
    ],
    ids=["softmax", "permuted", "transposed-first", "contiguous-first"],
)
def test_computed_memory_follows_the_layout_of_values_computed_from_inputs_laid_out_otherwise(fn, inputs):
    jf = thunder.jit(fn)
    args = inputs()
    jf(*args)
    prof = explorer.memory(jf, args=args)
    assert [r.live for r in prof.rows] == [r.measured for r in prof.rows]
