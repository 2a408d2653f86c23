"""Fourier transforms: ``torch.fft``'s ``fft``/``ifft``/``rfft``/``irfft``/``hfft``/``ihfft``,
their 2-D and n-D forms, ``fftshift``/``ifftshift``, and the short-time transforms ``stft`` and
``istft``.

Each is composed as aten composes it (``aten/src/ATen/native/SpectralOps.cpp``): the input
promoted (integers to the default float dtype; a real input of a complex transform to complex),
cut or zero-padded to the lengths asked for, then one of the three FFT prims
(``thunder/ops/prims/spectral.py``) with aten's normalisation code, and a conjugate where aten
takes one. So values and strides are eager's and the gradients come from the prims' rules.
``stft`` cuts its (padded) signal into windowed frames and transforms them; ``istft`` inverts
each frame and adds the frames back where they overlap (an indexed sum), divided by the sum of
the squared windows there. Eager refuses an ``istft`` whose windows leave a sample uncovered
(the sum below 1e-11), which depends on the window's values: thunder does not check it (the
sample is then inf or nan).
"""

from __future__ import annotations

import math

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch.nn import pad as nn_pad
from thunder.ops.ltorch.repetition import roll
from thunder.ops.ltorch.resample import tensor_unfold
from thunder.ops.ltorch.scatter import scatter_add
from thunder.ops.ltorch.shape import _slice_dim, view_as_real
from thunder.ops.meta import ShapeError, canonical_dim, device_of, dtype_of, is_tensor, shape_of

_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2


def _norm(op: str, norm: str | None, forward: bool) -> int:
    """aten's normalisation code for ``norm`` in this direction."""
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _BY_ROOT_N
    raise ShapeError(
        f"{op}: invalid normalization mode norm={norm!r} (expected 'forward', 'backward' or 'ortho')"
    )


def _promoted(op: str, a, complex_: bool):
    """Integers and bools to the default float dtype; to complex for a complex transform."""
    dt = dtype_of(a)
    if not (dt.is_floating_point or dt.is_complex):
        dt = torch.get_default_dtype()
    if complex_ and not dt.is_complex:
        dt = dt.to_complex()
    return a if dt is dtype_of(a) else prims.convert_element_type(a, dt)


def _real_input(op: str, a):
    if dtype_of(a).is_complex:
        raise ShapeError(f"{op}: expects a real input tensor, but got {dtype_of(a)}")
    return _promoted(op, a, False)


def _resized(a, dims, sizes):
    """``a`` cut to, or zero-padded at the end up to, ``sizes[i]`` along ``dims[i]``."""
    pads = [0] * (2 * len(shape_of(a)))
    for d, n in zip(dims, sizes):
        have = shape_of(a)[d]
        if have > n:
            a = _slice_dim(a, d, 0, n)
        elif have < n:
            pads[2 * (len(shape_of(a)) - 1 - d) + 1] = n - have
    if any(pads):
        a = nn_pad(a, pads, "constant", 0)
    return a


def _check_points(op: str, n: int) -> None:
    if n < 1:
        raise ShapeError(f"{op}: invalid number of data points ({n}) specified")


def _one_dim(op: str, a, n, dim: int):
    d = canonical_dim(dim, len(shape_of(a)), op)
    if not shape_of(a):
        raise ShapeError(f"{op}: expected a tensor of at least one dimension, got a 0-dim tensor")
    length = shape_of(a)[d] if n is None else n
    _check_points(op, length)
    return d, length


def _no_out(op: str, out) -> None:
    if out is not None:
        raise ShapeError(f"{op}: out= is not supported")


# -- one dimension ------------------------------------------------------------------------------
def _r2c(op: str, a, n, dim, norm, forward: bool, onesided: bool):
    a = _real_input(op, a)
    d, length = _one_dim(op, a, n, dim)
    out = prims.fft_r2c(_resized(a, (d,), (length,)), (d,), _norm(op, norm, forward), onesided)
    return out if forward else prims.conj_physical(out)


def _c2c(op: str, a, n, dim, norm, forward: bool):
    d, length = _one_dim(op, a, n, dim)
    return prims.fft_c2c(_resized(a, (d,), (length,)), (d,), _norm(op, norm, forward), forward)


def _c2r(op: str, a, n, dim, norm, forward: bool):
    a = _promoted(op, a, True)
    d = canonical_dim(dim, len(shape_of(a)), op)
    length = 2 * (shape_of(a)[d] - 1) if n is None else n
    _check_points(op, length)
    a = _resized(a, (d,), (length // 2 + 1,))
    if forward:
        a = prims.conj_physical(a)
    return prims.fft_c2r(a, (d,), _norm(op, norm, forward), length)


def _fft(op: str, input, n, dim, norm, out, forward: bool):
    """``fft``/``ifft``: complex to complex, or a real input's two-sided transform."""
    _no_out(op, out)
    if dtype_of(input).is_complex:
        return _c2c(op, input, n, dim, norm, forward)
    return _r2c(op, input, n, dim, norm, forward, False)


@torchsymbol(torch.fft.fft, torch_impl="torch.fft.fft", tags=(Tag.MATMUL,), name="fft_fft")
def fft_fft(input, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None):
    return _fft("torch.fft.fft", input, n, dim, norm, out, True)


@torchsymbol(torch.fft.ifft, torch_impl="torch.fft.ifft", tags=(Tag.MATMUL,), name="fft_ifft")
def fft_ifft(input, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None):
    return _fft("torch.fft.ifft", input, n, dim, norm, out, False)


@torchsymbol(torch.fft.rfft, torch_impl="torch.fft.rfft", tags=(Tag.MATMUL,), name="fft_rfft")
def fft_rfft(input, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None):
    _no_out("torch.fft.rfft", out)
    return _r2c("torch.fft.rfft", input, n, dim, norm, True, True)


@torchsymbol(torch.fft.ihfft, torch_impl="torch.fft.ihfft", tags=(Tag.MATMUL,), name="fft_ihfft")
def fft_ihfft(input, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None):
    _no_out("torch.fft.ihfft", out)
    return _r2c("torch.fft.ihfft", input, n, dim, norm, False, True)


@torchsymbol(torch.fft.irfft, torch_impl="torch.fft.irfft", tags=(Tag.MATMUL,), name="fft_irfft")
def fft_irfft(input, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None):
    _no_out("torch.fft.irfft", out)
    return _c2r("torch.fft.irfft", input, n, dim, norm, False)


@torchsymbol(torch.fft.hfft, torch_impl="torch.fft.hfft", tags=(Tag.MATMUL,), name="fft_hfft")
def fft_hfft(input, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None):
    _no_out("torch.fft.hfft", out)
    return _c2r("torch.fft.hfft", input, n, dim, norm, True)


# -- several dimensions -------------------------------------------------------------------------
def _dims_and_sizes(op: str, a, s, dim) -> tuple[tuple, list]:
    """aten's ``canonicalize_fft_shape_and_dim_args``: the dims transformed and their lengths."""
    nd = len(shape_of(a))
    dims = None
    if dim is not None:
        dims = tuple(canonical_dim(d, nd, op) for d in ((dim,) if isinstance(dim, int) else dim))
        if len(set(dims)) != len(dims):
            raise ShapeError(f"{op}: FFT dims must be unique, got dim={dim!r}")
    if s is not None:
        s = tuple(s)
        if dims is not None and len(dims) != len(s):
            raise ShapeError(
                f"{op}: when given, dim and s must have the same length, got s={s!r} and dim={dim!r}"
            )
        if len(s) > nd:
            raise ShapeError(f"{op}: got s with {len(s)} values but the input has only {nd} dimensions")
        if dims is None:
            dims = tuple(range(nd - len(s), nd))
        sizes = [shape_of(a)[d] if n == -1 else n for d, n in zip(dims, s)]
    else:
        dims = tuple(range(nd)) if dims is None else dims
        sizes = [shape_of(a)[d] for d in dims]
    for n in sizes:
        _check_points(op, n)
    return dims, sizes


def _at_least_one(op: str, dims) -> None:
    if not dims:
        raise ShapeError(f"{op}: must transform at least one axis")


def _fftn(op: str, a, s, dim, norm, forward: bool):
    a = _promoted(op, a, True)
    dims, sizes = _dims_and_sizes(op, a, s, dim)
    return prims.fft_c2c(_resized(a, dims, sizes), dims, _norm(op, norm, forward), forward)


def _rfftn(op: str, a, s, dim, norm):
    a = _real_input(op, a)
    dims, sizes = _dims_and_sizes(op, a, s, dim)
    _at_least_one(op, dims)
    return prims.fft_r2c(_resized(a, dims, sizes), dims, _norm(op, norm, True), True)


def _ihfftn(op: str, a, s, dim, norm):
    a = _real_input(op, a)
    dims, sizes = _dims_and_sizes(op, a, s, dim)
    _at_least_one(op, dims)
    code = _norm(op, norm, False)
    out = prims.conj_physical(prims.fft_r2c(_resized(a, dims, sizes), dims[-1:], code, True))
    return out if len(dims) == 1 else prims.fft_c2c(out, dims[:-1], code, False)


def _c2r_dims(op: str, a, s, dim):
    """The dims, the complex input's lengths, and the last dim's real length (aten's
    ``canonicalize_fft_c2r_shape_and_dim_args``)."""
    dims, sizes = _dims_and_sizes(op, a, s, dim)
    _at_least_one(op, dims)
    last = 2 * (shape_of(a)[dims[-1]] - 1) if s is None or tuple(s)[-1] == -1 else sizes[-1]
    _check_points(op, last)
    return dims, sizes[:-1] + [last // 2 + 1], last


def _irfftn(op: str, a, s, dim, norm):
    a = _promoted(op, a, True)
    dims, sizes, last = _c2r_dims(op, a, s, dim)
    return prims.fft_c2r(_resized(a, dims, sizes), dims, _norm(op, norm, False), last)


def _hfftn(op: str, a, s, dim, norm):
    a = _promoted(op, a, True)
    dims, sizes, last = _c2r_dims(op, a, s, dim)
    code = _norm(op, norm, True)
    x = _resized(a, dims, sizes)
    if len(dims) > 1:
        x = prims.fft_c2c(x, dims[:-1], code, True)
    return prims.fft_c2r(prims.conj_physical(x), dims[-1:], code, last)


def _spectral_nd(name: str, build, default_dim):
    """``torch.fft.<name>``: ``build(op, input, s, dim, norm)`` with the op's default dims."""
    torch_fn = getattr(torch.fft, name)

    def fn(input, s=None, dim=default_dim, norm: str | None = None, *, out=None):
        op = f"torch.fft.{name}"
        _no_out(op, out)
        return build(op, input, s, dim, norm)

    fn.__name__ = f"fft_{name}"
    fn.__doc__ = f"``torch.fft.{name}``: see the module docstring."
    return torchsymbol(torch_fn, torch_impl=f"torch.fft.{name}", tags=(Tag.MATMUL,), name=f"fft_{name}")(fn)


fft_fft2 = _spectral_nd("fft2", lambda op, a, s, dim, norm: _fftn(op, a, s, dim, norm, True), (-2, -1))
fft_fftn = _spectral_nd("fftn", lambda op, a, s, dim, norm: _fftn(op, a, s, dim, norm, True), None)
fft_ifft2 = _spectral_nd("ifft2", lambda op, a, s, dim, norm: _fftn(op, a, s, dim, norm, False), (-2, -1))
fft_ifftn = _spectral_nd("ifftn", lambda op, a, s, dim, norm: _fftn(op, a, s, dim, norm, False), None)
fft_rfft2 = _spectral_nd("rfft2", _rfftn, (-2, -1))
fft_rfftn = _spectral_nd("rfftn", _rfftn, None)
fft_irfft2 = _spectral_nd("irfft2", _irfftn, (-2, -1))
fft_irfftn = _spectral_nd("irfftn", _irfftn, None)
fft_hfft2 = _spectral_nd("hfft2", _hfftn, (-2, -1))
fft_hfftn = _spectral_nd("hfftn", _hfftn, None)
fft_ihfft2 = _spectral_nd("ihfft2", _ihfftn, (-2, -1))
fft_ihfftn = _spectral_nd("ihfftn", _ihfftn, None)


def _shift(op: str, a, dim, inverse: bool):
    nd = len(shape_of(a))
    dims = tuple(range(nd)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(canonical_dim(d, nd, op) for d in dims)
    shifts = tuple((shape_of(a)[d] + inverse) // 2 for d in dims)
    return roll(a, shifts, dims)


@torchsymbol(torch.fft.fftshift, torch_impl="torch.fft.fftshift", tags=(Tag.SHAPE,), name="fft_fftshift")
def fft_fftshift(input, dim=None):
    """Zero frequency to the middle: a roll by half of each dim (all dims by default)."""
    return _shift("torch.fft.fftshift", input, dim, False)


@torchsymbol(torch.fft.ifftshift, torch_impl="torch.fft.ifftshift", tags=(Tag.SHAPE,), name="fft_ifftshift")
def fft_ifftshift(input, dim=None):
    return _shift("torch.fft.ifftshift", input, dim, True)


# -- short-time transforms ----------------------------------------------------------------------
def _window(op: str, window, win_length: int, n_fft: int, like):
    """The window (ones by default) zero-padded on both sides to ``n_fft``, centred."""
    if window is None:
        window = prims.full((win_length,), 1.0, dtype=dtype_of(like).to_real(), device=device_of(like))
    elif len(shape_of(window)) != 1 or shape_of(window)[0] != win_length:
        raise ShapeError(
            f"{op}: expected a 1-D window of size win_length={win_length}, got shape {shape_of(window)}"
        )
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = nn_pad(window, [left, n_fft - win_length - left], "constant", 0)
    return window


def _check_lengths(op: str, n_fft: int, hop_length: int, win_length: int) -> None:
    if hop_length <= 0:
        raise ShapeError(f"{op}: expected hop_length > 0, got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise ShapeError(
            f"{op}: expected 0 < win_length <= n_fft, got win_length={win_length} and n_fft={n_fft}"
        )


@torchsymbol(torch.stft, torch.Tensor.stft, torch_impl="torch.stft", tags=(Tag.MATMUL,))
def stft(
    input,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window=None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
    align_to_window: bool | None = None,
):
    """(..., n_fft // 2 + 1 (onesided) or n_fft, frames): the transform of each frame of
    ``n_fft`` samples, ``hop_length`` apart, times the window; with ``center`` the signal is
    first padded by ``n_fft // 2`` on both sides (``pad_mode``)."""
    op = "torch.stft"
    s = shape_of(input)
    complex_ = dtype_of(input).is_complex or (is_tensor(window) and dtype_of(window).is_complex)
    if return_complex is None:
        if not complex_:
            raise ShapeError(f"{op}: return_complex must be given for real inputs (eager's rule)")
        return_complex = True
    if align_to_window:
        raise ShapeError(f"{op}: align_to_window=True is not supported")
    if len(s) not in (1, 2):
        raise ShapeError(f"{op}: expected a 1-D or 2-D (batch, time) input, got shape {s}")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    _check_lengths(op, n_fft, hop_length, win_length)
    x = input if len(s) == 2 else prims.reshape(input, (1, s[0]))
    if center:
        half = n_fft // 2
        x = prims.reshape(
            nn_pad(prims.reshape(x, (1, *shape_of(x))), [half, half], pad_mode),
            shape_of(x)[:-1] + (shape_of(x)[-1] + 2 * half,),
        )
    length = shape_of(x)[-1]
    if not 0 < n_fft <= length:
        raise ShapeError(
            f"{op}: expected 0 < n_fft <= {length} (the padded signal's length), got n_fft={n_fft}"
        )
    frames = tensor_unfold(x, 1, n_fft, hop_length)  # (batch, frames, n_fft)
    if window is not None or win_length < n_fft:
        frames = prims.mul(frames, _window(op, window, win_length, n_fft, frames))
    onesided = not dtype_of(frames).is_complex if onesided is None else onesided
    code = _BY_ROOT_N if normalized else _NONE
    if dtype_of(frames).is_complex:
        if onesided:
            raise ShapeError(f"{op}: cannot have a onesided output for a complex input or window")
        out = prims.fft_c2c(frames, (2,), code, True)
    else:
        out = prims.fft_r2c(_promoted(op, frames, False), (2,), code, onesided)
    out = prims.transpose(out, (0, 2, 1))
    if len(s) == 1:
        out = prims.squeeze(out, (0,))
    return out if return_complex else view_as_real(out)


def _overlap_added(frames, hop: int, length: int):
    """(batch, length): each frame (batch, n_frames, n_fft) added in at ``t * hop``."""
    batch, n_frames, n_fft = shape_of(frames)
    dev = device_of(frames)
    starts = prims.broadcast_in_dim(
        prims.iota(n_frames, start=0, step=hop, dtype=torch.int64, device=dev), (n_frames, n_fft), (0,)
    )
    offsets = prims.broadcast_in_dim(
        prims.iota(n_fft, start=0, step=1, dtype=torch.int64, device=dev), (n_frames, n_fft), (1,)
    )
    index = prims.broadcast_in_dim(
        prims.reshape(prims.add(starts, offsets), (n_frames * n_fft,)), (batch, n_frames * n_fft), (1,)
    )
    zeros = prims.full((batch, length), 0, dtype=dtype_of(frames), device=dev)
    return scatter_add(zeros, 1, index, prims.reshape(frames, (batch, n_frames * n_fft)))


@torchsymbol(torch.istft, torch.Tensor.istft, torch_impl="torch.istft", tags=(Tag.MATMUL,))
def istft(
    input,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window=None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
):
    """The signal whose ``stft`` (same arguments) is ``input`` (..., freq, frames): each frame
    transformed back, windowed, and the frames added where they overlap, divided by the sum
    of the squared windows there."""
    op = "torch.istft"
    s = shape_of(input)
    if not dtype_of(input).is_complex:
        raise ShapeError(
            f"{op}: requires a complex input (call view_as_complex on a real one), got {dtype_of(input)}"
        )
    if len(s) not in (2, 3) or math.prod(s) == 0:
        raise ShapeError(f"{op}: expected a non-empty 2-D or 3-D (batch, freq, frames) input, got shape {s}")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    n_frames, fft_size = s[-1], s[-2]
    onesided = fft_size != n_fft if onesided is None else onesided
    if (n_fft // 2 + 1 if onesided else n_fft) != fft_size:
        raise ShapeError(
            f"{op}: expected the frequency dim to be {n_fft // 2 + 1 if onesided else n_fft} for n_fft={n_fft} "
            f"and onesided={onesided}, got {fft_size} (input shape {s})"
        )
    if not 0 < hop_length <= win_length:
        raise ShapeError(
            f"{op}: expected 0 < hop_length <= win_length, got hop_length={hop_length}, win_length={win_length}"
        )
    _check_lengths(op, n_fft, hop_length, win_length)
    x = input if len(s) == 3 else prims.reshape(input, (1, *s))
    x = prims.transpose(x, (0, 2, 1))  # (batch, frames, freq)
    code = _BY_ROOT_N if normalized else _BY_N
    if return_complex:
        if onesided:
            raise ShapeError(f"{op}: cannot have a onesided output when return_complex=True")
        x = prims.fft_c2c(x, (2,), code, False)
    else:
        if is_tensor(window) and dtype_of(window).is_complex:
            raise ShapeError(f"{op}: a complex window needs return_complex=True")
        if not onesided:
            x = _slice_dim(x, 2, 0, n_fft // 2 + 1)
        x = prims.fft_c2r(x, (2,), code, n_fft)
    w = _window(op, window, win_length, n_fft, x)
    signal_length = n_fft + hop_length * (n_frames - 1)
    y = _overlap_added(prims.mul(x, w), hop_length, signal_length)
    w2 = prims.broadcast_in_dim(prims.mul(w, w), (1, n_frames, n_fft), (2,))
    envelope = _overlap_added(w2, hop_length, signal_length)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else signal_length - n_fft // 2 if center else signal_length
    stop = min(end, signal_length)
    y = prims.div(_slice_dim(y, 1, start, stop), _slice_dim(envelope, 1, start, stop))
    if len(s) == 2:
        y = prims.squeeze(y, (0,))
    if end > signal_length:
        y = nn_pad(y, [0, end - signal_length], "constant", 0)
    return y
