"""thunder behind torch.compile (``thunder.dynamo``): programs thunder.jit refuses, split by
Dynamo at graph breaks, each piece compiled by thunder; checked against eager over calls with
changing data."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import thunder
from thunder.core.errors import DataDependentError
from thunder.dynamo import GraphBreak, Piece, ThunderCompiler, thunderfx
from thunder.ops import python as pyops


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _line_of(fn, text: str) -> int:
    """The file line number of the line of ``fn``'s source containing ``text``."""
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def branchy(x, w):
    y = torch.tanh(x @ w)
    if y.sum() > 0:  # data-dependent: thunder.jit refuses it
        y = y * 2
    else:
        y = y - 1
    return y.sin()


def test_data_dependent_branch_matches_eager_and_names_the_line():
    with pytest.raises(DataDependentError):
        thunder.jit(branchy)(torch.randn(4, 3), torch.randn(3, 5))
    cf = thunderfx(branchy)
    signs = set()
    for i in range(3):
        x, w = torch.randn(4, 3) * (1 if i % 2 else -1), torch.randn(3, 5)
        signs.add(bool(branchy(x, w).sum() > 0))
        torch.testing.assert_close(cf(x, w), branchy(x, w))
    assert cf.breaks, "the branch on a tensor's value is a graph break"
    brk = cf.breaks[0]
    assert isinstance(brk, GraphBreak)
    assert brk.lineno == _line_of(branchy, "if y.sum() > 0") and "data-dependent" in brk.reason
    assert brk.filename == __file__ and brk.function == "branchy" and "if y.sum() > 0" in brk.code
    # the last call: the piece before the break, the break, the piece of the branch taken
    steps = cf.last_run
    assert isinstance(steps[0], Piece) and steps[1] is brk and isinstance(steps[2], Piece)
    assert all(p.fallback is None for p in cf.pieces)
    # every piece is a thunder function with its traces
    first = steps[0]
    final = thunder.last_traces(first.jfn)[-1]
    assert "tanh" in str(final)
    assert thunder.last_traces(first)[-1] is final  # the piece itself is taken for its function
    # its BoundSymbols name the user's lines, not the lines of the graph's generated code
    sources = {(b.source.filename, b.source.lineno) for b in final.bound_symbols if b.source is not None}
    assert (__file__, _line_of(branchy, "torch.tanh(x @ w)")) in sources
    assert not [f for f, _ in sources if f.startswith("<eval_with_key>")]
    assert thunder.compile_stats(first.jfn).cache_misses == 1  # traced once, then cached


def with_item(x):
    scale = x.abs().max().item()  # a Python float from a tensor's value
    steps = int(scale * 3) % 3 + 1
    y = x
    for _ in range(steps):
        y = y * 0.5 + scale
    return y


def test_item_used_as_a_python_number_matches_eager():
    cf = thunderfx(with_item)
    for _ in range(3):
        x = torch.randn(5)
        torch.testing.assert_close(cf(x), with_item(x))
    assert cf.pieces and any(".item()" in b.code or "item" in b.reason for b in cf.breaks)


SEEN: list = []


def prints_and_appends(x):
    y = x.relu() + 1
    print("sum is", float(y.sum()))
    SEEN.append(y)
    return y * 3


def test_print_and_list_append_happen_every_call(capsys):
    SEEN.clear()
    cf = thunderfx(prints_and_appends)
    xs = [torch.randn(4) for _ in range(3)]
    for x in xs:
        out = cf(x)
        torch.testing.assert_close(out, (x.relu() + 1) * 3)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [f"sum is {float((x.relu() + 1).sum())}" for x in xs]
    assert len(SEEN) == 3
    for x, y in zip(xs, SEEN):
        assert type(y) is torch.Tensor  # a real tensor, never a proxy
        torch.testing.assert_close(y, x.relu() + 1)
    assert any("print" in b.reason or "print" in b.code for b in cf.breaks)


def with_missing_op(x):
    y = x * 2 + 1
    if y.mean() > 0:  # a break, so the op below is in a piece of its own
        y = y + 1
    z = torch.special.bessel_j0(y)  # thunder has no op for it
    return z.cos()


def test_a_piece_with_an_op_thunder_lacks_runs_eagerly_and_says_why():
    cf = thunderfx(with_missing_op)
    for _ in range(3):
        x = torch.randn(6)
        torch.testing.assert_close(cf(x), with_missing_op(x))
    assert len(cf.fallbacks) == 1
    fb = cf.fallbacks[0]
    assert "bessel_j0" in fb.error and "UnsupportedOpError" in fb.error
    assert fb.user_line is not None and "bessel_j0" in fb.user_line
    assert str(_line_of(with_missing_op, "bessel_j0")) in fb.user_line
    fallen = cf.pieces[fb.piece]
    assert fallen.fallback is fb and "eager" in fallen.describe()
    # the other pieces are still thunder's
    assert [p.index for p in cf.pieces if p.fallback is None] == [
        p.index for p in cf.pieces if p is not fallen
    ]
    assert any(p.fallback is None for p in cf.last_run if isinstance(p, Piece))
    assert "runs eagerly" in cf.summary()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(6, 8)
        self.b = torch.nn.Linear(8, 3)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.a(x))
        if h.mean() > 0.1:
            h = h * 1.5
        return self.b(h).logsumexp(-1).mean()


def test_backward_is_thunder_s_own_and_equals_eager():
    model = Net()
    ref = copy.deepcopy(model)
    cf = thunderfx(model)
    for _ in range(3):
        x = torch.randn(5, 6)
        loss, expected = cf(x), ref(x)
        loss.backward()
        expected.backward()
        torch.testing.assert_close(loss, expected)
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad, q.grad, msg=name)
        model.zero_grad()
        ref.zero_grad()
    first = cf.pieces[0]
    backward = thunder.last_backward_traces(first.jfn)
    assert backward and "backward" in backward[-1].tags
    # Dynamo does not compile thunder's backward as graphs of its own
    assert all("thunder.backward" not in str(line.filename) for p in cf.pieces for line in p.lines)


def test_training_step_of_wav2vec2_for_ctc_matches_eager():
    tr = pytest.importorskip("transformers")
    cfg = tr.Wav2Vec2Config(
        vocab_size=12,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=48,
        conv_dim=(16, 16),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        feat_proj_dropout=0.0,
        final_dropout=0.0,
        layerdrop=0.0,
        mask_time_prob=0.0,
        ctc_loss_reduction="mean",
    )
    model = tr.Wav2Vec2ForCTC(cfg).train()
    ref = copy.deepcopy(model)

    def step(m, values, labels):
        out = m(values, labels=labels)
        out.loss.backward()
        return out.loss

    with pytest.raises(Exception, match="labels|data-dependent"):
        thunder.jit(step)(model, torch.randn(2, 400), torch.randint(1, 12, (2, 5)))
    model.zero_grad()
    cf = thunderfx(step)
    for _ in range(3):
        values, labels = torch.randn(2, 400), torch.randint(1, 12, (2, 5))
        torch.testing.assert_close(cf(model, values, labels), step(ref, values, labels))
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            if q.grad is None:
                assert p.grad is None, name
                continue
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)
        model.zero_grad()
        ref.zero_grad()
    # the vocab check in the loss is the break the issue is about
    assert any("labels.max() >= self.config.vocab_size" in b.code for b in cf.breaks)
    assert sum(len(p.gm.graph.nodes) for p in cf.pieces if p.fallback is None) > 50
    assert any(thunder.last_backward_traces(p.jfn) for p in cf.pieces if p.fallback is None)


def test_cached_calls_leave_dynamo_s_guards_to_dynamo():
    cf = thunderfx(branchy)
    x, w = torch.randn(4, 3), torch.randn(3, 5)
    cf(x, w)
    cf(x, w)
    piece = cf.pieces[0]
    full = thunder.last_prologue_traces(piece.jfn)[-1]
    assert any(b.subsymbols and b.subsymbols[0].sym is pyops.check_tensors for b in full.bound_symbols)
    trimmed = piece.dynamo_prologue
    assert trimmed is not None and "check_" not in str(trimmed)
    stats = thunder.compile_stats(piece.jfn)
    assert (stats.cache_misses, stats.cache_hits) == (1, 1)
    # what runs is that prologue: called directly with an input Dynamo's guards would have
    # stopped (float64), the piece does not check it and trace again; torch's matmul refuses it
    with pytest.raises(RuntimeError, match="dtype|Double|Float"):
        piece(x.double(), w)
    assert stats.cache_misses == 1


def test_dynamic_shapes_keep_thunder_s_checks():
    cf = thunderfx(branchy)
    for n in (2, 3, 4, 5):  # Dynamo marks the size dynamic after it changes
        x, w = torch.randn(n, 3), torch.randn(3, 5)
        torch.testing.assert_close(cf(x, w), branchy(x, w))
    assert any(not p.static for p in cf.pieces)
    assert all(p.dynamo_prologue is None for p in cf.pieces if not p.static)


def test_backend_form_and_options():
    backend = ThunderCompiler(executors=["torch"])
    cfn = torch.compile(branchy, backend=backend)
    x, w = torch.randn(4, 3), torch.randn(3, 5)
    torch.testing.assert_close(cfn(x, w), branchy(x, w))
    assert backend.pieces and backend.breaks
    with pytest.raises(TypeError, match="executor"):
        ThunderCompiler(executor=["torch"])
    with pytest.raises(ValueError, match="unknown executor"):
        ThunderCompiler(executors=["nope"])


def gelu_branch(x, w):
    h = torch.nn.functional.gelu(x @ w)
    if h.mean() > 0:
        h = h * 2
    return (h.sin() + 1).sum()


def test_pieces_fuse_with_the_torchcompile_executor_forward_and_backward():
    cf = thunderfx(gelu_branch, executors=["torchcompile"])
    for _ in range(3):
        x, w = torch.randn(4, 3, requires_grad=True), torch.randn(3, 5, requires_grad=True)
        cf(x, w).backward()
        got = (x.grad, w.grad)
        x.grad = w.grad = None
        gelu_branch(x, w).backward()
        torch.testing.assert_close(got, (x.grad, w.grad))
    first = cf.pieces[0].jfn
    assert "TorchCompile0" in str(thunder.last_traces(first)[-1])
    assert "TorchCompile0" in str(thunder.last_backward_traces(first)[-1])


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def grad_mode_and_higher_order_ops(x):
    with torch.no_grad():  # torch._C._set_grad_enabled calls in the graph
        s = x.sum() * 0
    y = Square.apply(x.sin()) + s  # torch.ops.higher_order.autograd_function_apply
    a, b = y.split(2)  # operator.getitem
    z = torch.utils.checkpoint.checkpoint(torch.cos, a * b, use_reentrant=False)  # tag_activation_checkpoint
    return z.sum()


def test_graphs_with_grad_mode_calls_and_higher_order_ops():
    cf = thunderfx(grad_mode_and_higher_order_ops)
    for _ in range(3):
        x = torch.randn(4, 3, requires_grad=True)
        out = cf(x)
        out.backward()
        got = x.grad
        x.grad = None
        expected = grad_mode_and_higher_order_ops(x)
        expected.backward()
        torch.testing.assert_close((out, got), (expected, x.grad))
    code = "\n".join(p.gm.code for p in cf.pieces)
    assert "_set_grad_enabled" in code and "autograd_function_apply" in code
    assert "tag_activation_checkpoint" in code
    assert not cf.fallbacks, [str(f) for f in cf.fallbacks]


def formats_an_item(x):
    y = x.sin()
    print(f"mean {y.mean().item():+.3f}")  # Dynamo gives up on the rest of the function here
    return y.cos()


def test_functions_dynamo_gives_up_on_are_listed(capsys):
    cf = thunderfx(formats_an_item)
    for _ in range(3):
        x = torch.randn(3)
        torch.testing.assert_close(cf(x), formats_an_item(x))
    (frame,) = cf.skipped
    assert frame.lineno == _line_of(formats_an_item, "print(") and frame.function == "formats_an_item"
    assert frame.filename == __file__ and frame.reason
    assert str(frame) in cf.summary()


def with_numpy(x):
    y = x.sin()
    scale = np.float32(np.abs(y.detach().numpy()).max()) + 1  # Dynamo traces NumPy as torch
    return torch.from_numpy(np.tanh(y.numpy())) * scale + y


def test_numpy_calls_match_eager_and_every_eager_piece_says_why():
    cf = thunderfx(with_numpy)
    for _ in range(3):
        x = torch.randn(4)
        torch.testing.assert_close(cf(x), with_numpy(x))
    assert cf.pieces
    for p in cf.pieces:  # thunder's, or eager with thunder's reason and the user's line
        assert p.fallback is None or ("not supported" in p.fallback.error and p.fallback.user_line)


def test_what_the_pieces_no_longer_check_is_guarded_by_dynamo():
    # a frozen parameter, grad mode and a new dtype: each is a new graph from Dynamo, never a
    # cached piece run on inputs its (unchecked) entry was not traced for
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    cf = thunderfx(model)
    x = torch.randn(5, 3)
    cf(x).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad(set_to_none=True)
    model[0].weight.requires_grad_(False)
    cf(x).sum().backward()
    assert [p.grad is not None for p in model.parameters()] == [False, True, True, True]
    with torch.no_grad():
        assert not cf(x).requires_grad
    model.double()
    out = cf(x.double())
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, model(x.double()))
    assert len(cf.pieces) == 4 and all(p.dynamo_prologue is not None for p in cf.pieces)


def test_dynamic_pieces_compile_once_for_every_size():
    """``thunderfx(fn, dynamic=True)``: Dynamo's graphs are symbolic (sizes come in as int
    arguments, ``s77``), and thunder takes those ints and every tensor dimension as symbols: each
    piece compiles once over calls of six sizes, with eager's values."""

    def fn(x, w):
        y = torch.relu(x @ w)
        if y.sum() > 0:  # a graph break
            y = y * 2
        return y.view(x.shape[0], -1).softmax(-1)

    w = torch.randn(8, 4)
    cfn = thunderfx(fn, dynamic=True)
    for n in (3, 5, 7, 9, 11, 13):
        x = torch.randn(n, 8)
        torch.testing.assert_close(cfn(x, w), fn(x, w))
    assert len(cfn.pieces) == 2 and not cfn.fallbacks
    for p in cfn.pieces:
        stats = thunder.compile_stats(p.jfn)
        assert stats.cache_misses == 1 and p.calls == 6
        assert any("L_x_.shape[0]" in s or "L_y_.shape[0]" in s for s in stats.entries[0].symbols.values())
