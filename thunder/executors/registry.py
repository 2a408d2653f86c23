"""The executors thunder knows, by name: each registers itself when its module is imported.

    register_executor(MyExecutor("mine"))       # a module of its own, or a test file
    thunder.jit(fn, executors=["mine"])         # found here by name
    get_executor("torchcompile").wait()         # its background compilations

The rest of thunder and the explorer ask the registry, never a particular executor: which
one a name means (``get_executor``), the default list (``default_executors``: the available
executors marked ``default``, then the ones that run every prim), the list a ``jit`` call
runs (``resolve_executors``), waiting for background work (``wait_for_compilations``), and
how viewers draw what each one runs (``Executor.drawing``).
"""

from __future__ import annotations

from collections.abc import Sequence

from thunder.executors.base import Executor

_REGISTRY: dict[str, Executor] = {}


def register_executor(executor: Executor, *, replace: bool = False) -> Executor:
    """Make ``executor`` known by its name; returns it (so a module can write
    ``executor = register_executor(MyExecutor("mine"))``)."""
    known = _REGISTRY.get(executor.name)
    if known is not None and known is not executor and not replace:
        raise ValueError(f"thunder: an executor named {executor.name!r} is already registered ({known!r})")
    _REGISTRY[executor.name] = executor
    return executor


def deregister_executor(name: str) -> None:
    """Forget the executor ``name`` (a test's toy executor, once the test is done)."""
    _REGISTRY.pop(name, None)


def get_executor(name: str) -> Executor:
    """The executor registered as ``name``; a ValueError names the ones there are."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"thunder: unknown executor {name!r}; available: {sorted(_REGISTRY)}") from None


def find_executor(name: str | None) -> Executor | None:
    """The executor registered as ``name``, or None (a trace saved by another process may
    name one this process does not have)."""
    return _REGISTRY.get(name) if name is not None else None


def all_executors() -> list[Executor]:
    """Every registered executor, in the order they were registered."""
    return list(_REGISTRY.values())


def fallback_executors() -> list[Executor]:
    """The executors that run every prim (torch): what runs a fusion region as plain calls."""
    return [e for e in _REGISTRY.values() if e.runs_every_prim]


def default_executors() -> list[Executor]:
    """The available executors marked ``default`` (nvFuser with CUDA and the package), in
    priority order, then those that run every prim (torch)."""
    chosen = sorted(
        (e for e in _REGISTRY.values() if e.default and e.unavailable_reason() is None),
        key=lambda e: -e.priority,
    )
    return chosen + [e for e in fallback_executors() if e not in chosen]


def resolve_executors(executors: Sequence[str | Executor] | None) -> list[Executor]:
    """The executors in the order they are asked; ``None`` means ``default_executors()``.
    Those that run every prim (torch) come after them when not asked for, and those that run
    the prologue's and epilogue's Python (``runs_host``) always last."""
    chosen: list[Executor] = []
    for e in default_executors() if executors is None else executors:
        if isinstance(e, str):
            e = get_executor(e)
        why = e.unavailable_reason()
        if why is not None:
            raise RuntimeError(f"thunder: the {e.name} executor is not available here: {why}")
        chosen.append(e)
    chosen += [e for e in fallback_executors() if e not in chosen]
    return chosen + [e for e in _REGISTRY.values() if e.runs_host and e not in chosen]


def wait_for_compilations(timeout: float | None = None) -> None:
    """Block until every executor's background compilations started so far are done, and
    loaded, so that the next calls run them."""
    for e in _REGISTRY.values():
        e.wait(timeout)
