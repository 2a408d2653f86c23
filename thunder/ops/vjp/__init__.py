"""VJP rules: how to differentiate each op, in one table keyed by the Symbol (``VJPS``).

Why this package is under ``thunder/ops/`` and not next to the grad pass: a rule is knowledge
about one op, and the project keeps everything that names a particular op under
``thunder/ops/`` (no pass names an op); the grad pass (``thunder/transforms/grad.py``) only
looks rules up in this table.

Every differentiable prim has a rule. A torch-language op is differentiated through its
decomposition (its BoundSymbol's subsymbols) unless it has a rule of its own, which it gets
where the decomposition would be slow or unstable (softmax, layer_norm, attention, ...).

A rule is ``rule(g, out, *args, **kwargs)``: ``g`` is the cotangent of the output (a tuple,
with ``None`` where an output has none, when the op returns several values), ``out`` the
output, ``args``/``kwargs`` the op's arguments (a torch-language op's bound to its
signature, so every parameter before ``*`` is positional). It returns one gradient per
positional argument (``None`` for none, a list for a list argument), each of the broadcast
shape and the computation dtype it finds natural: the grad pass sums broadcast dimensions
away and casts to the argument's dtype. Returning ``NotImplemented`` falls back to the
decomposition. Rules call thunder ops, so the backward is a trace like any other.

The rules live in one module per family of ops, each registering its rules (``@rule_for``)
when this package imports it; a new rule goes into its family's module:

- ``table``: the tables (``VJPS``, ``AUGMENTED``, ``NON_DIFFERENTIABLE``), ``rule_for`` and
  the helpers rules of several families share;
- ``elementwise``: the unary and binary prims, ``real``/``imag``, and the torch-language
  ``logaddexp``, ``logaddexp2``, ``xlogy``, ``special_entr`` and ``special_xlog1py``;
- ``reductions``: the reduction prims and the torch-language ``logsumexp`` and ``vector_norm``;
- ``shape``: the shape prims, the torch-language ``split``/``chunk`` and
  ``write_through_detach``;
- ``indexing``: takes, scatters, ``index_put``, ``topk``, ``sort`` and the torch-language
  ``embedding``;
- ``linalg``: ``matmul``, ``linear``, ``grouped_mm``, convolution and pooling;
- ``factorizations``: the matrix factorization prims (``cholesky``, ``qr``, ``eigh``, ``svd``,
  ``lu``, ``lu_factor``, ``lu_unpack``), ``solve_triangular`` and the solves and inverse from a
  factor (``cholesky_solve``, ``cholesky_inverse``, ``lu_solve``);
- ``spectral``: the FFT prims and ``conj_physical``;
- ``activations``: the torch-language activations and ``softmax``, ``log_softmax``,
  ``softmin``;
- ``normalization``: ``layer_norm``, ``native_layer_norm`` and ``native_group_norm`` (and the
  ``AUGMENTED`` forwards of layer_norm and group_norm: eager's kernels, which keep the statistics);
- ``attention``: ``scaled_dot_product_attention`` and ``flash_attention_cpu`` (its ``AUGMENTED``
  forward where eager runs its CPU flash kernel);
- ``collectives``: the collectives, FSDP's ``unshard`` and ``NO_TORCH_GRADIENT``;
- ``subgradients``: where eager picks one subgradient (ties of ``max``/``min`` with ``dim``,
  ``kthvalue``, ``median``; ``clamp``, ``hardtanh``, ``relu6`` at their bounds; ``fmax``/``fmin``);
- ``custom``: ``custom_op_rule``, the rule of a custom operator.
"""

from __future__ import annotations

# the family modules register their rules into VJPS when imported
from thunder.ops.vjp import (  # noqa: F401
    activations,
    attention,
    collectives,
    elementwise,
    factorizations,
    indexing,
    linalg,
    normalization,
    reductions,
    shape,
    spectral,
    subgradients,
)
from thunder.ops.vjp.collectives import NO_TORCH_GRADIENT
from thunder.ops.vjp.custom import custom_op_rule
from thunder.ops.vjp.table import AUGMENTED, AUGMENTED_VIEWS, NON_DIFFERENTIABLE, VJPS

__all__ = [
    "AUGMENTED",
    "AUGMENTED_VIEWS",
    "NON_DIFFERENTIABLE",
    "NO_TORCH_GRADIENT",
    "VJPS",
    "custom_op_rule",
]
