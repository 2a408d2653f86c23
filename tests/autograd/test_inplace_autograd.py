"""Autograd rules of in-place writes as eager has them: a leaf that requires grad cannot be
written in place under grad mode; writes into non-leaf inputs give eager's gradients;
``zero_`` keeps requires_grad; a value saved for backward and then written in place makes
backward() raise eager's version-counter error (in the function, across the call, and for
every op of the op database, with the known differences listed)."""

from __future__ import annotations

import re

import pytest
import torch
from support.compare import split_tensors
from support.opdb import OPS, Maker
from torch import nn

import thunder
from thunder.core.pytree import tree_flatten


def add_one(x):
    x.add_(1)
    return x * 2


def test_a_write_into_a_leaf_that_requires_grad_raises_as_in_eager():
    eager = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        add_one(eager)
    a = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"(?s)leaf Variable that requires grad.*test_inplace_autograd.py"):
        thunder.jit(add_one)(a)
    assert torch.equal(a.detach(), torch.zeros(3)) and a.is_leaf


def test_a_leaf_after_a_non_leaf_misses_and_raises():
    jfn = thunder.jit(add_one)
    w = torch.ones(2, requires_grad=True)
    jfn(w * 1)
    leaf = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        jfn(leaf)
    assert torch.equal(leaf.detach(), torch.ones(2))


def test_a_write_into_a_leaf_under_no_grad_is_allowed():
    def f(x):
        with torch.no_grad():
            x.mul_(3)
        return x * 1

    a, b = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    torch.testing.assert_close(thunder.jit(f)(a), f(b))
    torch.testing.assert_close(a, b)


def test_a_parameter_written_in_forward_raises():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(2))

        def forward(self, x):
            self.w.add_(1)
            return x * self.w

    m = M()
    with pytest.raises(RuntimeError, match="leaf Variable"):
        thunder.jit(m)(torch.ones(2))
    assert torch.equal(m.w.detach(), torch.ones(2))


@pytest.mark.parametrize("write", [lambda y: y.mul_(3), lambda y: y.T.mul_(3), lambda y: y[0:1].mul_(3)])
def test_gradients_through_writes_into_a_non_leaf_input(write):
    def f(y):
        write(y)
        return (y * 2).sum()

    w = torch.ones(2, 2, requires_grad=True)
    f(w * 1).backward()
    expected = w.grad.clone()
    w.grad = None
    thunder.jit(f)(w * 1).backward()
    torch.testing.assert_close(w.grad, expected)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, w: x.mul_(w).sum(),
        lambda x, w: (x[1:].mul_(w[1:]), (x * w).sum())[1],
        lambda x, w: (x.T.add_(w), (x.exp() * w).sum())[1],
    ],
    ids=["mul_", "a view's mul_", "read after the write"],
)
def test_thunders_write_back_into_a_plain_input_is_not_a_users_write(fn):
    x, w = torch.randn(3, 3), torch.randn(3, 3, requires_grad=True)
    x_eager, w_eager = x.clone(), w.detach().clone().requires_grad_()
    fn(x_eager, w_eager).backward()
    x_thunder = x.clone()
    thunder.jit(fn)(x_thunder, w).backward()
    torch.testing.assert_close(w.grad, w_eager.grad)
    torch.testing.assert_close(x_thunder, x_eager.detach())


def test_zero_keeps_requires_grad():
    def f(y):
        return y.zero_()

    out = thunder.jit(f)(torch.ones(2, requires_grad=True) * 1)
    assert out.requires_grad == f(torch.ones(2, requires_grad=True) * 1).requires_grad


# -- the version-counter error: a value saved for backward, then written in place -------------
# Eager's autograd raises at backward() when a tensor that an op saved for its backward was
# written in place afterwards; thunder's backward (which would silently use the value from before
# the write) raises the same error. Every case runs eagerly first: eager is the oracle.

INPLACE_ERROR = "modified by an inplace operation"


def _outcome(fn, *tensors, after=None, loss=lambda out: out.sum()):
    """``("error", message)`` when backward() raises the version-counter error, else ``("ok",
    (outputs, gradients of the leaves))``; the forward itself must work."""
    leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in tensors]
    out = fn(*leaves)
    if after is not None:
        after(out, leaves)
    try:
        loss(out).backward()
    except RuntimeError as e:
        assert INPLACE_ERROR in str(e), e
        return "error", str(e)
    return "ok", ((out.detach() if isinstance(out, torch.Tensor) else None), [t.grad for t in leaves])


def _same_as_eager(fn, *tensors, **kw) -> str:
    expected = _outcome(fn, *tensors, **kw)
    got = _outcome(thunder.jit(fn), *tensors, **kw)
    assert got[0] == expected[0], (
        f"eager: {expected[0]}, thunder: {got[0]} {got[1] if got[0] == 'error' else ''}"
    )
    if expected[0] == "ok":
        torch.testing.assert_close(got[1], expected[1])
    return got[0]


def exp_then_add(x, w):
    y = x.exp()  # exp saves its result
    y.add_(1)
    return y


def sin_input_overwritten(x, w):
    y = x * 2
    z = y.sin()  # sin saves its input y
    y.mul_(3)
    return z


def add_saves_nothing(x, w):
    y = x * 2
    z = y + 1
    y.mul_(3)
    return z + y


def relu_result_overwritten(x, w):
    y = x.relu()  # relu saves its result
    z = y * 2
    y.add_(1)
    return z


def square_operand_overwritten(x, w):
    y = x * 2
    z = y * y
    y.mul_(3)
    return z


def exp_input_overwritten(x, w):
    y = x * 2
    z = y.exp()  # exp saves its result, not y
    y.add_(1)
    return z + y


def write_through_a_view(x, w):
    y = x.tanh()
    y[0:2].mul_(2)  # a view shares its base's version counter
    return y


def write_into_the_base_of_a_saved_view(x, w):
    y = x * 1
    v = y.view(3)
    z = v.sin()  # saves the view v
    y.add_(1)
    return z


def inplace_op_reads_its_own_target(x, w):
    y = x * 1
    y.mul_(w)  # mul_ saves y's old value itself
    return y


def inplace_op_reads_its_target_twice(x, w):
    y = x * 1
    y.mul_(y)  # saves y as the other operand too
    return y


def inplace_exp_of_a_view(x, w):
    y = x * 1
    y[0:2].exp_()  # saves the view's result, at the version exp_ made
    return y


def inplace_exp_of_a_view_then_the_base_written(x, w):
    y = x * 1
    y[0:2].exp_()
    y.add_(1)
    return y


def write_before_the_read(x, w):
    y = x * 2
    y.mul_(3)
    return y.sin()


def read_under_no_grad(x, w):
    y = x * 2
    with torch.no_grad():
        z = y.sin()  # no graph: nothing saved
    y.add_(1)
    return y + z


def setitem_into_a_saved_result(x, w):
    y = x.exp()
    y[0] = 0
    return y


def inplace_flag_of_a_functional(x, w):
    y = x.sigmoid()  # saves its result
    z = y * 2
    torch.nn.functional.relu(y, inplace=True)
    return z


def copy_into_a_saved_input(x, w):
    y = x * 2
    z = y.sin()
    y.copy_(w)  # the value of another tensor, written into y's storage
    return z


def zero_a_saved_result(x, w):
    y = x.exp()
    y.zero_()
    return y


@pytest.mark.parametrize(
    "fn, raises",
    [
        (setitem_into_a_saved_result, True),
        (inplace_flag_of_a_functional, True),
        (copy_into_a_saved_input, True),
        (zero_a_saved_result, True),
        (exp_then_add, True),
        (sin_input_overwritten, True),
        (add_saves_nothing, False),
        (relu_result_overwritten, True),
        (square_operand_overwritten, True),
        (exp_input_overwritten, False),
        (write_through_a_view, True),
        (write_into_the_base_of_a_saved_view, True),
        (inplace_op_reads_its_own_target, False),
        (inplace_op_reads_its_target_twice, True),
        (inplace_exp_of_a_view, False),
        (inplace_exp_of_a_view_then_the_base_written, True),
        (write_before_the_read, False),
        (read_under_no_grad, False),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_a_saved_value_written_in_place_raises_at_backward_as_in_eager(fn, raises):
    x, w = torch.rand(3) + 0.5, torch.rand(3) + 0.5
    assert _same_as_eager(fn, x, w) == ("error" if raises else "ok")


def _operand_written_after_a_4d_matmul(q, k):
    q = q * 1
    y = q @ k  # (runs as batched_matmul: the backward reads q made 3-dim, a view of q)
    q.mul_(2)
    return y.sum()


def test_an_operand_of_a_4d_matmul_written_after_it_raises_as_in_eager():
    """A 4-dim matmul's forward keeps its operands made 3-dim (``batched_matmul``, as eager's
    ``BmmBackward`` saves them): a write into an operand after the product still reaches what
    the backward reads, and raises at backward as eager's does; without the write, gradients
    are eager's."""
    q, k = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 5, 6)
    jfn = thunder.jit(_operand_written_after_a_4d_matmul)
    for fn in (_operand_written_after_a_4d_matmul, jfn):
        a, b = q.clone().requires_grad_(), k.clone().requires_grad_()
        with pytest.raises(RuntimeError, match=INPLACE_ERROR):
            fn(a, b).backward()
    assert any("ltorch.batched_matmul" in str(t) for t in thunder.last_traces(jfn))

    def no_write(q, k):
        return (q @ k).sum()

    a, b = q.clone().requires_grad_(), k.clone().requires_grad_()
    thunder.jit(no_write)(a, b).backward()
    ea, eb = q.clone().requires_grad_(), k.clone().requires_grad_()
    no_write(ea, eb).backward()
    torch.testing.assert_close((a.grad, b.grad), (ea.grad, eb.grad))


def test_the_error_names_the_op_that_saved_and_the_write_with_their_lines():
    x = torch.ones(3, requires_grad=True)
    out = thunder.jit(exp_then_add)(x, None)
    with pytest.raises(RuntimeError, match=INPLACE_ERROR) as info:
        out.sum().backward()
    message = str(info.value)
    assert "ltorch.exp saved its result" in message and "torch.Tensor.add_ then wrote into it" in message
    assert re.search(
        r"saved by ltorch.exp at .*test_inplace_autograd.py:\d+ in exp_then_add: y = x.exp\(\)", message
    )
    assert re.search(
        r"written by torch.Tensor.add_ at .*test_inplace_autograd.py:\d+ in exp_then_add: y.add_\(1\)",
        message,
    )


def test_without_backward_nothing_is_raised():
    x = torch.rand(3, requires_grad=True)
    torch.testing.assert_close(thunder.jit(exp_then_add)(x, None), exp_then_add(x, None))
    plain = torch.rand(3)  # nothing requires grad: no graph, nothing saved
    torch.testing.assert_close(thunder.jit(exp_then_add)(plain, None), exp_then_add(plain, None))
    assert not thunder.jit(exp_then_add)(plain, None).requires_grad


def test_a_written_non_leaf_input_read_before_the_write_raises():
    def f(y):
        z = y.sin()  # saves the input
        y.mul_(2)
        return z

    assert _same_as_eager(lambda x: f(x * 1), torch.rand(3)) == "error"


def two_outputs(x):
    y = x.exp()
    y.add_(1)
    return y, x * 3


@pytest.mark.parametrize("which", [0, 1])
def test_only_a_backward_through_the_op_raises(which):
    """A backward from an output that does not reach the op that saved the value is fine."""
    assert _same_as_eager(two_outputs, torch.rand(3), loss=lambda out: out[which].sum()) == (
        "error" if which == 0 else "ok"
    )


def test_a_cached_call_raises_too():
    jfn = thunder.jit(exp_then_add)
    for _ in range(2):
        out = jfn(torch.rand(3, requires_grad=True), None)
        with pytest.raises(RuntimeError, match=INPLACE_ERROR):
            out.sum().backward()
    assert thunder.compile_stats(jfn).cache_hits == 1


# -- across the call: the user writes an input or an output before backward() ---------------
def product(x, w):
    return x * w


def exp_of(x, w):
    return x.exp() + 0 * w


def sin_of(x, w):
    return x.sin() + 0 * w


def _write_input(out, leaves):
    with torch.no_grad():
        leaves[1].add_(1)


def _write_output(out, leaves):
    out.mul_(2)


@pytest.mark.parametrize(
    "fn, after, raises",
    [
        (product, _write_input, True),  # mul saves each operand for the other's gradient
        (exp_of, _write_output, False),  # the output of add, which saves nothing
        (lambda x, w: x.exp(), _write_output, True),  # exp saves its result
        (sin_of, _write_input, False),  # nothing reads w's value
        (lambda x, w: x.sin(), _write_output, False),  # sin saves its input, not its result
    ],
)
def test_writes_after_the_call_as_in_eager(fn, after, raises):
    x, w = torch.rand(3), torch.rand(3)
    assert _same_as_eager(fn, x, w, after=after) == ("error" if raises else "ok")


# -- over the op database: y = op(x), then y (or x) written in place, then backward ----------
# What an op saves is eager's backward node's business; thunder stands for it with the forward
# values its VJP rule reads (an op differentiated through its decomposition reads the inputs
# it recomputes intermediates from). Where the two knowingly differ:
_SHAPE_ONLY = "eager saves the input though its backward uses only the input's shape"
_RECOMPUTES = (
    "eager composes the op of ops that save an intermediate; thunder's backward recomputes it from the input"
)
_RESULT = "eager's backward reads the result; thunder's recomputes what it needs from the input"
_ZERO_GRAD = "eager's sgn saves its input and its result though a real input's gradient is zero"
_UNSUPPORTED_VIEW = "thunder refuses in-place writes into this view (not a version-counter matter)"
_THUNDER_ONLY = (
    "a thunder op with no eager counterpart, called directly: eager runs it on real tensors, which "
    "fails, where the jitted call records it (its eager behaviour is checked through y.detach() writes "
    "in tests/frontend/torch_calls/test_views_writes.py)"
)
_DECOMPOSED_SAVES_LESS = (
    "a thunder op called directly runs its decomposition, whose eager autograd reads no result; thunder's "
    "rule reads the output, as the aten kernel's backward node (and F.scaled_dot_product_attention's) does"
)
_FOREACH_SAVES = (
    "eager's _foreach_* backward node saves every input, also the tensors whose gradient reads none"
)
_SVD_SAVES = (
    "eager's svdvals keeps the singular vectors and values it computed (a write into the values raises, one "
    "into the input does not); thunder's backward factorizes the input again"
)
KNOWN_DIFFERENCES = {
    ("write_through_detach", "output"): _THUNDER_ONLY,
    ("write_through_detach", "input"): _THUNDER_ONLY,
    ("gather", "input"): _SHAPE_ONLY,
    ("take_along_dim", "input"): _SHAPE_ONLY,
    ("max_pool1d_indices", "input"): _SHAPE_ONLY,
    ("max_pool2d_indices", "input"): _SHAPE_ONLY,
    ("max_pool3d_indices", "input"): _SHAPE_ONLY,
    ("nll_loss", "input"): _SHAPE_ONLY,
    (
        "scatter_reduce",
        "input",
    ): "eager saves the input and the source for the product and extremum reductions",
    ("scatter_reduce", "output"): _RESULT,
    ("tanhshrink", "input"): _RECOMPUTES,
    ("l1_loss", "input"): _RECOMPUTES,
    ("cross_entropy", "input"): _RECOMPUTES,
    ("log_softmax_backward", "input"): _RECOMPUTES,
    ("cumprod", "output"): _RESULT,
    ("cumprod_zeros", "output"): _RESULT,
    ("logcumsumexp", "output"): _RESULT,
    ("cdist", "output"): _RESULT,
    ("flash_attention_cpu", "output"): _DECOMPOSED_SAVES_LESS,
    ("cdist_zero_distance", "output"): _RESULT,
    ("narrow_tensor_start", "output"): _UNSUPPORTED_VIEW,
    ("take", "input"): _SHAPE_ONLY,
    ("median", "output"): _RESULT,
    ("quantile", "input"): _RECOMPUTES,
    ("nanquantile", "input"): _RECOMPUTES,
    ("kron", "input"): _RECOMPUTES,
    ("sgn", "input"): _ZERO_GRAD,
    ("sgn", "output"): _ZERO_GRAD,
    ("special_ndtr", "input"): _RECOMPUTES,
    ("special_log_ndtr", "output"): _RESULT,
    ("margin_ranking_loss", "input"): _RECOMPUTES,
    ("hinge_embedding_loss", "input"): _RECOMPUTES,
    ("pairwise_distance", "input"): _RECOMPUTES,
    ("batched_matmul", "input"): (
        "no user code calls it: the grad pass uses it as matmul's forward, where a write into an operand "
        "after the product raises as in eager (test_an_operand_of_a_4d_matmul_written_after_it_raises_as_in_eager); "
        "called directly, its 3-dim outputs are not known as views of its arguments"
    ),
    ("triplet_margin_loss", "input"): _RECOMPUTES,
    ("gaussian_nll_loss", "input"): _RECOMPUTES,
    ("foreach_add", "input"): _FOREACH_SAVES,
    ("foreach_sub", "input"): _FOREACH_SAVES,
    ("foreach_addcmul", "input"): _FOREACH_SAVES,
    ("foreach_addcdiv", "input"): _FOREACH_SAVES,
    ("cov", "input"): _RECOMPUTES,
    ("corrcoef", "input"): _RECOMPUTES,
    ("index_reduce", "output"): _RESULT,
    ("linalg_eigvalsh", "output"): (
        "eager's eigh backward node saves the eigenvalues too, though without a gradient for the eigenvectors "
        "it reads only the eigenvectors"
    ),
    ("linalg_svdvals", "output"): _SVD_SAVES,
    ("linalg_svdvals", "input"): _SVD_SAVES,
    ("linalg_matrix_norm", "input"): _SVD_SAVES,  # (its first sample: order 2, through svdvals)
    ("linalg_norm_singular_values", "input"): _SVD_SAVES,
    ("cholesky_solve", "input"): (
        "eager's cholesky_solve backward node saves B, the right-hand side, though its formula reads only the "
        "factor and the result; thunder's backward does not read B"
    ),
}


def _assert_grads_close(got, expected):
    for g, e in zip(got, expected):
        # an input the result does not depend on: no gradient here, zeros in eager
        g = torch.zeros_like(e) if g is None and e is not None else g
        e = torch.zeros_like(g) if e is None and g is not None else e
        torch.testing.assert_close(g, e, equal_nan=True)


def _op_cases():
    for info in OPS:
        if torch.float64 not in info.dtypes or not info.values or info.cuda or info.numerical_grad:
            continue
        for which in ("output", "input"):
            reason = KNOWN_DIFFERENCES.get((info.id, which))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(info, which, marks=marks, id=f"{info.id}-{which}")


def _write_after(info, rebuild, which):
    def f(*ts):
        ts = [t * 1 if t.requires_grad else t for t in ts]  # non-leaves: writable under grad mode
        args, kwargs = rebuild(ts)
        outs = [o for o in tree_flatten(info.op(*args, **kwargs))[0] if isinstance(o, torch.Tensor)]
        outs = [o for o in outs if o.is_floating_point()]
        target = outs[0] if which == "output" else next(t for t in ts if t.requires_grad)
        target.mul_(2)  # mul by a number saves nothing itself
        return sum(o.sum() for o in outs)

    return f


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("info, which", list(_op_cases()))
def test_ops_raise_at_backward_exactly_when_eager_does(info, which):
    tensors, rebuild = split_tensors(info.samples(Maker(torch.float64))[0])
    if not any(t.is_floating_point() for t in tensors):
        pytest.skip("no floating input")
    fn = _write_after(info, rebuild, which)
    try:
        eager = _outcome(fn, *tensors, loss=lambda out: out)
    except Exception as e:  # eager refuses the write itself, or has nothing to differentiate
        pytest.skip(f"eager: {type(e).__name__}: {e}")
    got = _outcome(thunder.jit(fn), *tensors, loss=lambda out: out)
    assert got[0] == eager[0], f"eager: {eager[0]}; thunder: {got[0]}"
    if eager[0] == "ok":
        _assert_grads_close(got[1][1], eager[1][1])


def test_a_write_after_the_call_names_what_the_backward_reads():
    x, w = torch.rand(3, requires_grad=True), torch.rand(3, requires_grad=True)
    out = thunder.jit(product)(x, w)
    with torch.no_grad():
        w.add_(1)
    with pytest.raises(
        RuntimeError,
        match=r"(?s)modified by an inplace operation.*backward of product reads the values of its inputs x, w",
    ):
        out.sum().backward()


def test_an_input_saved_only_to_recompute_from_is_a_known_difference():
    """Rematerialization saves ``x`` to recompute ``x * 2`` in the backward, where eager saves
    ``x * 2`` itself: written in place after the call, ``x`` makes thunder's backward raise
    (never compute with the new value) where eager's raises nothing."""

    def f(x, w):
        return (x * 2).sin() * w

    def write_x(out, leaves):
        with torch.no_grad():
            leaves[0].add_(1)

    x, w = torch.rand(3), torch.rand(3)
    assert _outcome(f, x, w, after=write_x)[0] == "ok"
    outcome, message = _outcome(thunder.jit(f), x, w, after=write_x)
    assert outcome == "error" and "reads x only to recompute values that eager saves instead" in message


def test_a_gradient_for_other_inputs_only_is_a_known_difference():
    """The compiled backward is one autograd node: ``autograd.grad`` for ``w`` alone runs it
    whole and raises, where eager skips exp's backward (it feeds only ``x``'s gradient)."""

    def f(x, w):
        y = x.exp()
        y.add_(1)
        return (y + w).sum()

    x, w = torch.rand(3, requires_grad=True), torch.rand(3, requires_grad=True)
    assert torch.equal(torch.autograd.grad(f(x, w), w)[0], torch.ones(3))
    with pytest.raises(RuntimeError, match=INPLACE_ERROR):
        torch.autograd.grad(thunder.jit(f)(x, w), w)


# -- the in-place variants of the op database's ops: a.op_(...), then (or not) a.add_(1) -----
# The value an in-place op saves of the tensor it writes is a copy in eager (so no later write
# reaches it) unless the op saves its result.
_SHAPE_INPLACE = "thunder does not support in-place ops that change the shape"
_UNRECORDED = "eager's autograd does not record the write: the gradient passes as if nothing was written"
KNOWN_INPLACE_DIFFERENCES = {
    **{
        (n, later): _UNRECORDED
        for n in ("logical_not", "logical_and", "logical_or", "logical_xor")
        for later in (False, True)
    },
    **{
        (n, later): _SHAPE_INPLACE
        for n in ("t", "transpose", "unsqueeze", "squeeze", "as_strided")
        for later in (False, True)
    },
    ("cumprod", True): _RESULT,
    ("cumprod_zeros", True): _RESULT,
    ("scatter_reduce", True): _RESULT,
    ("index_reduce", True): _RESULT,
    ("sgn", True): _ZERO_GRAD,
}


def _inplace_cases():
    seen = set()
    for info in OPS:
        name = getattr(info.op, "__name__", "")
        if torch.float64 not in info.dtypes or not info.values or info.cuda or info.numerical_grad:
            continue
        if getattr(torch.Tensor, name + "_", None) is None or info.id in seen:
            continue
        seen.add(info.id)
        for later in (False, True):
            reason = KNOWN_INPLACE_DIFFERENCES.get((info.id, later))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(
                info, name + "_", later, marks=marks, id=f"{name}_-{info.id}{'-then-add_' * later}"
            )


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("info, method, later", list(_inplace_cases()))
def test_inplace_ops_raise_at_backward_exactly_when_eager_does(info, method, later):
    tensors, rebuild = split_tensors(info.samples(Maker(torch.float64))[0])
    if not tensors or not tensors[0].is_floating_point():
        pytest.skip("the written tensor is not floating")

    def f(*ts):
        ts = [t * 1 if t.requires_grad else t for t in ts]
        args, kwargs = rebuild(ts)
        getattr(args[0], method)(*args[1:], **kwargs)
        if later:
            args[0].add_(1)
        return args[0].sum()

    try:
        eager = _outcome(f, *tensors, loss=lambda out: out)
    except Exception as e:  # eager refuses the write, or has nothing to differentiate
        pytest.skip(f"eager: {type(e).__name__}: {e}")
    got = _outcome(thunder.jit(f), *tensors, loss=lambda out: out)
    assert got[0] == eager[0], f"eager: {eager[0]}; thunder: {got[0]}"
    if eager[0] == "ok":
        _assert_grads_close(got[1][1], eager[1][1])
