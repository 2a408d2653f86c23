"""Recurrent layers and scaled dot-product attention (``thunder/ops/ltorch/rnn.py``, ``nn.py``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .entries import FLOAT, NN_TOL, bf16, f32, op, s


def _rnn_params(
    m, gates: int, inp: int, hidden: int, layers: int, dirs: int, bias: bool = True, proj: int = 0
):
    """torch's flat parameter list: per layer and direction w_ih, w_hh, (b_ih, b_hh), (w_hr)."""
    out, h_out = [], proj or hidden
    for layer in range(layers):
        width = inp if layer == 0 else h_out * dirs
        for _ in range(dirs):
            out += [
                m(gates * hidden, width, low=-0.5, high=0.5),
                m(gates * hidden, h_out, low=-0.5, high=0.5),
            ]
            if bias:
                out += [m(gates * hidden, low=-0.5, high=0.5), m(gates * hidden, low=-0.5, high=0.5)]
            if proj:
                out.append(m(proj, hidden, low=-0.5, high=0.5))
    return out


RNN_TOL = {f32: (1e-4, 1e-4), bf16: (5e-2, 5e-2)}
op(
    "lstm",
    torch.lstm,
    lambda m: [
        s(
            m(3, 2, 4),
            (m(1, 2, 5), m(1, 2, 5)),
            _rnn_params(m, 4, 4, 5, 1, 1),
            True,
            1,
            0.0,
            False,
            False,
            False,
        ),
        # two layers, bidirectional, batch first, no biases
        s(
            m(2, 3, 4),
            (m(4, 2, 5), m(4, 2, 5)),
            _rnn_params(m, 4, 4, 5, 2, 2, False),
            False,
            2,
            0.0,
            False,
            True,
            True,
        ),
        # projections (proj_size=3)
        s(
            m(3, 2, 4),
            (m(2, 2, 3), m(2, 2, 5)),
            _rnn_params(m, 4, 4, 5, 1, 2, proj=3),
            True,
            1,
            0.0,
            False,
            True,
            False,
        ),
    ],
    FLOAT,
    tol=RNN_TOL,
)
for _name, _gates in (("gru", 3), ("rnn_tanh", 1), ("rnn_relu", 1)):
    op(
        _name,
        getattr(torch, _name),
        lambda m, g=_gates: [
            s(m(3, 2, 4), m(1, 2, 5), _rnn_params(m, g, 4, 5, 1, 1), True, 1, 0.0, False, False, False),
            s(m(2, 3, 4), m(4, 2, 5), _rnn_params(m, g, 4, 5, 2, 2), True, 2, 0.0, False, True, True),
        ],
        FLOAT,
        tol=RNN_TOL,
    )


def _sdpa(m):
    q, k, v = m(2, 4, 5, 8), m(2, 4, 6, 8), m(2, 4, 6, 8)
    mask = torch.rand(5, 6) > 0.3
    mask[2] = False  # a fully masked row gives zeros
    return [
        s(q, k, v),
        s(q, k, v, attn_mask=mask),
        s(q, k, v, attn_mask=m(2, 1, 5, 6), scale=0.3),
        s(q, k, v, is_causal=True),
        s(q, k[:, :2], v[:, :2], is_causal=True, enable_gqa=True),
    ]


op("scaled_dot_product_attention", F.scaled_dot_product_attention, _sdpa, FLOAT, tol=NN_TOL)
