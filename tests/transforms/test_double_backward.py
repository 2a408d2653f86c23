"""Double backward: ``torch.autograd.grad(..., create_graph=True)`` through a compiled
function differentiates its backward (``thunder/transforms/double_backward.py``): a
WGAN-GP gradient penalty and a Hessian-vector product equal eager's (float64), and the
traces of the backward as a computation and of its own backward are shown by
``thunder.last_double_backward_traces``."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import thunder
from thunder.core.subclass import SubclassProxy
from thunder.core.tags import Tag
from thunder.transforms.saved_versions import SavedValueOverwrittenError

D = torch.float64


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(3, 8), nn.Linear(8, 8), nn.Linear(8, 1)

    def forward(self, x):
        return self.fc3(F.leaky_relu(self.fc2(torch.tanh(self.fc1(x))), 0.2)).squeeze(-1)


def _gradient_penalty(critic, real, fake, eps):
    """WGAN-GP: the critic's gradient at points between real and fake samples, pushed to norm 1."""
    mixed = (eps * real + (1 - eps) * fake).requires_grad_()
    scores = critic(mixed)
    (g,) = torch.autograd.grad(scores, mixed, torch.ones_like(scores), create_graph=True)
    return ((g.norm(2, dim=1) - 1) ** 2).mean() + scores.mean()


def test_a_wgan_gp_gradient_penalty_trains_as_in_eager():
    torch.manual_seed(0)
    eager = Critic().to(D)
    compiled = Critic().to(D)
    compiled.load_state_dict(eager.state_dict())
    jc = thunder.jit(compiled)
    opts = [torch.optim.SGD(m.parameters(), lr=0.05) for m in (eager, compiled)]
    for _ in range(3):
        real, fake, eps = torch.randn(6, 3, dtype=D), torch.randn(6, 3, dtype=D), torch.rand(6, 1, dtype=D)
        losses = []
        for critic, opt in zip((eager, jc), opts):
            opt.zero_grad()
            loss = _gradient_penalty(critic, real, fake, eps)
            loss.backward()
            opt.step()
            losses.append(loss)
        torch.testing.assert_close(losses[1], losses[0])
    for p, q in zip(eager.parameters(), compiled.parameters()):
        torch.testing.assert_close(q.grad, p.grad)
        torch.testing.assert_close(q, p)
    assert thunder.compile_stats(jc).cache_misses == 1


def _hvp(fn, x, v):
    (g,) = torch.autograd.grad(fn(x), x, create_graph=True)
    (hv,) = torch.autograd.grad(g, x, v)
    return hv


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: (x.sin() * x).sum(),
        lambda x: torch.logsumexp(x @ x.T, dim=-1).sum(),
        lambda x: F.softmax(x, -1).pow(3).sum() + F.layer_norm(x, (3,)).exp().mean(),
    ],
    ids=["sin", "logsumexp of a matmul", "softmax and layer_norm"],
)
def test_a_hessian_vector_product_equals_eagers(fn):
    x = torch.randn(4, 3, dtype=D, requires_grad=True)
    v = torch.randn(4, 3, dtype=D)
    torch.testing.assert_close(_hvp(thunder.jit(fn), x, v), _hvp(fn, x, v))


def test_the_traces_of_the_backward_and_of_its_backward_are_shown():
    jf = thunder.jit(lambda x, w: (x.sin() * w).sum())
    x, w = torch.randn(3, dtype=D, requires_grad=True), torch.randn(3, dtype=D, requires_grad=True)
    out = jf(x, w)
    with pytest.raises(RuntimeError, match="create_graph"):
        thunder.last_double_backward_traces(jf)
    (gx,) = torch.autograd.grad(out, x, create_graph=True)
    traces = thunder.last_double_backward_traces(jf)
    first = traces["computation"][0]
    assert first.name == "backward_computation"
    # the cotangent (autograd.grad's ones) does not require grad: nor does it in the trace
    assert [p.name for p in first.args][:2] == ["x", "w"] and not first.args[2].requires_grad
    assert str(traces["backward"][-1]).startswith("# Constructed by")
    # the gradient of the gradient, against eager's
    gw = torch.autograd.grad(gx.sum(), w)[0]
    torch.testing.assert_close(gw, x.detach().cos())


def _sin_exp(x):
    return (x.sin() * x.exp()).sum()


def _third(fn, x):
    """The third derivative of ``fn`` at ``x``, through two double backwards."""
    (g,) = torch.autograd.grad(fn(x), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x, create_graph=True)
    return torch.autograd.grad(h.sum(), x)[0]


def test_third_order_gradients():
    x = torch.randn(5, dtype=D, requires_grad=True)
    torch.testing.assert_close(_third(thunder.jit(_sin_exp), x), _third(_sin_exp, x))


def test_a_cotangent_that_requires_grad_is_differentiated():
    def f(x):
        return x.sin() * 2

    def both(fn):
        x = torch.linspace(-1, 1, 4, dtype=D, requires_grad=True)
        v = torch.ones(4, dtype=D, requires_grad=True)
        (g,) = torch.autograd.grad(fn(x), x, v * x, create_graph=True)
        return torch.autograd.grad(g.sum(), (x, v))

    for got, expected in zip(both(thunder.jit(f)), both(f)):
        torch.testing.assert_close(got, expected)


def test_an_input_written_before_the_double_backward_raises_as_in_eager():
    def f(y):
        return (y.exp() * y).sum()

    x = torch.randn(3, dtype=D, requires_grad=True)
    y = x * 1
    out = f(y)
    with torch.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        torch.autograd.grad(out, x, create_graph=True)  # eager raises: y is saved
    y = x * 1
    out = thunder.jit(f)(y)
    with torch.no_grad():
        y.add_(1)
    with pytest.raises(SavedValueOverwrittenError):
        torch.autograd.grad(out, x, create_graph=True)


# -- random numbers: the backward of the backward reads the forward's draws, saved ----------


class DropoutCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(3, 16), nn.Linear(16, 16), nn.Linear(16, 1)

    def forward(self, x):
        h = F.dropout(torch.tanh(self.fc1(x)), 0.3, self.training)
        h = F.dropout(F.leaky_relu(self.fc2(h), 0.2), 0.2, self.training)
        return self.fc3(h).squeeze(-1)


def test_a_gradient_penalty_through_dropout_trains_as_in_eager():
    """Dropout in train mode: each call draws other masks, and the gradient penalty's
    backward of the backward uses the call's own masks (eager's, for the same seed); the
    generator ends where eager's does (the double backward draws nothing)."""
    torch.manual_seed(0)
    eager = DropoutCritic().to(D)
    compiled = DropoutCritic().to(D)
    compiled.load_state_dict(eager.state_dict())
    jc = thunder.jit(compiled)
    batches = [
        (torch.randn(6, 3, dtype=D), torch.randn(6, 3, dtype=D), torch.rand(6, 1, dtype=D)) for _ in range(3)
    ]
    runs = []
    for critic in (eager, jc):
        opt = torch.optim.SGD(critic.parameters(), lr=0.05)
        torch.manual_seed(1)
        losses, grads = [], []
        for real, fake, eps in batches:
            opt.zero_grad()
            loss = _gradient_penalty(critic, real, fake, eps)
            loss.backward()
            grads.append([p.grad.clone() for p in critic.parameters()])
            opt.step()
            losses.append(loss.detach())
        runs.append((losses, grads, torch.rand(3)))
    (l0, g0, r0), (l1, g1, r1) = runs
    torch.testing.assert_close(l1, l0)
    torch.testing.assert_close(g1, g0)
    torch.testing.assert_close(r1, r0)
    assert len({float(v) for v in l0}) == 3  # (the calls differ)
    for p, q in zip(eager.parameters(), compiled.parameters()):
        torch.testing.assert_close(q, p)
    assert thunder.compile_stats(jc).cache_misses == 1


def _noisy(x):
    """Dropout, whose mask the backward saves anyway, and noise, which only the backward of the
    backward needs (the backward reads tanh's output)."""
    return (F.dropout(x.sin(), 0.4) * x + 0.1 * torch.randn_like(x)).tanh().sum()


def test_a_hessian_vector_product_through_random_ops_equals_eagers():
    x = torch.randn(4, 5, dtype=D, requires_grad=True)
    vs = [torch.randn(4, 5, dtype=D) for _ in range(3)]
    jf = thunder.jit(_noisy)
    runs = []
    for fn in (_noisy, jf):
        torch.manual_seed(7)
        out = []
        for v in vs:
            (g,) = torch.autograd.grad(fn(x), x, create_graph=True)
            (hv,) = torch.autograd.grad(g, x, v)
            out.append((g.detach(), hv))
        runs.append((out, torch.rand(3)))
    torch.testing.assert_close(runs[1], runs[0])
    assert not torch.equal(runs[0][0][0][0], runs[0][0][1][0])  # each call's draws differ
    # the backward as a computation takes the mask and the noise: it draws nothing
    traces = thunder.last_double_backward_traces(jf)
    first = traces["computation"][0]
    assert [p.meta_dtype for p in first.args[1:3]] == [torch.bool, D]
    assert not any(any(Tag.RANDOM in s.sym.tags for s in _walk(b)) for b in first.bound_symbols)
    assert traces["backward"] and traces["backward"][-1].name == "backward"


def _walk(b):
    yield b
    for s in b.subsymbols:
        yield from _walk(s)


def test_the_explorer_shows_the_backward_of_a_backward_through_dropout():
    from explorer.model.compilation import model_of

    jf = thunder.jit(_noisy)
    x = torch.randn(3, dtype=D, requires_grad=True)
    (g,) = torch.autograd.grad(jf(x), x, create_graph=True)
    g.pow(2).sum().backward()
    m = model_of(jf)
    assert m.kinds[-2:] == ["double_backward", "backward_of_backward"]
    assert any("tanh" in n.line or "cos" in n.line for n in m.series["backward_of_backward"].final.walk())


def test_random_numbers_in_an_op_whose_output_requires_grad_are_refused():
    def f(p):  # bernoulli's output is in p's graph: its draw is made again by recomputing it
        return (torch.bernoulli(p) * p.exp()).sum()

    p = torch.rand(5, dtype=D, requires_grad=True)
    out = thunder.jit(f)(p)
    with pytest.raises(RuntimeError, match=r"(?s)create_graph=True.*random numbers \(ltorch.bernoulli\)"):
        torch.autograd.grad(out, p, create_graph=True)
    torch.autograd.grad(thunder.jit(f)(p), p)  # (a plain backward is unaffected)


# -- custom autograd.Functions: their backward differentiated as eager does ----------------


class ScaledExp(torch.autograd.Function):
    """Saves an input, an output and a value made inside its forward (which eager's double
    backward takes as a constant: the forward ran without a graph)."""

    @staticmethod
    def forward(ctx, x, w):
        e = x.exp()
        out = e * w
        ctx.save_for_backward(w, e, out)
        return out

    @staticmethod
    def backward(ctx, g):
        w, e, out = ctx.saved_tensors
        return g * out + g * w * e * 0.5, (g * e).sum(0)


class OnceSin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


def test_the_backward_of_a_custom_function_is_differentiated_as_in_eager():
    def f(x, w):
        return (ScaledExp.apply(x.tanh(), w) * x).sum()

    jf = thunder.jit(f)
    for _ in range(3):
        x = torch.randn(4, 3, dtype=D, requires_grad=True)
        w = torch.randn(3, dtype=D, requires_grad=True)
        runs = []
        for fn in (f, jf):
            out = fn(x, w)
            gx, gw = torch.autograd.grad(out, (x, w), create_graph=True)
            runs.append((out, gx, gw, *torch.autograd.grad(gx.pow(2).sum() + gw.sin().sum(), (x, w))))
        torch.testing.assert_close(runs[1], runs[0])
    traces = thunder.last_double_backward_traces(jf)
    first = traces["computation"][0]
    assert any(b.sym.id.endswith("ScaledExp.apply") for b in first.bound_symbols)  # kept as it is
    assert traces["backward"][-1].name == "backward"


def test_a_hessian_vector_product_through_a_custom_function_equals_eagers():
    def f(x):
        return ScaledExp.apply(x, torch.ones(3, dtype=D)).pow(2).sum()

    x = torch.randn(2, 3, dtype=D, requires_grad=True)
    v = torch.randn(2, 3, dtype=D)
    jf = thunder.jit(f)
    for _ in range(2):
        torch.testing.assert_close(_hvp(jf, x, v), _hvp(f, x, v))


def test_a_once_differentiable_backward_raises_eagers_error_when_differentiated():
    def f(x):  # the cotangent of OnceSin's output (x) requires grad
        return (OnceSin.apply(x) * x).sum()

    x = torch.randn(3, dtype=D, requires_grad=True)
    for fn in (f, thunder.jit(f)):
        (g,) = torch.autograd.grad(fn(x), x, create_graph=True)
        with pytest.raises(
            RuntimeError, match="trying to differentiate twice a function that was marked with @once"
        ):
            g.sum().backward()


def test_a_once_differentiable_backward_is_a_constant_where_its_cotangent_needs_no_grad():
    def f(x):  # OnceSin's cotangent is the loss's ones: eager's backward makes no graph of it
        return OnceSin.apply(x).sum() + x.pow(3).sum()

    x = torch.randn(3, dtype=D, requires_grad=True)
    jf = thunder.jit(f)
    for _ in range(2):
        got, expected = (
            torch.autograd.grad(torch.autograd.grad(fn(x), x, create_graph=True)[0].sum(), x)
            for fn in (jf, f)
        )
        torch.testing.assert_close(got, expected)


def test_a_custom_function_whose_forward_draws_random_numbers_is_refused():
    class Masked(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            m = torch.rand_like(x) > 0.5
            ctx.save_for_backward(m)
            return x * m

        @staticmethod
        def backward(ctx, g):
            (m,) = ctx.saved_tensors
            return g * m

    x = torch.randn(3, dtype=D, requires_grad=True)
    out = thunder.jit(lambda x: Masked.apply(x).sum())(x)
    with pytest.raises(RuntimeError, match=r"(?s)create_graph=True.*Masked.apply draws random numbers"):
        torch.autograd.grad(out, x, create_graph=True)


# -- writes into inputs: the recomputation reads their values from before the write --------


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, w: (x.mul_(w) * w).sum(),
        lambda x, w: (x.add_(w).sin() * w).sum(),  # x's old value: saved only for the double backward
    ],
    ids=["mul_", "add_"],
)
def test_a_function_that_writes_into_its_input_has_eagers_second_gradients(fn):
    jf = thunder.jit(fn)
    for _ in range(3):
        x0 = torch.randn(3, dtype=D)
        w = torch.randn(3, dtype=D, requires_grad=True)
        runs = []
        for f in (fn, jf):
            x = x0.clone()
            out = f(x, w)
            (gw,) = torch.autograd.grad(out, w, create_graph=True)
            (hw,) = torch.autograd.grad(gw.pow(2).sum(), w)
            runs.append((out, gw, hw, x))
        torch.testing.assert_close(runs[1], runs[0])
    assert thunder.last_double_backward_traces(jf)["backward"]


def test_a_write_into_an_input_that_requires_grad_is_refused():
    def f(y, w):
        y.add_(w)
        return (y.sin() * w).sum()

    x, w = (torch.randn(3, dtype=D, requires_grad=True) for _ in range(2))
    jf = thunder.jit(f)
    y = (
        x * 1
    )  # (eager differentiates through y's value before the write, which the copy thunder saves has not)
    with pytest.raises(
        RuntimeError, match=r"(?s)create_graph=True.*writes into its input y, which requires grad"
    ):
        torch.autograd.grad(jf(y, w), (x, w), create_graph=True)
    y, ye = x * 1, x * 1
    torch.testing.assert_close(torch.autograd.grad(jf(y, w), (x, w)), torch.autograd.grad(f(ye, w), (x, w)))
    torch.testing.assert_close(y, ye)


# -- tensor subclasses: their ops recorded again through their dispatch ---------------------


def _two_tensor(*shape):
    from torch.testing._internal.two_tensor import TwoTensor

    return TwoTensor(torch.randn(*shape, dtype=D), torch.randn(*shape, dtype=D)).requires_grad_()


def _scale_tensor(*shape):
    from support.subclasses import scale_tensor

    return scale_tensor(*shape, dtype=D, requires_grad=True)


@pytest.mark.parametrize("make", [_two_tensor, _scale_tensor], ids=["TwoTensor", "ScaleTensor"])
def test_second_gradients_through_tensor_subclass_inputs_equal_eagers(make):
    def f(x, w):
        return (x.sin() * w).exp().sum()

    jf = thunder.jit(f)
    for _ in range(3):
        x, w = make(3), torch.randn(3, dtype=D, requires_grad=True)
        runs = []
        for fn in (f, jf):
            out = fn(x, w)
            gx, gw = torch.autograd.grad(out, (x, w), create_graph=True)
            runs.append((out, gx, gw, *torch.autograd.grad(gx.pow(2).sum() + gw.sum(), (x, w))))
        for got, expected in zip(runs[1], runs[0]):
            assert type(got) is type(expected)
            torch.testing.assert_close(got, expected)
    traces = thunder.last_double_backward_traces(jf)
    assert isinstance(traces["computation"][0].args[0], SubclassProxy)
    assert traces["backward"][-1].name == "backward"


def test_third_order_gradients_of_a_tensor_subclass_input():
    x = _two_tensor(5)
    got, expected = _third(thunder.jit(_sin_exp), x), _third(_sin_exp, x)
    assert type(got) is type(expected)
    torch.testing.assert_close(got, expected)


def test_a_write_into_a_tensor_subclass_is_refused():
    def f(x, w):
        y = x * 1
        y.mul_(w)
        return y.sin().sum()

    x, w = _two_tensor(3), torch.randn(3, dtype=D, requires_grad=True)
    out = thunder.jit(f)(x, w)
    with pytest.raises(RuntimeError, match=r"(?s)create_graph=True.*writes into a tensor subclass in place"):
        torch.autograd.grad(out, (x, w), create_graph=True)


def test_a_subclass_backward_thunder_cannot_differentiate_is_a_clear_error(monkeypatch):
    from thunder.ops import prims
    from thunder.ops.vjp import VJPS

    monkeypatch.delitem(VJPS, prims.cos)  # sin's backward is cos: its own gradient is not traced

    def f(x, w):
        return (x.sin() * w).sum()

    x, w = _two_tensor(3), torch.randn(3, dtype=D, requires_grad=True)
    jf = thunder.jit(f)
    torch.testing.assert_close(torch.autograd.grad(jf(x, w), (x, w)), torch.autograd.grad(f(x, w), (x, w)))
    with pytest.raises(
        RuntimeError, match=r"(?s)create_graph=True.*TwoTensor.prims.* runs whole on the real values"
    ):
        torch.autograd.grad(jf(x, w), (x, w), create_graph=True)


_W, _B = torch.rand(3, dtype=D) + 0.5, torch.randn(3, dtype=D)
_GW, _GB = torch.rand(4, dtype=D) + 0.5, torch.randn(4, dtype=D)


@pytest.mark.parametrize(
    "fn, shape",
    [
        (lambda x: F.layer_norm(x, (3,), _W, _B).exp().mean(), (4, 3)),
        (lambda x: F.layer_norm(x, (3,), _W).exp().mean(), (4, 3)),
        (lambda x: F.group_norm(x, 2).exp().mean(), (2, 4, 3, 3)),
        (lambda x: F.group_norm(x, 2, _GW, _GB).exp().mean(), (2, 4, 3, 3)),
    ],
    ids=["layer_norm with weight and bias", "layer_norm with weight", "group_norm", "group_norm affine"],
)
def test_a_hessian_vector_product_through_a_fused_norm_backward_equals_eagers(fn, shape):
    # the first backward is the norm's fused kernel, reading the mean and 1/std its forward
    # kept; its own backward sees them move with the input, as eager's double backward does
    x = torch.randn(*shape, dtype=D, requires_grad=True)
    v = torch.randn(*shape, dtype=D)
    torch.testing.assert_close(_hvp(thunder.jit(fn), x, v), _hvp(fn, x, v))
