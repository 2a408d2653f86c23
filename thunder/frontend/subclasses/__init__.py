"""Tensor wrapper subclasses while tracing: their values, the ops on them resolved through
``__torch_dispatch__`` into aten symbols, in-place writes into them, and the dispatch of ops met
after tracing (a backward's)."""
