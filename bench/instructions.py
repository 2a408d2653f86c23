"""Instructions per training step, counted by valgrind (callgrind): eager, thunder (torch
executor), torch.compile and thunder with the torch.compile executor, on the models of
``bench/training.py``. Unlike CPU time on a shared machine, instruction counts repeat to a
fraction of a percent, so a change of one percent in the per-step cost shows.

    python bench/instructions.py [--steps N] [--keep DIR] [--variants V,...] [--models SUBSTRING]

(``--variants thunder+tc --models GPT``: one variant of one model, minutes instead of tens
of minutes: torch.compile's own compilation runs under valgrind, thunder's in a helper.
``compile+cpp``, not counted unless named: ``torch.compile`` with Inductor's C++ wrapper,
as the torch.compile executor compiles its CPU regions, for the comparison with that choice
made on both sides.)

The script runs itself again under ``valgrind --tool=callgrind --instr-atstart=no``
(valgrind and ``callgrind_control`` must be on the PATH), with the CPU's vector code
limited to AVX2 (valgrind does not run AVX-512) and a fresh Inductor cache. There each model
is built and warmed up (Inductor's compilations finished and loaded, a few steps of each),
then for each variant the counting is switched on (``callgrind_control -i on``) around
``N`` steps and dumped; the outer process reads the dumps' totals and prints instructions
per step and the ratios (against eager, and thunder+torch.compile against torch.compile).
Compilation happens in the uncounted part (Inductor's helper process is not under valgrind).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

VARIANTS = ("eager", "thunder", "compile", "thunder+tc")
# on request: torch.compile with Inductor's C++ wrapper, which the torch.compile executor uses
# for its CPU regions (``inductor_compile.compile_program``): the same choice on both sides
EXTRA = ("compile+cpp",)
_CHILD = "_THUNDER_INSTRUCTIONS_CHILD"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3, help="counted steps per variant")
    parser.add_argument("--keep", help="a folder to keep callgrind's dumps in")
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help="which of " + ", ".join(VARIANTS + EXTRA)
    )
    parser.add_argument("--models", default="", help="only the models whose name contains this")
    opts = parser.parse_args()
    variants = [v for v in opts.variants.split(",") if v]
    unknown = set(variants) - set(VARIANTS + EXTRA)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}: choose among {', '.join(VARIANTS + EXTRA)}")
    if os.environ.get(_CHILD):
        count(opts.steps, variants, opts.models)
    else:
        run_under_valgrind(opts.steps, opts.keep, variants, opts.models)


def run_under_valgrind(steps: int, keep: str | None, variants: list[str], models: str) -> None:
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            sys.exit(f"bench/instructions.py needs {tool} on the PATH (apt-get install valgrind)")
    work = tempfile.mkdtemp(prefix="thunder-instructions-")
    out_dir = keep or os.path.join(work, "dumps")
    os.makedirs(out_dir, exist_ok=True)
    env = dict(os.environ)
    env.update(
        {
            _CHILD: "1",
            # valgrind runs up to AVX2: torch's, oneDNN's, MKL's and Inductor's code kept to it
            "ATEN_CPU_CAPABILITY": "avx2",
            "DNNL_MAX_CPU_ISA": "AVX2",
            "MKL_ENABLE_INSTRUCTIONS": "AVX2",
            "TORCHINDUCTOR_CPP_MARCH": "haswell",
            "TORCHINDUCTOR_CACHE_DIR": os.path.join(work, "inductor"),
        }
    )
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={os.path.join(out_dir, 'callgrind.out.%p')}",
        sys.executable,
        os.path.abspath(__file__),
        "--steps",
        str(steps),
        "--variants",
        ",".join(variants),
        "--models",
        models,
    ]
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"the counted run failed (exit code {proc.returncode}):\n{proc.stdout}")
    totals = read_dumps(out_dir)
    print(f"instructions per training step (millions), {steps} steps counted, callgrind")
    ratios = [
        (name, a, b)
        for name, a, b in (
            ("thunder/eager", "thunder", "eager"),
            ("tc/compile", "thunder+tc", "compile"),
            ("tc/compile+cpp", "thunder+tc", "compile+cpp"),
        )
        if a in variants and b in variants
    ]
    print(f"{'model':20} " + " ".join(f"{v:>11}" for v in variants) + "".join(f" {r[0]:>14}" for r in ratios))
    for line in proc.stdout.splitlines():
        if not line.startswith("case "):
            continue
        _, index, name = line.split(" ", 2)
        per_step = {v: totals[f"{index}-{v}"] / steps / 1e6 for v in variants}
        print(
            f"{name:20} "
            + " ".join(f"{per_step[v]:11.3f}" for v in variants)
            + "".join(f" {per_step[a] / per_step[b]:14.3f}" for _, a, b in ratios)
        )
    if keep is None:
        shutil.rmtree(work, ignore_errors=True)


def read_dumps(folder: str) -> dict[str, int]:
    """Each dump's instruction total by the name it was dumped under (``callgrind_control
    -d NAME``, which callgrind writes as the dump's trigger)."""
    totals = {}
    for path in glob.glob(os.path.join(folder, "callgrind.out.*")):
        with open(path) as f:
            text = f.read()
        trigger = re.search(r"^desc: Trigger: .*?(\d+-\S+)\s*$", text, re.M)
        summary = re.search(r"^totals: (\d+)", text, re.M)
        if trigger and summary:
            totals[trigger.group(1)] = int(summary.group(1))
    return totals


def callgrind(*args: str) -> None:
    subprocess.run(
        ["callgrind_control", *args, str(os.getpid())],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def count(steps: int, variants: list[str], models: str) -> None:
    """Under valgrind: build, warm up, then count ``steps`` steps of each variant."""
    import torch

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from training import cases, step_fn

    import thunder
    from thunder.executors.inductor import executor as torchcompileex

    torch.set_num_threads(1)
    torch.manual_seed(0)
    makers = {
        "eager": lambda model: model,
        "thunder": thunder.jit,
        "compile": torch.compile,
        "thunder+tc": lambda model: thunder.jit(model, executors=["torchcompile", "torch"]),
        "compile+cpp": lambda model: torch.compile(model, options={"cpp_wrapper": True}),
    }
    for index, (name, model, x, target, loss_fn, _) in enumerate(cases()):
        if models not in name:
            continue
        steps_of = {v: step_fn(model, makers[v](model), x, target, loss_fn) for v in variants}
        for step in steps_of.values():
            step()
        torchcompileex.wait()
        for step in steps_of.values():
            for _ in range(3):
                step()
        for variant in variants:
            callgrind("-z")
            callgrind("-i", "on")
            for _ in range(steps):
                steps_of[variant]()
            callgrind("-i", "off")
            callgrind(f"--dump={index}-{variant}")
        print(f"case {index} {name}", flush=True)


if __name__ == "__main__":
    main()
