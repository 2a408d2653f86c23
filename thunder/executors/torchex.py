"""The torch executor: runs every prim, and whole torch-language ops where torch has them.

A torch-language op declared with ``torch_impl="torch.nn.functional.linear"`` is claimed
as one call of that function (the decomposition stays below it as comments); a prim is
claimed by the entry for it in ``PRIM_IMPLS``. The helper functions below are what prims
need when torch has no single call with the same signature; they print as ``torchex.*``.
"""

from __future__ import annotations

import operator

import torch
import torch.nn.functional as F

from thunder.core.symbol import EAGER_IMPLS, SYMBOLS
from thunder.executors.base import Executor, Impl, executor_symbol
from thunder.ops.langs import resolve_path


# -- helpers printed as torchex.* -----------------------------------------------------------
def broadcast_in_dim(a, shape, broadcast_dims):
    view = [1] * len(shape)
    for d, bd in zip(a.shape, broadcast_dims):
        view[bd] = d
    return a.reshape(view).expand(shape)


def slice_prim(a, start_indices, end_indices, strides=None):
    strides = strides or (1,) * len(start_indices)
    return a[tuple(slice(lo, hi, st) for lo, hi, st in zip(start_indices, end_indices, strides))]


def take(a, index, dim):
    out = torch.index_select(a, dim, index.reshape(-1))
    return out.reshape(a.shape[:dim] + index.shape + a.shape[dim + 1 :])


def index_copy(a, index, dim, src):
    return torch.index_copy(a, dim, index, src)


def prod(a, dims, *, dtype=None):
    if not dims:
        return a.to(dtype) if dtype is not None else a.clone()
    if len(dims) == a.ndim:
        return torch.prod(a, dtype=dtype)
    for d in sorted(dims, reverse=True):
        a = torch.prod(a, d, dtype=dtype)
    return a


def sum(a, dims, *, dtype=None):
    if not dims:
        return a.to(dtype) if dtype is not None else a.clone()
    return torch.sum(a, dims, dtype=dtype)


def argmax(a, dims):
    return torch.argmax(a) if len(dims) != 1 or a.ndim == 0 else torch.argmax(a, dims[0])


def argmin(a, dims):
    return torch.argmin(a) if len(dims) != 1 or a.ndim == 0 else torch.argmin(a, dims[0])


def amax(a, dims):
    return torch.amax(a, dims) if dims else a.clone()


def amin(a, dims):
    return torch.amin(a, dims) if dims else a.clone()


def var(a, dims, *, correction):
    return torch.var(a, dims, correction=correction)


def iota(length, *, start, step, dtype, device):
    return torch.arange(start, start + length * step, step, dtype=dtype, device=device)[:length]


def full(shape, fill_value, *, dtype, device):
    return torch.full(shape, fill_value, dtype=dtype, device=device)


def uniform(shape, minval, maxval, *, dtype, device):
    return torch.empty(shape, dtype=dtype, device=device).uniform_(minval, maxval)


def copy_(src, dst):
    with torch.no_grad():
        dst.copy_(src)


def setitem(a, key, value):
    """``ltorch.setitem``: ``a`` with ``a[key] = value`` applied, ``a`` itself untouched."""
    out = a.clone()
    out[key] = value
    return out


def sort(a, dim, descending, stable):
    values, indices = torch.sort(a, dim=dim, descending=descending, stable=stable)
    return values, indices


def convolution(a, weight, bias, stride, padding, dilation, groups):
    return torch.convolution(a, weight, bias, stride, padding, dilation, False, (0,) * len(stride), groups)


def max_pool(a, kernel_size, stride, padding, dilation, ceil_mode):
    fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[len(kernel_size) - 1]
    return fn(a, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool(a, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if len(kernel_size) == 1:
        return F.avg_pool1d(a, kernel_size, stride, padding, ceil_mode, count_include_pad)
    fn = F.avg_pool2d if len(kernel_size) == 2 else F.avg_pool3d
    return fn(a, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool(a, output_size):
    fn = (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)[len(output_size) - 1]
    return fn(a, output_size)


# -- gradients of the windowed ops (aten's backward kernels; 1-d pools run as 2-d ones, as torch does)
_ATEN = torch.ops.aten


def convolution_backward(grad, a, weight, bias, stride, padding, dilation, groups):
    sizes = [weight.shape[0]] if bias else None
    out = _ATEN.convolution_backward.default(
        grad,
        a,
        weight,
        sizes,
        stride,
        padding,
        dilation,
        False,
        [0] * len(stride),
        groups,
        [True, True, bias],
    )
    return out if bias else out[:2]


def _height_1(window, fill: int) -> tuple:
    """A 1-d window (kernel, stride, padding or dilation) as a 2-d one of height 1."""
    return (fill, *window)


def max_pool_backward(grad, a, kernel_size, stride, padding, dilation, ceil_mode):
    if len(kernel_size) == 1:
        g2 = max_pool_backward(
            grad.unsqueeze(-2),
            a.unsqueeze(-2),
            _height_1(kernel_size, 1),
            _height_1(stride, 1),
            _height_1(padding, 0),
            _height_1(dilation, 1),
            ceil_mode,
        )
        return g2.squeeze(-2)
    pool = F.max_pool2d if len(kernel_size) == 2 else F.max_pool3d
    backward = (
        _ATEN.max_pool2d_with_indices_backward
        if len(kernel_size) == 2
        else _ATEN.max_pool3d_with_indices_backward
    )
    _, indices = pool(a, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)
    return backward.default(grad, a, kernel_size, stride, padding, dilation, ceil_mode, indices)


def avg_pool_backward(grad, a, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if len(kernel_size) == 1:
        g2 = avg_pool_backward(
            grad.unsqueeze(-2),
            a.unsqueeze(-2),
            _height_1(kernel_size, 1),
            _height_1(stride, 1),
            _height_1(padding, 0),
            ceil_mode,
            count_include_pad,
            divisor_override,
        )
        return g2.squeeze(-2)
    backward = _ATEN.avg_pool2d_backward if len(kernel_size) == 2 else _ATEN.avg_pool3d_backward
    return backward.default(
        grad, a, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )


def adaptive_avg_pool_backward(grad, a, output_size):
    if len(output_size) == 1:
        return _ATEN._adaptive_avg_pool2d_backward.default(grad.unsqueeze(-2), a.unsqueeze(-2)).squeeze(-2)
    backward = (
        _ATEN._adaptive_avg_pool2d_backward if len(output_size) == 2 else _ATEN._adaptive_avg_pool3d_backward
    )
    return backward.default(grad, a)


def convert_element_type(a, dtype):
    return a.to(dtype)


def device_put(a, device):
    return a.to(device)


def erfinv(a):
    return torch.erfinv(a)


_OPERATORS = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "floor_divide": operator.floordiv,
    "remainder": operator.mod,
    "pow": operator.pow,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "bitwise_and": operator.and_,
    "bitwise_or": operator.or_,
    "bitwise_xor": operator.xor,
}


def _numbers_as_tensors(name: str):
    """``prims.maximum(x, 0)``: torch.maximum takes tensors only; make the number one."""
    torch_fn = getattr(torch, name)

    def fn(a, b):
        if not isinstance(b, torch.Tensor):
            b = torch.scalar_tensor(b, dtype=torch.result_type(a, b), device=a.device)
        if not isinstance(a, torch.Tensor):
            a = torch.scalar_tensor(a, dtype=torch.result_type(b, a), device=b.device)
        return torch_fn(a, b)

    fn.__name__ = f"{name}_numbers"
    return fn


_TENSORS_ONLY = frozenset("maximum minimum atan2 hypot logical_and logical_or logical_xor".split())


def _scalar_first(name: str):
    """``prims.sub(1, x)``: torch.sub needs a tensor first, Python's operator does not."""
    op = _OPERATORS.get(name)
    torch_fn = getattr(torch, name)

    def fn(a, b):
        if op is not None:
            return op(a, b)
        return torch_fn(torch.tensor(a, device=b.device), b)

    fn.__name__ = f"{name}_scalar_first"
    return fn


# -- the executor ---------------------------------------------------------------------------
executor = Executor("torch")
_SYMS: dict[str, object] = {}


def _sym(path: str, impl=None):
    if path not in _SYMS:
        _SYMS[path] = executor_symbol(path, impl if impl is not None else resolve_path(path), "torch")
    return _SYMS[path]


def _first_tensor(*args, **kwargs) -> bool:
    return isinstance(args[0], torch.Tensor)


def _all_tensors(*args, **kwargs) -> bool:
    return all(isinstance(a, torch.Tensor) for a in args)


def _helper(name: str):
    return _sym(f"torchex.{name}", globals()[name])


_UNARY = (
    "abs neg sign floor ceil round trunc bitwise_not clone exp exp2 expm1 log log1p log2 log10 sin cos tan "
    "asin acos atan sinh cosh tanh asinh acosh atanh sqrt rsqrt reciprocal sigmoid erf erfc lgamma "
    "digamma isnan isinf isfinite signbit logical_not real imag"
)
_BINARY = (
    "add sub mul floor_divide remainder fmod pow maximum minimum bitwise_and bitwise_or bitwise_xor "
    "bitwise_left_shift bitwise_right_shift copysign div atan2 hypot eq ne lt le gt ge logical_and "
    "logical_or logical_xor"
)

PRIM_IMPLS: dict[str, list[Impl]] = {}
for _n in _UNARY.split():
    PRIM_IMPLS[f"prims.{_n}"] = [Impl(_sym(f"torch.{_n}"))]
PRIM_IMPLS["prims.erfinv"] = [Impl(_sym("torch.erfinv"))]
for _n in _BINARY.split():
    if _n in _TENSORS_ONLY:
        globals()[f"{_n}_numbers"] = _numbers_as_tensors(_n)
        _numbers = _sym(f"torchex.{_n}_numbers", globals()[f"{_n}_numbers"])
        PRIM_IMPLS[f"prims.{_n}"] = [Impl(_sym(f"torch.{_n}"), check=_all_tensors), Impl(_numbers)]
        continue
    globals()[f"{_n}_scalar_first"] = _scalar_first(_n)
    _scalar = _sym(f"torchex.{_n}_scalar_first", globals()[f"{_n}_scalar_first"])
    PRIM_IMPLS[f"prims.{_n}"] = [Impl(_sym(f"torch.{_n}"), check=_first_tensor), Impl(_scalar)]

for _prim, _path in {
    "where": "torch.where",
    "clamp": "torch.clamp",
    "reshape": "torch.reshape",
    "transpose": "torch.permute",
    "squeeze": "torch.squeeze",
    "cat": "torch.cat",
    "flip": "torch.flip",
    "cumsum": "torch.cumsum",
    "matmul": "torch.matmul",
    "linear": "torch.nn.functional.linear",
    "take_along_axis": "torch.take_along_dim",
    "scatter_add": "torch.scatter_add",
    "index_put": "torch.index_put",
    "topk": "torch.topk",
    "polygamma": "torch.polygamma",
}.items():
    PRIM_IMPLS[f"prims.{_prim}"] = [Impl(_sym(_path))]
for _prim, _helper_name in {
    "broadcast_in_dim": "broadcast_in_dim",
    "slice": "slice_prim",
    "take": "take",
    "index_copy": "index_copy",
    "sum": "sum",
    "prod": "prod",
    "amax": "amax",
    "amin": "amin",
    "argmax": "argmax",
    "argmin": "argmin",
    "var": "var",
    "iota": "iota",
    "full": "full",
    "uniform": "uniform",
    "copy_": "copy_",
    "convert_element_type": "convert_element_type",
    "convolution": "convolution",
    "sort": "sort",
    "max_pool": "max_pool",
    "avg_pool": "avg_pool",
    "adaptive_avg_pool": "adaptive_avg_pool",
    "device_put": "device_put",
    "convolution_backward": "convolution_backward",
    "max_pool_backward": "max_pool_backward",
    "avg_pool_backward": "avg_pool_backward",
    "adaptive_avg_pool_backward": "adaptive_avg_pool_backward",
}.items():
    PRIM_IMPLS[f"prims.{_prim}"] = [Impl(_helper(_helper_name))]
# a sum over some dims is torch.sum itself (no helper frame: gradients sum a lot)
PRIM_IMPLS["prims.sum"].insert(0, Impl(_sym("torch.sum"), check=lambda a, dims, **kw: bool(dims)))


def _eager(impls: list[Impl]):
    """Run a prim outside a trace: the first implementation whose check passes."""
    if len(impls) == 1:
        return impls[0].symbol.impl

    def run(*args, **kwargs):
        for impl in impls:
            if impl.check is None or impl.check(*args, **kwargs):
                return impl.symbol.impl(*args, **kwargs)
        raise AssertionError("the last implementation of a prim takes any arguments")

    return run


for _id, _impls in PRIM_IMPLS.items():
    for _impl in _impls:
        executor.register(_id, _impl)
    EAGER_IMPLS[_id] = _eager(_impls)


# Torch-language ops with no single public torch call, run whole by a helper above.
LTORCH_HELPERS = {"ltorch.setitem": "setitem"}


def register_ltorch_claims() -> None:
    """Claim every torch-language op that names a ``torch_impl`` (called once ops are imported)."""
    for sym in list(SYMBOLS.values()):
        path = getattr(sym, "torch_impl", None)
        if sym.module != "ltorch" or path is None or sym.id in executor.impls:
            continue
        executor.register(sym.id, Impl(_sym(path), check=sym.impl_check))
    for sym_id, helper in LTORCH_HELPERS.items():
        if sym_id in SYMBOLS and sym_id not in executor.impls:
            executor.register(sym_id, Impl(_helper(helper)))


def unclaimed_prims() -> list[str]:
    """Prims the torch executor cannot run (tests keep this empty)."""
    return [
        s
        for s, sym in SYMBOLS.items()
        if sym.module == "prims" and "python" not in sym.tags and s not in executor.impls
    ]
