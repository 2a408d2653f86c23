"""Every operation, defined once: ``prims`` (primitives with meta functions), ``ltorch``
(the torch language, compositions of prims) and ``aten`` (``torch.ops.aten`` operators)."""
