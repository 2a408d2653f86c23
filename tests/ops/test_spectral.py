"""Fourier transforms (``thunder/ops/ltorch/spectral.py``, the FFT prims and their gradient
rules in ``thunder/ops/vjp/spectral.py``): values, strides and gradients (complex cotangents
included) equal eager's, batched, over several calls at two sizes; ``istft`` of ``stft`` gives
the signal back; bad arguments are errors that name the op and the value."""

from __future__ import annotations

import pytest
import torch
from support.against_eager import check_calls
from support.opdb.spectral import N_DIM, ONE_DIM

import thunder

f64, c128 = torch.float64, torch.complex128


def _calls(make, sizes=(8, 11), per_size=2):
    return [make(n) for n in sizes for _ in range(per_size)]


@pytest.mark.parametrize(
    "kwargs", [{}, {"n": 6, "norm": "ortho"}, {"n": 13, "dim": 0, "norm": "forward"}], ids=str
)
@pytest.mark.parametrize("name", ONE_DIM)
def test_one_dim_transforms_of_real_inputs_equal_eager(name, kwargs):
    fn = getattr(torch.fft, name)
    check_calls(lambda x: fn(x, **kwargs), _calls(lambda n: [torch.randn(3, n, dtype=f64)]))


@pytest.mark.parametrize("name", ["fft", "ifft", "irfft", "hfft"])
def test_one_dim_transforms_of_complex_inputs_equal_eager(name):
    fn = getattr(torch.fft, name)
    check_calls(lambda x: fn(x, n=10), _calls(lambda n: [torch.randn(2, n, dtype=c128)]))


@pytest.mark.parametrize(
    "kwargs", [{}, {"s": (5, 8)}, {"s": (6, -1), "norm": "ortho"}, {"dim": (0, 2)}], ids=str
)
@pytest.mark.parametrize("name", N_DIM)
def test_n_dim_transforms_equal_eager(name, kwargs):
    fn = getattr(torch.fft, name)
    check_calls(lambda x: fn(x, **kwargs), _calls(lambda n: [torch.randn(2, 4, n, dtype=f64)]))


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts_equal_eager(name):
    fn = getattr(torch.fft, name)
    check_calls(lambda x: (fn(x), fn(x, dim=-1)), _calls(lambda n: [torch.randn(3, n, dtype=f64)]))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "kwargs",
    [
        {"return_complex": True},
        {"hop_length": 3, "window": "hann", "return_complex": True, "normalized": True},
        {"center": False, "window": "hann", "return_complex": True},
        {"win_length": 10, "window": "hann10", "pad_mode": "constant", "return_complex": False},
        {"window": "hann", "onesided": False, "return_complex": True},
    ],
    ids=["plain", "hop-normalized", "uncentred", "short-window", "twosided"],
)
def test_stft_equals_eager_with_gradients_for_signal_and_window(kwargs):
    def fn(x, w):
        kw = dict(kwargs)
        if "window" in kw:
            kw["window"] = w[:10] if kw["window"] == "hann10" else w
        return torch.stft(x, 16, **kw)

    check_calls(fn, _calls(lambda n: [torch.randn(2, 6 * n, dtype=f64), torch.hann_window(16, dtype=f64)]))


@pytest.mark.filterwarnings("ignore:The length of signal is shorter")
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"length": 50}, {"length": 90, "normalized": True}, {"center": True, "hop_length": 8}],
    ids=["plain", "shorter", "longer-normalized", "hop-half"],
)
def test_istft_equals_eager_with_gradients_for_spectrum_and_window(kwargs):
    def make(n):
        w = torch.hann_window(16, dtype=f64)
        return [torch.stft(torch.randn(2, 6 * n, dtype=f64), 16, window=w, return_complex=True), w]

    check_calls(lambda spec, w: torch.istft(spec, 16, window=w, **kwargs), _calls(make))


def test_istft_twosided_and_complex_output_equal_eager():
    def make(n):
        w = torch.hann_window(16, dtype=f64)
        x = torch.randn(6 * n, dtype=f64)
        return [torch.stft(x, 16, window=w, onesided=False, return_complex=True), w]

    check_calls(lambda spec, w: torch.istft(spec, 16, window=w, onesided=False), _calls(make))
    check_calls(
        lambda spec, w: torch.istft(spec, 16, window=w, onesided=False, return_complex=True), _calls(make)
    )


def test_istft_of_stft_is_the_signal():
    x = torch.randn(3, 100, dtype=f64)
    w = torch.hann_window(20, dtype=f64)
    jfn = thunder.jit(
        lambda s: torch.istft(
            torch.stft(s, 20, 5, window=w, return_complex=True), 20, 5, window=w, length=100
        )
    )
    torch.testing.assert_close(jfn(x), x)


def test_transforms_are_the_fft_prims_in_the_trace():
    jfn = thunder.jit(lambda x: torch.fft.ihfft2(x))
    jfn(torch.randn(4, 6, dtype=f64))
    text = str(thunder.last_traces(jfn)[0])
    assert "prims.fft_r2c" in text and "prims.conj_physical" in text and "prims.fft_c2c" in text


_SEVEN_FREQUENCIES = torch.randn(7, 5, dtype=torch.complex64)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: torch.fft.rfft(_SEVEN_FREQUENCIES.to(c128)),
            r"torch.fft.rfft: expects a real input tensor, but got torch.complex128",
        ),
        (lambda: torch.fft.fft(torch.randn(4), n=0), r"torch.fft.fft: invalid number of data points \(0\)"),
        (
            lambda: torch.fft.fft(torch.randn(4), norm="none"),
            r"torch.fft.fft: invalid normalization mode norm='none'",
        ),
        (
            lambda: torch.fft.fftn(torch.randn(3, 4), dim=(0, 0)),
            r"torch.fft.fftn: FFT dims must be unique, got dim=\(0, 0\)",
        ),
        (
            lambda: torch.stft(torch.randn(64), 16),
            r"torch.stft: return_complex must be given for real inputs",
        ),
        (
            lambda: torch.stft(torch.randn(64), 16, window=torch.ones(10), return_complex=True),
            r"torch.stft: expected a 1-D window of size win_length=16, got shape \(10,\)",
        ),
        (lambda: torch.istft(torch.randn(9, 5), 16), r"torch.istft: requires a complex input"),
        (
            lambda: torch.istft(_SEVEN_FREQUENCIES, 16),
            r"torch.istft: expected the frequency dim to be 9 for n_fft=16 and onesided=True, got 7",
        ),
    ],
    ids=[
        "rfft-complex",
        "n-zero",
        "norm",
        "dims",
        "stft-return-complex",
        "stft-window",
        "istft-real",
        "istft-freq",
    ],
)
def test_bad_arguments_are_errors_naming_the_op_and_the_value(call, message):
    with pytest.raises(Exception, match=message):
        thunder.jit(lambda: call())()
