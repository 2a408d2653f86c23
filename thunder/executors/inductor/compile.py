"""Compiling one program with Inductor, in this process or in the helper process
(``worker.py``), for fixed sizes or for symbolic ones (``SymbolicMeta``: one compiled function
serves every size its guards admit): the settings Inductor's cache keys include, as the caller has them
(``compile_settings``) and applied in the helper (``apply_settings``), and the compilation
itself (``compile_program``), the same on both sides so that what the helper compiles is
what the caller then loads from Inductor's on-disk caches; and the length-prefixed pickles
they talk in (``read_message``, ``write_message``). The worker module itself is imported by
nobody: ``python -m`` runs it fresh."""

from __future__ import annotations

import dataclasses
import io
import pickle
import re
import struct
import sys

import torch

from thunder.core.symbolic import evaluate

try:  # one C++ call that checks many tensors' metadata (what Dynamo's tensor guards use)
    from torch._C._dynamo.guards import TensorGuards
except ImportError:  # pragma: no cover (a torch build without Dynamo's C++ guards)
    TensorGuards = None


# Whether CPU regions get Inductor's C++ wrapper (``torchcompileex.cpp_wrapper`` sets it; the
# helper process takes the caller's, with the settings below)
WRAPPER = {"cpp": True}


def compile_settings() -> dict:
    """The process-wide state Inductor's cache keys include (its configuration and
    AOTAutograd's, the thread count its C++ kernels are made for, deterministic algorithms,
    the default dtype, matmul precision): the helper process takes the caller's, so that
    what it compiles is what the caller then finds in the caches."""
    from torch._functorch import config as functorch_config
    from torch.utils import deterministic

    inductor_config = sys.modules.get("torch._inductor.config")  # (not imported: the defaults)
    return {
        "inductor": inductor_config.save_config() if inductor_config is not None else None,
        "functorch": functorch_config.save_config(),
        "threads": torch.get_num_threads(),
        "deterministic": (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
            deterministic.fill_uninitialized_memory,
        ),
        "default_dtype": torch.get_default_dtype(),
        "matmul": {name: getattr(torch.backends.cuda.matmul, name) for name in _MATMUL_SETTINGS},
        "cpp_wrapper": WRAPPER["cpp"],
    }


_MATMUL_SETTINGS = (
    "fp32_precision",
    "allow_fp16_reduced_precision_reduction",
    "allow_bf16_reduced_precision_reduction",
)


def apply_settings(settings: dict) -> None:
    """In the helper process: the caller's ``compile_settings()``."""
    from torch._functorch import config as functorch_config
    from torch.utils import deterministic

    if settings["inductor"] is not None:
        import torch._inductor.config as inductor_config

        inductor_config.load_config(settings["inductor"])
    functorch_config.load_config(settings["functorch"])
    torch.set_num_threads(settings["threads"])
    enabled, warn_only, fill = settings["deterministic"]
    torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
    deterministic.fill_uninitialized_memory = fill
    torch.set_default_dtype(settings["default_dtype"])
    WRAPPER["cpp"] = settings["cpp_wrapper"]
    for name, value in settings["matmul"].items():
        if getattr(torch.backends.cuda.matmul, name) != value:  # (setting one sets others)
            setattr(torch.backends.cuda.matmul, name, value)


@dataclasses.dataclass(frozen=True)
class SymbolicMeta:
    """The inputs of a region whose sizes are symbolic: ``inputs`` as a fixed-size ``meta`` has
    them (shape, strides, dtype, device, requires_grad), except that a size or a stride may be
    an expression over the symbols (``thunder.core.symbolic.Expr``) and that an int input is
    the name of its symbol (every symbol the tensors' sizes read is one); ``hints`` is each
    symbol's value on the call that asked for the compilation, as (name, value) pairs."""

    inputs: tuple
    hints: tuple

    def devices(self) -> list:
        return [m[3] for m in self.inputs if not isinstance(m, str)]


class Guarded:
    """Inductor's function for symbolic sizes and the sizes it holds for: ``accepts(args)``
    tests the guards Inductor's tracing and compilation put on the symbols (each symbol's
    range, a size it specialised, a divisibility a kernel relies on) at the call's values of
    the int inputs (at ``positions``); ``guards`` is their text."""

    __slots__ = ("fn", "positions", "check", "guards", "_last")

    def __init__(self, fn, positions: tuple, check, guards: str):
        self.fn = fn
        self.positions = positions
        self.check = check
        self.guards = guards
        self._last = None  # the values last accepted

    def accepts(self, args) -> bool:
        values = tuple(args[i] for i in self.positions)
        if values == self._last:
            return True
        if self.check is None or self.check(*values):
            self._last = values
            return True
        return False

    def __call__(self, *args):
        return self.fn(*args)


def compile_program(program, meta, grad: bool, cpp_wrapper: bool | None = None):
    """Inductor's function for ``program`` (a function of torch calls) on inputs of
    ``meta`` (shape, strides, dtype, device, requires_grad each; or a ``SymbolicMeta``) in grad
    mode ``grad``: traced by ``make_fx`` on fake tensors (nothing is computed; static shapes, or
    torch's symbolic ints made from ours), compiled by ``compile_fx``; with whether its wrapper
    is C++. For a ``SymbolicMeta`` the function is a ``Guarded``. The helper process runs this
    too, for the same result in the caches.

    On CPU the function Inductor writes around its kernels (allocating buffers, calling the
    matmuls and the C++ kernels, freeing them) is C++ too (``cpp_wrapper``): its Python form
    costs about 2% of the instructions of ``bench/training.py``'s GPT training step. Where
    Inductor cannot write a region's wrapper in C++, the region gets the Python one (and
    everywhere with ``WRAPPER["cpp"]`` off). ``cpp_wrapper`` True or False asks for that
    wrapper only (what the helper found works)."""
    if cpp_wrapper is None:
        devices = meta.devices() if isinstance(meta, SymbolicMeta) else [m[3] for m in meta]
        cpp_wrapper = WRAPPER["cpp"] and all(torch.device(device).type == "cpu" for device in devices)
        if cpp_wrapper:
            try:
                return _compile(program, meta, grad, cpp_wrapper=True), True
            except Exception:
                cpp_wrapper = False
    return _compile(program, meta, grad, cpp_wrapper=cpp_wrapper), cpp_wrapper


def _compile(program, meta, grad: bool, *, cpp_wrapper: bool):
    from torch._functorch import config as functorch_config
    from torch._guards import TracingContext, tracing
    from torch._inductor import config as inductor_config
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    symbolic = isinstance(meta, SymbolicMeta)
    # (no duck sizing: two sizes equal on this call are not the same symbol unless ours are)
    fake_mode = FakeTensorMode(shape_env=ShapeEnv(duck_shape=False))
    if symbolic:
        symbols = {name: _symbol(fake_mode.shape_env, name, hint) for name, hint in meta.hints}
        fakes = _symbolic_inputs(fake_mode, meta, symbols)
        with torch.no_grad():
            gm = make_fx(program, tracing_mode="symbolic")(*fakes)
    else:
        with fake_mode:
            fakes = [
                torch.empty_strided(shape, stride, dtype=dtype, device=device).requires_grad_(rg)
                for shape, stride, dtype, device, rg in meta
            ]
        with fake_mode, torch.no_grad():  # the graph is the forward; Inductor derives a backward
            gm = make_fx(program)(*fakes)
    _views_as_reshapes(gm)
    # Inductor's on-disk caches (its FX graph cache, AOTAutograd's cache) take a graph only
    # with the shape environment of a tracing context's fake mode; the grad mode of the call
    # decides whether it compiles a backward too, now rather than at the first backward (so
    # that AOTAutograd's cache holds both once this returns). The sizes and strides Inductor's
    # wrapper would assert on every call ``InductorRegion`` checks in one call instead.
    # The graph's order is kept (``reorder_for_locality`` would move each producer next to its
    # first user): ``inductor_order.matmuls_together`` chose it so that the work between extern
    # kernels (matmuls) comes in few stretches, each one C++ function.
    # A region none of whose inputs requires grad compiles as an inference graph, which it
    # gets straight (``_direct``) where AOTAutograd's wrapper around it has nothing to do; to see
    # that, AOTAutograd traces the graph again rather than loading it whole from its own cache
    # (Inductor's cache then gives the kernels).
    inference = not (grad and _any_requires_grad(meta))
    captured: list = []
    with (
        tracing(TracingContext(fake_mode)),
        torch.set_grad_enabled(grad),
        functorch_config.patch(force_non_lazy_backward_lowering=True, enable_autograd_cache=not inference),
        inductor_config.patch(
            size_asserts=TensorGuards is None, reorder_for_locality=False, cpp_wrapper=cpp_wrapper
        ),
    ):
        fn = compile_fx(gm, fakes, inner_compile=_capturing(captured) if inference else compile_fx_inner)
    if len(captured) == 1 and not any(True for _ in gm.parameters()) and not any(True for _ in gm.buffers()):
        fn = _direct(fn, captured[0])
    if not symbolic:
        return fn
    positions = tuple(i for i, m in enumerate(meta.inputs) if isinstance(m, str))
    sizes = [fakes[i] for i in positions]
    return Guarded(fn, positions, *_guards(fake_mode.shape_env, sizes, [meta.inputs[i] for i in positions]))


def _any_requires_grad(meta) -> bool:
    inputs = meta.inputs if isinstance(meta, SymbolicMeta) else meta
    return any(m[4] for m in inputs if not isinstance(m, str))


def _capturing(captured: list):
    """Inductor's compilation of the graphs AOTAutograd hands it, which appends to ``captured``
    the compiled inference graph AOTAutograd's wrapper does nothing around: no input it writes
    or restrides, no output that aliases an input or another output, no effect tokens, no random
    state of its own, no tensor subclass (what ``ViewAndMutationMeta`` says of the graph)."""
    from torch._functorch._aot_autograd.schemas import OutputType, SubclassCreationMeta
    from torch._guards import TracingContext
    from torch._inductor.compile_fx import compile_fx_inner
    from torch._inductor.output_code import CompiledFxGraph

    def inner(gm, example_inputs, **kwargs):
        out = compile_fx_inner(gm, example_inputs, **kwargs)
        meta = getattr(TracingContext.try_get(), "fw_metadata", None)
        if (
            kwargs.get("is_inference")
            and isinstance(out, CompiledFxGraph)
            and meta is not None
            and meta.num_mutated_inp_runtime_indices == 0
            and not any(i.mutates_data or i.mutates_metadata for i in meta.input_info)
            and all(o.output_type == OutputType.non_alias for o in meta.output_info)
            and meta.num_intermediate_bases == 0
            and not meta.tokens
            and not meta.is_rng_op_functionalized
            and not any(isinstance(m, SubclassCreationMeta) for m in meta.subclass_inp_meta)
        ):
            captured.append(out)
        return out

    return inner


def _direct(wrapped, graph):
    """The function of a compiled inference graph: its first call through AOTAutograd's
    wrapper (``wrapped``, which also ends Inductor's first-call bookkeeping), every later one
    straight into Inductor's code (its C++ entry on CPU: a few microseconds less per call),
    except under autocast (the wrapper turns it off around the kernels) or the profiler (the
    wrapper names the call there)."""
    profiler = torch.autograd.profiler
    any_autocast = torch._C._is_any_autocast_enabled
    state = [None]

    def run(*args):
        call = state[0]
        if call is None or any_autocast() or profiler._is_profiler_enabled:
            out = wrapped(*args)
            state[0] = graph.current_callable
            return out
        return call(list(args))

    run.wrapped, run.graph = wrapped, graph
    return run


def _symbol(shape_env, name: str, hint: int):
    """Torch's symbolic int for our symbol ``name`` (a dynamic size, at least 2 as ours)."""
    from torch._dynamo.source import ConstantSource
    from torch.fx.experimental.symbolic_shapes import DimDynamic

    source = ConstantSource(name)
    sym = shape_env.create_symbol(hint, source, dynamic_dim=DimDynamic.DYNAMIC)
    return shape_env.create_symintnode(sym, hint=hint, source=source)


def _symbolic_inputs(fake_mode, meta: SymbolicMeta, symbols: dict) -> list:
    """The fake inputs of ``meta``: tensors whose sizes and strides are torch's symbolic ints
    computed from ``symbols`` as our expressions say, and the symbols themselves."""
    fakes = []
    for m in meta.inputs:
        if isinstance(m, str):
            fakes.append(symbols[m])
            continue
        shape, stride, dtype, device, rg = m
        with fake_mode:
            fake = torch.empty_strided(
                [evaluate(d, symbols) for d in shape],
                [evaluate(d, symbols) for d in stride],
                dtype=dtype,
                device=device,
            )
        fakes.append(fake.requires_grad_(rg))
    return fakes


def _guards(shape_env, sizes: list, names: list[str]) -> tuple:
    """A function of the symbols' values that holds where the compiled code is valid (None
    when nothing is assumed), and its text (``s1 == s2 and 2 <= s0 and s0 <= 2048``): every
    guard the shape environment holds, written by torch over the int inputs ``sizes``, whose
    symbols are ``names``."""
    from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP

    code = shape_env.produce_guards_expression(sizes)
    if not code:
        return None, ""
    source = re.sub(r"L\['t(\d+)'\]", lambda m: names[int(m.group(1))], code)
    check = eval(f"lambda {', '.join(names)}: {source}", dict(SYMPY_INTERP))
    return check, source


def _views_as_reshapes(gm) -> None:
    """Each ``aten.view`` of the graph made a ``reshape``: ``make_fx`` chose a view where the
    layouts it traced allowed one (``torch.matmul`` of a transposed tensor, expanded), and
    AOTAutograd traces the graph again, with grad, where an op may lay out its result otherwise
    (then the view is impossible: "Cannot view a tensor with shape [2, 4, 8, 16] and strides
    (512, 16, 64, 1)"). A region is functional, so a copy where a view cannot be is the same
    value; where it can, reshape is that view."""
    view, reshape = torch.ops.aten.view.default, torch.ops.aten.reshape.default
    changed = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is view:
            node.target = reshape
            changed = True
    if changed:
        gm.recompile()


_HEADER = struct.Struct("<Q")


def read_message(stream: io.BufferedIOBase):
    """The next message, or None at the end of the stream."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    return pickle.loads(stream.read(size))


def write_message(stream: io.BufferedIOBase, message) -> None:
    data = pickle.dumps(message)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()
