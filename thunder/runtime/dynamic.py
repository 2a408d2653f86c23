"""Which sizes a compilation traces as symbols: the policy users know from torch.compile.

``thunder.jit(fn, dynamic=None)`` (the default) specialises the first call. Every later trace
compares each tensor input's sizes with those the same input (by its name: ``x``,
``t_cache_layers_0_keys``) had in the calls traced before; a dimension whose size differs is a
symbol (``s0``) from then on, for every input where it differs at once (a decoder's cache
grows in every layer alike), so the third length is already a hit. ``dynamic=True`` makes every
dimension a symbol from the first call; ``dynamic=False`` keeps every size specialised.

A decoding loop tells the policy the sequence's length (``sequence``: ``thunder.jit(model).generate()``
sets it before each forward, ``runtime/hf_generate.py``): a dimension of an argument (not of the
module's parameters or buffers) of that length is a symbol from the first call, as
``torch._dynamo.mark_dynamic`` would make it, since it changes with every prompt and every token:
the prefill and the decoding step compile once each, whatever the lengths.

Sizes 0 and 1 stay specialised (broadcasting depends on them). A dimension whose symbol a trace
could not keep (code that needs its value in a way thunder cannot record: the trace is made
again with every size specialised) or had to pin to its value (a use that needs the number,
``int(n)``) stays specialised from then on: it would only make entries that hold for one size.
"""

from __future__ import annotations

_ALL_DIMS = frozenset(range(64))


class SizePolicy:
    """What ``dims`` answers for each tensor input while a trace is acquired (``acquire``'s
    ``dynamic_dims``), and what the traces taught it."""

    def __init__(self, every_dim: bool = False):
        self.every_dim = every_dim  # ``dynamic=True``
        self.seen: dict[str, tuple[int, ...]] = {}  # tensor input name -> its sizes when last traced
        self.dynamic: dict[str, set[int]] = {}  # ... -> its dimensions that became symbols
        self.static: dict[str, set[int]] = {}  # ... -> its dimensions kept specialised
        self.why: dict[tuple[str, int], str] = {}  # (name, dimension) -> why it became a symbol
        # what the trace being acquired made symbols: (name, dimension), (name, None) for an int
        self.handed_out: list[tuple[str, int | None]] = []
        # the lengths of the sequence a decoding loop is at (the tokens so far, and with the
        # next one): dimensions of arguments of these sizes are symbols from the first call
        self.sequence: frozenset[int] = frozenset()

    def begin(self) -> None:
        """A trace begins."""
        self.handed_out = []

    def dims(self, name: str, shape: tuple[int, ...], state: bool = False) -> frozenset[int]:
        """The dimensions of the tensor input ``name`` of ``shape`` to trace as symbols
        (``state``: a parameter or buffer of the module, not an argument)."""
        seen = self.seen.get(name)
        self.seen[name] = shape
        if self.every_dim:
            dims = _ALL_DIMS
        else:
            dims = self.dynamic.setdefault(name, set())
            if seen is not None and len(seen) == len(shape):
                for d, (before, now) in enumerate(zip(seen, shape)):
                    if before != now and d not in dims:
                        dims.add(d)
                        self.why[(name, d)] = f"{before} in an earlier call, {now} in this one"
            if self.sequence and not state:
                for d, n in enumerate(shape):
                    if n in self.sequence and d not in dims:
                        dims.add(d)
                        self.why[(name, d)] = f"{n}: the sequence's length in generate(), which grows"
        out = frozenset(d for d in dims if d < len(shape)) - self.static.get(name, set())
        self.handed_out += [(name, d) for d in out if shape[d] >= 2]
        return out

    def int_argument(self, name: str) -> bool:
        """Whether the int argument ``name`` (of at least 2) is a symbol: with ``dynamic=True``
        (``thunderfx(fn, dynamic=True)``: Dynamo's graphs take their sizes as int arguments)."""
        if not self.every_dim or None in self.static.get(name, ()):
            return False
        self.handed_out.append((name, None))
        return True

    def failed(self) -> bool:
        """The trace with symbols failed: keep what it made symbols specialised. Whether there
        were any (else the failure is the code's own)."""
        for name, d in self.handed_out:
            self.static.setdefault(name, set()).add(d)
        return bool(self.handed_out)

    def pinned(self, sizes) -> None:
        """A trace pinned symbols to their values (``SizeEnv.specialized``)."""
        for sym in sizes.specialized:
            name, d = sizes.origin[sym]
            self.static.setdefault(name, set()).add(d)

    def note(self, name: str, d: int | None) -> str:
        """Why ``name``'s dimension ``d`` is a symbol."""
        if self.every_dim:
            return "every dimension is symbolic (dynamic=True)"
        return self.why.get((name, d), "")
