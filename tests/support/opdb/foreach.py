"""The ``_foreach_*`` ops of optimizers (``thunder/ops/ltorch/foreach.py``)."""

from __future__ import annotations

import torch

from .entries import POS, Maker, f32, f64, op, s


# -- the _foreach_* ops of optimizers (thunder/ops/ltorch/foreach.py) -------------------------
def _tensor_list(m: Maker, **kw) -> list:
    return [m(3, **kw), m(2, 4, **kw), m(**kw)]


for _n in "add sub mul div maximum minimum pow".split():
    op(
        f"foreach_{_n}",
        getattr(torch, f"_foreach_{_n}"),
        (
            lambda name: (
                lambda m: (
                    [
                        s(_tensor_list(m, **POS), _tensor_list(m, **POS)),
                        s(_tensor_list(m, **POS), 1.5),
                        s(_tensor_list(m, **POS), [0.5, 2.0, 1.5]),
                    ]
                    + ([s(_tensor_list(m), _tensor_list(m), alpha=2)] if name in ("add", "sub") else [])
                )
            )
        )(_n),
        (f32, f64),
    )
for _n in "clamp_min clamp_max".split():
    op(
        f"foreach_{_n}",
        getattr(torch, f"_foreach_{_n}"),
        lambda m: [s(_tensor_list(m), 0.5), s(_tensor_list(m), [0.1, -0.2, 0.3])],
        (f32, f64),
    )
for _n in "sqrt neg abs exp reciprocal sign".split():
    op(f"foreach_{_n}", getattr(torch, f"_foreach_{_n}"), lambda m: [s(_tensor_list(m, **POS))], (f32, f64))
op(
    "foreach_norm",
    torch._foreach_norm,
    lambda m: [
        s(_tensor_list(m)),
        s(_tensor_list(m), 1),
        s(_tensor_list(m), float("inf")),
        s(_tensor_list(m), 3.0, dtype=torch.float64),
    ],
    (f32, f64),
)
op(
    "foreach_lerp",
    torch._foreach_lerp,
    lambda m: [
        s(_tensor_list(m), _tensor_list(m), 0.3),
        s(_tensor_list(m), _tensor_list(m), _tensor_list(m, low=0, high=1)),
    ],
    (f32, f64),
)


def _each(fn):
    """``fn`` over each tensor, the reference where eager's own foreach backward fails (its
    ``_foreach_addcdiv`` gradient of a 0-dim tensor raises an IndexError)."""

    def ref(a, b, c, value=1):
        values = value if isinstance(value, list) else [value] * len(a)
        return tuple(fn(x, y, z, value=v) for x, y, z, v in zip(a, b, c, values))

    return ref


for _n in "addcmul addcdiv".split():
    op(
        f"foreach_{_n}",
        getattr(torch, f"_foreach_{_n}"),
        lambda m: [
            s(_tensor_list(m), _tensor_list(m), _tensor_list(m, **POS)),
            s(_tensor_list(m), _tensor_list(m), _tensor_list(m, **POS), value=0.5),
            s(_tensor_list(m), _tensor_list(m), _tensor_list(m, **POS), [0.1, -0.2, 0.3]),
        ],
        (f32, f64),
        ref=_each(getattr(torch, _n)),
    )
