"""Thunder's errors (``thunder/core/errors.py`` and the passes' own) are no
``NotImplementedError``: code that falls back on that exception (torchao's NF4 calls itself
again from its ``__torch_function__``; a user's ``try``/``except NotImplementedError``) would
swallow the error that names the missing op, and trace the fallback where eager runs the op."""

from __future__ import annotations

import pytest
import torch

import thunder
from thunder.core.errors import ThunderError, UnsupportedOpError
from thunder.transforms.double_backward import DoubleBackwardUnsupported
from thunder.transforms.grad import NoVJPError
from thunder.transforms.subclass_grad import SubclassGradError


@pytest.mark.parametrize(
    "cls", [UnsupportedOpError, NoVJPError, DoubleBackwardUnsupported, SubclassGradError]
)
def test_no_thunder_error_is_a_not_implemented_error(cls):
    assert issubclass(cls, ThunderError) and not issubclass(cls, NotImplementedError)


def test_a_fallback_on_not_implemented_error_does_not_swallow_the_missing_op():
    def f(x):
        try:
            return torch.nanmedian(x)  # (no thunder op)
        except NotImplementedError:
            return x.sum()  # (what a fallback would have traced instead, silently)

    x = torch.tensor([1.0, float("nan"), 3.0])
    assert f(x) == 1.0  # eager: the lower median of the numbers
    with pytest.raises(UnsupportedOpError, match="nanmedian"):
        thunder.jit(f)(x)


def test_torch_vmap_inside_is_thunder_s_error():
    with pytest.raises(UnsupportedOpError, match="vmap"):
        thunder.jit(lambda x: torch.vmap(torch.sin)(x))(torch.randn(3))
