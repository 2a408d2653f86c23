"""What torch.compile's Dynamo records for torch calls is thunder's: a walk over the graphs
Dynamo makes of the ``torch.nn.functional`` and ``torch`` calls models make finds no call
without a thunder op (Dynamo records some through their C spelling, ``torch._C._nn.pad`` for
``F.pad``, ``torch.rms_norm`` for ``F.rms_norm``: ``thunder/ops/ltorch/spellings.py``), and
thunderfx runs those pieces in thunder, with eager's values (the pieces ran eagerly before)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from thunder.dynamo import thunderfx
from thunder.ops.langs import TORCH_TO_THUNDER

_x, _t = torch.randn(4, 6), torch.randn(4, 6)
_labels = torch.randint(0, 6, (4,))
_img = torch.randn(2, 3, 8, 8)

CALLS = {
    "pad": lambda x, img: F.pad(x, (1, 2)).sum() + F.pad(img, (1, 1, 2, 0), mode="reflect").sum(),
    "pad replicate": lambda x, img: F.pad(img, (1, 1, 1, 1), mode="replicate"),
    "rms_norm": lambda x, img: F.rms_norm(x, (6,)),
    "losses": lambda x, img: (
        F.mse_loss(x, _t)
        + F.l1_loss(x, _t, reduction="sum")
        + F.smooth_l1_loss(x, _t, beta=0.5)
        + F.huber_loss(x, _t, delta=0.5)
        + F.soft_margin_loss(x, _t.sign())
    ),
    "classification losses": lambda x, img: (
        F.cross_entropy(x, _labels, label_smoothing=0.1)
        + F.nll_loss(x.log_softmax(-1), _labels)
        + F.binary_cross_entropy_with_logits(x, _t.sigmoid())
        + F.binary_cross_entropy(x.sigmoid(), _t.sigmoid())
        + F.kl_div(x.log_softmax(-1), _t.softmax(-1), reduction="batchmean")
    ),
    "activations": lambda x, img: (
        F.hardtanh(x)
        + F.relu6(x)
        + F.silu(x)
        + F.mish(x)
        + F.hardsigmoid(x)
        + F.hardswish(x)
        + F.leaky_relu(x, 0.2)
        + F.elu(x, 0.5)
        + F.gelu(x, approximate="tanh")
        + F.softplus(x)
        + F.logsigmoid(x)
    ),
    "glu": lambda x, img: F.glu(x),
    "normalization": lambda x, img: (
        F.layer_norm(img, (8,))
        + F.group_norm(img, 3)
        + F.instance_norm(img)
        + F.batch_norm(img, None, None, training=True)
    ),
    "pooling": lambda x, img: (
        F.adaptive_avg_pool2d(img, 4).sum() + F.max_pool2d(img, 2).sum() + F.avg_pool2d(img, 2).sum()
    ),
    "torch functions": lambda x, img: (
        torch.einsum("ij,kj->ik", x, _t).sum()
        + torch.norm(x)
        + torch.cdist(x, _t).sum()
        + torch.tensordot(x, _t.t(), 1).sum()
        + sum(s.sum() for s in torch.split(x, 2))
    ),
    "resampling": lambda x, img: F.interpolate(img, scale_factor=2).sum() + F.normalize(x).sum(),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_every_call_dynamo_records_has_a_thunder_op(name):
    fn = CALLS[name]
    unmapped = []

    def backend(gm, inputs):
        for node in gm.graph.nodes:
            target = node.target
            if node.op == "call_function" and target not in TORCH_TO_THUNDER:
                if getattr(target, "__module__", None) not in ("_operator", "operator"):
                    unmapped.append(target)
        return gm.forward

    torch._dynamo.reset()
    torch.compile(fn, backend=backend)(_x, _img)
    assert not unmapped, unmapped


@pytest.mark.parametrize("name", ["pad", "pad replicate", "rms_norm"])
def test_thunderfx_runs_them_in_thunder(name):
    fn = CALLS[name]
    torch._dynamo.reset()
    cf = thunderfx(fn)
    x, img = _x.clone(), _img.clone()
    torch.testing.assert_close(cf(x, img), fn(x, img))
    assert cf.pieces and not cf.fallbacks, [str(f) for f in cf.fallbacks]
