"""Fourier transforms (``thunder/ops/ltorch/spectral.py``): each ``torch.fft`` transform with a
cut and a padded length (cut or padded also with every size grown by 3, as
``tests/ops/test_dynamic_ops.py`` grows them: one symbolic entry serves both), another dim and each ``norm``; ``stft`` and ``istft`` centred or not,
with and without a window, one- and two-sided."""

from __future__ import annotations

import torch

from .entries import f32, f64, op, s

TOL = {f32: (1e-4, 1e-4)}
DT = (f32, f64)


def _one_dim(m):
    return [
        s(m(3, 8)),
        s(m(3, 8), n=5),
        s(m(8, 3), 24, 0, "ortho"),
        s(m(6), norm="forward"),
        s(m(2, 4, 6), dim=1),
    ]


def _n_dim(m):
    return [
        s(m(3, 4, 6)),
        s(m(3, 4, 6), s=(3, 20)),
        s(m(3, 4, 6), dim=(0,), norm="ortho"),
        s(m(3, 4, 6), s=(10, -1), norm="forward"),
        s(m(2, 4, 6), None, (0, 2)),
    ]


def _complex(x):
    return torch.complex(x, torch.flip(x, (-1,)))


# the transforms of torch.fft along one dimension, and along several
ONE_DIM = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
N_DIM = (
    "fft2",
    "ifft2",
    "fftn",
    "ifftn",
    "rfft2",
    "rfftn",
    "irfft2",
    "irfftn",
    "hfft2",
    "hfftn",
    "ihfft2",
    "ihfftn",
)

for _name in ONE_DIM:
    op(f"fft_{_name}", getattr(torch.fft, _name), _one_dim, DT, tol=TOL)
for _name in ("fft", "ifft"):
    op(
        f"fft_{_name}",
        getattr(torch.fft, _name),
        lambda m: [s(_complex(m(3, 8)), 6)],
        DT,
        variant="complex",
        tol=TOL,
    )
for _name in ("irfft", "hfft"):
    op(
        f"fft_{_name}",
        getattr(torch.fft, _name),
        lambda m: [s(_complex(m(3, 5)), 16)],
        DT,
        variant="complex",
        tol=TOL,
    )
for _name in N_DIM:
    op(f"fft_{_name}", getattr(torch.fft, _name), _n_dim, DT, tol=TOL)
for _name in ("fftshift", "ifftshift"):
    op(
        f"fft_{_name}",
        getattr(torch.fft, _name),
        lambda m: [s(m(3, 5)), s(m(4, 5), dim=1), s(m(3, 4, 5), (0, 2))],
        DT,
        tol=TOL,
    )


def _hann(m, n):
    return torch.hann_window(n, dtype=m.dtype, device=m.device)


op(
    "stft",
    torch.stft,
    lambda m: [
        s(m(64), 16, return_complex=True),
        s(m(2, 64), 16, 4, window=_hann(m, 16), return_complex=True),
        s(m(2, 40), 16, center=False, window=_hann(m, 16), normalized=True, return_complex=True),
        s(m(50), 16, 5, 10, _hann(m, 10), pad_mode="constant", return_complex=False),
        s(m(2, 48), 12, window=_hann(m, 12), onesided=False, return_complex=True),
    ],
    DT,
    torch.Tensor.stft,
    tol=TOL,
)


def _spectrum(m, batch: tuple, n_fft: int, onesided: bool = True):
    x = m(*batch, 64)
    w = _hann(m, n_fft)
    return torch.stft(x, n_fft, window=w, onesided=onesided, return_complex=True), w


def _istft_samples(m):
    spec, w = _spectrum(m, (2,), 16)
    one, w1 = _spectrum(m, (), 16)
    two, w2 = _spectrum(m, (2,), 16, onesided=False)
    return [
        s(spec, 16, window=w),
        s(one, 16, window=w1, length=60),
        s(spec, 16, window=w, normalized=True, length=70),
        s(two, 16, window=w2, onesided=False),
        s(two, 16, window=w2, onesided=False, return_complex=True),
    ]


op("istft", torch.istft, _istft_samples, DT, torch.Tensor.istft, tol=TOL)
