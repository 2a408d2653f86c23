"""``torch._grouped_mm`` (a mixture of experts' matmul, what transformers runs its MoE experts
with in bfloat16): values and gradients against the same computation written as one matmul
per run (torch's grouped kernel has no float64, so the op database's gradient check cannot
take it), and a bfloat16 Qwen2-MoE against eager.
"""

from __future__ import annotations

import copy

import pytest
import torch

import thunder


def _per_run(a, b, ends):
    """What grouped_mm computes, one matmul per run."""
    starts = [0, *ends[:-1]]
    if b.dim() == 3:
        return torch.cat([a[s:e] @ b[g] for g, (s, e) in enumerate(zip(starts, ends))])
    return torch.stack([a[:, s:e] @ b[s:e] for s, e in zip(starts, ends)])


@pytest.mark.parametrize(
    "shapes, ends",
    [
        (((7, 8), (3, 8, 8)), [2, 5, 7]),
        (((8, 16), (4, 16, 8)), [0, 3, 3, 8]),  # empty runs
        (((8, 16), (16, 8)), [4, 8, 16]),  # runs along K: (G, M, N)
    ],
)
@pytest.mark.parametrize("executors", [None, ["torchcompile"]])
def test_values_and_gradients_against_one_matmul_per_run(shapes, ends, executors):
    torch.manual_seed(0)
    a, b = (torch.randn(*s, requires_grad=True) for s in shapes)
    offs = torch.tensor(ends, dtype=torch.int32)

    def f(a, b, offs):
        return torch.nn.functional.grouped_mm(a, b, offs=offs).tanh()

    jf = thunder.jit(f, **({"executors": executors} if executors else {}))
    got = jf(a, b, offs)
    want = _per_run(a, b, ends).tanh()
    torch.testing.assert_close(got, want)
    g = torch.randn_like(want)
    for x, y in zip(torch.autograd.grad(got, (a, b), g), torch.autograd.grad(want, (a, b), g)):
        torch.testing.assert_close(x, y)


def test_rows_after_the_last_run_get_no_gradient():
    a = torch.randn(8, 8, requires_grad=True)
    b = torch.randn(2, 8, 8, requires_grad=True)
    offs = torch.tensor([3, 6], dtype=torch.int32)
    out = thunder.jit(lambda a, b, o: torch._grouped_mm(a, b, offs=o))(a, b, offs)
    (ga,) = torch.autograd.grad(out[:6], a, torch.ones(6, 8))  # (rows 6, 7 of out are not computed)
    assert torch.equal(ga[6:], torch.zeros(2, 8))
    torch.testing.assert_close(ga[:6], torch.cat([b[0].sum(1).expand(3, 8), b[1].sum(1).expand(3, 8)]))


def test_unsupported_arguments_are_named():
    a, b, offs = torch.randn(8, 8), torch.randn(2, 8, 8), torch.tensor([4, 8], dtype=torch.int32)
    with pytest.raises(Exception, match="torch._grouped_mm: bias is not supported"):
        thunder.jit(lambda: torch._grouped_mm(a, b, offs=offs, bias=torch.zeros(2, 8)))()
    with pytest.raises(Exception, match="neither"):
        thunder.jit(lambda: torch._grouped_mm(a, torch.randn(2, 4, 8), offs=offs))()


def test_bfloat16_mixture_of_experts_model_against_eager():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.Qwen2MoeConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
        shared_expert_intermediate_size=16, max_position_embeddings=64,
    )  # fmt: skip
    eager = transformers.Qwen2MoeForCausalLM(cfg).to(torch.bfloat16).eval()
    model = copy.deepcopy(eager)
    jm = thunder.jit(model)
    ids = torch.randint(0, 64, (2, 12))
    got, want = jm(ids).logits, eager(ids).logits
    assert "grouped_mm" in str(thunder.last_traces(jm)[-1])  # the model took the grouped path
    torch.testing.assert_close(got, want, atol=2e-2, rtol=2e-2)
    got.float().square().mean().backward()
    want.float().square().mean().backward()
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        assert (p.grad is None) == (q.grad is None), name
        if p.grad is not None:  # bfloat16: rounding differs with the order of the sums
            scale = q.grad.float().abs().max().clamp_min(1e-3)
            assert (p.grad.float() - q.grad.float()).abs().max() / scale < 0.1, name
