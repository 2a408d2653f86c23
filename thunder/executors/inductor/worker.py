"""The helper process that compiles torch.compile regions with Inductor while the main
process runs them as their torch calls (``torchcompileex.compile_in_background``).

Started as ``python -m thunder.executors.inductor.worker``, it reads jobs from stdin and
answers on stdout, each message a length-prefixed pickle. A job is a region's program (its
Python source, the modules it imports, its named objects), its inputs' metadata and the grad
mode, and the caller's settings that Inductor's cache keys include; the worker traces the program to an FX graph and compiles it with Inductor exactly as
the main process would, which leaves the compiled code in Inductor's on-disk caches, and
answers ``(job, None, cpp)`` (``cpp``: whether the wrapper is C++, which the main process
then asks for alone) or ``(job, error text, None)``. The main process then compiles the same
graph on its calling thread, where it loads from those caches in a fraction of the time.

Why a process and not a thread: while Inductor traces a graph, torch.fx patches
``nn.Module.__call__`` and sets its "FX tracing" flag for the whole process; another thread
calling a module or a ``torch.compile``d function meanwhile would see them.
"""

from __future__ import annotations

import sys
import traceback

from thunder.executors.inductor.compile import apply_settings, compile_program, read_message, write_message


def program_from(source: str, modules: dict, ctx: dict, name: str):
    """The function ``source`` defines (a trace's printed program)."""
    import importlib

    namespace = {alias: importlib.import_module(path) for alias, path in modules.items()}
    namespace.update(ctx)
    exec(compile(source, f"thunder.{name}", "exec"), namespace)
    return namespace[name]


def main() -> None:
    jobs, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # what Inductor prints must not reach the answers
    while True:
        job = read_message(jobs)
        if job is None:
            return
        number, (source, modules, ctx, name), meta, grad, settings = job
        cpp = None
        try:
            apply_settings(settings)
            _, cpp = compile_program(program_from(source, modules, ctx, name), meta, grad)
            error = None
        except Exception as e:  # sent back whole: the main process warns with it
            error = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}"
        write_message(answers, (number, error, cpp))


if __name__ == "__main__":
    main()
