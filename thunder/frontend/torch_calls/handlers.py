"""The torch calls the acquisition mode (``thunder/frontend/torch_calls/mode.py``) handles by a function
of their own, keyed by the torch function: metadata queries answered from the proxy, calls
that involve no tensor values, reads of one value of an input, and the calls refused (a
tensor's value, autograd hooks on tensors). Each handler takes ``(mode, func, args, kwargs)``;
``_BEFORE_RESOLVING`` and ``_AFTER_RESOLVING`` are the mode's tables of them.
"""

from __future__ import annotations

import torch

from thunder.core.errors import DataDependentError, UnsupportedOpError, at, describe
from thunder.core.proxies import TensorProxy
from thunder.core.source import user_location
from thunder.frontend.distributed.collectives import calls as collective_calls
from thunder.frontend.torch_calls.addresses import data_ptr
from thunder.frontend.torch_calls.layout_queries import as_strided, layout_query, rests_on_inputs
from thunder.frontend.torch_calls.value_reads import read_scalar
from thunder.ops import ltorch
from thunder.ops.langs import TORCH_TO_THUNDER

T = torch.Tensor

# Answered from the proxy's metadata; nothing is recorded.
_METADATA_METHODS = {
    T.size, T.dim, T.ndimension, T.numel, T.nelement, T.__len__, T.stride, T.is_contiguous,
    T.is_floating_point, T.is_complex, T.element_size, T.get_device, T.type, T.is_signed,
    T.storage_offset, T.__format__, T.__repr__, T.is_inference,
}  # fmt: skip
_METADATA_PROPERTIES = {
    "shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "is_cpu", "is_meta", "layout",
    "is_sparse", "is_quantized", "names", "is_nested", "itemsize", "is_mps",
}  # fmt: skip
# Plain Python values made by torch callables that the mode also sees.
# Need a tensor's value, which tracing does not have.
_DATA_DEPENDENT = {
    T.item, T.tolist, T.__bool__, T.__int__, T.__float__, T.__index__, T.numpy, T.data_ptr,
    T.nonzero, T.__array__, T.__complex__, torch.nonzero, torch.unique, T.unique,
    torch.masked_select, T.masked_select, torch.equal, T.equal, T.__iter__,
}  # fmt: skip
# Reads of one value, answered for an input tensor (thunder.frontend.torch_calls.value_reads)
_SCALAR_READS = {
    T.item: None, T.__int__: int, T.__index__: int, T.__float__: float, T.__bool__: bool, T.__complex__: complex,
}  # fmt: skip
# Calls that involve no tensor values (constructors of plain values, global state reads).
_PASSTHROUGH = {
    torch.device, torch.get_default_dtype, torch.is_grad_enabled, torch.is_tensor,
    torch.is_floating_point, torch.is_complex, torch.promote_types, torch.can_cast,
    # ``with torch.no_grad():`` really switches grad mode while tracing; ops recorded inside
    # are tagged and run under the same mode (see Trace.record)
    torch._C._set_grad_enabled,
    # Python number helpers (F.interpolate computes its output size with sym_int)
    torch.sym_int, torch.sym_float, torch.sym_max, torch.sym_min, torch.sym_not,
}  # fmt: skip
# Autograd hooks on tensors: the backward runs as one program and would never call them
_GRAD_HOOKS = {T.register_hook, T.register_post_accumulate_grad_hook, T.retain_grad}


# -- calls handled by a function of their own, keyed by the torch function --------------------
# Each takes ``(mode, func, args, kwargs)``. Looked up before the arguments are resolved to
# their current values: calls that record nothing (metadata, global state) or are refused.
def _passthrough(mode, func, args, kwargs):
    return func(*args, **kwargs)


def _metadata(mode, func, args, kwargs):
    if args and isinstance(args[0], TensorProxy):
        mode.state.touched[id(args[0])] = args[0]  # the trace relies on it: the prologue checks it
    return func(*args, **kwargs)


def _type_or_metadata(mode, func, args, kwargs):
    """``t.type()`` is the type's name; ``t.type(torch.float16)`` a cast."""
    if len(args) > 1 or kwargs.get("dtype") is not None:
        return mode._type(mode.state.resolve(args[0]), *args[1:], **kwargs)
    return _metadata(mode, func, args, kwargs)


def _scalar_read(mode, func, args, kwargs):
    """``int(t)`` / ``t.item()``: an input's value is known (and checked by the prologue)."""
    if args and isinstance(args[0], TensorProxy):
        return read_scalar(mode.state, args[0], describe(func), _SCALAR_READS[func])
    return _refuse_data_dependent(mode, func, args, kwargs)


def _refuse_data_dependent(mode, func, args, kwargs):
    raise DataDependentError(
        f"thunder: {describe(func)} needs the value of a tensor, which is not known while tracing "
        "(data-dependent Python control flow such as `if x.sum() > 0:` or reading `.item()`); "
        "express it with tensor ops such as torch.where" + at(user_location())
    )


def _refuse_value_check(mode, func, args, kwargs):
    raise DataDependentError(
        f"thunder: {describe(func)} checks tensor values (torch.distributions validates its arguments "
        "this way): data-dependent, not known while tracing; construct the distribution with "
        "validate_args=False, or call torch.distributions.Distribution.set_default_validate_args(False)"
        + at(user_location())
    )


def _refuse_grad_hook(mode, func, args, kwargs):
    raise UnsupportedOpError(
        f"thunder: {describe(func)} inside the compiled function is not supported: thunder runs the "
        "backward as one program, which would not call the hook or keep the gradient; register it on a "
        "parameter or on an output, outside the compiled function" + at(user_location())
    )


# (later entries win: a scalar read is data-dependent unless its tensor is known)
def _enter_autocast(mode, func, args, kwargs):
    """A Dynamo graph's ``with torch.autocast(...)`` (``torch.amp._enter_autocast``): entered
    while tracing as the user's ``with`` statement is, so the ops recorded inside take eager's
    casts (``thunder/ops/autocast.py``); nothing is recorded for it."""
    region = torch.amp.autocast_mode._UnmanagedAutocast(*args, **kwargs)
    region.__enter__()
    return region


def _exit_autocast(mode, func, args, kwargs):
    args[0].__exit__(None, None, None)


_BEFORE_RESOLVING = {
    torch.amp.autocast_mode._enter_autocast: _enter_autocast,
    torch.amp.autocast_mode._exit_autocast: _exit_autocast,
    **dict.fromkeys(_DATA_DEPENDENT, _refuse_data_dependent),
    torch._is_all_true: _refuse_value_check,
    torch._is_any_true: _refuse_value_check,
    **dict.fromkeys(_SCALAR_READS, _scalar_read),
    **dict.fromkeys(_METADATA_METHODS, _metadata),
    T.type: _type_or_metadata,
    **dict.fromkeys((T.stride, T.is_contiguous, T.storage_offset), layout_query),
    **dict.fromkeys(_GRAD_HOOKS, _refuse_grad_hook),
    T.data_ptr: data_ptr,  # (an address compared as eager compares it: frontend/torch_calls/addresses.py)
    **dict.fromkeys(_PASSTHROUGH, _passthrough),
}


# After the arguments are resolved: calls that take the current values but need more than
# their thunder op (or have none).
def _view(mode, func, args, kwargs):
    if isinstance(args[0], TensorProxy):
        mode._check_view(func, args, kwargs)
    return mode._thunder_op(func, TORCH_TO_THUNDER[func], args, kwargs)


def _contiguous(mode, func, args, kwargs):
    if not isinstance(args[0], TensorProxy):
        return mode._thunder_op(func, TORCH_TO_THUNDER[func], args, kwargs)
    state = mode.state
    if kwargs.get("memory_format", torch.contiguous_format) is not torch.contiguous_format or (
        state.views.layout_guessed(args[0]) and state.layouts.meta(args[0], symbols=False) is not None
    ):
        # another layout asked for, or the layout is not the one this table assumes: decided
        # on eager's layout of the value, replayed
        return _laid_out(mode, func, args, kwargs)
    out = args[0]
    contiguous, sized = state.views.contiguity(args[0])
    if not contiguous:
        # a copy in eager, contiguous (torch.clone alone keeps a permuted input's strides):
        # writes into it stay in it
        out = ltorch.clone(args[0], memory_format=torch.contiguous_format)
        state.layouts.record(func, args, kwargs, out)
    if sized or state.views.layout_guessed(args[0]):  # a copy or not in eager: writes are refused
        state.views.guessed_layouts.update((args[0].name, out.name))
    return out


def _to(mode, func, args, kwargs):
    """``x.to(...)``; with a ``memory_format`` other than ``preserve_format``, eager's choice of
    ``x`` itself or a copy laid out so (``_laid_out``) where thunder's cast changes nothing."""
    out = mode._thunder_op(func, TORCH_TO_THUNDER[func], args, kwargs)
    memory_format = kwargs.get("memory_format", torch.preserve_format)
    if out is args[0] and memory_format is not torch.preserve_format:
        # (replayed as the layout change alone: the cast changes nothing here)
        return _laid_out(mode, T.to, args[:1], {"memory_format": memory_format})
    return out


# x.double(memory_format=...) and the other casts that take a memory format: x.to(dtype, ...)
_CASTS = {getattr(T, name): dtype for name, dtype in ltorch.casts.METHOD_DTYPES.items()}


def _cast(mode, func, args, kwargs):
    """``x.double(memory_format=torch.channels_last)``: eager's ``x.to(torch.float64,
    memory_format=...)``, the layout included (the cast alone dropped it)."""
    memory_format = kwargs.get("memory_format", torch.preserve_format)
    if memory_format is torch.preserve_format or not isinstance(args[0], TensorProxy):
        return mode._thunder_op(func, TORCH_TO_THUNDER[func], args, kwargs)
    return _to(mode, T.to, (args[0], _CASTS[func]), {"memory_format": memory_format})


def _laid_out(mode, func, args, kwargs):
    """``x.contiguous(memory_format=torch.channels_last)`` (or ``x.to(memory_format=...)``) where
    thunder's values, which have no layout, are the same: eager returns ``x`` itself where ``x``
    is already laid out so, else a copy laid out so, which a stride query, ``as_strided`` and a
    write (it does not reach ``x``) see. Decided by the call replayed on eager's layout of ``x``
    (``Layouts.meta``; the prologue checks the inputs' strides it rests on); where that layout
    cannot be worked out, a copy on which writes are refused."""
    state, x = mode.state, args[0]
    layouts = state.layouts
    m = layouts.meta(x)
    if m is not None:
        try:
            with torch._C.DisableTorchFunction():
                same = func(m, *args[1:], **kwargs) is m
        except RuntimeError as e:  # eager's error (channels_last of a 3-d tensor)
            raise RuntimeError(f"thunder: {describe(func)}: {e}" + at(user_location())) from None
        rests_on_inputs(state, x)
        if same:
            return x
    out = ltorch.clone(x, memory_format=kwargs.get("memory_format", torch.contiguous_format))
    layouts.record(func, args, kwargs, out)
    if kwargs.get("memory_format") not in (None, torch.contiguous_format):
        state.views.permuted_made = True
    if m is None:
        state.views.guessed_layouts.update((x.name, out.name))
    return out


def _setitem(mode, func, args, kwargs):
    return mode._setitem(*args)


def _requires_grad_(mode, func, args, kwargs):
    if not isinstance(args[0], TensorProxy):
        return mode._without_thunder_op(func, args, kwargs)
    flag = args[1] if len(args) > 1 else kwargs.get("requires_grad", True)
    return mode._requires_grad(args[0], flag, "torch.Tensor.requires_grad_")


def _copy_(mode, func, args, kwargs):
    dst, src = args[0], args[1]
    return mode.state.inplace.rebind(
        dst, mode._call(func, ltorch.copy_to, (dst, src), {}), "torch.Tensor.copy_"
    )


_AFTER_RESOLVING = {
    **collective_calls(),  # torch.distributed (thunder/frontend/distributed/collectives.py)
    T.view: _view,
    T.as_strided: as_strided,
    torch.as_strided: as_strided,
    T.view_as: _view,
    T.contiguous: _contiguous,
    T.to: _to,
    **dict.fromkeys(_CASTS, _cast),
    T.__setitem__: _setitem,
    T.requires_grad_: _requires_grad_,
    T.copy_: _copy_,
}
