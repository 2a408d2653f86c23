"""Attention and normalisation differentiated as eager differentiates them: where eager runs a
fused kernel and its fused backward (the CPU flash attention pair, ``native_group_norm`` and
``native_layer_norm`` with their backward kernels), thunder's forward keeps what that backward
takes and the torch executor runs the same kernels (``thunder/ops/vjp/attention.py``,
``thunder/ops/vjp/normalization.py``), so values and gradients equal eager's exactly; where
eager does not (dropout, a mask that needs a gradient, 3-dim inputs), the decomposition's
gradients equal eager's within rounding. Each case over three calls at two sizes; the
torch.compile executor differentiates the decompositions of the same ops.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend

import thunder
from thunder.ops import ltorch

EXACT = {"rtol": 0, "atol": 0}


def _leaves(tensors):
    """Copies of ``tensors`` as leaves, each floating one needing a gradient unless its
    ``no_grad`` attribute is set (a mask that needs none)."""
    return [
        t.detach().clone().requires_grad_(t.is_floating_point() and not getattr(t, "no_grad", False))
        for t in tensors
    ]


def _no_grad(t):
    t.no_grad = True
    return t


def _fused_ops(jfn) -> set[str]:
    """The kernels of the last forward and backward traces that are eager's fused ones."""
    fused = (
        "flash_attention_cpu",
        "native_group_norm",
        "native_layer_norm",
        "group_norm_backward",
        "layer_norm_backward",
    )
    traces = (thunder.last_traces(jfn)[-1], thunder.last_backward_traces(jfn)[-1])
    return {b.sym.id for t in traces for b in t.bound_symbols if any(f in b.sym.id for f in fused)}


def _check(fn, make_inputs, *, fused: set[str], executors=None, tol=EXACT):
    """``fn`` jitted against eager over three calls at each of two sizes (``make_inputs(size)``):
    outputs and every input's gradient (for a random cotangent) within ``tol``; the traces run
    exactly the kernels in ``fused`` of eager's fused ones."""
    jfn = thunder.jit(fn, executors=executors)
    for size in (0, 1):
        for _ in range(3):
            inputs = make_inputs(size)
            got_in, want_in = _leaves(inputs), _leaves(inputs)
            got, want = jfn(*got_in), fn(*want_in)
            torch.testing.assert_close(got, want, **tol)
            cotangent = torch.randn_like(want)
            got.backward(cotangent)
            want.backward(cotangent)
            for i, (g, w) in enumerate(zip(got_in, want_in)):
                assert (g.grad is None) == (w.grad is None), f"input {i}: {g.grad} vs eager's {w.grad}"
                if w.grad is not None:
                    torch.testing.assert_close(g.grad, w.grad, **tol, msg=lambda m, i=i: f"input {i}: {m}")
            assert _fused_ops(jfn) == fused


# -- attention ------------------------------------------------------------------------------
FLASH = {"torchex.flash_attention_cpu", "torchex.flash_attention_cpu_backward"}
# (batch, query heads, key heads, query length, key length, head dim) of the two sizes
SIZES = ((2, 4, 4, 16, 16, 8), (1, 2, 2, 9, 13, 16))
GQA_SIZES = ((2, 4, 2, 16, 16, 8), (1, 6, 2, 9, 13, 16))


def _qkv(sizes, dtype=torch.float32):
    def make(i):
        b, hq, hk, lq, lk, e = sizes[i]
        return [
            torch.randn(b, hq, lq, e, dtype=dtype),
            torch.randn(b, hk, lk, e, dtype=dtype),
            torch.randn(b, hk, lk, e, dtype=dtype),
        ]

    return make


def _with(make, *extra):
    """``make``'s inputs and, for each of ``extra``, a tensor made from the query and key."""
    return lambda i: (lambda qkv: qkv + [f(qkv[0], qkv[1]) for f in extra])(make(i))


def _bool_mask(q, k):
    m = torch.rand(q.shape[-2], k.shape[-2]) > 0.3
    m[1] = False  # a query that attends to nothing: output and gradients 0, as eager's
    return m


def _float_mask(q, k):
    return _no_grad(torch.randn(q.shape[0], 1, q.shape[-2], k.shape[-2]))


ATTENTION = {
    "non-causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v), _qkv(SIZES)),
    "causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), _qkv(SIZES)),
    "scale": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3), _qkv(SIZES)),
    "bool mask": (
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        _with(_qkv(SIZES), _bool_mask),
    ),
    "float mask (B, 1, L, S)": (
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m, scale=0.5),
        _with(_qkv(SIZES), _float_mask),
    ),
    "grouped-query": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
        _qkv(GQA_SIZES),
    ),
    "float64": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        _qkv(SIZES, torch.float64),
    ),
    "heads split off a projection": (
        # (B, L, H, E) transposed: the kernels' operands and results in eager's layouts
        lambda q, k, v: F.scaled_dot_product_attention(
            *(t.transpose(1, 2) for t in (q, k, v)), is_causal=True
        ).transpose(1, 2),
        lambda i: [t.transpose(1, 2).contiguous() for t in _qkv(SIZES)(i)],
    ),
}


@pytest.mark.parametrize("case", list(ATTENTION))
def test_attention_backward_is_eagers_flash_kernel(case):
    fn, make = ATTENTION[case]
    _check(fn, make, fused=FLASH)


def test_low_precision_attention_runs_the_flash_kernels():
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    _check(fn, _qkv(SIZES, torch.bfloat16), fused=FLASH)


def _needs_grad_mask(q, k):
    return torch.randn(q.shape[-2], k.shape[-2])


NOT_FLASH = {
    # eager's dispatcher picks its math backend for these: thunder differentiates the decomposition
    "a mask that needs a gradient": (
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m),
        _with(_qkv(SIZES), _needs_grad_mask),
    ),
    "3-dim inputs": (
        lambda q, k, v: F.scaled_dot_product_attention(q[0], k[0], v[0], is_causal=True),
        _qkv(SIZES),
    ),
    "a 3-dim mask": (
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m.detach()[None]),
        _with(_qkv(SIZES), _needs_grad_mask),
    ),
}


@pytest.mark.parametrize("case", list(NOT_FLASH))
def test_attention_where_eager_uses_its_math_backend(case):
    fn, make = NOT_FLASH[case]
    _check(fn, make, fused=set(), tol={"rtol": 1e-5, "atol": 1e-5})


def test_attention_with_dropout_keeps_the_decomposition():
    q, k, v = _leaves(_qkv(SIZES)(0))
    jfn = thunder.jit(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5))
    jfn(q, k, v).sum().backward()
    assert q.grad.shape == q.shape and _fused_ops(jfn) == set()


def _choice_cases():
    """Arguments around each of eager's checks: (query, key, value, mask, dropout_p, enable_gqa)."""
    q, k = torch.randn(2, 4, 8, 16), torch.randn(2, 4, 6, 16)
    fm = torch.zeros(8, 6)
    yield q, k, k, None, 0.0, False
    yield q, k, k, None, 0.1, False  # dropout
    yield q[0], k[0], k[0], None, 0.0, False  # 3 dims
    yield q[None], k[None], k[None], None, 0.0, False  # 5 dims
    yield q.double(), k.double(), k.double(), None, 0.0, False
    yield q.bfloat16(), k.bfloat16(), k.bfloat16(), None, 0.0, False
    yield q.half(), k.half(), k.half(), None, 0.0, False
    yield q.int(), k.int(), k.int(), None, 0.0, False
    yield q, k.double(), k, None, 0.0, False  # mixed dtypes
    yield q, k[:1], k[:1], None, 0.0, False  # batch sizes differ
    yield q, k[:, :1], k[:, :1], None, 0.0, False  # one key head without enable_gqa
    yield q, k[:, :2], k[:, :2], None, 0.0, True  # grouped-query
    yield q, k[:, :2], k[:, :2], None, 0.0, False
    yield q[:, :3], k[:, :2], k[:, :2], None, 0.0, True  # 3 query heads for 2 key heads
    yield q, k[:, :2], k, None, 0.0, True  # key and value heads differ
    yield q, k, k[..., :8], None, 0.0, False  # value's head dim differs
    yield q[:, :, :0], k, k, None, 0.0, False  # no queries
    yield q, k[:, :, :0], k[:, :, :0], None, 0.0, False  # no keys
    yield q[:0], k[:0], k[:0], None, 0.0, False  # no batch
    for mask in (
        fm,
        fm > 0,
        fm[None],
        fm[None, None],
        fm.expand(2, 4, 8, 6),
        fm[:1],
        fm[:, :1],
        fm[None, :1],
    ):
        yield q, k, k, mask, 0.0, False
    yield q, k, k, fm.expand(3, 4, 8, 6), 0.0, False
    yield q, k, k, fm.double(), 0.0, False
    yield q.double(), k.double(), k.double(), fm, 0.0, False  # a float32 mask for float64
    yield q, k, k, fm.clone().requires_grad_(), 0.0, False
    yield q, k, k, fm.int(), 0.0, False


@pytest.mark.parametrize("i", range(len(list(_choice_cases()))))
def test_flash_attention_applies_where_eagers_dispatcher_picks_it(i):
    q, k, v, mask, dropout_p, gqa = list(_choice_cases())[i]
    q = q.requires_grad_() if q.is_floating_point() else q
    try:
        F.scaled_dot_product_attention(q, k, v, mask, dropout_p, enable_gqa=gqa)
        eager = SDPBackend(torch._fused_sdp_choice(q, k, v, mask, dropout_p, False, enable_gqa=gqa))
    except (RuntimeError, IndexError):
        eager = None  # eager refuses these arguments (so does thunder, while tracing)
    got = ltorch.flash_attention_applies(q, k, v, mask, dropout_p, False, gqa)
    assert got == (eager == SDPBackend.FLASH_ATTENTION)


def test_flash_attention_is_off_where_eager_turns_it_off():
    q, k, v = _leaves(_qkv(SIZES)(0))
    with torch.nn.attention.sdpa_kernel(SDPBackend.MATH):
        assert not ltorch.flash_attention_applies(q, k, v)
    assert ltorch.flash_attention_applies(q, k, v)


def test_attention_operands_with_a_strided_last_dim():
    """Eager sends a query whose last dim is not contiguous to its math backend; the torch
    executor gives the kernels a contiguous copy (they read such a tensor wrongly)."""
    fn = lambda q, k, v: F.scaled_dot_product_attention(q.transpose(-1, -2), k, v)  # noqa: E731

    def make(i):
        q, k, v = _qkv(SIZES)(i)
        return [q.transpose(-1, -2).contiguous(), k, v]

    _check(fn, make, fused=FLASH, tol={"rtol": 1e-5, "atol": 1e-5})


# -- normalisation --------------------------------------------------------------------------
NORM_SIZES = ((2, 6, 5, 3), (3, 6, 4, 2, 4))


def _norm_inputs(*params, dtype=torch.float32, param_dtype=None, channels_last=False):
    """An input of each size and the parameters (shapes as functions of the input's shape), of
    ``param_dtype`` (default: the input's)."""

    def make(i):
        x = torch.randn(NORM_SIZES[i], dtype=dtype)
        if channels_last and x.ndim == 4:
            x = x.contiguous(memory_format=torch.channels_last)
        return [x] + [torch.randn(p(x.shape), dtype=param_dtype or dtype) for p in params]

    return make


CHANNELS = lambda s: (s[1],)  # noqa: E731
LAST = lambda s: (s[-1],)  # noqa: E731
LAST_TWO = lambda s: tuple(s[-2:])  # noqa: E731
GROUP_NORM = {"torchex.native_group_norm", "torchex.group_norm_backward"}
LAYER_NORM = {"torch.ops.aten.native_layer_norm.default", "torch.ops.aten.native_layer_norm_backward.default"}
LAYER_NORM_SOME = {"torch.ops.aten.native_layer_norm.default", "torchex.layer_norm_backward"}

NORMS = {
    "group_norm affine": (
        lambda x, w, b: F.group_norm(x, 3, w, b),
        _norm_inputs(CHANNELS, CHANNELS),
        GROUP_NORM,
    ),
    "group_norm weight only": (
        lambda x, w: F.group_norm(x, 2, w, eps=1e-3),
        _norm_inputs(CHANNELS),
        GROUP_NORM,
    ),
    "group_norm without affine": (lambda x: F.group_norm(x, 6), _norm_inputs(), GROUP_NORM),
    "group_norm channels_last": (
        lambda x, w, b: F.group_norm(x, 3, w, b),
        _norm_inputs(CHANNELS, CHANNELS, channels_last=True),
        GROUP_NORM,
    ),
    "group_norm of a transposed input": (
        # (diffusers' attention blocks normalise a (B, C, H*W) view of a (B, H*W, C) tensor; the
        # kernels need their input contiguous: eager's group_norm copies it first)
        lambda x, w, b: F.group_norm(x.transpose(2, 3), 3, w, b),
        _norm_inputs(CHANNELS, CHANNELS),
        GROUP_NORM,
    ),
    "group_norm float64": (
        lambda x, w, b: F.group_norm(x, 3, w, b),
        _norm_inputs(CHANNELS, CHANNELS, dtype=torch.float64),
        GROUP_NORM,
    ),
    "nn.GroupNorm": (torch.nn.GroupNorm(3, 6), _norm_inputs(), GROUP_NORM),
    "layer_norm weight and bias": (
        lambda x, w, b: F.layer_norm(x, x.shape[-1:], w, b),
        _norm_inputs(LAST, LAST),
        LAYER_NORM,
    ),
    "layer_norm over two dims": (
        lambda x, w, b: F.layer_norm(x, x.shape[-2:], w, b),
        _norm_inputs(LAST_TWO, LAST_TWO),
        LAYER_NORM,
    ),
    "layer_norm weight only": (
        lambda x, w: F.layer_norm(x, x.shape[-1:], w),
        _norm_inputs(LAST),
        LAYER_NORM_SOME,
    ),
    "layer_norm bias only": (
        lambda x, b: F.layer_norm(x, x.shape[-1:], None, b),
        _norm_inputs(LAST),
        LAYER_NORM_SOME,
    ),
    "layer_norm without weight and bias": (
        lambda x: F.layer_norm(x, x.shape[-2:]),
        _norm_inputs(),
        LAYER_NORM_SOME,
    ),
}


@pytest.mark.parametrize("case", list(NORMS))
def test_norm_backward_is_eagers_kernel(case):
    fn, make, fused = NORMS[case]
    _check(fn, make, fused=fused)


def test_low_precision_group_norm_runs_eagers_kernels():
    """bfloat16 input with float32 parameters: the kernels' mixed type (float32 statistics)."""
    fn = lambda x, w, b: F.group_norm(x, 3, w, b)  # noqa: E731
    _check(
        fn,
        _norm_inputs(CHANNELS, CHANNELS, dtype=torch.bfloat16, param_dtype=torch.float32),
        fused=GROUP_NORM,
    )


def test_group_norm_with_a_bias_and_no_weight_is_differentiated_where_eager_fails():
    """Eager's backward kernel needs the weight for the bias's gradient (its autograd fails
    with "tensor does not have a device"); thunder differentiates the decomposition."""
    x, b = _leaves(_norm_inputs(CHANNELS)(0))
    jfn = thunder.jit(lambda x, b: F.group_norm(x, 3, None, b))
    jfn(x, b).sum().backward()
    torch.testing.assert_close(b.grad, torch.full_like(b, x[:, 0].numel()))
    assert _fused_ops(jfn) == set()


# -- the decompositions, through the torch.compile executor ---------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    "case", ["causal", "bool mask", "grouped-query", "group_norm affine", "layer_norm weight only"]
)
def test_decompositions_through_the_torchcompile_executor(case):
    """Inductor compiles the decompositions of the same ops, in regions with the elementwise
    ops around them (none runs as eager's kernel): eager's values within rounding."""
    fn, make, *_ = {**ATTENTION, **NORMS}[case]

    def around(x, *rest):
        return fn(x * 2, *rest).sin()

    _check(around, make, fused=set(), executors=["torchcompile"], tol={"rtol": 1e-5, "atol": 1e-5})
