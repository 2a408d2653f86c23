"""Recurrent layers: ``torch.lstm``, ``torch.gru``, ``torch.rnn_tanh``, ``torch.rnn_relu``
(what ``nn.LSTM``, ``nn.GRU`` and ``nn.RNN`` call).

Each is its cell composed over the time steps, layer by layer and direction by direction, as
torch's CPU implementation computes it: the input projection of a whole sequence is one
``prims.linear``; each step adds the hidden projection and applies the gates. Between layers
the output goes through dropout when training. The loop is unrolled in the trace (the number
of steps is static), so gradients follow from the prims.

Packed sequences (``nn.utils.rnn.pack_padded_sequence``) carry per-step batch sizes in a
tensor, whose values decide the loop: they are data-dependent and refused.
"""

from __future__ import annotations

import torch

from thunder.core.tags import Tag
from thunder.ops import prims
from thunder.ops.langs import torchsymbol
from thunder.ops.ltorch.dropout import dropout
from thunder.ops.meta import ShapeError, is_tensor, shape_of


def _gates(g, n: int):
    """``g`` (batch, n * hidden) split into its n gates along the last dim."""
    b, width = shape_of(g)
    h = width // n
    return [prims.slice(g, (0, i * h), (b, (i + 1) * h), (1, 1)) for i in range(n)]


def _lstm_cell(xw, state, w_hh, b_hh, w_hr):
    h, c = state
    i, f, g, o = _gates(prims.add(prims.linear(h, w_hh, b_hh), xw), 4)
    c = prims.add(prims.mul(prims.sigmoid(f), c), prims.mul(prims.sigmoid(i), prims.tanh(g)))
    h = prims.mul(prims.sigmoid(o), prims.tanh(c))
    if w_hr is not None:
        h = prims.linear(h, w_hr, None)
    return h, (h, c)


def _gru_cell(xw, h, w_hh, b_hh, w_hr):
    xr, xz, xn = _gates(xw, 3)
    hr, hz, hn = _gates(prims.linear(h, w_hh, b_hh), 3)
    r = prims.sigmoid(prims.add(hr, xr))
    z = prims.sigmoid(prims.add(hz, xz))
    n = prims.tanh(prims.add(xn, prims.mul(hn, r)))
    h = prims.add(prims.mul(prims.sub(h, n), z), n)
    return h, h


def _simple_cell(activation):
    def cell(xw, h, w_hh, b_hh, w_hr):
        h = activation(prims.add(prims.linear(h, w_hh, b_hh), xw))
        return h, h

    return cell


def _relu(x):
    return prims.where(prims.gt(x, 0), x, 0)


def _direction(cell, x, state, weights, reverse: bool):
    """One layer, one direction over ``x`` (time, batch, features): (outputs, final state)."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    xw = prims.linear(x, w_ih, b_ih)
    steps, batch, width = shape_of(xw)
    outs = []
    for t in reversed(range(steps)) if reverse else range(steps):
        xt = prims.squeeze(prims.slice(xw, (t, 0, 0), (t + 1, batch, width), (1, 1, 1)), (0,))
        h, state = cell(xt, state, w_hh, b_hh, w_hr)
        outs.append(prims.broadcast_in_dim(h, (1, *shape_of(h)), (1, 2)))
    if reverse:
        outs.reverse()
    return prims.cat(outs, 0), state


def _layer_weights(params, has_biases: bool, proj: bool, op: str):
    """Per layer and direction: (w_ih, w_hh, b_ih, b_hh, w_hr), in torch's flat order."""
    per = 2 + 2 * has_biases + proj
    if len(params) % per:
        raise ShapeError(f"{op}: {len(params)} parameters do not split into groups of {per}")
    out = []
    for k in range(0, len(params), per):
        group = list(params[k : k + per])
        w_ih, w_hh = group[0], group[1]
        b_ih, b_hh = (group[2], group[3]) if has_biases else (None, None)
        out.append((w_ih, w_hh, b_ih, b_hh, group[-1] if proj else None))
    return out


def _recurrent(
    cell,
    input,
    states,
    params,
    has_biases,
    num_layers,
    dropout_p,
    train,
    bidirectional,
    batch_first,
    op,
    proj,
):
    """Run ``cell`` over every layer and direction; ``states``: per initial-state tensor
    (h0, and c0 for an LSTM), shaped (layers * directions, batch, size). Returns the output
    and the stacked final states."""
    if len(shape_of(input)) != 3:
        raise ShapeError(f"{op}: expected a 3-D input (time, batch, features), got shape {shape_of(input)}")
    dirs = 2 if bidirectional else 1
    weights = _layer_weights(params, has_biases, proj, op)
    if len(weights) != num_layers * dirs:
        raise ShapeError(f"{op}: {len(params)} parameters for {num_layers} layers and {dirs} directions")
    x = prims.transpose(input, (1, 0, 2)) if batch_first else input
    finals = [[] for _ in states]
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            state = tuple(
                prims.squeeze(prims.slice(s, (k, 0, 0), (k + 1, *shape_of(s)[1:]), (1, 1, 1)), (0,))
                for s in states
            )
            out, state = _direction(cell, x, state if len(state) > 1 else state[0], weights[k], d == 1)
            outs.append(out)
            for f, s in zip(finals, state if len(states) > 1 else (state,)):
                f.append(prims.broadcast_in_dim(s, (1, *shape_of(s)), (1, 2)))
        x = prims.cat(outs, 2) if dirs == 2 else outs[0]
        if dropout_p and train and layer < num_layers - 1:
            x = dropout(x, dropout_p, True)
    out = prims.transpose(x, (1, 0, 2)) if batch_first else x
    return out, *(prims.cat(f, 0) for f in finals)


def _reject_packed(op: str):
    raise ShapeError(
        f"{op}: packed sequences (pack_padded_sequence) are not supported: their per-step batch sizes are "
        "tensor values, which decide the loop and are not known while tracing; pad the batch instead"
    )


@torchsymbol(torch.lstm, torch_impl="torch.lstm", tags=(Tag.RECURRENT,))
def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first=False):
    """torch.lstm(input, (h0, c0), params, ...) -> (output, h_n, c_n); ``proj_size`` shows as
    an h0 narrower than c0, with a projection weight after each layer's biases."""
    if is_tensor(hx):
        _reject_packed("torch.lstm")
    h0, c0 = hx
    proj = shape_of(h0)[-1] != shape_of(c0)[-1]
    return _recurrent(
        _lstm_cell, input, (h0, c0), params, has_biases, num_layers, dropout, train, bidirectional,
        batch_first, "torch.lstm", proj,
    )  # fmt: skip


def _single_state(name: str, cell):
    op = f"torch.{name}"

    def fn(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first=False):
        if is_tensor(params):
            _reject_packed(op)
        return _recurrent(
            cell, input, (hx,), params, has_biases, num_layers, dropout, train, bidirectional, batch_first,
            op, False,
        )  # fmt: skip

    fn.__name__ = name
    fn.__doc__ = f"{op}(input, h0, params, ...) -> (output, h_n)"
    return torchsymbol(getattr(torch, name), torch_impl=op, tags=(Tag.RECURRENT,))(fn)


gru = _single_state("gru", _gru_cell)
rnn_tanh = _single_state("rnn_tanh", _simple_cell(prims.tanh))
rnn_relu = _single_state("rnn_relu", _simple_cell(_relu))
