"""``select_scatter``/``slice_scatter`` (a tensor with one slice replaced), ``logspace``, and
the covariance and correlation matrices ``cov``/``corrcoef``, as torch computes them.
"""

from __future__ import annotations

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch import elementwise as ew
from thunder.ops.ltorch import factories, matrix, nn, reductions, shape
from thunder.ops.ltorch.inplace import setitem
from thunder.ops.meta import ShapeError, canonical_dim, dtype_of, shape_of

T = torch.Tensor


@torchsymbol(torch.select_scatter, torch_impl="torch.select_scatter", tags=(Tag.INDEXING,))
def select_scatter(a, src, dim: int, index: int):
    """``a`` with ``a.select(dim, index)`` replaced by ``src``."""
    d = canonical_dim(dim, len(shape_of(a)), "torch.select_scatter")
    return _new(setitem(a, (slice(None),) * d + (index,), src), src)


@torchsymbol(torch.slice_scatter, torch_impl="torch.slice_scatter", tags=(Tag.INDEXING,))
def slice_scatter(a, src, dim: int = 0, start=None, end=None, step: int = 1):
    """``a`` with ``a[..., start:end:step, ...]`` (along ``dim``) replaced by ``src``."""
    d = canonical_dim(dim, len(shape_of(a)), "torch.slice_scatter")
    return _new(setitem(a, (slice(None),) * d + (slice(start, end, step),), src), src)


def _new(out, src):
    """A scatter over the whole tensor gives ``src``'s values, as a new tensor (eager's result
    never aliases its arguments)."""
    return prims.clone(src) if out is src else out


@torchsymbol(torch.logspace, torch_impl="torch.logspace", tags=(Tag.FACTORY,))
def logspace(
    start,
    end,
    steps: int,
    base: float = 10.0,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
):
    """``base ** linspace(start, end, steps)``, computed in float64 and cast (integers truncate)."""
    dtype = dtype or torch.get_default_dtype()
    if dtype is torch.bool or dtype.is_complex:
        raise ShapeError(f"torch.logspace: dtype {dtype} is not supported")
    exponents = factories.linspace(start, end, steps, dtype=torch.float64, layout=layout, device=device)
    out = ew.pow(float(base), exponents)
    return out if dtype is torch.float64 else prims.convert_element_type(out, dtype)


@torchsymbol(torch.cov, T.cov, torch_impl="torch.cov", tags=(Tag.REDUCTION,))
def cov(input, *, correction: int = 1, fweights=None, aweights=None):
    """Rows are variables, columns observations; ``fweights``/``aweights`` weight the
    observations (torch's formula, the normaliser clamped at 0)."""
    op = "torch.cov"
    s = shape_of(input)
    if len(s) > 2:
        raise ShapeError(f"{op}: expected input to have two or fewer dimensions, got shape {s}")
    x = shape.reshape(input, (1, -1)) if len(s) < 2 else input
    if not (dtype_of(x).is_floating_point or dtype_of(x).is_complex):
        x = prims.convert_element_type(x, torch.get_default_dtype())
    n = shape_of(x)[1]
    w = fweights
    if aweights is not None:
        w = aweights if w is None else ew.mul(w, aweights)
    if w is None:
        avg = reductions.mean(x, 1)
        w_sum = n
        norm = n - correction
    else:
        w = prims.convert_element_type(w, dtype_of(x)) if dtype_of(w) is not dtype_of(x) else w
        w_sum = reductions.sum(w)
        avg = ew.div(reductions.sum(ew.mul(x, w), 1), w_sum)
        if aweights is not None and correction != 0:
            norm = ew.sub(w_sum, ew.div(ew.mul(reductions.sum(ew.mul(w, aweights)), correction), w_sum))
        else:
            norm = ew.sub(w_sum, correction)
    norm = ew.clamp_min(norm, 0) if isinstance(norm, torch.Tensor) else max(norm, 0)
    xc = ew.sub(x, shape.unsqueeze(avg, 1))
    c = nn.matmul(xc, shape.t(xc if w is None else ew.mul(xc, w)))
    return shape.squeeze(ew.div(c, norm))


@torchsymbol(torch.corrcoef, T.corrcoef, torch_impl="torch.corrcoef", tags=(Tag.REDUCTION,))
def corrcoef(input):
    """``cov`` divided by the outer product of the standard deviations, clipped to [-1, 1]."""
    c = cov(input)
    if not shape_of(c):
        return ew.div(c, c)
    std = ew.sqrt(matrix.diagonal(c))
    c = ew.div(ew.div(c, shape.unsqueeze(std, 1)), shape.unsqueeze(std, 0))
    return ew.clamp(c, -1, 1)
