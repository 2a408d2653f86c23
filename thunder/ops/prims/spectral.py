"""Discrete Fourier transforms as primitives, aten's three: ``fft_r2c`` (real to complex, all
or half of the last transformed dim), ``fft_c2c`` (complex to complex, either direction),
``fft_c2r`` (the inverse of ``fft_r2c``'s half: complex to real); and ``conj_physical``, the
conjugate the torch-language transforms are composed with.

``normalization`` is aten's code: 0 none, 1 by 1/sqrt(n), 2 by 1/n, where n is the number of
points transformed. The torch-language ops (``thunder/ops/ltorch/spectral.py``) choose it from
``norm`` and the direction; the gradients are in ``thunder/ops/vjp/spectral.py``.
"""

from __future__ import annotations

from thunder.ops.meta import dtype_of, new_tensor, shape_of
from thunder.ops.prims.declare import _torch_prim


def _resized(a, dim, last: int) -> tuple:
    s = list(shape_of(a))
    s[dim[-1]] = last
    return tuple(s)


def _fft_r2c_meta(a, dim, normalization: int, onesided: bool):
    s = shape_of(a)
    last = s[dim[-1]] // 2 + 1 if onesided else s[dim[-1]]
    return new_tensor(_resized(a, dim, last), dtype_of(a).to_complex(), a.meta_device, a)


fft_r2c = _torch_prim("fft_r2c", _fft_r2c_meta, "torch.ops.aten._fft_r2c.default")


def _fft_c2c_meta(a, dim, normalization: int, forward: bool):
    return new_tensor(shape_of(a), dtype_of(a), a.meta_device, a)


fft_c2c = _torch_prim("fft_c2c", _fft_c2c_meta, "torch.ops.aten._fft_c2c.default")


def _fft_c2r_meta(a, dim, normalization: int, last_dim_size: int):
    return new_tensor(_resized(a, dim, last_dim_size), dtype_of(a).to_real(), a.meta_device, a)


fft_c2r = _torch_prim("fft_c2r", _fft_c2r_meta, "torch.ops.aten._fft_c2r.default")


def _conj_physical_meta(a):
    return new_tensor(shape_of(a), dtype_of(a), a.meta_device, a)


# the complex conjugate, in a tensor of its own: what eager's inverse transforms of real data
# (``ifft``, ``ihfft``, ``hfft``'s input) conjugate with
conj_physical = _torch_prim("conj_physical", _conj_physical_meta, "torch.conj_physical")
