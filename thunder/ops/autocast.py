"""``torch.autocast``'s policy, per torch-language op and device type: which ops run in the
autocast dtype, which in float32, and which in the widest floating type of their inputs.

Acquisition (``thunder/frontend/torch_calls/mode.py``) applies it to each op the user's code calls while
autocast is on (around the call or inside the function): the op's floating tensor arguments
are cast first, with ``ltorch.to`` calls the trace shows and the grad pass differentiates
like any other op. So::

    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = F.linear(x, w)          # x, w: float32

is recorded as::

    t0 = ltorch.to(x, torch.bfloat16)
    t1 = ltorch.to(w, torch.bfloat16)
    y = ltorch.linear(t0, t1)       # y: bf16, as eager's

The lists are eager's (``aten/src/ATen/autocast_mode.cpp``) for the ops thunder has,
plus the composite ops whose eager kernel reaches a listed op (``einsum`` runs ``bmm``), so
their result has eager's dtype. As eager, only floating tensors on the autocast device are
cast, never float64; an op on no list runs in its inputs' dtypes.
"""

from __future__ import annotations

import enum
import functools

import torch

from thunder.core.proxies import TensorProxy
from thunder.core.pytree import tree_leaves, tree_map
from thunder.ops import ltorch


class Policy(enum.Enum):
    LOWER = "the autocast dtype"  # matrix products, convolutions
    FP32 = "float32"  # losses, reductions and functions that lose precision in 16 bits
    PROMOTE = "the widest input type"  # ops that combine several tensors (cat, stack)


L, F, P = Policy.LOWER, Policy.FP32, Policy.PROMOTE

# ops whose eager kernel reaches a matrix product that autocast lowers
_COMPOSITE_LOWER = {ltorch.einsum: L, ltorch.chain_matmul: L, ltorch.multi_dot: L}
_LOWER_BOTH = {
    ltorch.conv1d: L, ltorch.conv2d: L, ltorch.conv3d: L,
    ltorch.conv_transpose1d: L, ltorch.conv_transpose2d: L, ltorch.conv_transpose3d: L,
    ltorch.bmm: L, ltorch.mm: L, ltorch.matmul: L, ltorch.baddbmm: L, ltorch.addmm: L,
    ltorch.addbmm: L, ltorch.linear: L, ltorch.prelu: L, ltorch.scaled_dot_product_attention: L,
}  # fmt: skip

CPU: dict = {
    **_LOWER_BOTH,
    **_COMPOSITE_LOWER,
    ltorch.tensordot: L,
    # float32
    ltorch.avg_pool3d: F, ltorch.binary_cross_entropy: F, ltorch.grid_sample: F, ltorch.prod: F,
    ltorch.quantile: F, ltorch.nanquantile: F, ltorch.cdist: F, ltorch.trace: F,
    ltorch.max_pool3d: F, ltorch.adaptive_avg_pool3d: F, ltorch.adaptive_max_pool3d: F,
    ltorch.mse_loss: F, ltorch.nll_loss: F, ltorch.smooth_l1_loss: F, ltorch.cross_entropy: F,
    ltorch.l1_loss: F, ltorch.huber_loss: F, ltorch.kl_div: F, ltorch.binary_cross_entropy_with_logits: F,
    # the widest input type
    ltorch.cat: P, ltorch.stack: P, ltorch.index_copy: P,
}  # fmt: skip

CUDA: dict = {
    **_LOWER_BOTH,
    **_COMPOSITE_LOWER,
    ltorch.addmv: L, ltorch.addr: L, ltorch.mv: L,
    # float32
    ltorch.acos: F, ltorch.asin: F, ltorch.cosh: F, ltorch.erfinv: F, ltorch.exp: F, ltorch.expm1: F,
    ltorch.log: F, ltorch.log10: F, ltorch.log2: F, ltorch.log1p: F, ltorch.reciprocal: F,
    ltorch.rsqrt: F, ltorch.sinh: F, ltorch.tan: F, ltorch.pow: F, ltorch.softplus: F,
    ltorch.layer_norm: F, ltorch.native_layer_norm: F, ltorch.group_norm: F, ltorch.norm: F,
    ltorch.cosine_similarity: F, ltorch.nll_loss: F, ltorch.kl_div: F, ltorch.l1_loss: F,
    ltorch.smooth_l1_loss: F, ltorch.huber_loss: F, ltorch.mse_loss: F,
    ltorch.binary_cross_entropy_with_logits: F, ltorch.cdist: F, ltorch.renorm: F,
    ltorch.logsumexp: F, ltorch.grid_sample: F, ltorch.prod: F, ltorch.quantile: F,
    ltorch.nanquantile: F, ltorch.cumprod: F, ltorch.cumsum: F, ltorch.softmax: F,
    ltorch.log_softmax: F, ltorch.softmin: F, ltorch.sum: F, ltorch.vector_norm: F,
    ltorch.linalg_norm: F, ltorch.cross_entropy: F, ltorch.normalize: F,
    # the widest input type
    ltorch.addcdiv: P, ltorch.addcmul: P, ltorch.atan2: P, ltorch.cross: P, ltorch.dot: P,
    ltorch.vdot: P, ltorch.index_put: P, ltorch.scatter_add: P, ltorch.tensordot: P,
    ltorch.cat: P, ltorch.stack: P, ltorch.index_copy: P,
}  # fmt: skip

POLICIES: dict[str, dict] = {"cpu": CPU, "cuda": CUDA}
# float32 ops that take a ``dtype``: given one, eager runs them in it (no cast)
_OWN_DTYPE = {ltorch.sum, ltorch.prod, ltorch.cumsum, ltorch.cumprod, ltorch.softmax, ltorch.log_softmax}
_AUTOCAST_TYPES = (torch.float16, torch.bfloat16, torch.float32)


def autocast_state() -> tuple[tuple[str, torch.dtype], ...]:
    """The device types autocast is on for, with their dtypes: ``(("cpu", torch.bfloat16),)``."""
    if not torch._C._is_any_autocast_enabled():
        return ()
    return tuple((d, torch.get_autocast_dtype(d)) for d in POLICIES if torch.is_autocast_enabled(d))


def _eligible(a, device_type: str) -> bool:
    return isinstance(a, TensorProxy) and a.dtype in _AUTOCAST_TYPES and a.device.type == device_type


def autocast_arguments(sym, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``args`` and ``kwargs`` of a call of ``sym`` cast as eager's autocast casts them (each
    cast recorded in the current trace); unchanged where ``sym`` is on no list."""
    for device_type, dtype in autocast_state():
        policy = POLICIES[device_type].get(sym)
        if policy is None:
            continue
        if policy is Policy.FP32 and sym in _OWN_DTYPE and kwargs.get("dtype") is not None:
            continue
        if policy is Policy.LOWER:
            target = dtype
        elif policy is Policy.FP32:
            target = torch.float32
        else:
            floats = [a.dtype for a in tree_leaves((args, kwargs)) if _eligible(a, device_type)]
            if not floats:
                continue
            target = functools.reduce(torch.promote_types, floats)

        def cast(a, device_type=device_type, target=target):
            if _eligible(a, device_type) and a.dtype is not target:
                return ltorch.to(a, target)
            return a

        args, kwargs = tree_map(cast, (args, kwargs))
    return args, kwargs
