"""The pieces every family of the op database shares: ``OPS`` (the entries, in the order the
families add them), ``OpInfo`` (one entry), ``Maker`` (sample tensors of one dtype), ``S``
(one sample), ``op`` (adds an entry), the dtype shorthands and the sample generators."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch

T = torch.Tensor
f32, f64, bf16, i32, i64, b8 = (
    torch.float32,
    torch.float64,
    torch.bfloat16,
    torch.int32,
    torch.int64,
    torch.bool,
)
FLOAT = (f32, f64, bf16)
INT = (i64, i32)
NUM = FLOAT + INT
ALL = NUM + (b8,)


@dataclasses.dataclass(frozen=True)
class S:
    """One sample: positional and keyword arguments (tensors anywhere inside)."""

    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)


def s(*args, **kwargs) -> S:
    return S(args, kwargs)


class Maker:
    """Makes sample tensors of one dtype: ``m(3, 4)``, ``m(3, low=0.1)``, ``m(2, dtype=i64)``."""

    def __init__(self, dtype: torch.dtype, device: str = "cpu"):
        self.dtype = dtype
        self.device = device

    def __call__(self, *shape, low=None, high=None, dtype=None) -> torch.Tensor:
        dtype = dtype or self.dtype
        if dtype is torch.bool:
            return torch.rand(shape, device=self.device) > 0.5
        if dtype.is_floating_point:
            lo, hi = -3.0 if low is None else low, 3.0 if high is None else high
            return (torch.rand(shape, dtype=f64, device=self.device) * (hi - lo) + lo).to(dtype)
        lo, hi = -9 if low is None else math.ceil(low), 10 if high is None else math.ceil(high)
        lo = max(lo, 0) if dtype is torch.uint8 else lo
        return torch.randint(lo, hi, shape, dtype=dtype, device=self.device)

    def scalar(self):
        """A Python number of the dtype's kind."""
        return True if self.dtype is torch.bool else 2.5 if self.dtype.is_floating_point else 3

    def index(self, high: int, *shape) -> torch.Tensor:
        return torch.randint(0, high, shape, device=self.device)


@dataclasses.dataclass
class OpInfo:
    name: str  # the ltorch symbol
    op: Callable  # what user code calls (traced), and the eager reference unless ``ref``
    samples: Callable[[Maker], list[S]]
    dtypes: tuple = FLOAT
    aliases: tuple = ()
    ref: Callable | None = None
    values: bool = True  # False: random or uninitialised results; compare metadata only
    check: Callable | None = None  # (output, sample) -> bool, for ``values=False`` ops
    tol: dict | None = None  # {dtype: (atol, rtol)} overrides
    variant: str = ""
    cuda: bool = False  # needs a CUDA device
    noop: bool = False  # the samples change nothing, so the op records nothing
    # eager's gradient is wrong for these samples (it fails torch.autograd.gradcheck): the
    # gradients are checked against finite differences instead
    numerical_grad: bool = False
    # the gradient is what the op's VJP rule says, not what its prims differentiate to (a
    # write into ``y.detach()``: the values written, the gradient passing to ``y`` unchanged)
    rule_only_grad: bool = False

    @property
    def id(self) -> str:
        return f"{self.name}_{self.variant}" if self.variant else self.name


OPS: list[OpInfo] = []


def op(name, fn, samples, dtypes=FLOAT, *aliases, **kw) -> None:
    OPS.append(OpInfo(name, fn, samples, dtypes, aliases, **kw))


# -- sample generators ----------------------------------------------------------------------
def unary(low=None, high=None, **kw):
    return lambda m: [
        s(m(3, 4, low=low, high=high), **kw),
        s(m(low=low, high=high), **kw),
        s(m(2, 1, 3, low=low, high=high), **kw),
    ]


def binary(low=None, high=None, scalar=True, **kw):
    """Same shapes, broadcasting, and a Python number; ``low``/``high`` bound the second operand."""

    def gen(m):
        out = [
            s(m(3, 4), m(3, 4, low=low, high=high), **kw),
            s(m(2, 1, 4), m(3, 1, low=low, high=high), **kw),
        ]
        if scalar:
            sc = m.scalar() if low is None else max(m.scalar(), low)
            out.append(s(m(3, 4), sc, **kw))
        return out

    return gen


def one(*shape, **kw):
    """A single sample with one tensor of ``shape``."""
    return lambda m: [s(m(*shape), **kw)]


def calls(*fns):
    """Samples written out: each ``fn(m)`` returns one S."""
    return lambda m: [f(m) for f in fns]


POS = dict(low=0.1, high=5.0)
UNIT = dict(low=-0.95, high=0.95)
NAN = math.nan


def distinct(m: Maker, *shape) -> torch.Tensor:
    """Distinct values in random order (exact in every dtype): for ops whose index of a tie
    eager leaves unspecified (median, kthvalue)."""
    n = math.prod(shape)
    v = torch.randperm(n, device=m.device) - n // 2
    return (v * 0.5 if m.dtype.is_floating_point else v).to(m.dtype).reshape(shape)


def with_nans(m: Maker, *shape) -> torch.Tensor:
    """Random values with every third one NaN (a float dtype) or plain random values."""
    x = m(*shape)
    if m.dtype.is_floating_point:
        x.view(-1)[::3] = NAN
    return x


def pick(m: Maker, number, integer, boolean=True):
    """A Python scalar argument of the kind the dtype under test takes."""
    return boolean if m.dtype is b8 else number if m.dtype.is_floating_point else integer


def sorted_(x: torch.Tensor) -> torch.Tensor:
    return x.sort(-1).values


# -- shared tolerances ----------------------------------------------------------------------
NN_TOL = {f32: (1e-4, 1e-4), bf16: (3e-2, 3e-2)}
