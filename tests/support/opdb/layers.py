"""nn.functional layers: linear, normalization, embedding, convolution, pooling, resampling
(``thunder/ops/ltorch/nn.py``, ``normalization.py``, ``conv.py``, ``resample.py``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .entries import ALL, FLOAT, NN_TOL, T, f32, f64, i64, op, s

op(
    "linear",
    F.linear,
    lambda m: [s(m(2, 3, 4), m(5, 4), m(5)), s(m(2, 4), m(5, 4)), s(m(4), m(3, 4))],
    FLOAT,
    tol=NN_TOL,
)
op(
    "layer_norm",
    F.layer_norm,
    lambda m: [s(m(2, 3, 4), (4,), m(4), m(4)), s(m(2, 3, 4), [3, 4]), s(m(2, 3, 4), (4,), eps=1e-3)],
    FLOAT,
    tol=NN_TOL,
)
op(
    "rms_norm",
    F.rms_norm,
    lambda m: [s(m(2, 3, 4), (4,), m(4)), s(m(2, 3, 4), [3, 4], eps=1e-3)],
    FLOAT,
    tol=NN_TOL,
)
op(
    "group_norm",
    F.group_norm,
    lambda m: [s(m(2, 6, 5), 3, m(6), m(6)), s(m(2, 4, 3, 3), 2)],
    FLOAT,
    tol=NN_TOL,
)
op(
    "batch_norm",
    F.batch_norm,
    lambda m: [
        s(m(4, 3, 5), m(3), m(3, low=0.5, high=2), m(3), m(3)),
        s(m(4, 3), m(3), m(3, low=0.5, high=2)),
        s(m(4, 3, 5, 2), None, None, training=True),
    ],
    FLOAT,
    tol=NN_TOL,
)
op(
    "instance_norm",
    F.instance_norm,
    lambda m: [
        s(m(2, 3, 5)),
        s(m(2, 3, 4, 5), None, None, m(3), m(3), eps=1e-3),
        s(m(2, 3, 4, 5), m(3), m(3, low=0.5, high=2), momentum=0.2),  # running stats updated
        s(m(2, 3, 4), m(3), m(3, low=0.5, high=2), m(3), m(3), use_input_stats=False),
    ],
    FLOAT,
    tol=NN_TOL,
)
op(
    "weight_norm",
    torch._weight_norm,
    lambda m: [
        s(m(4, 3, 5), m(4, 1, 1)),
        s(m(4, 3, 5), m(1, 1, 5), 2),
        s(m(4, 3), m(), -1),
        s(m(4, 3, 5), m(1, 3, 1), 1),
    ],
    FLOAT,
    tol=NN_TOL,
)
op("normalize", F.normalize, lambda m: [s(m(3, 4)), s(m(3, 4, 5), p=1, dim=-1)], FLOAT, tol=NN_TOL)
op(
    "cosine_similarity",
    F.cosine_similarity,
    lambda m: [s(m(3, 4), m(1, 4)), s(m(3, 4), m(3, 4), 0)],
    FLOAT,
    torch.cosine_similarity,
    tol=NN_TOL,
)
op(
    "embedding",
    F.embedding,
    lambda m: [s(m.index(10, 2, 3), m(10, 4)), s(m.index(10, 5), m(10, 4), 0)],
    FLOAT,
)
op(
    "embedding_bag",
    F.embedding_bag,
    lambda m: [
        s(m.index(10, 4, 3), m(10, 3)),
        s(torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), m(10, 3), torch.tensor([0, 3, 3, 6]), mode="sum"),
        s(
            torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]),
            m(10, 3),
            torch.tensor([0, 3, 3, 8]),
            mode="max",
            include_last_offset=True,
        ),
        s(torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), m(10, 3), torch.tensor([0, 2, 5]), padding_idx=4),
        s(
            torch.tensor([1, 2, 4, 5, 4, 3]),
            m(10, 3),
            torch.tensor([0, 2]),
            mode="sum",
            per_sample_weights=m(6),
        ),
        s(m.index(10, 4, 3), m(10, 3), mode="max", padding_idx=-1),
    ],
    FLOAT,
    tol=NN_TOL,
)
op("one_hot", F.one_hot, lambda m: [s(m.index(5, 2, 3), 5), s(m.index(3, 4), num_classes=7)], (f32,))
op(
    "diff",
    torch.diff,
    lambda m: [s(m(5)), s(m(3, 6), 2, 0), s(m(2, 5), prepend=m(2, 1), append=m(2, 2)), s(m(4, 3), dim=-1)],
    ALL,
    T.diff,
)
op(
    "sort",
    torch.sort,
    lambda m: [s(m(3, 5)), s(m(4, 3), 0, True), s(m(6), descending=True, stable=True)],
    (f32, f64, i64),
    T.sort,
)
op("argsort", torch.argsort, lambda m: [s(m(3, 5)), s(m(4, 3), 0, True)], (f32, f64, i64), T.argsort)
op("pixel_shuffle", F.pixel_shuffle, lambda m: [s(m(1, 8, 3, 3), 2), s(m(2, 3, 9, 2, 2), 3)], ALL)
op("pixel_unshuffle", F.pixel_unshuffle, lambda m: [s(m(1, 2, 6, 4), 2), s(m(3, 9, 3), 3)], ALL)
op(
    "conv1d",
    F.conv1d,
    lambda m: [s(m(2, 4, 9), m(6, 4, 3)), s(m(2, 4, 9), m(6, 2, 3), m(6), stride=2, padding=1, groups=2)],
    (f32, f64),
)
op(
    "conv2d",
    F.conv2d,
    lambda m: [
        s(m(2, 3, 8, 8), m(4, 3, 3, 3), m(4)),
        s(m(1, 4, 7, 9), m(4, 1, 3, 3), None, (2, 1), 1, 2, 4),
        s(m(3, 6, 6), m(2, 3, 3, 3), padding="same"),
        s(m(1, 3, 6, 6), m(2, 3, 3, 3), padding="valid"),
    ],
    (f32, f64),
)
op(
    "conv3d",
    F.conv3d,
    lambda m: [s(m(1, 2, 4, 5, 6), m(3, 2, 2, 2, 2), m(3), stride=1, padding=1)],
    (f32, f64),
)
op(
    "max_pool1d",
    F.max_pool1d,
    lambda m: [s(m(2, 3, 9), 3), s(m(2, 3, 9), 2, 2, 1, ceil_mode=True)],
    (f32, f64),
)
op(
    "max_pool2d",
    F.max_pool2d,
    lambda m: [
        s(m(2, 3, 8, 8), 2),
        s(m(1, 2, 7, 9), (3, 2), (2, 1), 1, 2),
        s(m(2, 7, 7), 3, 2, ceil_mode=True),
    ],
    (f32, f64),
    torch.max_pool2d,
)
op("max_pool3d", F.max_pool3d, lambda m: [s(m(1, 2, 4, 6, 6), 2)], (f32, f64))
for _n in (1, 2, 3):
    _shape = (2, 3) + (7,) * _n
    op(
        f"max_pool{_n}d",
        getattr(F, f"max_pool{_n}d"),
        lambda m, sh=_shape: [
            s(m(*sh), 2, return_indices=True),
            s(m(*sh), 3, 2, 1, 2, True, True),  # stride, padding, dilation, ceil_mode
            s(m(*sh[1:]), 3, 1, 1, return_indices=True),
        ],
        (f32, f64),
        getattr(F, f"max_pool{_n}d_with_indices"),
        variant="indices",
    )
    op(
        f"adaptive_max_pool{_n}d",
        getattr(F, f"adaptive_max_pool{_n}d"),
        lambda m, sh=_shape: [s(m(*sh), 3), s(m(*sh), 4, True), s(m(*sh[1:]), 2, return_indices=True)],
        (f32, f64),
        getattr(F, f"adaptive_max_pool{_n}d_with_indices"),
    )
op(
    "max_pool2d",
    F.max_pool2d,
    lambda m: [s(torch.zeros(1, 1, 4, 4, dtype=m.dtype), 2, return_indices=True)],
    (f32,),
    variant="ties",
)
op(
    "avg_pool1d",
    F.avg_pool1d,
    lambda m: [s(m(2, 3, 9), 3), s(m(2, 3, 9), 2, 2, 1, count_include_pad=False)],
    (f32, f64),
)
op(
    "avg_pool2d",
    F.avg_pool2d,
    lambda m: [
        s(m(2, 3, 8, 8), 2),
        s(m(1, 2, 7, 9), 3, 2, 1, ceil_mode=True),
        s(m(1, 2, 6, 6), 2, divisor_override=3),
    ],
    (f32, f64),
)
op("avg_pool3d", F.avg_pool3d, lambda m: [s(m(1, 2, 4, 6, 6), 2)], (f32, f64))
op("adaptive_avg_pool1d", F.adaptive_avg_pool1d, lambda m: [s(m(2, 3, 9), 4)], (f32, f64))
op(
    "adaptive_avg_pool2d",
    F.adaptive_avg_pool2d,
    lambda m: [s(m(2, 3, 9, 7), (3, None)), s(m(3, 8, 8), 1)],
    (f32, f64),
)
op("adaptive_avg_pool3d", F.adaptive_avg_pool3d, lambda m: [s(m(1, 2, 4, 6, 6), (2, 3, 3))], (f32, f64))
for _n in (1, 2, 3):
    _shape = (2, 4) + (3,) * _n
    op(
        f"conv_transpose{_n}d",
        getattr(F, f"conv_transpose{_n}d"),
        lambda m, sh=_shape, n=_n: [
            s(m(*sh), m(4, 3, *(2,) * n), m(3)),
            s(
                m(*sh), m(4, 1, *(3,) * n), None, 2, 1, 1, 2, 2
            ),  # stride, padding, output_padding, groups, dilation
            s(m(*sh[1:]), m(4, 2, *(3,) * n), stride=3, padding=2),
        ],
        (f32, f64),
        tol=NN_TOL,
    )
op(
    "interpolate",
    F.interpolate,
    lambda m: [
        s(m(2, 3, 5), size=7),
        s(m(2, 3, 4, 5), scale_factor=2),
        s(m(1, 2, 5, 3), scale_factor=(1.7, 0.6)),
        s(m(1, 2, 3, 4, 2), size=(4, 2, 5)),
    ],
    FLOAT + (torch.uint8,),
    F.upsample,
)
op(
    "interpolate",
    F.interpolate,
    lambda m: [
        s(m(2, 3, 7), size=4, mode="nearest-exact"),
        s(m(1, 2, 3, 5), scale_factor=2.4, mode="nearest-exact"),
    ],
    FLOAT,
    variant="nearest_exact",
)
op(
    "interpolate",
    F.interpolate,
    lambda m: [
        s(m(2, 3, 5), size=8, mode="linear"),
        s(m(2, 3, 5), scale_factor=0.7, mode="linear", align_corners=True),
        s(m(1, 2, 4, 5), size=(7, 3), mode="bilinear"),
        s(m(1, 2, 4, 5), scale_factor=1.5, mode="bilinear", align_corners=True),
        s(m(1, 2, 3, 4, 2), scale_factor=(2, 1.5, 3), mode="trilinear"),
        s(m(1, 2, 3, 4, 2), size=4, mode="trilinear", align_corners=True, recompute_scale_factor=None),
    ],
    FLOAT,
    variant="linear",
    tol=NN_TOL,
)
op(
    "interpolate",
    F.interpolate,
    lambda m: [
        s(m(1, 2, 4, 5), size=(7, 3), mode="bicubic"),
        s(m(1, 2, 4, 5), scale_factor=1.5, mode="bicubic", align_corners=True),
    ],
    FLOAT,
    variant="bicubic",
    tol=NN_TOL,
)
op(
    "interpolate",
    F.interpolate,
    lambda m: [s(m(1, 2, 4, 5), scale_factor=1.1, mode="bicubic")],
    FLOAT,
    variant="bicubic_fractional_scale",
    tol=NN_TOL,
    numerical_grad=True,  # torch 2.x's CPU bicubic backward with this scale fails gradcheck
)
op(
    "interpolate",
    F.interpolate,
    lambda m: [s(m(2, 3, 7), size=3, mode="area"), s(m(1, 2, 6, 5), scale_factor=0.5, mode="area")],
    FLOAT,
    variant="area",
    tol=NN_TOL,
)


def _grid(m, *shape):
    """Sampling positions in [-1.3, 1.3]: some outside the input, as padding_mode handles."""
    return m(*shape, low=-1.3, high=1.3)


op(
    "grid_sample",
    F.grid_sample,
    lambda m: [
        s(m(2, 3, 5, 6), _grid(m, 2, 4, 7, 2), align_corners=False),
        s(m(2, 3, 5, 6), _grid(m, 2, 4, 7, 2), "bilinear", "border", True),
        s(m(2, 3, 5, 6), _grid(m, 2, 4, 7, 2), "nearest", "reflection", False),
        s(m(2, 3, 5, 6), _grid(m, 2, 4, 7, 2), "bicubic", "reflection", True),
        s(m(2, 3, 5, 6), _grid(m, 2, 4, 7, 2), "bicubic", "zeros", False),
        s(m(1, 2, 4, 5, 3), _grid(m, 1, 3, 2, 4, 3), "bilinear", "reflection", False),
        s(m(1, 2, 4, 5, 3), _grid(m, 1, 3, 2, 4, 3), "nearest", "border", True),
    ],
    # bfloat16: eager rounds every step of its arithmetic; the decomposition computes in
    # float32 and rounds once, which is closer to the exact value but not bitwise eager's
    (f32, f64),
    tol=NN_TOL,
)
op(
    "unfold",
    F.unfold,
    lambda m: [
        s(m(2, 3, 7, 8), 3, padding=1),
        s(m(2, 3, 7, 8), (2, 3), (2, 1), (1, 0), (2, 1)),
        s(m(3, 5, 5), 2),
    ],
    FLOAT,
)
op(
    "fold",
    F.fold,
    lambda m: [
        s(m(2, 27, 56), (7, 8), 3, padding=1),
        s(m(2, 18, 24), (7, 8), (2, 3), (2, 1), (1, 0), (2, 1)),
        s(m(12, 16), 5, 2),
    ],
    FLOAT,
    tol=NN_TOL,
)
