"""Gradients as traces: every differentiable op of the op database against torch.autograd,
through the backward trace; the forward/backward split; the autograd connection."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from support.checks import assert_not_recorded_by_torch
from support.compare import split_tensors, tolerance
from support.opdb import OPS, Maker, OpInfo, S

import thunder
from thunder.core.pytree import tree_flatten
from thunder.core.tags import Tag
from thunder.core.verify import verify
from thunder.transforms.grad import NoVJPError


def _requiring(tensors, which) -> list[torch.Tensor]:
    return [t.detach().clone().requires_grad_(i in which) for i, t in enumerate(tensors)]


def _grad_inputs(tensors) -> list[set[int]]:
    """Which inputs require grad: every floating one, else (when eager refuses that, as for
    batch_norm's running statistics) only the first."""
    floats = [i for i, t in enumerate(tensors) if t.is_floating_point()]
    return [set(floats), set(floats[:1])] if len(floats) > 1 else [set(floats)]


def _cotangents(outs, seed: int):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs]


def _differentiable(result) -> list[torch.Tensor]:
    return [o for o in tree_flatten(result)[0] if isinstance(o, torch.Tensor) and o.requires_grad]


def _check_grads(info: OpInfo, sample: S) -> bool:
    """Compare one sample; False when eager cannot differentiate it."""
    tensors, rebuild = split_tensors(sample)

    def call(*ts):
        args, kwargs = rebuild(ts)
        return info.op(*args, **kwargs)

    if info.numerical_grad:
        leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in tensors]
        assert torch.autograd.gradcheck(thunder.jit(call), tuple(leaves))
        return True
    ref = info.ref or info.op
    for which in _grad_inputs(tensors):
        leaves = _requiring(tensors, which)
        args, kwargs = rebuild(leaves)
        try:
            eager_outs = _differentiable(ref(*args, **kwargs))
            if not eager_outs:
                return False
            expected = torch.autograd.grad(
                eager_outs,
                [t for t in leaves if t.requires_grad],
                _cotangents(eager_outs, 0),
                allow_unused=True,
            )
        except (RuntimeError, NotImplementedError):
            continue
        break
    else:
        return False
    leaves = _requiring(tensors, which)
    jfn = thunder.jit(call)
    outs = _differentiable(jfn(*leaves))
    assert len(outs) == len(eager_outs), "the outputs that require grad differ from eager's"
    computed = [o for o in outs if all(o is not t for t in leaves)]  # not an input returned as is
    backward = thunder.last_backward_traces(jfn)
    assert bool(backward) == bool(computed), "a backward trace exactly when something is computed"
    for trace in thunder.last_traces(jfn) + backward:
        verify(trace)
    assert_not_recorded_by_torch(computed, leaves)
    got = torch.autograd.grad(
        outs, [t for t in leaves if t.requires_grad], _cotangents(outs, 0), allow_unused=True
    )
    for g, e in zip(got, expected):
        # an input the result does not depend on: no gradient on either side, or zeros in eager
        if g is None or e is None:
            assert (g if e is None else e) is None or not (g if e is None else e).any()
            continue
        torch.testing.assert_close(g, e, equal_nan=True, **tolerance(info, torch.float64))
    return True


def test_every_differentiable_prim_has_a_vjp_rule():
    from thunder.core.symbol import symbols_with
    from thunder.ops.vjp import NO_TORCH_GRADIENT, NON_DIFFERENTIABLE, VJPS

    prims_ = [s for s in symbols_with(Tag.PRIM) if Tag.PYTHON not in s.tags]
    assert not [s.id for s in prims_ if s not in VJPS and s not in NON_DIFFERENTIABLE | NO_TORCH_GRADIENT]
    assert not [s.id for s in NON_DIFFERENTIABLE if s in VJPS]


GRAD_OPS = [o for o in OPS if torch.float64 in o.dtypes and o.values and not o.cuda]


@pytest.mark.filterwarnings("ignore:size_average and reduce args")
@pytest.mark.parametrize("info", GRAD_OPS, ids=lambda o: o.id)
def test_op_gradients_through_the_backward_trace(info: OpInfo):
    checked = [_check_grads(info, sample) for sample in info.samples(Maker(torch.float64))]
    if not any(checked):
        pytest.skip("eager autograd differentiates none of the samples")


# -- the traces -----------------------------------------------------------------------------
def small(x, w):
    y = x.abs()
    return (y * w).relu().sum()


FORWARD_LAST = """\
# Constructed by Delete Last Used
import torch

def forward(x, w):
  # x: "cpu f32[3]"
  # w: "cpu f32[3]"
  t0 = torch.abs(x)  # t0: "cpu f32[3]"
    # t0 = ltorch.abs(x)  # t0: "cpu f32[3]"
      # t0 = prims.abs(x)  # t0: "cpu f32[3]"
  t1 = torch.mul(t0, w)  # t1: "cpu f32[3]"
    # t1 = ltorch.mul(t0, w)  # t1: "cpu f32[3]"
      # t1 = prims.mul(t0, w)  # t1: "cpu f32[3]"
  del t0
  t3 = torch.relu(t1)  # t3: "cpu f32[3]"
    # t3 = ltorch.relu(t1)  # t3: "cpu f32[3]"
      # t2 = prims.le(t1, 0)  # t2: "cpu b8[3]"
      # t3 = prims.where(t2, 0, t1)  # t3: "cpu f32[3]"
  del t1
  t4 = torch.sum(t3)  # t4: "cpu f32[]"
    # t4 = ltorch.sum(t3)  # t4: "cpu f32[]"
      # t4 = prims.sum(t3, (0,))  # t4: "cpu f32[]"
  return ((t4,), (x, w, t3))
"""

BACKWARD_SPLIT = """\
# Constructed by Split: backward
import torch
import thunder.ops.ltorch as ltorch
import thunder.ops.prims as prims

def backward(x, w, t0, t3, g_t4):
  # x: "cpu f32[3]"
  # w: "cpu f32[3]"
  # t0: "cpu f32[3]"
  # t3: "cpu f32[3]"
  # g_t4: "cpu f32[]"
  t5 = prims.broadcast_in_dim(g_t4, (3,), ())  # t5: "cpu f32[3]"
  t7 = ltorch.threshold_backward(t5, t3, 0)  # t7: "cpu f32[3]"
    # t6 = prims.le(t3, 0)  # t6: "cpu b8[3]"
    # t7 = prims.where(t6, 0, t5)  # t7: "cpu f32[3]"
  t8 = prims.mul(t7, w)  # t8: "cpu f32[3]"
  t9 = prims.mul(t7, t0)  # t9: "cpu f32[3]"
  t10 = prims.sign(x)  # t10: "cpu f32[3]"
  t11 = prims.mul(t8, t10)  # t11: "cpu f32[3]"
  return (t11, t9)
"""

BACKWARD_LAST = """\
# Constructed by Delete Last Used
import torch
import thunder.executors.torchex as torchex

def backward(x, w, t3, g_t4):
  # x: "cpu f32[3]"
  # w: "cpu f32[3]"
  # t3: "cpu f32[3]"
  # g_t4: "cpu f32[]"
  t5 = torchex.broadcast_in_dim(g_t4, (3,), ())  # t5: "cpu f32[3]"
    # t5 = prims.broadcast_in_dim(g_t4, (3,), ())  # t5: "cpu f32[3]"
  t7 = torch.ops.aten.threshold_backward.default(t5, t3, 0)  # t7: "cpu f32[3]"
    # t7 = ltorch.threshold_backward(t5, t3, 0)  # t7: "cpu f32[3]"
      # t6 = prims.le(t3, 0)  # t6: "cpu b8[3]"
      # t7 = prims.where(t6, 0, t5)  # t7: "cpu f32[3]"
  del t5
  t8 = torch.mul(t7, w)  # t8: "cpu f32[3]"
    # t8 = prims.mul(t7, w)  # t8: "cpu f32[3]"
  t0 = torch.abs(x)  # t0: "cpu f32[3]"
    # t0 = ltorch.abs(x)  # t0: "cpu f32[3]"
      # t0 = prims.abs(x)  # t0: "cpu f32[3]"
  t9 = torch.mul(t7, t0)  # t9: "cpu f32[3]"
    # t9 = prims.mul(t7, t0)  # t9: "cpu f32[3]"
  del t7, t0
  t10 = torch.sign(x)  # t10: "cpu f32[3]"
    # t10 = prims.sign(x)  # t10: "cpu f32[3]"
  t11 = torch.mul(t8, t10)  # t11: "cpu f32[3]"
    # t11 = prims.mul(t8, t10)  # t11: "cpu f32[3]"
  del t8, t10
  return (t11, t9)
"""


def test_goldens_forward_and_backward():
    x, w = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    jfn = thunder.jit(small)
    jfn(x, w).backward()
    forward, backward = thunder.last_traces(jfn), thunder.last_backward_traces(jfn)
    assert [t.provenance.pass_name for t in forward[1:]] == [
        "Dead Code Elimination",
        "Grad (joint forward and backward)",
        "Split: forward",
        "Rematerialization",
        "Transform for execution",
        "Delete Last Used",
    ]
    assert [t.provenance.pass_name for t in backward] == [
        "Split: backward",
        "Rematerialization",
        "Transform for execution",
        "Delete Last Used",
    ]
    assert str(forward[-1]) == FORWARD_LAST
    assert str(backward[0]) == BACKWARD_SPLIT
    assert str(backward[-1]) == BACKWARD_LAST
    xe, we = x.detach().requires_grad_(), w.detach().requires_grad_()
    small(xe, we).backward()
    torch.testing.assert_close((x.grad, w.grad), (xe.grad, we.grad))


def test_what_crosses_the_cut_is_noted_for_viewers():
    jfn = thunder.jit(small)
    jfn(torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True))
    forward, backward = thunder.last_traces(jfn)[-1], thunder.last_backward_traces(jfn)[-1]
    # saved: in both signatures, in info, and tagged on the forward op that computes it
    assert [p.name for p in forward.output[1]] == forward.info.saved_for_backward == ["x", "w", "t3"]
    assert [p.name for p in backward.args] == ["x", "w", "t3", "g_t4"]
    assert [b.sym.id for b in forward.bound_symbols if Tag.SAVED_FOR_BACKWARD in b.tags] == ["torch.relu"]
    # rematerialized: no longer saved, recomputed in the backward and tagged so
    assert forward.info.rematerialized == ["t0"]
    (recomputed,) = [b for b in backward.bound_symbols if Tag.RECOMPUTED in b.tags]
    assert recomputed.sym.id == "torch.abs" and recomputed.info.recomputes == ("t0",)
    # each backward op names the forward op it differentiates by its outputs (kept by every pass)
    by_op = {b.sym.id: b.info.differentiates for b in backward.bound_symbols if Tag.BACKWARD in b.tags}
    assert by_op["torch.ops.aten.threshold_backward.default"] == ("t3",)
    assert by_op["torch.sign"] == ("t0",)
    assert by_op["torchex.broadcast_in_dim"] == ("t4",)
    assert all(
        b.source is not None and b.source.function == "small"
        for b in backward.bound_symbols
        if Tag.BACKWARD in b.tags
    )


def test_a_transcendental_value_is_saved_not_recomputed():
    jfn = thunder.jit(lambda x, w: (x.sin() * w).sum())
    jfn(torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True))
    forward, backward = thunder.last_traces(jfn)[-1], thunder.last_backward_traces(jfn)[-1]
    assert forward.info.saved_for_backward == ["x", "w", "t0"]
    assert forward.info.rematerialized == []
    assert not [b for b in backward.bound_symbols if Tag.RECOMPUTED in b.tags]


# -- the connection to torch.autograd -------------------------------------------------------
def _leaf(*shape):
    return torch.randn(*shape, dtype=torch.float64, requires_grad=True)


def _both(fn, *inputs, backward=lambda out: out.sum().backward()):
    """Run ``fn`` jitted and eagerly on copies of ``inputs``; return both sets of grads."""
    a = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
    b = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
    jfn = thunder.jit(fn)
    backward(jfn(*a))
    backward(fn(*b))
    return jfn, [t.grad for t in a], [t.grad for t in b]


def test_module_parameters_and_inputs_get_grads_as_in_eager():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    ref.load_state_dict(model.state_dict())
    x, xe = torch.randn(3, 4, requires_grad=True), None
    xe = x.detach().clone().requires_grad_()
    thunder.jit(model)(x).pow(2).sum().backward()
    ref(xe).pow(2).sum().backward()
    torch.testing.assert_close(x.grad, xe.grad)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad)


def test_second_backward_without_retain_graph_raises_as_in_eager():
    x = _leaf(3)
    out = thunder.jit(lambda x: x.sin().sum())(x)
    out.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()
    eager = x.sin().sum()
    eager.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        eager.backward()


def test_retain_graph_backward_twice_accumulates_as_in_eager():
    def twice(out):
        out.sum().backward(retain_graph=True)
        out.sum().backward()

    _, got, expected = _both(lambda x: x.exp() * 2, _leaf(3), backward=twice)
    torch.testing.assert_close(got, expected)


def test_create_graph_where_the_backward_cannot_be_differentiated_is_a_clear_error():
    def f(x):
        # bernoulli's output requires grad (in x's graph): recomputing it would draw again
        return (torch.bernoulli(x.sigmoid()) * x).sum()

    x = _leaf(3)
    out = thunder.jit(f)(x)
    with pytest.raises(RuntimeError, match="(?s)create_graph=True.*random numbers"):
        torch.autograd.grad(out, x, create_graph=True)


def test_gradient_hooks_on_inputs():
    seen = []

    def fn(x):
        return (x * 3).sum()

    x, xe = _leaf(3), None
    xe = x.detach().clone().requires_grad_()
    for t in (x, xe):
        t.register_hook(lambda g: seen.append(g.clone()) or g * 2)
    thunder.jit(fn)(x).backward()
    fn(xe).backward()
    torch.testing.assert_close(x.grad, xe.grad)
    torch.testing.assert_close(seen[0], seen[1])


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.t(),
        lambda x: x[1:],
        lambda x: x.view(-1),
        lambda x: x.transpose(0, 1)[0],
        lambda x: x.unbind(1),
    ],
    ids=["t", "slice", "view", "transpose_select", "unbind"],
)
def test_outputs_that_are_views(fn):
    def backward(out):
        outs = out if isinstance(out, tuple) else (out,)
        sum((o * torch.arange(o.numel(), dtype=o.dtype).view(o.shape)).sum() for o in outs).backward()

    _, got, expected = _both(fn, _leaf(3, 4), backward=backward)
    torch.testing.assert_close(got, expected)


def test_an_input_returned_as_is_keeps_its_identity():
    x = _leaf(3)
    jfn = thunder.jit(lambda x: (x, x * 2))
    same, doubled = jfn(x)
    assert same is x
    doubled.sum().backward()
    torch.testing.assert_close(x.grad, torch.full((3,), 2.0, dtype=torch.float64))


def test_no_grad_and_inputs_without_grad_take_the_no_grad_pipeline():
    jfn = thunder.jit(lambda x, w: (x * w).sin())
    x, w = torch.randn(3), _leaf(3).float()
    with torch.no_grad():
        assert not jfn(x, w).requires_grad
    assert thunder.last_backward_traces(jfn) == []
    out = jfn(x, w.detach())  # nothing requires grad
    assert not out.requires_grad and thunder.last_backward_traces(jfn) == []
    out = jfn(x, w.detach().requires_grad_())
    assert out.requires_grad and thunder.last_backward_traces(jfn)


def test_no_grad_block_and_detach_stop_gradients():
    def fn(x, y):
        with torch.no_grad():
            a = x * 3
        b = y.detach() * x
        return (a * x + b + y.exp()).sum()

    jfn, got, expected = _both(fn, _leaf(4), _leaf(4))
    torch.testing.assert_close(got, expected)
    forward = str(thunder.last_traces(jfn)[-1])
    assert "with torch.no_grad():" in forward


def test_enable_grad_inside_a_no_grad_call_differentiates():
    def fn(x):
        with torch.enable_grad():
            y = x.sin() * 2
        return y, y * 3  # the second is computed under no_grad

    x, xe = _leaf(3), None
    xe = x.detach().clone().requires_grad_()
    with torch.no_grad():
        (out, out3), (ref, ref3) = thunder.jit(fn)(x), fn(xe)
    assert (out.requires_grad, out3.requires_grad) == (ref.requires_grad, ref3.requires_grad) == (True, False)
    out.sum().backward()
    ref.sum().backward()
    torch.testing.assert_close(x.grad, xe.grad)


def test_inplace_ops_on_intermediates_keep_eager_gradients():
    def fn(x, w):
        y = x * w
        y.add_(1)
        y[0] = y[1] * 2
        y.mul_(w)
        z = y.clone()
        z[:, 1:] *= 3
        return z.sin()

    _, got, expected = _both(fn, _leaf(3, 4), _leaf(4))
    torch.testing.assert_close(got, expected)


def test_inplace_on_an_input_that_requires_grad():
    def fn(x):
        x.mul_(2)
        return x.sin()

    # a leaf: the same error as eager
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        thunder.jit(fn)(_leaf(3))
    # not a leaf: its history now includes the write, as in eager
    leaf, leaf_e = _leaf(3), None
    leaf_e = leaf.detach().clone().requires_grad_()
    a, ae = leaf * 1, leaf_e * 1
    out, ref = thunder.jit(fn)(a), fn(ae)
    torch.testing.assert_close(a, ae)
    (out.sum() + a.sum()).backward()
    (ref.sum() + ae.sum()).backward()
    torch.testing.assert_close(leaf.grad, leaf_e.grad)


@pytest.mark.parametrize("method", ["zero_", "fill_", "uniform_", "normal_"])
def test_overwriting_in_place_keeps_a_tensor_in_its_graph_as_in_eager(method):
    def fn(x):
        w = x * 2
        getattr(w, method)(*([1.5] if method == "fill_" else []))
        return w

    x = _leaf(3)
    out, ref = thunder.jit(fn)(x), fn(x)
    assert out.requires_grad and ref.requires_grad
    out.sum().backward()
    torch.testing.assert_close(x.grad, torch.zeros(3, dtype=torch.float64))
    with torch.no_grad():
        assert not thunder.jit(fn)(x).requires_grad


def _write_row(y):
    y[0].mul_(3)
    return y.sum()


def _write_slice_then_read(y):
    y[:, 1:].add_(y[:, :1])
    return (y * y).sum()


def _write_twice(y):
    y.mul_(2)
    y.add_(1)
    return y.sin().sum()


def _read_then_write(y):
    z = y * 2  # saved for the backward as in eager, not recomputed from y, which changes below
    out = (z * z).sum()
    y.add_(1)
    return out


@pytest.mark.parametrize("fn", [_write_row, _write_slice_then_read, _write_twice, _read_then_write])
def test_inplace_writes_into_a_non_leaf_input_reach_its_gradient(fn):
    """The input's history includes the writes (through views too): gradients through both
    the result and the written input equal eager's."""
    leaf = _leaf(2, 3)
    leaf_e = leaf.detach().clone().requires_grad_()
    a, ae = leaf * 1, leaf_e * 1
    out, ref = thunder.jit(fn)(a), fn(ae)
    torch.testing.assert_close(a, ae)
    (out + (a * a).sum()).backward()
    (ref + (ae * ae).sum()).backward()
    torch.testing.assert_close(leaf.grad, leaf_e.grad)


def test_a_saved_input_written_in_place_afterwards_raises_as_in_eager():
    def fn(x, buf):
        y = x * buf
        buf.add_(1)
        return y

    x, buf = _leaf(3), torch.ones(3, dtype=torch.float64)
    out = thunder.jit(fn)(x, buf)
    torch.testing.assert_close(buf, torch.full((3,), 2.0, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    buf_e = torch.ones(3, dtype=torch.float64)
    eager = fn(x, buf_e)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        eager.sum().backward()


_DROPOUTS = {
    "dropout": lambda x: F.dropout(x, 0.1, training=True),
    "dropout2d": lambda x: F.dropout2d(x, 0.3, training=True),
    "alpha_dropout": lambda x: F.alpha_dropout(x, 0.2, training=True),
    "inplace": lambda x: F.dropout(x * 2, 0.5, training=True, inplace=True),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("name", list(_DROPOUTS))
def test_dropout_with_a_gradient_draws_what_eager_draws(name, dtype):
    """The mask and the values eager's dropout gives for the same generator state, bit for
    bit, through the decomposition a gradient needs; the generator left where eager leaves it."""
    fn = _DROPOUTS[name]
    x = torch.randn(4, 6, 5, 5, dtype=dtype, requires_grad=True)
    jfn = thunder.jit(fn)
    results = []
    for f in (fn, jfn):
        torch.manual_seed(3)
        out = f(x)
        (grad,) = torch.autograd.grad(out.sum(), x)
        results.append((out, grad, torch.rand(4)))
    for a, b in zip(*results):
        assert torch.equal(a, b)


def test_dropout_uses_the_same_random_values_in_backward():
    def fn(x):
        return torch.nn.functional.dropout(x, 0.5, training=True) * 3

    x = _leaf(200)
    jfn = thunder.jit(fn)
    out = jfn(x)
    out.sum().backward()
    kept = out != 0
    assert 0 < kept.sum() < 200
    torch.testing.assert_close(x.grad, kept.double() * 6)  # 3 / (1 - 0.5) where kept, else 0
    forward, backward = thunder.last_traces(jfn)[-1], thunder.last_backward_traces(jfn)[-1]

    def random_ops(trace):
        return [b for b in trace.bound_symbols if b.subsymbols and Tag.RANDOM in b.subsymbols[0].sym.tags]

    # dropout is opened in the forward so that its mask is computed once and saved
    assert len(random_ops(forward)) == 1 and not random_ops(backward)
    assert [p.meta_dtype for p in forward.output[1]] == [torch.bool]


def test_backward_through_an_op_without_a_rule_names_the_op_and_the_line(monkeypatch):
    from thunder.ops import prims
    from thunder.ops.vjp import VJPS

    monkeypatch.delitem(VJPS, prims.sin)

    def fn(x):
        y = x * 2
        return y.sin()  # the line the error names

    x = _leaf(3)
    out = thunder.jit(fn)(x)  # the forward still runs
    torch.testing.assert_close(out, (x * 2).sin())
    with pytest.raises(NoVJPError, match=r"prims\.sin \(inside ltorch\.sin\).*no VJP rule") as e:
        out.sum().backward()
    assert "test_grad.py" in str(e.value) and "the line the error names" in str(e.value)


# -- custom torch.autograd.Function ----------------------------------------------------------
class _Square(torch.autograd.Function):
    """x * x with a backward that is deliberately not the derivative (3 * g * x): gradients
    equal to eager's show the Function's own backward ran."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x


class _ScaledPair(torch.autograd.Function):
    """setup_context style, a non-tensor argument, two outputs (one non-differentiable), a
    saved value from inside the forward, and needs_input_grad."""

    @staticmethod
    def forward(x, w, k: float):
        e = (x * w).exp()
        return e * k, (x > 0).to(x.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, w, k = inputs
        e = output[0] / k
        ctx.save_for_backward(x, w, e)
        ctx.k = k
        ctx.mark_non_differentiable(output[1])

    @staticmethod
    def backward(ctx, g, g_mask):
        x, w, e = ctx.saved_tensors
        ge = g * e * ctx.k
        gx = ge * w if ctx.needs_input_grad[0] else None
        gw = (ge * x).sum(0) if ctx.needs_input_grad[1] else None
        return gx, gw, None


def test_a_custom_autograd_function_uses_its_own_backward():
    jfn, got, expected = _both(lambda x: _Square.apply(x.sin()), _leaf(4))
    torch.testing.assert_close(got, expected)
    forward, backward = thunder.last_traces(jfn)[0], thunder.last_backward_traces(jfn)[-1]
    (apply,) = [b for b in forward.bound_symbols if Tag.AUTOGRAD_FUNCTION in b.sym.tags]
    assert apply.sym.name == "_Square.apply"
    # the backward's ops come from _Square.backward, at the user's line
    assert any(
        b.sym.id == "torch.mul" and 3 in [a for a in b.args if type(a) is int] for b in backward.bound_symbols
    )
    # a cached call gives the same gradients
    x = _leaf(4)
    jfn(x).sum().backward()
    xe = x.detach().clone().requires_grad_()
    _Square.apply(xe.sin()).sum().backward()
    torch.testing.assert_close(x.grad, xe.grad)
    assert thunder.compile_stats(jfn).cache_hits == 1


def test_the_recorded_backward_stays_as_recorded():
    """The grad pass notes on its copies of a custom Function's recorded backward (which forward
    op each differentiates), not on the recording the acquisition trace holds: the explorer
    shows that trace as it was made, and a later compilation copies it again."""
    jfn, _, _ = _both(lambda x: _Square.apply(x.sin()), _leaf(4))
    (apply,) = [b for b in thunder.last_traces(jfn)[0].bound_symbols if Tag.AUTOGRAD_FUNCTION in b.sym.tags]
    recorded = apply.info.recorded_backward["bsyms"]
    assert recorded and all(r.info.differentiates is None and r.info.vjp is None for r in recorded)
    replayed = [b for b in thunder.last_backward_traces(jfn)[0].bound_symbols if b.info.vjp == apply.sym.id]
    assert replayed and all(r.info.differentiates for r in replayed)


@pytest.mark.parametrize("which", [(True, True), (True, False), (False, True)])
def test_a_custom_autograd_function_with_setup_context(which):
    def fn(x, w):
        y, mask = _ScaledPair.apply(x, w, 1.5)
        return y * mask + y

    x, w = _leaf(3, 4), _leaf(4)
    x.requires_grad_(which[0])
    w.requires_grad_(which[1])
    _, got, expected = _both(fn, x, w)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e)


class _Checkpointed(torch.nn.Module):
    def __init__(self, reentrant: bool):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
        self.reentrant = reentrant

    def forward(self, x):
        inner = torch.utils.checkpoint.checkpoint(
            lambda t: F.dropout(self.a(t).relu(), 0.3, self.training), x, use_reentrant=self.reentrant
        )
        return self.b(inner)


@pytest.mark.parametrize("reentrant", [True, False])
@pytest.mark.parametrize("x_requires_grad", [True, False])
def test_activation_checkpointing_gives_eagers_values_and_gradients(reentrant, x_requires_grad):
    # the reentrant form's backward runs the function again under the autograd engine; thunder
    # differentiates the function itself (without an input that requires grad, eager's gives the
    # parameters inside no gradient, and so does thunder's)
    import copy

    torch.manual_seed(0)
    m = _Checkpointed(reentrant)
    me = copy.deepcopy(m)
    jm = thunder.jit(m)
    x = torch.randn(3, 4, requires_grad=x_requires_grad)
    xe = x.detach().clone().requires_grad_(x_requires_grad)
    torch.manual_seed(1)
    out = jm(x)
    torch.manual_seed(1)
    ref = me(xe)
    torch.testing.assert_close(out, ref)
    out.square().sum().backward()
    ref.square().sum().backward()
    for p, pe in zip(m.parameters(), me.parameters()):
        assert (p.grad is None) == (pe.grad is None)
        if p.grad is not None:
            torch.testing.assert_close(p.grad, pe.grad)
    if x_requires_grad:
        torch.testing.assert_close(x.grad, xe.grad)


def test_a_custom_autograd_function_without_grad_is_traced_through():
    x = _leaf(2)
    with torch.no_grad():
        jfn = thunder.jit(lambda x: _Square.apply(x))
        torch.testing.assert_close(jfn(x), x * x)
    assert not thunder.last_backward_traces(jfn)
    assert not [b for b in thunder.last_traces(jfn)[0].bound_symbols if Tag.AUTOGRAD_FUNCTION in b.sym.tags]


# -- writes under no_grad into tensors that require grad ------------------------------------
class _Clamped(torch.nn.Module):
    """A parameter written in place under no_grad inside forward, then used (the write is no
    part of eager's graph: the gradient reaches the parameter as if read directly)."""

    def __init__(self, how: str):
        super().__init__()
        self.how = how
        self.w = torch.nn.Parameter(torch.linspace(-1.0, 2.0, 4))

    def forward(self, x):
        with torch.no_grad():
            if self.how == "direct":
                self.w.clamp_(max=0.5)
            elif self.how == "data":
                self.w.data.mul_(0.5)
            else:
                self.w.detach().add_(1.0)
        return (x * self.w).square().sum()


@pytest.mark.parametrize("how", ["direct", "data", "detach"])
def test_a_write_under_no_grad_into_a_parameter_keeps_its_gradient(how):
    import copy

    model = _Clamped(how)
    ref = copy.deepcopy(model)
    jm = thunder.jit(model)
    for _ in range(3):
        x = torch.randn(4)
        out, expected = jm(x), ref(x)
        torch.testing.assert_close(out, expected)
        out.backward()
        expected.backward()
    torch.testing.assert_close(model.w, ref.w)
    torch.testing.assert_close(model.w.grad, ref.w.grad)


@pytest.mark.parametrize(
    "options", [{"max_norm": 1.0}, {"max_norm": 0.5, "norm_type": 1.0}, {"max_norm": 2.0, "padding_idx": 0}]
)
def test_embedding_with_max_norm_renormalises_the_weight_as_eager(options):
    """The rows looked up whose norm exceeds max_norm are scaled down in the weight itself
    (under no_grad), and the gradient still reaches the weight."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(10, 4, **options), torch.nn.Linear(4, 2))
    _renorms_as_eager(model, model[0].weight)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_with_max_norm_renormalises_the_weight_as_eager(mode):
    torch.manual_seed(0)
    model = torch.nn.EmbeddingBag(10, 4, max_norm=1.0, mode=mode)
    _renorms_as_eager(model, model.weight)


def _renorms_as_eager(model, weight):
    """Three training calls of ``model`` (whose embedding ``weight`` is scaled up so that rows
    exceed max_norm) against eager: outputs, the renormed weight, the gradients."""
    import copy

    with torch.no_grad():
        weight.mul_(3)
    ref = copy.deepcopy(model)
    jm = thunder.jit(model)
    for _ in range(3):
        idx = torch.randint(0, 10, (3, 5))
        out, expected = jm(idx), ref(idx)
        torch.testing.assert_close(out, expected)
        out.sum().backward()
        expected.sum().backward()
    # (the scale is computed in float32 here, in double by eager's kernel: a rounding apart)
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-6, msg=name)
        torch.testing.assert_close(p.grad, q.grad, msg=name)
