"""Define (never execute) nvFuser fusions of thunder traces, to prove the translation without a GPU.

Run by ``make check-nvfuser`` in its own Python 3.12 venv (torch 2.10 + nvFuser); not part of
``pytest`` (the file name keeps it out of collection). It traces on CPU tensors: a fusion
definition needs no device. Traced:

- every op of the op database (``tests/support/opdb/``), first sample, every dtype the op lists;
  and again, first dtype, with symbolic sizes (``thunder.jit(..., dynamic=True)``: ``f32[s0, 8]``,
  sizes in the ops' arguments become nvFuser scalar ops over the symbols, inputs of the fusion);
- the 4-layer MLP, the GPT-style block and the small GPT of ``tests/support/models.py``, forward, and
  their backward traces whenever thunder makes them (``model_cases``: nothing else to add
  for backward), and a long chain of ops; compiled with nvFuser's previewing executor, so
  that the backward recomputes what it would with nvFuser on CUDA (``transforms/remat.py``);
  the three models again with symbolic sizes.

Each final trace is flattened to prims; each run of consecutive prims nvFuser can take
becomes a fusion, defined four ways: with symbolic extents (nvFuser's values must have the
ranks and, in ``nvfuser_direct``, the dtypes thunder says), with static extents (nvFuser then
checks reshapes and broadcasts), from the printed repro (which must define the identical
fusion), and the whole repro must compile. Input descriptors are compared with nvFuser's own
``compute_tensor_descriptor``. Exits 1 on any definition nvFuser rejects or disagrees with.

    python tests/support/nvfuser_check.py [--api nvfuser_direct|nvfuser] [--op NAME ...] [-v]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import difflib
import os
import platform
import re
import sys
import time
import traceback

sys.path.insert(
    0, os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)  # tests/: support.opdb, support.models

import torch  # noqa: E402

import thunder  # noqa: E402
from thunder.core.proxies import NumberProxy, TensorProxy, proxies_in  # noqa: E402
from thunder.core.pytree import tree_flatten, tree_unflatten  # noqa: E402
from thunder.core.symbol import Symbol  # noqa: E402
from thunder.core.symbolic import hints  # noqa: E402
from thunder.core.tags import Tag  # noqa: E402
from thunder.executors.nvfuser import (  # noqa: E402
    contiguous_descriptor,
    define_fusion,
    fusion_definition_source,
    fusion_repro,
    load,
    unsupported_reason,
)
from thunder.executors.nvfuser import executor as nvfuserex  # noqa: E402
from thunder.executors.nvfuser.loader import new_definition  # noqa: E402
from thunder.ops import prims  # noqa: E402

PRIMS = frozenset(v for v in vars(prims).values() if isinstance(v, Symbol))


@dataclasses.dataclass
class Case:
    name: str
    trace: thunder.Trace


@dataclasses.dataclass
class Tally:
    fusions: int = 0
    prims: int = 0
    distinct: set = dataclasses.field(default_factory=set)
    refused: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    failures: list = dataclasses.field(default_factory=list)


def label(sym: Symbol) -> str:
    return f"{sym.module}.{sym.name}"


# -- traces -----------------------------------------------------------------------------------
def _split_tensors(args, kwargs):
    leaves, spec = tree_flatten((args, kwargs))
    pos = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]

    def call_with(fn):
        def call(*tensors):
            filled = list(leaves)
            for i, t in zip(pos, tensors):
                filled[i] = t
            a, k = tree_unflatten(filled, spec)
            return fn(*a, **k)

        return call

    return [leaves[i] for i in pos], call_with


def op_cases(names: set[str] | None, errors: list, *, dynamic: bool = False):
    from support.opdb import OPS, Maker

    for info in OPS:
        if info.cuda or (names and info.name not in names and info.id not in names):
            continue
        for dtype in info.dtypes[:1] if dynamic else info.dtypes:
            name = f"{info.id} {str(dtype).replace('torch.', '')}" + (" symbolic" if dynamic else "")
            try:
                sample = info.samples(Maker(dtype))[0]
                try:  # this venv's older torch may lack the op for the dtype (CPU bfloat16 trace)
                    info.op(*sample.args, **sample.kwargs)
                except (NotImplementedError, RuntimeError):
                    continue
                tensors, call_with = _split_tensors(sample.args, sample.kwargs)
                jfn = thunder.jit(call_with(info.op), dynamic=dynamic or None)
                jfn(*tensors)
                yield Case(name, thunder.last_traces(jfn)[-1])
            except Exception as e:
                errors.append((name, f"thunder could not trace it: {type(e).__name__}: {e}"))


def _chain(x):
    for _ in range(4000):
        x = x.sin()
    return x


def model_cases():
    """Forward traces, and backward traces whenever thunder makes them; and a chain long
    enough (12,000 definition calls in bfloat16) to pass the older module's default limit;
    the models with symbolic sizes too."""
    from support.models import GPT, MLP, Block

    torch.manual_seed(0)
    for name, model, inputs, dynamic in (
        ("MLP (4 layers)", MLP(), (torch.randn(8, 32),), None),
        ("GPT block", Block(), (torch.randn(2, 8, 32),), None),
        ("GPT (2 blocks)", GPT(), (torch.randint(0, 50, (2, 8)),), None),
        ("4000 sin in a row", _chain, (torch.randn(3, dtype=torch.bfloat16),), None),
        ("MLP (4 layers) symbolic", MLP(), (torch.randn(8, 32),), True),
        ("GPT block symbolic", Block(), (torch.randn(2, 8, 32),), True),
        ("GPT (2 blocks) symbolic", GPT(), (torch.randint(0, 50, (2, 8)),), True),
    ):
        jm = thunder.jit(model, executors=[nvfuserex.preview()], dynamic=dynamic)
        jm(*inputs)
        yield Case(f"{name} forward", thunder.last_traces(jm)[-1])
        backward = thunder.last_backward_traces(jm)
        if backward:
            yield Case(f"{name} backward", backward[-1])
        else:
            print(f"  ({name}: thunder made no backward trace; nothing to define for it)")


# -- regions ----------------------------------------------------------------------------------
def flatten(bsyms):
    """Prims, and the leaves that are not prims (an op with no decomposition, ``del``)."""
    for b in bsyms:
        if b.sym in PRIMS or not b.subsymbols:
            yield b
        else:
            yield from flatten(b.subsymbols)


def _proxies(x) -> list:
    """The proxies ``x`` reads: the symbols of its symbolic sizes too."""
    return [p for p in proxies_in(x) if isinstance(p, (TensorProxy, NumberProxy))]


def regions(trace, tally: Tally):
    """(members, inputs, outputs) for each run of consecutive prims nvFuser can take."""
    flat = [b for b in flatten(trace.bound_symbols) if Tag.DEL not in b.sym.tags]
    runs, run = [], []
    for b in flat:
        reason = unsupported_reason(b) if b.sym in PRIMS else "not a prim (no decomposition)"
        if reason is None:
            run.append(b)
            continue
        if b.sym in PRIMS or _proxies(b.output):
            tally.refused[(label(b.sym), reason)] += 1
        if run:
            runs.append(run)
        run = []
    if run:
        runs.append(run)
    position = {id(b): i for i, b in enumerate(flat)}
    for members in runs:
        made = {p.name for b in members for p in _proxies(b.output)}
        inputs, seen = [], set()
        for b in members:
            for p in _proxies((b.args, b.kwargs)):
                if p.name not in made and p.name not in seen:
                    seen.add(p.name)
                    inputs.append(p)
        last = position[id(members[-1])]
        used_after = {p.name for b in flat[last + 1 :] for p in _proxies((b.args, b.kwargs))}
        used_after |= {p.name for p in _proxies(trace.output)}
        outputs = [p for b in members for p in _proxies(b.output) if p.name in used_after]
        yield members, inputs, outputs


def check_region(module, api, members, inputs, outputs) -> None:
    fd = define_fusion(members, inputs, outputs, api=api)
    define_fusion(members, inputs, outputs, api=api, static_shapes=True)
    ns: dict = {}
    source = fusion_definition_source(members, inputs, outputs, api=api)
    exec(compile(source, "<definition>", "exec"), ns)
    again = new_definition(module, len(source.splitlines()))
    with again:
        ns["nvfuser_fusion"](again)
    if _canonical(again) != _canonical(fd):
        diff = difflib.unified_diff(_canonical(fd), _canonical(again), "defined", "repro", lineterm="")
        raise AssertionError("the printed repro defines another fusion:\n" + "\n".join(diff))
    compile(fusion_repro(members, inputs, outputs, api=api), "<repro>", "exec")
    for p in inputs:
        if isinstance(p, TensorProxy):
            shape = list(hints(tuple(p.meta_shape)))  # (symbolic sizes at the call's values)
            strides = list(torch.empty(shape, device="meta").stride())
            theirs = [list(x) for x in module.compute_tensor_descriptor(shape, strides)]
            ours = contiguous_descriptor(shape)
            if theirs[0] != list(ours.contiguity) or theirs[1] != list(range(len(shape) - 1, -1, -1)):
                raise AssertionError(
                    f"{p.name}{tuple(shape)}: nvFuser describes it as {theirs}, we as {ours}"
                )


def _canonical(fd) -> list[str]:
    """nvFuser's printout of ``fd``, with the tensor each ``fd.ops.size`` reads left out: of
    several tensors known to share an extent, its printer picks one differently from run to
    run, even for two definitions made by the same calls."""
    return [_SIZE.sub("fd.ops.size(...)", line) for line in str(fd).splitlines()]


_SIZE = re.compile(r"fd\.ops\.size\([^)]*\)")


def run_case(module, api, case: Case, tally: Tally, verbose: bool) -> tuple[int, int]:
    """Check every region of the case; (fusions defined, prims in them)."""
    fusions = prims_in = 0
    for members, inputs, outputs in regions(case.trace, tally):
        try:
            check_region(module, api, members, inputs, outputs)
        except Exception as e:
            try:
                repro = fusion_repro(members, inputs, outputs, api=api)
            except Exception:
                repro = "(no repro: " + traceback.format_exc(limit=2) + ")"
            tally.failures.append((case.name, _first_lines(e), repro))
            continue
        tally.fusions += 1
        tally.prims += len(members)
        tally.distinct.update(label(b.sym) for b in members)
        fusions, prims_in = fusions + 1, prims_in + len(members)
        if verbose:
            print(f"  ok  {case.name}: {len(members)} prims -> {len(inputs)} inputs, {len(outputs)} outputs")
    return fusions, prims_in


def _first_lines(e: Exception, n: int = 16) -> str:
    lines = [ln for ln in f"{type(e).__name__}: {e}".splitlines() if ln.strip()]
    return "\n".join(lines[:n])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", default="nvfuser_direct", choices=("nvfuser_direct", "nvfuser"))
    parser.add_argument("--op", action="append", help="only these op database entries")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)

    module = load(args.api)
    version = getattr(module, "__version__", "?")
    gpu = "a GPU is present" if torch.cuda.is_available() else "no GPU: definitions only"
    print(
        f"nvFuser {version} ({args.api}), torch {torch.__version__}, Python {platform.python_version()}; {gpu}"
    )

    start = time.perf_counter()
    tally, trace_errors = Tally(), []
    cases = list(op_cases(set(args.op) if args.op else None, trace_errors))
    print(f"op database: {len(cases)} traces (first sample of each op, every dtype it lists)")
    symbolic = list(op_cases(set(args.op) if args.op else None, trace_errors, dynamic=True))
    print(f"op database with symbolic sizes: {len(symbolic)} traces (first sample, first dtype)")
    cases += symbolic
    for case in cases:
        run_case(module, args.api, case, tally, args.verbose)
    if not args.op:
        for case in model_cases():
            cases.append(case)
            before = len(tally.failures)
            fusions, prims_in = run_case(module, args.api, case, tally, args.verbose)
            failed = len(tally.failures) - before
            print(f"  {case.name}: fusions defined {fusions}, prims in them {prims_in}, failed {failed}")

    print()
    print(f"traces: {len(cases)}")
    print(f"fusions defined: {tally.fusions} (each also with static extents and from its printed repro)")
    print(f"prims translated: {tally.prims} ({len(tally.distinct)} distinct prims)")
    print("not translatable (prim, times, why):")
    by_prim = collections.defaultdict(list)
    for (name, reason), count in tally.refused.items():
        by_prim[name].append((count, reason))
    for name in sorted(by_prim):
        for count, reason in sorted(by_prim[name], reverse=True):
            print(f"  {name:28} {count:5}  {reason}")
    for name, error in trace_errors:
        print(f"TRACE FAILED {name}: {error}")
    for name, error, repro in tally.failures:
        print(f"\nFAILED {name}:\n{error}\n--- repro ---\n{repro}")
    failed = len(tally.failures) + len(trace_errors)
    print(f"\n{tally.fusions} defined, {failed} failed ({time.perf_counter() - start:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
