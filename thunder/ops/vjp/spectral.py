"""VJP rules of the FFT prims (``thunder/ops/prims/spectral.py``), eager's formulas
(``tools/autograd/derivatives.yaml``, ``fft_r2c_backward``/``fft_c2r_backward`` in
``FunctionsManual.cpp``): a transform's gradient is the transform the other way with the same
normalisation code; the half spectrum of ``fft_r2c`` is zero-padded back to the full one first,
and ``fft_c2r``'s gradient doubles the frequencies whose mirror images it left out.
"""

from __future__ import annotations

import torch

from thunder.ops import prims
from thunder.ops.meta import device_of, dtype_of, shape_of
from thunder.ops.vjp.table import rule_for


@rule_for(prims.fft_c2c)
def _fft_c2c(g, out, a, dim, normalization: int, forward: bool):
    return prims.fft_c2c(g, dim, normalization, not forward), None, None, None


def _padded(g, d: int, size: int):
    """``g`` zero-padded at the end of dim ``d`` up to ``size``."""
    have = shape_of(g)[d]
    if have == size:
        return g
    shape = list(shape_of(g))
    shape[d] = size - have
    return prims.cat([g, prims.full(tuple(shape), 0, dtype=dtype_of(g), device=device_of(g))], d)


@rule_for(prims.fft_r2c)
def _fft_r2c(g, out, a, dim, normalization: int, onesided: bool):
    d = dim[-1]
    full = _padded(g, d, shape_of(a)[d]) if onesided else g
    return prims.real(prims.fft_c2c(full, dim, normalization, False)), None, None, None


@rule_for(prims.fft_c2r)
def _fft_c2r(g, out, a, dim, normalization: int, last_dim_size: int):
    d = dim[-1]
    gi = prims.fft_r2c(g, dim, normalization, True)
    half = shape_of(gi)[d]
    doubled = last_dim_size - half  # entries 1 .. doubled stand for their mirror images too
    if doubled > 0:
        idx = prims.iota(half, start=0, step=1, dtype=torch.int64, device=device_of(gi))
        inside = prims.logical_and(prims.ge(idx, 1), prims.le(idx, doubled))
        scale = prims.where(inside, 2.0, 1.0)
        rank = len(shape_of(gi))
        gi = prims.mul(gi, prims.broadcast_in_dim(scale, shape_of(gi), (d % rank,)))
    return _padded(gi, d, shape_of(a)[d]), None, None, None


@rule_for(prims.conj_physical)
def _conj_physical(g, out, a):
    return (prims.conj_physical(g),)
