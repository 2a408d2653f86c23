"""``%thunder_trace`` and ``%%thunder_trace``: jit, run and explore a call from a notebook.

    %load_ext explorer
    %thunder_trace [--device cpu|cuda] [--executors a,b] [--depth N] [--view V] [--modules] fn(args)
    %thunder_trace --thunderfx fn(args)     # through torch.compile: pieces and graph breaks

The call is evaluated in the user's namespace: ``fn`` is jitted (a function or an
``nn.Module``), run on the arguments (moved to CUDA with ``--device cuda``, the module on a
copy), each line of the final traces is timed, and the explorer is displayed. In the cell
form every line but the last runs first and the last line is the call. Any error (in the
user's code, an unsupported op, a bad option) is displayed in the output with the user's
traceback; the magic itself never raises, so the kernel keeps going.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import linecache
import os
import traceback
from html import escape

from explorer.model.nodes import CELL_NUMBERS, cell_number
from explorer.notebook.widget import VIEWS

last_explorer = None  # the most recent explorer, for code that wants the object
_cells = 0


class MagicUsageError(ValueError):
    pass


USAGE = (
    "usage: %thunder_trace [--device cpu|cuda] [--executors a,b] [--depth N] "
    "[--view overview|tree|graph|source|diff|timing|pair|pair-graph] [--modules] [--thunderfx] fn(args)"
)


@dataclasses.dataclass
class Options:
    device: str = "cpu"
    executors: list[str] | None = None
    depth: int = 1
    view: str | None = None  # None: the overview
    modules: bool | None = None  # group the tree and graph by module (None: when it has modules)
    thunderfx: bool = False  # compile with thunder.dynamo.thunderfx (Dynamo splits, thunder compiles)


def parse_line(line: str) -> tuple[Options, str]:
    """Split ``--opt value ... call`` into options and the call's source."""
    opts = Options()
    rest = line.strip()
    while rest.startswith("--"):
        head, _, tail = rest.partition(" ")
        if head == "--modules":
            opts.modules = True
            rest = tail.strip()
            continue
        if head == "--thunderfx":
            opts.thunderfx = True
            rest = tail.strip()
            continue
        name, eq, value = head.partition("=")
        if not eq:
            tail = tail.lstrip()
            value, _, tail = tail.partition(" ")
        rest = tail.strip()
        if not value:
            raise MagicUsageError(f"{name} needs a value\n{USAGE}")
        if name == "--device":
            if value not in ("cpu", "cuda"):
                raise MagicUsageError(f"--device must be cpu or cuda, not {value!r}")
            opts.device = value
        elif name == "--executors":
            opts.executors = [e.strip() for e in value.split(",") if e.strip()]
        elif name == "--depth":
            if not value.isdigit():
                raise MagicUsageError(f"--depth takes a number, not {value!r}")
            opts.depth = int(value)
        elif name == "--view":
            if value not in VIEWS:
                raise MagicUsageError(f"--view must be one of {', '.join(VIEWS)}, not {value!r}")
            opts.view = value
        else:
            raise MagicUsageError(f"unknown option {name}\n{USAGE}")
    return opts, rest


def _split_call(src: str) -> ast.Call:
    try:
        tree = ast.parse(src.strip(), mode="eval")
    except SyntaxError as e:
        raise MagicUsageError(f"cannot parse the call {src.strip()!r}: {e.msg}\n{USAGE}") from None
    if not isinstance(tree.body, ast.Call):
        raise MagicUsageError(f"expected a call such as fn(x), got {src.strip()!r}\n{USAGE}")
    return tree.body


def evaluate_call(src: str, ns: dict) -> tuple[object, tuple, dict]:
    """Evaluate ``fn(args)`` in ``ns`` without calling: (fn, args, kwargs)."""
    call = _split_call(src)
    fn = eval(compile(ast.Expression(call.func), "<thunder_trace>", "eval"), ns)
    collect = ast.Call(
        func=ast.Name("__thunder_trace_collect__", ast.Load()), args=call.args, keywords=call.keywords
    )
    expr = ast.fix_missing_locations(ast.Expression(collect))
    args, kwargs = eval(
        compile(expr, "<thunder_trace>", "eval"), ns, {"__thunder_trace_collect__": lambda *a, **k: (a, k)}
    )
    return fn, args, kwargs


def to_device(fn, args, kwargs, device: str):
    """Inputs (and a module, copied) on ``device``; a clear error when CUDA is missing."""
    import torch

    from thunder.core.pytree import tree_map

    if device == "cpu":
        return fn, args, kwargs
    if not torch.cuda.is_available():
        raise RuntimeError(
            "--device cuda: no CUDA device is available here (torch.cuda.is_available() is False; "
            f"torch {torch.__version__}, built for CUDA {torch.version.cuda}). Run without --device "
            "to trace and time on the CPU."
        )

    def move(x):
        return x.to(device) if isinstance(x, (torch.Tensor, torch.nn.Module)) else x

    if isinstance(fn, torch.nn.Module):
        fn = copy.deepcopy(fn).to(device)
    return fn, tree_map(move, args), tree_map(move, kwargs)


def trace_call(src: str, ns: dict, opts: Options, notes: list[str] | None = None):
    """Jit, run, time and build the explorer for the call ``src``; raises on errors."""
    import thunder
    from explorer.measure.runner import measure
    from explorer.model.compilation import model_of
    from explorer.notebook.widget import Explorer

    notes = list(notes or [])
    fn, args, kwargs = evaluate_call(src, ns)
    fn, args, kwargs = to_device(fn, args, kwargs, opts.device)
    from explorer.notebook.pieces import is_program, trace_program_call

    if opts.thunderfx or is_program(fn):  # the pieces Dynamo made and the graph breaks between them
        return trace_program_call(fn, args, kwargs, opts, notes)
    jfn = thunder.jit(fn, executors=opts.executors)
    result = jfn(*args, **kwargs)
    model = model_of(jfn)
    try:
        measure(jfn, args, kwargs).attach(model)
    except Exception as e:  # timing is a bonus; say why it is missing
        notes.append(f"Times were not measured: {type(e).__name__}: {e}")
    ex = Explorer(model, view=opts.view, depth=opts.depth, notes=notes, source=jfn, modules=opts.modules)
    ex.result = result
    ex.inputs = (args, kwargs)  # for the what-if control
    return ex


def error_bundle(exc: BaseException, what: str) -> dict:
    """An error as HTML + text, with the frames of the user's code first."""
    frames = traceback.extract_tb(exc.__traceback__)
    import torch

    import thunder

    explorer_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # (explorer/notebook/magic.py)
    skip = tuple(os.path.dirname(m.__file__) for m in (torch, thunder)) + (explorer_dir,)
    user = [f for f in frames if not f.filename.startswith(skip) and "/IPython/" not in f.filename]
    short = "".join(traceback.format_list(user)) if user else ""
    full = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    msg = f"{type(exc).__name__}: {exc}"
    html = (
        f'<div class="thx"><div class="err"><b>%thunder_trace: {escape(what)} failed</b></div>'
        f"<pre>{escape(short)}{escape(msg)}</pre>"
        f"<details><summary>full traceback</summary><pre>{escape(full)}</pre></details></div>"
    )
    return {"text/html": html, "text/plain": f"%thunder_trace: {what} failed\n{short}{msg}"}


def _display_error(exc: BaseException, what: str) -> None:
    from IPython.display import display

    display(error_bundle(exc, what), raw=True)


def run_line(line: str, ns: dict, notes: list[str] | None = None):
    """The line magic's body: returns the explorer, or None after displaying the error."""
    global last_explorer
    try:
        opts, call = parse_line(line)
        if not call:
            raise MagicUsageError(USAGE)
    except MagicUsageError as e:
        _display_error(e, "reading the options")
        return None
    try:
        ex = trace_call(call, ns, opts, notes)
    except Exception as e:
        _display_error(e, call)
        return None
    last_explorer = ex
    return ex


def _calling_cell() -> int | None:
    """The ``In[n]`` number of the notebook cell that called the magic: the first frame up the
    stack whose code is a cell's (IPython calls a cell magic from the cell's compiled code)."""
    import sys

    f = sys._getframe(1)
    while f is not None:
        n = cell_number(f.f_code.co_filename)
        if n is not None:
            return n
        f = f.f_back
    return None


def run_cell(line: str, cell: str, ns: dict):
    """The cell magic's body: run all statements but the last, then trace the last (a call)."""
    global _cells
    _cells += 1
    filename = f"<thunder_trace cell {_cells}>"
    # registered so that source lines of functions defined in the cell can be shown
    linecache.cache[filename] = (len(cell), None, cell.splitlines(True), filename)
    count = _calling_cell()
    if count is not None:  # the views name its lines In[count] line k (k: below the magic's line)
        CELL_NUMBERS[filename] = count
    try:
        tree = ast.parse(cell, filename)
    except SyntaxError as e:
        _display_error(e, "parsing the cell")
        return None
    if (
        not tree.body
        or not isinstance(tree.body[-1], ast.Expr)
        or not isinstance(tree.body[-1].value, ast.Call)
    ):
        _display_error(
            MagicUsageError("the last line of a %%thunder_trace cell must be a call such as fn(x)"),
            "the cell",
        )
        return None
    try:
        exec(compile(ast.Module(tree.body[:-1], type_ignores=[]), filename, "exec"), ns)
    except Exception as e:
        _display_error(e, "running the cell")
        return None
    call = ast.get_source_segment(cell, tree.body[-1].value)
    return run_line(f"{line} {call}", ns)


def load_ipython_extension(ipython) -> None:
    def thunder_trace(line, cell=None):
        ns = ipython.user_ns
        ex = run_line(line, ns) if cell is None else run_cell(line, cell, ns)
        if ex is not None:
            from IPython.display import display

            display(ex)
        # returns nothing: the explorer is displayed once, and `Out` keeps no copy

    thunder_trace.__doc__ = __doc__
    ipython.register_magic_function(thunder_trace, "line_cell", "thunder_trace")


__all__ = ["Options", "evaluate_call", "load_ipython_extension", "parse_line", "run_cell", "run_line"]
