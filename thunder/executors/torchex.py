"""The torch executor: runs every prim, and whole torch-language ops where torch has them.

A torch-language op declared with ``torch_impl="torch.nn.functional.linear"`` is claimed
as one call of that function (the decomposition stays below it as comments), whenever the op
was defined; a prim is claimed by its entry in ``PRIM_IMPLS``. The helper functions below are
what prims need when torch has no single call with the same signature; they print as
``torchex.*``.
"""

from __future__ import annotations

import math
import operator

import torch
import torch.nn.functional as F
from torch._prims_common import suggest_memory_format

from thunder.core.symbol import EAGER_IMPLS, BoundSymbol, Symbol, SymbolTable, symbols_with
from thunder.core.tags import Tag
from thunder.executors.base import Drawing, Executor, Impl, executor_symbol
from thunder.executors.registry import register_executor
from thunder.ops import ltorch, prims
from thunder.ops.collectives import group_of
from thunder.ops.langs import resolve_path
from thunder.ops.prims.elementwise import ELEMENTWISE


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


def bitcast(a, dtype):
    """``a.view(dtype)``; of a value laid out so that another element size cannot be read from
    it (eager's would be contiguous there: the frontend checks the inputs' layouts), of a
    contiguous copy."""
    try:
        return a.view(dtype)
    except RuntimeError:
        return a.contiguous().view(dtype)


def grouped_mm(a, b, offs):
    return torch._grouped_mm(_aligned(a), _aligned(b), offs=offs)


def _aligned(t):
    """``t``, or a copy whose strides are multiples of 16 bytes (torch._grouped_mm's kernels
    need them): the last dimension padded, the padding sliced off again."""
    per = max(16 // t.element_size(), 1)
    strides = t.stride()
    if (strides[-1] == 1 and all(s % per == 0 for s in strides[:-1])) or (
        strides[-2] == 1 and all(s % per == 0 for i, s in enumerate(strides) if i != len(strides) - 2)
    ):
        if t.data_ptr() % 16 == 0:
            return t
    n = t.shape[-1]
    padded = t.new_zeros(*t.shape[:-1], n + (-n % per))
    padded[..., :n] = t
    return padded[..., :n]


# the collectives (thunder/ops/collectives.py): torch's functional collectives on the named group
def all_reduce(a, op, group):
    return torch.ops._c10d_functional.all_reduce(a, op, group)


def all_gather(a, group):
    return torch.ops._c10d_functional.all_gather_into_tensor(a.contiguous(), group_of(group).size(), group)


def reduce_scatter(a, op, group):
    return torch.ops._c10d_functional.reduce_scatter_tensor(a.contiguous(), op, group_of(group).size(), group)


def broadcast(a, src, group):
    return torch.ops._c10d_functional.broadcast(a, src, group)


def all_to_all_single(a, output_split_sizes, input_split_sizes, group):
    n = group_of(group).size()
    if output_split_sizes is None:
        output_split_sizes = [a.shape[0] // n] * n
    if input_split_sizes is None:
        input_split_sizes = [a.shape[0] // n] * n
    return torch.ops._c10d_functional.all_to_all_single(
        a.contiguous(), output_split_sizes, input_split_sizes, group
    )


def wait(a):
    return torch.ops._c10d_functional.wait_tensor(a)


def index_copy(a, index, dim, src):
    return torch.index_copy(a, dim, index, src)


def scatter_reduce(a, dim, index, src, reduce, include_self):
    return torch.scatter_reduce(a, dim, index, src, reduce, include_self=include_self)


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


def bernoulli(shape, p, *, dtype, device):
    return torch.empty(shape, dtype=dtype, device=device).bernoulli_(p)


def copy_(src, dst):
    with torch.no_grad():
        dst.copy_(src)


def setitem(a, key, value):
    """``ltorch.setitem``: ``a`` with ``a[key] = value`` applied, ``a`` itself untouched."""
    out = a.clone()
    out[key] = value
    return out


def batched_matmul(a, b):
    """``ltorch.batched_matmul`` in one call: the operands made 3-dim as eager's matmul makes
    them (``reshape``: a copy only where the batch dims do not merge), ``torch.bmm``, the
    product viewed back; the 3-dim operands too, for the backward."""
    batch = a.shape[:-2].numel()
    a3, b3 = a.reshape(batch, a.shape[-2], a.shape[-1]), b.reshape(batch, b.shape[-2], b.shape[-1])
    return torch.bmm(a3, b3).view(*a.shape[:-1], b.shape[-1]), a3, b3


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


# -- eager's fused kernels whose Python entry does a little more than the aten call ----------
def _wanted_outputs(out) -> tuple:
    """A backward kernel's gradients without the None of those not asked for (``output_mask``):
    the op returns only the others."""
    return tuple(t for t in out if t is not None)


def layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask):
    return _wanted_outputs(
        _ATEN.native_layer_norm_backward.default(
            grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask
        )
    )


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """As eager's ``group_norm`` calls the kernel: the input contiguous in its memory format
    (the kernel needs it; channels-last stays so)."""
    return _ATEN.native_group_norm.default(
        input.contiguous(memory_format=suggest_memory_format(input)), weight, bias, N, C, HxW, group, eps
    )


def _as_group_norm_backward_reads(t, input):
    """``t`` as eager's autograd hands it to the backward kernel: contiguous in ``input``'s
    memory format on CPU, contiguous elsewhere."""
    fmt = suggest_memory_format(input) if input.device.type == "cpu" else torch.contiguous_format
    return t.contiguous(memory_format=fmt)


def group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask):
    """As eager's autograd calls the kernel (the input: a copy again where eager's forward made
    one, which its node keeps instead)."""
    return _wanted_outputs(
        _ATEN.native_group_norm_backward.default(
            _as_group_norm_backward_reads(grad_out, input),
            _as_group_norm_backward_reads(input, input),
            mean,
            rstd,
            weight,
            N,
            C,
            HxW,
            group,
            output_mask,
        )
    )


def _flash_operands(query, key, value, attn_mask):
    """What eager hands its CPU flash kernel: a bool mask as 0 and -inf in the query's dtype
    (eager's conversion), and a query, key or value whose last dim has a stride other than 1 as
    a contiguous copy (the kernel reads such a tensor wrongly; eager's dispatcher sends it to its
    math backend, whose results differ from the kernel's by rounding only)."""
    query, key, value = (t if t.stride(-1) == 1 else t.contiguous() for t in (query, key, value))
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        attn_mask = torch.where(
            attn_mask.logical_not(),
            -math.inf,
            torch.scalar_tensor(0.0, dtype=query.dtype, device=query.device),
        )
    return query, key, value, attn_mask


def flash_attention_cpu(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    query, key, value, attn_mask = _flash_operands(query, key, value, attn_mask)
    return _ATEN._scaled_dot_product_flash_attention_for_cpu.default(
        query, key, value, dropout_p, is_causal, attn_mask=attn_mask, scale=scale
    )


def flash_attention_cpu_backward(
    grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask=None, scale=None
):
    query, key, value, attn_mask = _flash_operands(query, key, value, attn_mask)
    return _ATEN._scaled_dot_product_flash_attention_for_cpu_backward.default(
        grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask=attn_mask, scale=scale
    )


def custom_op_backward(path: str, grads, args, kwargs, wanted):
    """The operator run again with autograd on the arguments at ``wanted``, and torch's
    gradients of it (the operator's registered formula); zeros where one is unused."""
    args = list(args)
    with torch.enable_grad():
        for i in wanted:
            args[i] = args[i].detach().requires_grad_()
        out = resolve_path(path)(*args, **kwargs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    pairs = [
        (o, g)
        for o, g in zip(outs, grads)
        if g is not None and isinstance(o, torch.Tensor) and o.requires_grad
    ]
    leaves = [args[i] for i in wanted]
    if not pairs:
        return tuple(torch.zeros_like(a) for a in leaves)
    got = torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs], allow_unused=True)
    return tuple(torch.zeros_like(a) if g is None else g for g, a in zip(got, leaves))


def convert_element_type(a, dtype):
    return a.to(dtype)


def device_put(a, device):
    return a.to(device)


# Python's operators take a number first (``1 - x``); torch's functions may not.
_OPERATORS = {
    torch.add: operator.add,
    torch.sub: operator.sub,
    torch.mul: operator.mul,
    torch.div: operator.truediv,
    torch.floor_divide: operator.floordiv,
    torch.remainder: operator.mod,
    torch.pow: operator.pow,
    torch.eq: operator.eq,
    torch.ne: operator.ne,
    torch.lt: operator.lt,
    torch.le: operator.le,
    torch.gt: operator.gt,
    torch.ge: operator.ge,
    torch.bitwise_and: operator.and_,
    torch.bitwise_or: operator.or_,
    torch.bitwise_xor: operator.xor,
}


def scalar_first(fn, a, b):
    """``prims.sub(1, x)``: ``fn`` (``torch.sub``) with a number first, as Python's operator
    does it, or with the number made a tensor where there is no operator."""
    op = _OPERATORS.get(fn)
    if op is not None:
        return op(a, b)
    return fn(torch.tensor(a, device=b.device), b)


def numbers_as_tensors(fn, a, b):
    """``prims.maximum(x, 0)``: ``fn`` (``torch.maximum``) takes tensors only; make the number one."""
    if not isinstance(b, torch.Tensor):
        b = torch.scalar_tensor(b, dtype=torch.result_type(a, b), device=a.device)
    if not isinstance(a, torch.Tensor):
        a = torch.scalar_tensor(a, dtype=torch.result_type(b, a), device=b.device)
    return fn(a, b)


# -- the executor ---------------------------------------------------------------------------
class TorchExecutor(Executor):
    """Runs every prim (``PRIM_IMPLS``) and each torch-language op that declares the torch
    callable computing it whole (``torch_impl``), whenever that op was defined."""

    runs_every_prim = True
    runs_on_meta = True
    drawing = Drawing("#fde6cf", "#b4570b", "box")

    def implementations(self, sym: Symbol) -> list[Impl]:
        impls = self.impls.get(sym)
        if impls is None and sym.torch_impl is not None:
            impls = [Impl(_sym(sym.torch_impl), check=sym.impl_check)]
            self.impls[sym] = impls
        return impls or ()


executor = register_executor(TorchExecutor("torch"))
_SYMS: dict[str, Symbol] = {}


def _sym(path: str, impl=None) -> Symbol:
    """The executor symbol printed as ``path`` (made once per path)."""
    sym = _SYMS.get(path)
    if sym is None:
        module_path = __name__ if path.startswith("torchex.") else None
        impl = impl if impl is not None else resolve_path(path)
        sym = _SYMS[path] = executor_symbol(path, impl, "torch", module_path=module_path)
    return sym


def _helper(fn) -> Symbol:
    """A helper of this module, printed as ``torchex.<its name>``."""
    return _sym(f"torchex.{fn.__name__}", fn)


def _first_tensor(*args, **kwargs) -> bool:
    return isinstance(args[0], torch.Tensor)


def _all_tensors(*args, **kwargs) -> bool:
    return all(isinstance(a, torch.Tensor) for a in args)


def _with_fn(fn):
    """``translate`` for the helpers above: the torch function becomes their first argument."""

    def translate(bsym):
        return (fn, *bsym.args), bsym.kwargs

    return translate


PRIM_IMPLS = SymbolTable("the torch executor's prim implementations")
# elementwise prims: the torch callable each declares; a binary one's takes a tensor first
# (a helper calls it when a number comes first) or tensors only (a helper makes numbers tensors)
for _prim, _decl in ELEMENTWISE.items():
    _sym_of = _sym(_decl.torch)
    if Tag.UNARY in _prim.tags:
        PRIM_IMPLS[_prim] = [Impl(_sym_of)]
    elif _decl.number_second:
        PRIM_IMPLS[_prim] = [
            Impl(_sym_of, check=_first_tensor),
            Impl(_helper(scalar_first), translate=_with_fn(_sym_of.impl)),
        ]
    else:
        PRIM_IMPLS[_prim] = [
            Impl(_sym_of, check=_all_tensors),
            Impl(_helper(numbers_as_tensors), translate=_with_fn(_sym_of.impl)),
        ]

for _prim, _path in {
    prims.where: "torch.where",
    prims.clamp: "torch.clamp",
    prims.reshape: "torch.reshape",
    prims.transpose: "torch.permute",
    prims.squeeze: "torch.squeeze",
    prims.cat: "torch.cat",
    prims.flip: "torch.flip",
    prims.cumsum: "torch.cumsum",
    prims.matmul: "torch.matmul",
    prims.linear: "torch.nn.functional.linear",
    prims.take_along_axis: "torch.take_along_dim",
    prims.scatter_add: "torch.scatter_add",
    prims.scatter: "torch.scatter",
    prims.index_put: "torch.index_put",
    prims.topk: "torch.topk",
    prims.polygamma: "torch.polygamma",
}.items():
    PRIM_IMPLS[_prim] = [Impl(_sym(_path))]
for _prim, _fn in {
    prims.broadcast_in_dim: broadcast_in_dim,
    prims.slice_prim: slice_prim,
    prims.take: take,
    prims.bitcast: bitcast,
    prims.index_copy: index_copy,
    prims.grouped_mm: grouped_mm,
    prims.scatter_reduce: scatter_reduce,
    prims.sum: sum,
    prims.prod: prod,
    prims.amax: amax,
    prims.amin: amin,
    prims.argmax: argmax,
    prims.argmin: argmin,
    prims.var: var,
    prims.iota: iota,
    prims.full: full,
    prims.uniform: uniform,
    prims.bernoulli: bernoulli,
    prims.copy_: copy_,
    prims.convert_element_type: convert_element_type,
    prims.convolution: convolution,
    prims.sort: sort,
    prims.max_pool: max_pool,
    prims.avg_pool: avg_pool,
    prims.adaptive_avg_pool: adaptive_avg_pool,
    prims.device_put: device_put,
    prims.convolution_backward: convolution_backward,
    prims.max_pool_backward: max_pool_backward,
    prims.avg_pool_backward: avg_pool_backward,
    prims.adaptive_avg_pool_backward: adaptive_avg_pool_backward,
    prims.custom_op_backward: custom_op_backward,
    prims.all_reduce: all_reduce,
    prims.all_gather: all_gather,
    prims.reduce_scatter: reduce_scatter,
    prims.broadcast: broadcast,
    prims.all_to_all_single: all_to_all_single,
    prims.wait: wait,
}.items():
    PRIM_IMPLS[_prim] = [Impl(_helper(_fn))]
# two matrices: torch.mm (torch.matmul's own dispatch by rank skipped: a linear's gradients are such)
PRIM_IMPLS[prims.matmul].insert(0, Impl(_sym("torch.mm"), check=lambda a, b: a.ndim == 2 and b.ndim == 2))
# two stacks of matrices of one batch size: torch.bmm (an attention's products, and their gradients)
PRIM_IMPLS[prims.matmul].insert(
    1, Impl(_sym("torch.bmm"), check=lambda a, b: a.ndim == 3 and b.ndim == 3 and a.shape[0] == b.shape[0])
)
# a sum over some dims is torch.sum itself (no helper frame: gradients sum a lot)
PRIM_IMPLS[prims.sum].insert(0, Impl(_sym("torch.sum"), check=lambda a, dims, **kw: bool(dims)))


def _eager(impls: list[Impl]):
    """Run a prim outside a trace: the first implementation whose check passes."""

    def run(*args, **kwargs):
        for impl in impls:
            if impl.check is None or impl.check(*args, **kwargs):
                if impl.translate is not None:
                    bsym = BoundSymbol(impl.symbol, args, kwargs, None)
                    args, kwargs = impl.translate(bsym)
                return impl.symbol.impl(*args, **kwargs)
        raise AssertionError("the last implementation of a prim takes any arguments")

    if len(impls) == 1 and impls[0].translate is None:
        return impls[0].symbol.impl
    return run


for _prim, _impls in PRIM_IMPLS.items():
    for _impl in _impls:
        executor.register(_prim, _impl)
    EAGER_IMPLS[_prim] = _eager(_impls)

# Torch-language ops with no single public torch call, run whole by a helper above.
executor.register(ltorch.setitem, Impl(_helper(setitem)))
executor.register(ltorch.batched_matmul, Impl(_helper(batched_matmul)))
# eager's fused attention on CPU: a bool mask converted as eager does, operands as eager's
executor.register(ltorch.flash_attention_cpu, Impl(_helper(flash_attention_cpu)))
executor.register(ltorch.flash_attention_cpu_backward, Impl(_helper(flash_attention_cpu_backward)))


def _all_outputs(*args, **kwargs) -> bool:
    return all(args[-1])


# norm backward kernels (a helper leaves out the None they return for a gradient not asked for):
# layer norm's the aten kernel itself where every gradient is asked for; group norm's always the
# helper, which lays out the gradient and the input as eager's autograd does
executor.register(
    ltorch.layer_norm_backward, Impl(_sym(ltorch.layer_norm_backward.torch_impl), check=_all_outputs)
)
executor.register(ltorch.layer_norm_backward, Impl(_helper(layer_norm_backward)))
executor.register(ltorch.group_norm_backward, Impl(_helper(group_norm_backward)))
# group norm's forward kernel: its input made contiguous first, as eager's group_norm does
executor.register(ltorch.native_group_norm, Impl(_helper(native_group_norm)))


def unclaimed_prims() -> list[str]:
    """Prims the torch executor cannot run (tests keep this empty)."""
    return [
        s.id for s in symbols_with(Tag.PRIM) if Tag.PYTHON not in s.tags and not executor.implementations(s)
    ]
