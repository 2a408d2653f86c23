"""The checks the prologue makes, gathered while tracing as acquisition finds what the trace
relies on: the type and length of a container argument, a literal's value, a module's state,
the strides a view was decided on.

A check's first argument is the value it checks: the prologue prints the check right after
the line that unpacks that value (``Inputs.build_prologue``), and only when the value is
unpacked at all, unless it is checked *always* (values the trace relied on without passing
them to the computation). Checks of global state (a torch flag, the global module hooks)
check no input and come last.
"""

from __future__ import annotations

from thunder.core.symbol import BoundSymbol, Symbol


class PrologueChecks:
    """The prologue's checks, in the order they were found."""

    def __init__(self) -> None:
        self.of_values: list[BoundSymbol] = []  # each checks its first argument
        self.always: list = []  # values the prologue unpacks and checks on every call
        self.of_globals: list[BoundSymbol] = []  # checks of global state (no input to unpack)

    def add_check(self, check: Symbol, value, *args, always: bool = False, **kwargs) -> None:
        """``check(value, *args, **kwargs)`` in the prologue; ``always``: whether or not the
        computation uses ``value``."""
        self.of_values.append(BoundSymbol(check, (value, *args), kwargs, None))
        if always:
            self.check_always(value)

    def check_always(self, value) -> None:
        """Unpack and check ``value`` on every call (its checks, and a tensor's metadata)."""
        self.always.append(value)

    def add_global_check(self, check: Symbol, *args) -> None:
        self.of_globals.append(BoundSymbol(check, args, {}, None))
