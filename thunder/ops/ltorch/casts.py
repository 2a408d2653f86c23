"""Casts: ``x.float()``, ``x.half()``, ``x.type_as(y)``.

Kept apart because the op names (``float``, ``int``, ``bool``) shadow Python builtins.
"""

from __future__ import annotations

import torch

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
    return torchsymbol(getattr(T, name), torch_impl=f"torch.Tensor.{name}", tags=("elementwise", "cast"))(op)


float = _cast(torch.float32, "float")
double = _cast(torch.float64, "double")
half = _cast(torch.float16, "half")
bfloat16 = _cast(torch.bfloat16, "bfloat16")
int = _cast(torch.int32, "int")
long = _cast(torch.int64, "long")
bool = _cast(torch.bool, "bool")


@torchsymbol(T.type_as, torch_impl="torch.Tensor.type_as", tags=("elementwise", "cast"))
def type_as(a, other):
    dt = dtype_of(other)
    return a if dtype_of(a) is dt else prims.convert_element_type(a, dt)
