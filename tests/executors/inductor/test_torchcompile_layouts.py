"""The torch.compile executor on a region whose views depend on layouts: ``torch.matmul`` of a
transposed tensor (attention's ``q @ k.transpose``) compiled with gradients, as in
transformers' Phi-3, matches eager (Inductor's graph reshapes where ``make_fx`` had viewed:
``thunder/executors/inductor/compile.py``); and a region's output that the program lays out
itself (``contiguous()``, ``to(memory_format=...)``), what elementwise ops make of it and what
a kernel that lays its result out itself (``softmax``) makes, has eager's strides."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

import thunder


def _attention(x, wq, wk):
    b, s, _ = x.shape
    q = (x @ wq).view(b, s, 4, 16).transpose(1, 2)
    k = (x @ wk).view(b, s, 4, 16).transpose(1, 2)
    q = q * 2 + torch.cat((-q[..., 8:], q[..., :8]), dim=-1)  # a rotary-style mix
    return (q @ k.transpose(-1, -2)).softmax(-1).sum()


def test_attention_scores_of_transposed_heads_compile_with_gradients():
    x = torch.randn(2, 8, 64)
    wq, wk = torch.randn(64, 64, requires_grad=True), torch.randn(64, 64, requires_grad=True)
    jf = thunder.jit(_attention, executors=["torchcompile"])
    got = torch.autograd.grad(jf(x, wq, wk), (wq, wk))
    expected = torch.autograd.grad(_attention(x, wq, wk), (wq, wk))
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-5)


def test_transformers_phi3_trains_through_the_torchcompile_executor():
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    cfg = transformers.Phi3Config(
        vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2, pad_token_id=0,
    )  # fmt: skip
    model = transformers.Phi3ForCausalLM(cfg)
    ids = torch.randint(0, 64, (2, 8))
    jm = thunder.jit(model, executors=["torchcompile"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jm(input_ids=ids, labels=ids).loss.backward()
        grads = {n: p.grad for n, p in model.named_parameters()}
        model.zero_grad(set_to_none=True)
        model(input_ids=ids, labels=ids).loss.backward()
    torch.testing.assert_close(grads, {n: p.grad for n, p in model.named_parameters()}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: (x.sin() * 2).contiguous(memory_format=torch.channels_last),
        lambda x: (x.sin() * 2).transpose(1, 3).contiguous(),
        lambda x: x.cos().to(memory_format=torch.channels_last),
        lambda x: ((x * 2).to(memory_format=torch.channels_last).cos(), x.transpose(1, 3).contiguous().sin()),
        lambda x: (x.to(memory_format=torch.channels_last) * 2).softmax(-1) * 3,
        lambda x: F.layer_norm(x.transpose(1, 3) * 2, (3,)) + 1,
    ],
    ids=["channels_last", "contiguous", "to", "ops_after", "softmax", "layer_norm"],
)
def test_a_region_output_has_eager_s_strides(f):
    """A region's output has eager's strides, from the region's torch calls (while Inductor
    compiles) and from Inductor's function: made by ``contiguous(...)`` or
    ``to(memory_format=...)`` (the region's program keeps the copy's memory format;
    ``prims.clone`` has none: a channels_last request came back contiguous), by elementwise ops
    after one, or by an op whose eager kernel lays its result out itself (``softmax`` and
    ``layer_norm`` of a channels_last or transposed input are contiguous in eager, and were laid
    out as the input by their prims)."""
    from thunder.executors.inductor import executor as torchcompileex

    x = torch.randn(2, 3, 4, 5)
    jf = thunder.jit(f, executors=["torchcompile", "torch"])
    expected = f(x)
    first = jf(x)
    torchcompileex.wait()
    compiled = jf(x)
    assert "TorchCompile" in str(thunder.last_traces(jf)[-1])
    for got in (first, compiled):
        for g, e in zip(
            got if isinstance(got, tuple) else (got,),
            expected if isinstance(expected, tuple) else (expected,),
        ):
            assert g.stride() == e.stride()
            torch.testing.assert_close(g, e)


def test_region_output_strides_follow_each_call_s_input_layout():
    """Calls that alternate the input's layout (channels_last, contiguous, transposed) each get
    eager's output strides, values and gradients: what one signature's outputs needed moving is
    never applied to another's (the moves are kept with the guard of the inputs they were made for)."""
    from thunder.executors.inductor import executor as torchcompileex

    def f(x):
        return (x * 2).softmax(-1) * 3

    jf = thunder.jit(f, executors=["torchcompile", "torch"])
    base = torch.randn(2, 3, 4, 5)
    layouts = [base.to(memory_format=torch.channels_last), base.contiguous(), base.transpose(1, 3)]
    for step in range(2 * len(layouts)):
        if step == len(layouts):
            torchcompileex.wait()  # the second round runs Inductor's functions
        x = layouts[step % len(layouts)]
        xe, xg = x.detach().requires_grad_(), x.detach().requires_grad_()
        expected, got = f(xe), jf(xg)
        assert got.stride() == expected.stride()
        torch.testing.assert_close(got, expected)
        (ge,) = torch.autograd.grad(expected, xe, torch.ones_like(expected))
        (gg,) = torch.autograd.grad(got, xg, torch.ones_like(got))
        torch.testing.assert_close(gg, ge, rtol=1e-4, atol=1e-5)
