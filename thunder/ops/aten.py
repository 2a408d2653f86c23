"""The aten language: ``torch.ops.aten`` operators as symbols of their own.

A tensor subclass's ``__torch_dispatch__`` calls aten operators on its inner tensors, and
user code may call them directly (``torch.ops.aten.mm.default(a, b)``). Each overload is one
symbol, printed as torch names it (``aten.add.Tensor(t1, 1)``), declared here with its
decomposition into prims, from which its output metadata comes as for every composite. The
torch executor runs it whole as ``torch.ops.aten.<op>.<overload>``.

An aten operator is never mapped onto a torch-language op. Where the two have the same
semantics for these arguments, the decomposition is shared explicitly
(``ltorch.gelu.decomposition``), so the prims appear directly below the aten op.

To add an operator: declare it below with ``@aten(torch.ops.aten.<op>.<overload>)`` and add
an entry to ``tests/aten_opdb.py``.
"""

from __future__ import annotations

import types
from collections.abc import Callable

import torch

from thunder.core.symbol import Symbol, register
from thunder.core.tags import Tag
from thunder.ops import ltorch, prims
from thunder.ops.langs import alias
from thunder.ops.ltorch.factories import _check_layout
from thunder.ops.ltorch.inplace import VIEW_WRITES as TORCH_VIEW_WRITES
from thunder.ops.ltorch.reductions import _softmax_core
from thunder.ops.ltorch.shape import _reshape, _slice_dim, int_index
from thunder.ops.meta import ShapeError, canonical_dim, device_of, dtype_of, is_tensor, shape_of

A = torch.ops.aten

# OpOverload -> its symbol: what a subclass's dispatch and user code reach
ATEN: dict = {}
# op name -> {overload name: symbol}: ``aten.add.Tensor`` in printed traces resolves here
_PACKETS: dict[str, types.SimpleNamespace] = {}


_OVERLOAD = "the overload itself"


def aten(overload, *, tags: tuple[Tag, ...] = (), torch_impl: str | None = _OVERLOAD):
    """Declare the decorated function as the decomposition of ``overload`` (an OpOverload).

    ``torch_impl``: what the torch executor calls for the whole op (by default the overload;
    ``None``: the decomposition runs)."""

    def deco(fn: Callable) -> Symbol:
        op = overload._schema.name.split("::", 1)[1]
        name = overload._overloadname
        sym = register(
            Symbol(
                f"{op}.{name}",
                "aten",
                decomposition=fn,
                tags=(Tag.ATEN, *tags),
                module_path=__name__,
                torch_impl=f"torch.ops.aten.{op}.{name}" if torch_impl is _OVERLOAD else torch_impl,
                doc=f"torch.ops.aten.{op}.{name}: {overload._schema}",
            )
        )
        ATEN[overload] = sym
        _PACKETS.setdefault(op, types.SimpleNamespace())
        setattr(_PACKETS[op], name, sym)
        alias(sym, overload)  # user code may call the overload directly
        return sym

    return deco


def __getattr__(name: str):
    # printed traces call ``aten.add.Tensor(...)``: the module's ``add`` is the op's overloads
    try:
        return _PACKETS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def _alpha(x, alpha):
    if alpha == 1:
        return x
    return prims.mul(x, alpha) if is_tensor(x) else x * alpha


# -- elementwise ----------------------------------------------------------------------------
@aten(A.add.Tensor, tags=(Tag.ELEMENTWISE,))
def add_Tensor(a, b, *, alpha=1):
    return prims.add(a, _alpha(b, alpha))


@aten(A.add.Scalar, tags=(Tag.ELEMENTWISE,))
def add_Scalar(a, b, alpha=1):
    return prims.add(a, _alpha(b, alpha))


@aten(A.sub.Tensor, tags=(Tag.ELEMENTWISE,))
def sub_Tensor(a, b, *, alpha=1):
    return prims.sub(a, _alpha(b, alpha))


@aten(A.sub.Scalar, tags=(Tag.ELEMENTWISE,))
def sub_Scalar(a, b, alpha=1):
    return prims.sub(a, _alpha(b, alpha))


@aten(A.rsub.Tensor, tags=(Tag.ELEMENTWISE,))
def rsub_Tensor(a, b, *, alpha=1):
    return prims.sub(b, _alpha(a, alpha))


@aten(A.rsub.Scalar, tags=(Tag.ELEMENTWISE,))
def rsub_Scalar(a, b, alpha=1):
    return prims.sub(b, _alpha(a, alpha))


@aten(A.mul.Tensor, tags=(Tag.ELEMENTWISE,))
def mul_Tensor(a, b):
    return prims.mul(a, b)


@aten(A.mul.Scalar, tags=(Tag.ELEMENTWISE,))
def mul_Scalar(a, b):
    return prims.mul(a, b)


@aten(A.div.Tensor, tags=(Tag.ELEMENTWISE,))
def div_Tensor(a, b):
    return prims.div(a, b)


@aten(A.div.Scalar, tags=(Tag.ELEMENTWISE,))
def div_Scalar(a, b):
    return prims.div(a, b)


@aten(A.div.Tensor_mode, tags=(Tag.ELEMENTWISE,))
def div_Tensor_mode(a, b, *, rounding_mode=None):
    return ltorch.div.decomposition(a, b, rounding_mode=rounding_mode)


@aten(A.pow.Tensor_Scalar, tags=(Tag.ELEMENTWISE,))
def pow_Tensor_Scalar(a, b):
    return prims.pow(a, b)


@aten(A.pow.Tensor_Tensor, tags=(Tag.ELEMENTWISE,))
def pow_Tensor_Tensor(a, b):
    return prims.pow(a, b)


@aten(A.maximum.default, tags=(Tag.ELEMENTWISE,))
def maximum_default(a, b):
    return prims.maximum(a, b)


@aten(A.minimum.default, tags=(Tag.ELEMENTWISE,))
def minimum_default(a, b):
    return prims.minimum(a, b)


def _aten_unary(overload, prim: Symbol) -> Symbol:
    def op(a):
        return prim(a)

    op.__name__ = f"{overload._schema.name.split('::')[1]}_{overload._overloadname}"
    return aten(overload, tags=(Tag.ELEMENTWISE,))(op)


neg_default = _aten_unary(A.neg.default, prims.neg)
abs_default = _aten_unary(A.abs.default, prims.abs)
exp_default = _aten_unary(A.exp.default, prims.exp)
log_default = _aten_unary(A.log.default, prims.log)
sin_default = _aten_unary(A.sin.default, prims.sin)
cos_default = _aten_unary(A.cos.default, prims.cos)
tanh_default = _aten_unary(A.tanh.default, prims.tanh)
sigmoid_default = _aten_unary(A.sigmoid.default, prims.sigmoid)
sqrt_default = _aten_unary(A.sqrt.default, prims.sqrt)
rsqrt_default = _aten_unary(A.rsqrt.default, prims.rsqrt)
reciprocal_default = _aten_unary(A.reciprocal.default, prims.reciprocal)


def _comparison(overload, prim: Symbol) -> Symbol:
    def op(a, b):
        return prim(a, b)

    op.__name__ = f"{overload._schema.name.split('::')[1]}_{overload._overloadname}"
    return aten(overload, tags=(Tag.ELEMENTWISE,))(op)


eq_Tensor = _comparison(A.eq.Tensor, prims.eq)
eq_Scalar = _comparison(A.eq.Scalar, prims.eq)
ne_Tensor = _comparison(A.ne.Tensor, prims.ne)
ne_Scalar = _comparison(A.ne.Scalar, prims.ne)
lt_Tensor = _comparison(A.lt.Tensor, prims.lt)
lt_Scalar = _comparison(A.lt.Scalar, prims.lt)
le_Tensor = _comparison(A.le.Tensor, prims.le)
le_Scalar = _comparison(A.le.Scalar, prims.le)
gt_Tensor = _comparison(A.gt.Tensor, prims.gt)
gt_Scalar = _comparison(A.gt.Scalar, prims.gt)
ge_Tensor = _comparison(A.ge.Tensor, prims.ge)
ge_Scalar = _comparison(A.ge.Scalar, prims.ge)


@aten(A.relu.default, tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def relu_default(a):
    return ltorch.relu.decomposition(a)


@aten(A.gelu.default, tags=(Tag.ELEMENTWISE, Tag.ACTIVATION))
def gelu_default(a, *, approximate="none"):
    return ltorch.gelu.decomposition(a, approximate)


@aten(A.where.self, tags=(Tag.ELEMENTWISE,))
def where_self(condition, a, b):
    return prims.where(condition, a, b)


@aten(A.clamp.default, tags=(Tag.ELEMENTWISE,))
def clamp_default(a, min=None, max=None):
    return ltorch.clamp.decomposition(a, min, max)


# -- matrix products ------------------------------------------------------------------------
def _ndim(op: str, name: str, a, n: int) -> None:
    if len(shape_of(a)) != n:
        raise ShapeError(f"aten.{op}: {name} must be a {n}-D tensor, got shape {shape_of(a)}")


@aten(A.mm.default, tags=(Tag.MATMUL,))
def mm_default(a, b):
    _ndim("mm", "self", a, 2)
    _ndim("mm", "mat2", b, 2)
    return prims.matmul(a, b)


@aten(A.bmm.default, tags=(Tag.MATMUL,))
def bmm_default(a, b):
    _ndim("bmm", "self", a, 3)
    _ndim("bmm", "mat2", b, 3)
    if shape_of(a)[0] != shape_of(b)[0]:
        raise ShapeError(f"aten.bmm: batch sizes differ: {shape_of(a)} and {shape_of(b)}")
    return prims.matmul(a, b)


@aten(A.addmm.default, tags=(Tag.MATMUL,))
def addmm_default(bias, a, b, *, beta=1, alpha=1):
    _ndim("addmm", "mat1", a, 2)
    _ndim("addmm", "mat2", b, 2)
    out = _alpha(prims.matmul(a, b), alpha)
    if beta == 0:  # as torch: the input is ignored (a nan in it does not propagate)
        return out
    return prims.add(out, _alpha(bias, beta))


# -- shapes and views -----------------------------------------------------------------------
# view and _unsafe_view run as reshape: thunder tracks values, not memory layout, so a view
# of a tensor that another executor laid out differently must still work (as ltorch.view)
@aten(A.view.default, tags=(Tag.SHAPE, Tag.VIEW), torch_impl="torch.Tensor.reshape")
def view_default(a, size):
    return _reshape(a, tuple(size), "aten.view")


@aten(A._unsafe_view.default, tags=(Tag.SHAPE,), torch_impl="torch.Tensor.reshape")
def _unsafe_view_default(a, size):
    return _reshape(a, tuple(size), "aten._unsafe_view")


@aten(A.t.default, tags=(Tag.SHAPE, Tag.VIEW))
def t_default(a):
    n = len(shape_of(a))
    if n > 2:
        raise ShapeError(f"aten.t: expected a tensor of at most 2 dimensions, got {n}")
    return ltorch.transpose.decomposition(a, 0, 1) if n == 2 else a


@aten(A.transpose.int, tags=(Tag.SHAPE, Tag.VIEW))
def transpose_int(a, dim0, dim1):
    return ltorch.transpose.decomposition(a, dim0, dim1)


@aten(A.permute.default, tags=(Tag.SHAPE, Tag.VIEW))
def permute_default(a, dims):
    return ltorch.permute.decomposition(a, dims=tuple(dims))


@aten(A.expand.default, tags=(Tag.SHAPE, Tag.VIEW))
def expand_default(a, size, *, implicit=False):
    return ltorch.expand.decomposition(a, size=tuple(size))


@aten(A.unsqueeze.default, tags=(Tag.SHAPE, Tag.VIEW))
def unsqueeze_default(a, dim):
    return ltorch.unsqueeze.decomposition(a, dim)


@aten(A.squeeze.default, tags=(Tag.SHAPE, Tag.VIEW))
def squeeze_default(a):
    return ltorch.squeeze.decomposition(a)


@aten(A.squeeze.dim, tags=(Tag.SHAPE, Tag.VIEW))
def squeeze_dim(a, dim):
    return ltorch.squeeze.decomposition(a, dim)


@aten(A.squeeze.dims, tags=(Tag.SHAPE, Tag.VIEW))
def squeeze_dims(a, dim):
    return ltorch.squeeze.decomposition(a, tuple(dim))


@aten(A.select.int, tags=(Tag.SHAPE, Tag.VIEW))
def select_int(a, dim, index):
    s = shape_of(a)
    d = canonical_dim(dim, len(s), "aten.select")
    i = int_index(index, s[d], d, "aten.select")
    return prims.squeeze(_slice_dim(a, d, i, i + 1), (d,))


@aten(A.slice.Tensor, tags=(Tag.SHAPE, Tag.VIEW))
def slice_Tensor(a, dim=0, start=None, end=None, step=1):
    s = shape_of(a)
    d = canonical_dim(dim, len(s), "aten.slice")
    if step < 1:
        raise ShapeError(f"aten.slice: step must be positive, got {step}")
    # as Python slicing: None is the whole range, negative counts from the end, clamped
    lo, hi, _ = slice(start, end).indices(s[d])
    return _slice_dim(a, d, lo, max(lo, hi), step)


@aten(A.split.Tensor, tags=(Tag.SHAPE, Tag.VIEW))
def split_Tensor(a, split_size, dim=0):
    return list(ltorch.split.decomposition(a, split_size, dim))


@aten(A.cat.default, tags=(Tag.SHAPE,))
def cat_default(tensors, dim=0):
    return ltorch.cat.decomposition(list(tensors), dim)


@aten(A.clone.default, tags=(Tag.COPY,))
def clone_default(a, *, memory_format=None):
    return prims.clone(a)


# detach and alias give the same value (thunder traces values, and the flat program they
# belong to has no autograd of its own): they record nothing
@aten(A.detach.default)
def detach_default(a):
    return a


@aten(A.alias.default, tags=(Tag.VIEW,))
def alias_default(a):
    return a


@aten(A._to_copy.default, tags=(Tag.CAST,))
def _to_copy_default(
    a, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None
):
    _check_layout("aten._to_copy", layout)
    out = a
    if dtype is not None and dtype is not dtype_of(a):
        out = prims.convert_element_type(out, dtype)
    if device is not None and torch.device(device) != device_of(a):
        out = prims.device_put(out, torch.device(device))
    return prims.clone(a) if out is a else out


# ``dst.copy_(src)`` as a value: what ``dst`` holds afterwards (the caller rebinds ``dst``);
# no torch_impl, since torch's copy_ would write into its argument
@aten(A.copy_.default, tags=(Tag.COPY,), torch_impl=None)
def copy__default(a, src, non_blocking=False):
    return ltorch.copy_to.decomposition(a, src)


def _like(value):
    def op(a, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
        _check_layout("aten.*_like", layout)
        return prims.full(
            shape_of(a), value, dtype=dtype or dtype_of(a), device=torch.device(device or device_of(a))
        )

    return op


zeros_like_default = aten(A.zeros_like.default, tags=(Tag.FACTORY,))(_like(0))
ones_like_default = aten(A.ones_like.default, tags=(Tag.FACTORY,))(_like(1))


# the values ``fill_`` and ``zero_`` write (``aten.fill_.Tensor`` is how ``x[0] = 5.0`` reaches a
# subclass's dispatch: torch wraps the number into a 0-dim tensor); in the input's autograd
# graph with a zero gradient, as torch's
@aten(A.fill.Scalar, tags=(Tag.FACTORY,))
def fill_Scalar(a, value):
    return ltorch.fill.decomposition(a, value)


@aten(A.fill.Tensor, tags=(Tag.FACTORY,))
def fill_Tensor(a, value):
    return ltorch.fill.decomposition(a, value)


@aten(A.zero.default, tags=(Tag.FACTORY,))
def zero_default(a):
    return ltorch.fill.decomposition(a, 0)


# -- reductions -----------------------------------------------------------------------------
@aten(A.sum.default, tags=(Tag.REDUCTION,))
def sum_default(a, *, dtype=None):
    return ltorch.sum.decomposition(a, None, False, dtype=dtype)


@aten(A.sum.dim_IntList, tags=(Tag.REDUCTION,))
def sum_dim_IntList(a, dim, keepdim=False, *, dtype=None):
    return ltorch.sum.decomposition(a, dim, keepdim, dtype=dtype)


@aten(A.mean.default, tags=(Tag.REDUCTION,))
def mean_default(a, *, dtype=None):
    return ltorch.mean.decomposition(a, None, False, dtype=dtype)


@aten(A.mean.dim, tags=(Tag.REDUCTION,))
def mean_dim(a, dim, keepdim=False, *, dtype=None):
    return ltorch.mean.decomposition(a, dim, keepdim, dtype=dtype)


@aten(A.amax.default, tags=(Tag.REDUCTION,))
def amax_default(a, dim=(), keepdim=False):
    return ltorch.amax.decomposition(a, dim, keepdim)


@aten(A.amin.default, tags=(Tag.REDUCTION,))
def amin_default(a, dim=(), keepdim=False):
    return ltorch.amin.decomposition(a, dim, keepdim)


@aten(A.max.default, tags=(Tag.REDUCTION,))
def max_default(a):
    return ltorch.amax.decomposition(a, None, False)


@aten(A.min.default, tags=(Tag.REDUCTION,))
def min_default(a):
    return ltorch.amin.decomposition(a, None, False)


def _softmax(log: bool):
    def op(a, dim, half_to_float):
        if half_to_float:
            raise ShapeError("aten._softmax: half_to_float=True (a CUDA-only fast path) is not supported")
        return _softmax_core(a, dim, None, "aten._softmax", log)

    return op


_softmax_default = aten(A._softmax.default, tags=(Tag.REDUCTION,))(_softmax(False))
_log_softmax_default = aten(A._log_softmax.default, tags=(Tag.REDUCTION,))(_softmax(True))


@aten(A.index_select.default, tags=(Tag.INDEXING,))
def index_select_default(a, dim, index):
    return ltorch.index_select.decomposition(a, dim, index)


@aten(A.scatter_add.default, tags=(Tag.INDEXING,))
def scatter_add_default(a, dim, index, src):
    return ltorch.scatter_add.decomposition(a, dim, index, src)


@aten(A.index_put.default, tags=(Tag.INDEXING,))
def index_put_default(a, indices, values, accumulate=False):
    return ltorch.index_put.decomposition(a, tuple(indices), values, accumulate)


# -- in-place writes ------------------------------------------------------------------------
def written_value(overload) -> Symbol | None:
    """The symbol computing the value an in-place overload leaves in its first argument: its
    own, where it is declared as that value (``copy_.default``), or its functional twin's of
    the same overload (``add_.Tensor`` writes what ``add.Tensor`` returns); None if neither."""
    sym = ATEN.get(overload)
    if sym is not None:
        return sym
    op = overload._schema.name.split("::", 1)[1]
    twin = getattr(getattr(A, op[:-1], None), overload._overloadname, None) if op.endswith("_") else None
    return ATEN.get(twin) if isinstance(twin, torch._ops.OpOverload) else None


def out_value(overload) -> tuple[torch._ops.OpOverload, str] | None:
    """For an overload writing one keyword argument (``add.out``: ``out``): its functional
    overload of the same other arguments (``add.Tensor``, which has a symbol), whose result the
    write leaves there, and the written argument's name; None if there is none."""
    arguments = overload._schema.arguments
    written = [a for a in arguments if a.alias_info is not None and a.alias_info.is_write]
    if len(written) != 1 or not written[0].kwarg_only or str(written[0].type) != "Tensor":
        return None
    want = [(a.name, str(a.type)) for a in arguments if a is not written[0]]
    packet = overload.overloadpacket
    for name in packet.overloads():
        twin = getattr(packet, name)
        if twin in ATEN and [(a.name, str(a.type)) for a in twin._schema.arguments] == want:
            return twin, written[0].name
    return None


def _slice_back(base, dim=0, start=None, end=None, step=1, *, value):
    d = canonical_dim(dim, len(shape_of(base)), "aten.slice")
    return ltorch.setitem(base, (slice(None),) * d + (slice(start, end, step),), value)


# How a value written into a view an aten op made reaches its base (as ``VIEW_WRITES`` of the
# torch language, whose writes these share where the arguments agree): a write inside a
# subclass's dispatch into a view of an inner tensor (``x[0] = v`` reaches a TwoTensor as
# ``select`` then ``copy_``). expand, which may repeat elements, and split are not here: a
# write into a view they made is refused.
VIEW_WRITES = {
    view_default: TORCH_VIEW_WRITES[ltorch.view],
    t_default: lambda base, *, value: ltorch.t(value) if len(shape_of(base)) == 2 else value,
    transpose_int: TORCH_VIEW_WRITES[ltorch.transpose],
    permute_default: lambda base, dims, *, value: TORCH_VIEW_WRITES[ltorch.permute](
        base, value=value, dims=dims
    ),
    unsqueeze_default: TORCH_VIEW_WRITES[ltorch.unsqueeze],
    squeeze_default: TORCH_VIEW_WRITES[ltorch.squeeze],
    squeeze_dim: TORCH_VIEW_WRITES[ltorch.squeeze],
    squeeze_dims: TORCH_VIEW_WRITES[ltorch.squeeze],
    select_int: TORCH_VIEW_WRITES[ltorch.select],
    slice_Tensor: _slice_back,
    alias_default: lambda base, *, value: value,
}


# -- foreach ---------------------------------------------------------------------------------
def _declare_foreach(sym: Symbol) -> None:
    """The overloads of ``aten._foreach_<name>`` for the torch-language ``sym``
    (``ltorch.foreach_add``), sharing its decomposition: the one elementwise op over each tensor
    of the list, returning a list as aten does. A subclass's dispatch receives them for
    ``torch._foreach_add_`` on subclass values (an optimizer's foreach step), and writes its
    inner tensors with their in-place forms. Declared: the overloads whose operands are lists
    and numbers (``Scalar``, ``List``, ``ScalarList``), not those taking one tensor operand."""
    packet = getattr(A, sym.torch_impl.rsplit(".", 1)[1])

    def decomposition(*args, **kwargs):
        return list(sym.decomposition(*args, **kwargs))

    for name in packet.overloads():
        overload = getattr(packet, name)
        arguments = overload._schema.arguments
        if (
            not arguments
            or str(arguments[0].type) != "List[Tensor]"
            or any(str(a.type) == "Tensor" for a in arguments)
            or any(a.alias_info is not None and a.alias_info.is_write for a in arguments)
        ):
            continue
        aten(overload, tags=(Tag.ELEMENTWISE,))(decomposition)


for _sym in vars(ltorch.foreach).values():
    if isinstance(_sym, Symbol) and (_sym.torch_impl or "").startswith("torch._foreach_"):
        _declare_foreach(_sym)


# -- calls of a whole op (``torch.ops.aten.add(a, b)``) ---------------------------------------
def _packet(packet) -> Callable:
    """Resolve the overload as torch does (by the arguments' types), then call its symbol."""

    def call(*args, **kwargs):
        overload = getattr(packet, torch._C._jit_resolve_packet(packet._qualified_op_name, *args, **kwargs))
        sym = ATEN.get(overload)
        if sym is None:
            raise NotImplementedError(f"thunder has no symbol for {overload}; {ADD_AN_OP}")
        return sym(*args, **kwargs)

    return call


ADD_AN_OP = "aten operators are declared in thunder/ops/aten.py (with an entry in tests/aten_opdb.py)"
for _op in sorted({o.overloadpacket for o in ATEN}, key=str):
    alias(_packet(_op), _op)


def symbols() -> list[Symbol]:
    """Every aten symbol."""
    return list(ATEN.values())
