"""Every op of the op database at two sizes through one symbolic entry: each sample, and the
same sample with every size of at least 2 grown by 3, through ``thunder.jit(..., dynamic=True)``
(every dimension a symbol from the first call) give eager's values, and the second call hits the
entry the first made, except for the ops in ``PINNED`` whose samples rely on a size's value (a
branch of the algorithm, an argument that must add up to the size), which get an entry per size.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from support.compare import compare, split_tensors
from support.opdb import OPS, Maker, OpInfo

import thunder

# ops whose samples the compilation specialises on a size: an argument tied to it (split
# sections, as_strided's sizes, select's index), an algorithm that branches on it (cumulative
# products, sorting-based quantiles, searchsorted), a float made of a size (label smoothing's
# 1 / classes), or an op thunder leaves to torch's meta kernels (convolutions, interpolation,
# adaptive pooling, SDPA with masks and its flash kernels' scale of the head size, RNN cells)
PINNED = {
    "as_strided", "split", "chunk", "unbind", "select", "tensor_split", "diagonal", "scatter", "hsplit",
    "vsplit", "dsplit", "tensor_unfold", "cumprod", "cummax", "cummin", "quantile", "isin", "searchsorted",
    "bucketize", "instance_norm", "conv2d", "max_pool1d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "interpolate",
    "interpolate_nearest_exact", "interpolate_linear", "interpolate_bicubic",
    "interpolate_bicubic_fractional_scale", "interpolate_area", "rnn_tanh", "rnn_relu",
    "scaled_dot_product_attention", "cross_entropy", "setitem", "setitem_noop", "pdist", "select_scatter",
    "slice_scatter", "flash_attention_cpu", "flash_attention_cpu_backward",
}  # fmt: skip
# the grown sample is not a valid input of the op, though its reference takes it: an LSTM's gate
# rows are 4 times its hidden size, layer_norm_backward's normalized_shape is its weight's
NOT_GROWN = {"lstm", "layer_norm_backward"}


class _Grown(Maker):
    """Sample tensors with every size of at least 2 grown by ``k`` (sizes 0 and 1 kept)."""

    def __init__(self, dtype: torch.dtype, k: int):
        super().__init__(dtype)
        self.k = k

    def __call__(self, *shape, **kw):
        return super().__call__(*[d + self.k if d >= 2 else d for d in shape], **kw)

    def index(self, high: int, *shape):
        return super().index(high, *[d + self.k if d >= 2 else d for d in shape])


def _pairs(info: OpInfo):
    dtype = info.dtypes[0]
    torch.manual_seed(0)
    samples = info.samples(Maker(dtype))
    torch.manual_seed(0)
    grown = info.samples(_Grown(dtype, 3))
    for a, b in zip(samples, grown):
        ta, rebuild = split_tensors(a)
        tb, _ = split_tensors(b)
        if [t.shape for t in ta] == [t.shape for t in tb]:
            continue  # nothing to grow
        try:
            args, kwargs = rebuild([t.clone() for t in tb])
            expected_b = (info.ref or info.op)(*args, **kwargs)
        except Exception:
            continue  # (the grown sample is no input eager takes: a size tied to an argument)
        yield a, ta, tb, rebuild, expected_b


@pytest.mark.parametrize("info", [o for o in OPS if not o.cuda and o.id not in NOT_GROWN], ids=lambda o: o.id)
def test_op_at_two_sizes(info: OpInfo):
    dtype = info.dtypes[0]
    tried = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sample, ta, tb, rebuild, expected_b in _pairs(info):

            def call(*ts, rebuild=rebuild, op=info.op):
                args, kwargs = rebuild(ts)
                return op(*args, **kwargs)

            jfn = thunder.jit(call, dynamic=True)
            args, kwargs = rebuild([t.clone() for t in ta])
            expected_a = (info.ref or info.op)(*args, **kwargs)
            got_a, got_b = jfn(*ta), jfn(*tb)
            if info.values:
                compare(info, dtype, sample, got_a, expected_a, f"{info.id} at its size")
                compare(info, dtype, sample, got_b, expected_b, f"{info.id} grown")
            if info.id not in PINNED:
                assert thunder.compile_stats(jfn).cache_misses == 1, (
                    f"{info.id}: the grown sample compiled again: "
                    f"{thunder.compile_stats(jfn).entries[-1].miss_reasons[-1]}"
                )
            tried += 1
    if not tried:
        pytest.skip("no sample of this op has a size to grow")


def test_most_ops_serve_two_sizes_with_one_entry():
    assert len(PINNED) < 50 and not PINNED & NOT_GROWN
    assert {o.id for o in OPS} >= PINNED
