"""Casts: ``x.float()``, ``x.half()``, ``x.type_as(y)``.

Kept apart because the op names (``float``, ``int``, ``bool``) shadow Python builtins.
"""

from __future__ import annotations

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.meta import dtype_of

T = torch.Tensor


def _cast(dtype: torch.dtype, name: str):
    def op(a, memory_format=None):
        if dtype_of(a) is dtype:
            return a
        return prims.convert_element_type(a, dtype)

    op.__name__ = name
    return torchsymbol(getattr(T, name), torch_impl=f"torch.Tensor.{name}", tags=(Tag.ELEMENTWISE, Tag.CAST))(
        op
    )


# the dtype of each cast method (``x.byte()``, ``x.char()``, ``x.short()``: spellings of ``to``
# in spellings.py); the frontend reads it for a cast that names a memory format
METHOD_DTYPES = {
    "float": torch.float32,
    "double": torch.float64,
    "half": torch.float16,
    "bfloat16": torch.bfloat16,
    "int": torch.int32,
    "long": torch.int64,
    "bool": torch.bool,
    "byte": torch.uint8,
    "char": torch.int8,
    "short": torch.int16,
}

float = _cast(METHOD_DTYPES["float"], "float")
double = _cast(METHOD_DTYPES["double"], "double")
half = _cast(METHOD_DTYPES["half"], "half")
bfloat16 = _cast(METHOD_DTYPES["bfloat16"], "bfloat16")
int = _cast(METHOD_DTYPES["int"], "int")
long = _cast(METHOD_DTYPES["long"], "long")
bool = _cast(METHOD_DTYPES["bool"], "bool")


@torchsymbol(T.type_as, torch_impl="torch.Tensor.type_as", tags=(Tag.ELEMENTWISE, Tag.CAST))
def type_as(a, other):
    dt = dtype_of(other)
    return a if dtype_of(a) is dt else prims.convert_element_type(a, dt)


def _parse_to(a, args, kwargs):
    dtype, device = kwargs.get("dtype"), kwargs.get("device")
    for x in args:
        if isinstance(x, torch.dtype):
            dtype = x
        elif isinstance(x, (str, torch.device)):
            device = torch.device(x)
        elif isinstance(x, torch.Tensor):
            dtype, device = x.dtype, x.device
    return dtype, (torch.device(device) if device is not None else None)


@torchsymbol(T.to, torch_impl="torch.Tensor.to", tags=(Tag.CAST,))
def to(a, *args, **kwargs):
    dtype, device = _parse_to(a, args, kwargs)
    if device is not None and device.type == "cuda" and device.index is None:
        device = torch.device("cuda", 0)
    x = a
    if device is not None and device != a.device:
        a = prims.device_put(a, device)
    if dtype is not None and dtype is not dtype_of(a):
        a = prims.convert_element_type(a, dtype)
    # ``copy=True`` (by keyword, or the second positional flag after non_blocking): a new
    # tensor even where nothing changes, as eager's (a write into it does not reach ``a``)
    flags = [v for v in args if v is True or v is False]  # (``bool`` here is the cast)
    if a is x and (flags[1] if len(flags) > 1 else kwargs.get("copy", False)):
        a = prims.clone(a)
    return a


@torchsymbol(T.cuda, torch_impl="torch.Tensor.cuda", tags=(Tag.CAST,))
def cuda(a, device=None, non_blocking=False):
    dev = torch.device("cuda", 0) if device is None else torch.device(device)
    return a if a.device == dev else prims.device_put(a, dev)


@torchsymbol(T.cpu, torch_impl="torch.Tensor.cpu", tags=(Tag.CAST,))
def cpu(a):
    return a if a.device.type == "cpu" else prims.device_put(a, torch.device("cpu"))


@torchsymbol(T.detach, torch.detach, torch_impl="torch.Tensor.detach", tags=(Tag.VIEW,))
def detach(a):
    """Same values, no gradient: the decomposition copies under no_grad. A view in eager
    (it shares the storage): a write into it reaches the tensor, see ltorch/inplace.py."""
    if not a.requires_grad:
        return a
    with torch.no_grad():
        return prims.clone(a)
