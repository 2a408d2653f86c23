"""Architectures as their users write them, tiny: a U-Net (ConvTranspose2d, F.interpolate,
nn.Upsample, InstanceNorm2d), an nn.LSTM language model and a torchvision-style ViT that calls
``torch._assert``. Each: the forward, and a training step (loss, backward, optimizer step)
against eager, loss and every parameter gradient; and the decomposition into prims (what runs
where no executor claims an op) gives the same output and gradients.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import thunder
from thunder.core.verify import verify

TOL = {"rtol": 1e-5, "atol": 1e-5}
PRIMS_TOL = {"rtol": 1e-4, "atol": 1e-4}  # the prims sum and multiply in another order


# -- the models ---------------------------------------------------------------------------------
class DoubleConv(nn.Sequential):
    def __init__(self, c_in: int, c_out: int):
        super().__init__(
            nn.Conv2d(c_in, c_out, 3, padding=1),
            nn.InstanceNorm2d(c_out, affine=True),
            nn.ReLU(),
            nn.Conv2d(c_out, c_out, 3, padding=1),
            nn.BatchNorm2d(c_out),
            nn.ReLU(inplace=True),
        )


class UNet(nn.Module):
    """Two levels down (max pooling), up by a transposed convolution and by interpolation."""

    def __init__(self, c_in: int = 3, classes: int = 4, w: int = 4):
        super().__init__()
        self.inc = DoubleConv(c_in, w)
        self.down1 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(w, 2 * w))
        self.down2 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(2 * w, 4 * w))
        self.up1 = nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2)
        self.conv1 = DoubleConv(4 * w, 2 * w)
        self.reduce = nn.Conv2d(2 * w, w, 1)
        self.conv2 = DoubleConv(2 * w, w)
        self.smooth = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), nn.AvgPool2d(2))
        self.outc = nn.Conv2d(w, classes, 1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        u = self.conv1(torch.cat([x2, self.up1(x3)], dim=1))
        u = F.interpolate(u, scale_factor=2, mode="bilinear", align_corners=False)
        u = self.conv2(torch.cat([x1, self.reduce(u)], dim=1))
        u = u + self.smooth(u)
        return self.outc(F.interpolate(u, size=x.shape[-2:], mode="bicubic", align_corners=True))


class LSTMLanguageModel(nn.Module):
    def __init__(self, vocab: int = 40, d: int = 16, hidden: int = 24, layers: int = 2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx, state=None):
        out, state = self.lstm(self.emb(idx), state)
        return self.head(out), state


class EncoderBlock(nn.Module):
    def __init__(self, heads: int, d: int, mlp: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)
        self.dropout = nn.Dropout(0.0)
        self.ln_2 = nn.LayerNorm(d, eps=1e-6)
        self.mlp = nn.Sequential(
            nn.Linear(d, mlp), nn.GELU(), nn.Dropout(0.0), nn.Linear(mlp, d), nn.Dropout(0.0)
        )

    def forward(self, input):
        torch._assert(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    def __init__(self, seq_length: int, layers: int, heads: int, d: int, mlp: int):
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.empty(1, seq_length, d).normal_(std=0.02))
        self.dropout = nn.Dropout(0.0)
        self.layers = nn.Sequential(*(EncoderBlock(heads, d, mlp) for _ in range(layers)))
        self.ln = nn.LayerNorm(d, eps=1e-6)

    def forward(self, input):
        torch._assert(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
        return self.ln(self.layers(self.dropout(input + self.pos_embedding)))


class VisionTransformer(nn.Module):
    """torchvision's ViT in small: patches by a strided convolution, a class token, a learned
    position embedding, pre-norm encoder blocks, and a linear head on the class token."""

    def __init__(self, image_size=16, patch_size=4, layers=2, heads=4, d=32, mlp=64, classes=10):
        super().__init__()
        self.image_size, self.patch_size, self.hidden_dim = image_size, patch_size, d
        self.conv_proj = nn.Conv2d(3, d, kernel_size=patch_size, stride=patch_size)
        self.class_token = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.encoder = Encoder((image_size // patch_size) ** 2 + 1, layers, heads, d, mlp)
        self.heads = nn.Sequential(nn.Linear(d, classes))

    def _process_input(self, x):
        n, c, h, w = x.shape
        p = self.patch_size
        torch._assert(h == self.image_size, f"Wrong image height! Expected {self.image_size} but got {h}!")
        torch._assert(w == self.image_size, f"Wrong image width! Expected {self.image_size} but got {w}!")
        x = self.conv_proj(x)
        return x.reshape(n, self.hidden_dim, (h // p) * (w // p)).permute(0, 2, 1)

    def forward(self, x):
        x = self._process_input(x)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        return self.heads(self.encoder(x)[:, 0])


# -- the checks ---------------------------------------------------------------------------------
def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _grads(model):
    return {n: p.grad for n, p in model.named_parameters()}


def _prims_output(jm, inputs):
    """The model's output computed by the first trace (torch-language ops run as their
    decompositions into prims), on the inputs the compiled prologue unpacks."""
    prologue = thunder.last_prologue_traces(jm)[-1].python_callable()
    cargs, _ = prologue(*inputs)
    return _first(thunder.last_traces(jm)[0].python_callable()(*cargs)[0])


def _train_and_compare(make, inputs, loss_fn, optimizer=torch.optim.Adam, steps: int = 2):
    """Forward, loss, backward and optimizer steps, compiled and eager, from the same weights:
    the losses, every parameter's gradient and the updated parameters agree."""
    torch.manual_seed(0)
    model = make()
    ref = copy.deepcopy(model)
    jm = thunder.jit(model)
    opt, ref_opt = optimizer(model.parameters(), lr=1e-2), optimizer(ref.parameters(), lr=1e-2)
    for _ in range(steps):
        opt.zero_grad()
        ref_opt.zero_grad()
        loss = loss_fn(_first(jm(*inputs)), inputs)
        ref_loss = loss_fn(_first(ref(*inputs)), inputs)
        torch.testing.assert_close(loss, ref_loss, **TOL)
        loss.backward()
        ref_loss.backward()
        grads, ref_grads = _grads(model), _grads(ref)
        assert grads.keys() == ref_grads.keys()
        for name in grads:
            assert grads[name] is not None, name
            torch.testing.assert_close(grads[name], ref_grads[name], **TOL, msg=lambda m, n=name: f"{n}: {m}")
        opt.step()
        ref_opt.step()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, **TOL, msg=lambda m, n=name: f"{n}: {m}")
    for b, rb in zip(model.buffers(), ref.buffers()):  # running statistics
        torch.testing.assert_close(b, rb, **TOL)
    for trace in thunder.last_traces(jm):
        verify(trace)
    assert thunder.compile_stats(jm).cache_hits == steps - 1  # updated weights hit the cache
    return model, jm


def _prims_gradients_match(make, inputs, loss_fn):
    """Gradients through the decomposition into prims equal eager's."""
    torch.manual_seed(0)
    model = make()
    ref = copy.deepcopy(model)
    jm = thunder.jit(model)
    jm(*inputs)
    loss_fn(_prims_output(jm, inputs), inputs).backward()
    loss_fn(_first(ref(*inputs)), inputs).backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, **PRIMS_TOL, msg=lambda m, n=name: f"{n}: {m}")


def _segmentation_loss(logits, inputs):
    target = torch.arange(logits.shape[-2] * logits.shape[-1]).reshape(logits.shape[-2:]) % logits.shape[1]
    return F.cross_entropy(logits, target.expand(logits.shape[0], -1, -1))


def _next_token_loss(logits, inputs):
    idx = inputs[0]
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), idx[:, 1:].reshape(-1))


def _class_loss(logits, inputs):
    return F.cross_entropy(logits, torch.arange(logits.shape[0]) % logits.shape[1])


# -- the tests ----------------------------------------------------------------------------------
def test_unet_forward_matches_eager():
    torch.manual_seed(0)
    model = UNet().eval()
    x = torch.randn(2, 3, 8, 8)
    jm = thunder.jit(model)
    torch.testing.assert_close(jm(x), model(x), **TOL)
    torch.testing.assert_close(_prims_output(jm, (x,)), model(x), **PRIMS_TOL)
    ids = {b.sym.id for b in thunder.last_traces(jm)[0].bound_symbols}
    assert {"ltorch.interpolate", "ltorch.conv_transpose2d", "ltorch.instance_norm"} <= ids


def test_unet_training_step_matches_eager():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8, 8)
    # SGD, not Adam: a convolution's bias followed by InstanceNorm has a zero gradient, which
    # any summation order leaves as noise (~1e-8); Adam scales that noise to steps of size lr
    _train_and_compare(UNet, (x,), _segmentation_loss, optimizer=torch.optim.SGD)
    _prims_gradients_match(lambda: UNet().eval(), (x,), _segmentation_loss)


def test_lstm_language_model_forward_with_and_without_state():
    torch.manual_seed(0)
    model = LSTMLanguageModel().eval()
    idx = torch.randint(0, 40, (3, 7))
    jm = thunder.jit(model)
    logits, (h, c) = jm(idx)
    ref_logits, (ref_h, ref_c) = model(idx)
    for a, b in ((logits, ref_logits), (h, ref_h), (c, ref_c)):
        torch.testing.assert_close(a, b, **TOL)
    # carry the state into the next chunk, as a language model's generation loop does
    nxt = torch.randint(0, 40, (3, 2))
    out, _ = jm(nxt, (h, c))
    torch.testing.assert_close(out, model(nxt, (ref_h, ref_c))[0], **TOL)
    torch.testing.assert_close(_prims_output(jm, (nxt, (h, c))), out, **PRIMS_TOL)
    assert any(b.sym.id == "ltorch.lstm" for b in thunder.last_traces(jm)[0].bound_symbols)


def test_lstm_language_model_training_step_matches_eager():
    torch.manual_seed(0)
    idx = torch.randint(0, 40, (3, 7))
    _train_and_compare(LSTMLanguageModel, (idx,), _next_token_loss)
    _prims_gradients_match(LSTMLanguageModel, (idx,), _next_token_loss)


def test_vit_with_torch_assert_forward_matches_eager():
    torch.manual_seed(0)
    model = VisionTransformer().eval()
    x = torch.randn(2, 3, 16, 16)
    jm = thunder.jit(model)
    torch.testing.assert_close(jm(x), model(x), **TOL)
    torch.testing.assert_close(_prims_output(jm, (x,)), model(x), **PRIMS_TOL)
    # the shape assertions ran while tracing: a wrong image size retraces and fails as in eager
    with pytest.raises(AssertionError, match="Wrong image height! Expected 16 but got 12!"):
        jm(torch.randn(2, 3, 12, 16))


def test_vit_training_step_matches_eager():
    torch.manual_seed(0)
    x = torch.randn(4, 3, 16, 16)
    _train_and_compare(VisionTransformer, (x,), _class_loss, optimizer=torch.optim.SGD)
    _prims_gradients_match(VisionTransformer, (x,), _class_loss)
