"""Translating prims to nvFuser: one entry per prim, keyed by the prim Symbol object.

An entry emits the nvFuser op(s) for one BoundSymbol on an emitter (``define.py``: a real
FusionDefinition, or the Python text of one) and may refuse a BoundSymbol with a reason.
``unsupported_reason(bsym)`` runs the checks every prim shares (dtypes nvFuser has, numbers
it can hold) and then the entry's own.

Our elementwise prims broadcast and promote like torch. nvFuser promotes its own way (an
int64 tensor plus a Python float gives float64 there, float32 in torch; bfloat16 math comes
back as float32), so each operand is first cast to the dtype torch computes in (float32 for
bfloat16/float16, as torch's kernels do) and broadcast to the output shape, numbers become
constants of that dtype, and the result is cast to the output's dtype. The result dtype the
emitter expects from nvFuser is checked against nvFuser's own answer where it gives one.

Symbolic sizes (``f32[s0, 8]``) stay symbolic extents of the definition; a size an op takes
(``prims.reshape(t, (2*s0, 4))``) becomes scalar ops over the symbols, which are scalar inputs
of the fusion or read from an input tensor (``fd.ops.size``): ``Emitter.size`` in ``define.py``.

Before::

    t1 = prims.mul(t0, 2.5)  # t0: "bf16[3, 4]"

After::

    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    S3 = fd.define_scalar(2.5, dtype=DataType.Float)
    T4 = fd.ops.mul(T2, S3)
    T5 = fd.ops.cast(T4, dtype=DataType.BFloat16)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from numbers import Number
from typing import Any

import torch

from thunder.core.proxies import NumberProxy, TensorProxy
from thunder.core.pytree import tree_leaves
from thunder.core.symbol import BoundSymbol, SymbolTable
from thunder.core.symbolic import is_symbolic, same_size, size_source
from thunder.core.tags import Tag
from thunder.executors.nvfuser.loader import DATATYPE_NAMES
from thunder.ops import prims
from thunder.ops.meta import LOW_PRECISION_DTYPES, dtype_of, is_tensor, result_dtype, shape_of
from thunder.ops.prims.elementwise import ELEMENTWISE, Elementwise, Rule


@dataclasses.dataclass(frozen=True)
class Translation:
    """How one prim becomes nvFuser ops: ``emit(em, bsym)`` returns the fusion value for each
    proxy output (a tuple when there are several); ``check(bsym)`` returns why nvFuser
    cannot take this BoundSymbol, or None."""

    emit: Callable[[Any, BoundSymbol], Any]
    check: Callable[[BoundSymbol], str | None] | None = None


TRANSLATIONS = SymbolTable("nvFuser translations", hint="add one in thunder/executors/nvfuser/translate.py")

# Prims with no translation, and why (every prim is in one of the two tables; a test keeps it so).
UNSUPPORTED = SymbolTable(
    "prims nvFuser cannot take (with the reason)",
    {
        prims.real: "complex tensors are not translated",
        prims.imag: "complex tensors are not translated",
        prims.digamma: "nvFuser has no digamma",
        prims.floor_divide: "nvFuser has no floor division (torch's rounding rules would need emulating)",
        prims.copysign: "nvFuser has no copysign",
        prims.hypot: "nvFuser has no hypot",
        prims.flip: "nvFuser has no flip",
        prims.argmax: "nvFuser has no argmax",
        prims.argmin: "nvFuser has no argmin",
        prims.scatter_add: "nvFuser's scatter does not accumulate",
        prims.scatter: "torch's last write wins where indices repeat; nvFuser's scatter does not say which",
        prims.scatter_reduce: "nvFuser's scatter has no product, maximum or minimum reduction",
        prims.index_put: "nvFuser has no index_put (only an accumulating one in the older module)",
        prims.device_put: "moves data between devices; a fusion runs on one",
        prims.copy_: "writes into an existing tensor; fusion outputs are new tensors",
        prims.convolution: "nvFuser has no convolution",
        prims.max_pool: "nvFuser has no pooling",
        prims.avg_pool: "nvFuser has no pooling",
        prims.adaptive_avg_pool: "nvFuser has no pooling",
        prims.polygamma: "nvFuser has no polygamma",
        prims.convolution_backward: "nvFuser has no convolution",
        prims.max_pool_backward: "nvFuser has no pooling",
        prims.avg_pool_backward: "nvFuser has no pooling",
        prims.adaptive_avg_pool_backward: "nvFuser has no pooling",
        prims.custom_op_backward: "runs a custom operator's own autograd formula",
        prims.grouped_mm: "grouped (mixture-of-experts) matmuls: torch's grouped kernel",
        prims.bitcast: "reads each element's bytes as another dtype: torch's view(dtype)",
        **dict.fromkeys(
            (
                prims.all_reduce,
                prims.all_gather,
                prims.reduce_scatter,
                prims.broadcast,
                prims.all_to_all_single,
            ),
            "a collective: torch's functional collectives run it on its process group, between regions",
        ),
        prims.wait: "the end of a collective: torch's functional collectives wait for it",
        **dict.fromkeys(
            (
                prims.cholesky,
                prims.qr,
                prims.eigh,
                prims.svd,
                prims.lu,
                prims.lu_factor,
                prims.lu_unpack,
                prims.solve_triangular,
                prims.cholesky_solve,
                prims.cholesky_inverse,
                prims.lu_solve,
            ),
            "nvFuser has no matrix factorizations or triangular solves: torch's linear algebra kernels",
        ),
        **dict.fromkeys(
            (prims.fft_r2c, prims.fft_c2c, prims.fft_c2r, prims.conj_physical),
            "nvFuser has no Fourier transforms (and no complex tensors here): torch's FFT kernels",
        ),
    },
)

# Tensor dtypes translated (complex is left out: our prims' complex rules are not nvFuser's).
SUPPORTED_DTYPES = frozenset(d for d in DATATYPE_NAMES if not d.is_complex)
_INT64_RANGE = (-(2**63), 2**63 - 1)


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype torch does the math in: float32 for bfloat16/float16, else ``dtype``."""
    return torch.float32 if dtype in LOW_PRECISION_DTYPES else dtype


def unsupported_reason(bsym: BoundSymbol) -> str | None:
    """Why nvFuser cannot take ``bsym`` (no translation, a dtype or number it lacks, or the
    prim's own limits), or None when it can."""
    entry = TRANSLATIONS.get(bsym.sym)
    if entry is None:
        return UNSUPPORTED.get(bsym.sym, "no nvFuser translation")
    for x in tree_leaves((bsym.args, bsym.kwargs, bsym.output)):
        reason = _leaf_reason(x)
        if reason is not None:
            return reason
    return entry.check(bsym) if entry.check is not None else None


def _leaf_reason(x) -> str | None:
    if isinstance(x, TensorProxy):
        return _dtype_reason(x.meta_dtype, f"{x.name}: ")
    if isinstance(x, torch.Tensor):
        return "a constant tensor among the arguments (fusion inputs are proxies)"
    if isinstance(x, torch.dtype):
        return _dtype_reason(x, "")
    if isinstance(x, NumberProxy):
        return None if x.python_type in (bool, int, float) else f"{x.name}: {x.python_type.__name__} numbers"
    if isinstance(x, complex):
        return "complex numbers are not translated"
    if isinstance(x, int) and not isinstance(x, bool) and not _INT64_RANGE[0] <= x <= _INT64_RANGE[1]:
        return f"the integer {x} does not fit in int64"
    return None


def _dtype_reason(dtype: torch.dtype, prefix: str) -> str | None:
    if dtype in SUPPORTED_DTYPES:
        return None
    if dtype.is_complex:
        return f"{prefix}complex tensors are not translated"
    return f"{prefix}nvFuser has no {str(dtype).replace('torch.', '')} dtype"


# -- helpers shared by the entries ----------------------------------------------------------
def operand(em, x, dtype: torch.dtype, shape: tuple[int, ...]):
    """``x`` (a tensor proxy, a number proxy or a Python number) as a fusion value of
    ``dtype``; a tensor is broadcast to ``shape`` the way torch broadcasts (from the right)."""
    if is_tensor(x):
        v = cast(em, em.get(x), dtype_of(x), dtype)
        s = shape_of(x)
        if len(s) != len(shape) or not all(map(same_size, s, shape)):
            if any(is_symbolic(d) for d in shape):
                # symbolic extents come from the other operands: nvFuser broadcasts a size-1
                # dimension by itself, and the missing leading ones are added as broadcasts
                # (the symbols of ``shape`` need not be inputs of the fusion)
                if len(s) < len(shape):
                    v = em.op(
                        "broadcast", v, is_broadcast_dim=[True] * (len(shape) - len(s)) + [False] * len(s)
                    )
                return v
            dims = list(range(len(shape) - len(s), len(shape)))
            v = em.op("broadcast_in_dim", v, shape=list(shape), broadcast_dims=dims)
        return v
    if isinstance(x, NumberProxy):
        return em.op("cast", em.get(x), dtype=dtype, scalar=True)
    if is_symbolic(x):  # a size computed from the symbols (inputs of the fusion)
        return em.op("cast", em.size(x), dtype=dtype, scalar=True)
    return em.constant(x, dtype)


def _text(sizes) -> str:
    """Sizes as a message writes them (``(s0, 8)``): a symbolic size's expression, not its value."""
    return "(" + ", ".join(size_source(s) for s in sizes) + ("," if len(sizes) == 1 else "") + ")"


def cast(em, v, have: torch.dtype, want: torch.dtype):
    return v if have is want else em.op("cast", v, dtype=want)


def _out(bsym: BoundSymbol) -> TensorProxy:
    return bsym.output


# -- elementwise: from each prim's declaration (``prims.ELEMENTWISE``) ------------------------
def _unary_emitter(decl: Elementwise):
    """A unary prim computes in its input's dtype (``Rule.SAME``), its output's (``FLOAT``: a
    float), or on its operand as it is or as truth values and gives bool (``BOOL``); one that
    keeps integers is a copy of an integer input (as torch)."""

    def emit(em, bsym):
        (a,) = bsym.args
        out = _out(bsym)
        if decl.keeps_integers and not dtype_of(a).is_floating_point:
            return em.op("set", em.get(a))
        if decl.on_truth_values:
            c = torch.bool
        else:
            c = compute_dtype(dtype_of(out) if decl.rule is Rule.FLOAT else dtype_of(a))
        v = em.op(decl.nvfuser, operand(em, a, c, shape_of(out)))
        return cast(em, v, torch.bool if decl.rule is Rule.BOOL else c, dtype_of(out))

    return emit


def _binary(decl: Elementwise):
    """A binary prim computes in its output's dtype; a comparison (``Rule.BOOL``) in the
    promoted dtype of the operands, or on their truth values, and gives bool."""

    def emit(em, bsym):
        a, b = bsym.args
        out = _out(bsym)
        if decl.on_truth_values:
            c, have = torch.bool, torch.bool
        elif decl.rule is Rule.BOOL:
            c, have = compute_dtype(result_dtype(a, b)), torch.bool
        else:
            c = have = compute_dtype(dtype_of(out))
        va, vb = operand(em, a, c, shape_of(out)), operand(em, b, c, shape_of(out))
        return cast(em, em.op(decl.nvfuser, va, vb), have, dtype_of(out))

    return emit


for _prim, _decl in ELEMENTWISE.items():
    if _prim not in UNSUPPORTED:
        _make = _unary_emitter if Tag.UNARY in _prim.tags else _binary
        TRANSLATIONS[_prim] = Translation(_make(_decl))


def _where(em, bsym):
    cond, a, b = bsym.args
    out = _out(bsym)
    c, shape = compute_dtype(dtype_of(out)), shape_of(out)
    v = em.op(
        "where", operand(em, cond, torch.bool, shape), operand(em, a, c, shape), operand(em, b, c, shape)
    )
    return cast(em, v, c, dtype_of(out))


def _clamp(em, bsym):
    a, lo, hi = bsym.args
    out = _out(bsym)
    c, shape = compute_dtype(dtype_of(out)), shape_of(out)
    v = operand(em, a, c, shape)
    # torch.clamp is min(max(a, lo), hi), NaN in ``a`` kept; nvFuser's max/min keep NaN too
    if lo is not None:
        v = em.op("maximum", v, operand(em, lo, c, shape))
    if hi is not None:
        v = em.op("minimum", v, operand(em, hi, c, shape))
    return cast(em, v, c, dtype_of(out))


def _convert_element_type(em, bsym):
    a, dtype = bsym.args
    return em.op("cast", em.get(a), dtype=dtype)


TRANSLATIONS[prims.where] = Translation(_where)
TRANSLATIONS[prims.clamp] = Translation(_clamp)
TRANSLATIONS[prims.convert_element_type] = Translation(_convert_element_type)


# -- shape ------------------------------------------------------------------------------------
def _broadcast_in_dim(em, bsym):
    a, shape, dims = bsym.args
    return em.op("broadcast_in_dim", em.get(a), shape=list(shape), broadcast_dims=list(dims))


def _reshape(em, bsym):
    a, shape = bsym.args
    return em.op("reshape", em.get(a), new_shape=list(shape))


def _transpose(em, bsym):
    a, permutation = bsym.args
    return em.op("permute", em.get(a), dims=list(permutation))


def _slice_strides(bsym) -> list[int]:
    a, start, end, *rest = bsym.args
    strides = rest[0] if rest else bsym.kwargs.get("strides")
    return list(strides) if strides else [1] * len(start)


def _slice(em, bsym):
    a, start, end, *_ = bsym.args
    strides = _slice_strides(bsym)
    return em.op("slice", em.get(a), start_indices=list(start), end_indices=list(end), strides=strides)


def _slice_check(bsym) -> str | None:
    strides = _slice_strides(bsym)
    if any(s != 1 for s in strides):
        return f"nvFuser slices with step 1 only (this one steps by {_text(strides)})"
    return None


def _squeeze(em, bsym):
    a, dims = bsym.args
    return em.op("squeeze", em.get(a), dims=list(dims))


def _cat(em, bsym):
    tensors, dim = bsym.args
    out = _out(bsym)
    values = [cast(em, em.get(t), dtype_of(t), dtype_of(out)) for t in tensors]
    return em.op("cat", values, dim=dim % len(shape_of(out)))


TRANSLATIONS[prims.broadcast_in_dim] = Translation(_broadcast_in_dim)
TRANSLATIONS[prims.reshape] = Translation(_reshape)
TRANSLATIONS[prims.transpose] = Translation(_transpose)
TRANSLATIONS[prims.slice_prim] = Translation(_slice, _slice_check)
TRANSLATIONS[prims.squeeze] = Translation(_squeeze)
TRANSLATIONS[prims.cat] = Translation(_cat)


# -- reductions -------------------------------------------------------------------------------
def _reduction(op: str, *, accumulates: bool):
    """sum/prod (``accumulates``: in float32 for low precision, integers in int64, as torch)
    and max/min (in the input's dtype). Reducing no dimensions is a copy."""

    def emit(em, bsym):
        a, dims = bsym.args
        out = _out(bsym)
        c = compute_dtype(dtype_of(out)) if accumulates else dtype_of(a)
        v = cast(em, em.get(a), dtype_of(a), c)
        if not dims:
            v = em.op("set", v)
        elif accumulates:
            v = em.op(op, v, dims=list(dims), keepdim=False, dtype=c)
        else:
            v = em.op(op, v, dims=list(dims), keepdim=False)
        return cast(em, v, c, dtype_of(out))

    return emit


def _var(em, bsym):
    a, dims = bsym.args
    out = _out(bsym)
    c = compute_dtype(dtype_of(out))
    v = cast(em, em.get(a), dtype_of(a), c)
    v = em.op("var", v, dims=list(dims), correction=bsym.kwargs["correction"], keepdim=False)
    return cast(em, v, c, dtype_of(out))


def _var_check(bsym):
    correction = bsym.kwargs["correction"]
    if not isinstance(correction, int) or isinstance(correction, bool):
        return f"nvFuser's var takes an integer correction, got {correction!r}"
    if not bsym.args[1]:
        return "a variance over no dimensions"
    return None


def _cumsum(em, bsym):
    a, dim = bsym.args
    out = _out(bsym)
    c = compute_dtype(dtype_of(out))
    v = em.op("cumsum", cast(em, em.get(a), dtype_of(a), c), dim=dim % max(len(shape_of(a)), 1))
    return cast(em, v, c, dtype_of(out))


def _cumsum_check(bsym):
    return "a cumulative sum of a 0-dim tensor" if not shape_of(bsym.args[0]) else None


TRANSLATIONS[prims.sum] = Translation(_reduction("sum", accumulates=True))
TRANSLATIONS[prims.prod] = Translation(_reduction("prod", accumulates=True))
TRANSLATIONS[prims.amax] = Translation(_reduction("max", accumulates=False))
TRANSLATIONS[prims.amin] = Translation(_reduction("min", accumulates=False))
TRANSLATIONS[prims.var] = Translation(_var, _var_check)
TRANSLATIONS[prims.cumsum] = Translation(_cumsum, _cumsum_check)


# -- linear algebra ---------------------------------------------------------------------------
def _matmul(em, bsym):
    a, b = bsym.args
    return em.op("matmul", em.get(a), em.get(b))


def _linear(em, bsym):
    a, w, bias = bsym.args
    if bias is None:
        return em.op("linear", em.get(a), em.get(w))
    return em.op("linear", em.get(a), em.get(w), em.get(bias))


def _floating_only(bsym):
    for t in bsym.flat_proxy_args:
        if isinstance(t, TensorProxy) and not t.meta_dtype.is_floating_point:
            return f"{t.name}: CUDA matrix products take floating-point tensors, got {t.meta_dtype}"
    return None


def _linear_check(bsym):
    a, w, bias = bsym.args
    if bias is not None and not is_tensor(bias):
        return f"a bias that is not a tensor ({bias!r})"
    return _floating_only(bsym)


TRANSLATIONS[prims.matmul] = Translation(_matmul, _floating_only)
TRANSLATIONS[prims.linear] = Translation(_linear, _linear_check)


# -- indexing ---------------------------------------------------------------------------------
def _take(em, bsym):
    """``index_select`` takes a 1-D index: any other index is flattened first and the
    result reshaped to ``a``'s shape with ``dim`` replaced by the index's shape."""
    a, index, dim = bsym.args
    em.note_index(index, shape_of(a)[dim])
    idx = em.get(index)
    if len(shape_of(index)) != 1:
        idx = em.op("reshape", idx, new_shape=[math.prod(shape_of(index))])
    v = em.op("index_select", em.get(a), idx, dim=dim)
    if len(shape_of(index)) != 1:
        v = em.op("reshape", v, new_shape=list(shape_of(_out(bsym))))
    return v


def _take_along_axis(em, bsym):
    a, index, dim = bsym.args
    em.note_index(index, shape_of(a)[dim])
    return em.op("take_along_axis", em.get(a), em.get(index), dim=dim)


def _take_along_axis_check(bsym):
    a, index, dim = bsym.args
    sa, si = shape_of(a), shape_of(index)
    if len(sa) != len(si) or any(not same_size(x, y) for i, (x, y) in enumerate(zip(sa, si)) if i != dim):
        return (
            f"index shape {_text(si)} differs from the input's {_text(sa)} outside dimension {dim}; "
            "nvFuser's take_along_axis does not broadcast"
        )
    return None


def _index_copy(em, bsym):
    """torch.index_copy(a, dim, index, src) is a.scatter(dim, index expanded to src, src)."""
    a, index, dim, src = bsym.args
    em.note_index(index, shape_of(a)[dim])
    idx = em.op("broadcast_in_dim", em.get(index), shape=list(shape_of(src)), broadcast_dims=[dim])
    v = cast(em, em.get(src), dtype_of(src), dtype_of(a))
    return em.op("scatter", em.get(a), idx, v, dim=dim)


def _index_copy_check(bsym):
    a, index, dim, src = bsym.args
    if len(shape_of(index)) != 1:
        return f"a {len(shape_of(index))}-D index (index_copy is translated for 1-D indices)"
    if len(shape_of(src)) != len(shape_of(a)):
        return "a source of another rank than the input"
    return None


def _topk(em, bsym):
    a, k, dim, largest, is_sorted = bsym.args
    kv = operand(em, k, torch.int64, ())
    return em.op("topk", em.get(a), kv, dim=dim, largest=bool(largest), sorted=bool(is_sorted), outputs=2)


def _sort(em, bsym):
    """nvFuser sorts to indices (``argsort``); the values are gathered with them."""
    a, dim, descending, stable = bsym.args
    dim = dim % max(len(shape_of(a)), 1)
    v = em.get(a)
    idx = em.op("argsort", v, dim=dim, descending=bool(descending), stable=bool(stable))
    return em.op("take_along_axis", v, idx, dim=dim), idx


def _has_dims(bsym):
    return "a 0-dim tensor" if not shape_of(bsym.args[0]) else None


TRANSLATIONS[prims.take] = Translation(_take)
TRANSLATIONS[prims.take_along_axis] = Translation(_take_along_axis, _take_along_axis_check)
TRANSLATIONS[prims.index_copy] = Translation(_index_copy, _index_copy_check)
TRANSLATIONS[prims.topk] = Translation(_topk, _has_dims)
TRANSLATIONS[prims.sort] = Translation(_sort, _has_dims)


# -- factories --------------------------------------------------------------------------------
def _full(em, bsym):
    shape, fill = bsym.args
    dtype = bsym.kwargs["dtype"]
    value = operand(em, fill, compute_dtype(dtype), ())
    return em.op("full", shape=list(shape), fill_value=value, dtype=dtype)


def _iota(em, bsym):
    (length,) = bsym.args
    kw = bsym.kwargs
    dtype = kw["dtype"]
    return em.op(
        "iota",
        operand(em, length, torch.int64, ()),
        operand(em, kw["start"], dtype, ()),
        operand(em, kw["step"], dtype, ()),
        dtype=dtype,
    )


def _iota_check(bsym):
    dtype = bsym.kwargs["dtype"]
    if dtype not in (torch.int64, torch.int32, torch.float32, torch.float64):
        return f"nvFuser's iota makes int32/int64/float32/float64 tensors, not {dtype}"
    return None


def _uniform(em, bsym):
    """nvFuser draws from its own random stream: same distribution as torch, other numbers."""
    shape, minval, maxval = bsym.args
    dtype = bsym.kwargs["dtype"]
    c = compute_dtype(dtype)
    lo, hi = operand(em, minval, c, ()), operand(em, maxval, c, ())
    return cast(em, em.op("uniform", lo, hi, shape=list(shape), dtype=c), c, dtype)


def _uniform_check(bsym):
    dtype = bsym.kwargs["dtype"]
    return None if dtype.is_floating_point else f"uniform numbers of dtype {dtype}"


def _bernoulli(em, bsym):
    """1 where a uniform draw (nvFuser's stream) is below ``p``."""
    (shape, p) = bsym.args
    dtype = bsym.kwargs["dtype"]
    c = compute_dtype(dtype)
    u = em.op("uniform", operand(em, 0.0, c, ()), operand(em, 1.0, c, ()), shape=list(shape), dtype=c)
    return cast(em, em.op("lt", u, operand(em, p, c, ())), torch.bool, dtype)


def _number_fill(bsym):
    fill = bsym.args[1]
    if not isinstance(fill, (Number, NumberProxy)):
        return f"a fill value that is not a number ({type(fill).__name__})"
    return None


TRANSLATIONS[prims.full] = Translation(_full, _number_fill)
TRANSLATIONS[prims.iota] = Translation(_iota, _iota_check)
TRANSLATIONS[prims.uniform] = Translation(_uniform, _uniform_check)
TRANSLATIONS[prims.bernoulli] = Translation(_bernoulli, _uniform_check)
