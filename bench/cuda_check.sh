#!/usr/bin/env bash
# One prepared run for a machine with a GPU (python3 + torch + Triton already there, nvFuser
# maybe, no network): the CUDA tests (nvFuser regions executed when nvFuser loads, torch.compile
# regions on the device), then, measured in one run, the speedups against eager of the
# torch.compile executor (and of nvFuser if it loads) on a GELU MLP, layer norm, softmax and the
# GPT-style block, forward and forward+backward, the overhead benchmark on the device, the
# CUDA-marked explorer and subclass tests, and notebook 06 run on the device.
# Each step has its own time limit so that one that hangs leaves the others their turn.
# Writes its logs to $OUT when set.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
$py - <<'EOF' 2>&1 | tee "$out/cuda_env.log"
import torch
print("torch", torch.__version__, "cuda", torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
from thunder.executors.nvfuser.executor import executor
print("nvfuser:", executor.unavailable_reason() or "available")
EOF
timeout 150 $py -m pytest -q -p no:cacheprovider -p no:logging -rs tests/runtime/test_cuda.py tests/models/test_models.py \
  2>&1 | tee "$out/cuda_tests.log"
timeout 240 $py -m pytest -q -p no:cacheprovider -p no:logging -rs -m cuda \
  tests/executors/nvfuser/test_nvfuser_fusion.py tests/executors/nvfuser/test_nvfuser_translate.py \
  tests/executors/inductor/test_torchcompile.py \
  2>&1 | tee "$out/cuda_fusion_tests.log"
timeout 240 $py bench/fusion.py --device cuda --number 20 --repeat 10 \
  --programs "GELU MLP" "layer norm" "softmax" "GPT block" 2>&1 | grep -v '^DEBUG' | tee "$out/fusion_cuda.log"
timeout 60 $py bench/overhead.py --no-compile 2>&1 | tee "$out/overhead.log"
timeout 300 $py -m pytest -q -p no:cacheprovider -p no:logging -rs -m cuda tests/explorer \
  tests/frontend/subclasses/test_subclasses.py tests/frontend/distributed/test_collectives.py \
  tests/frontend/distributed/test_ddp.py tests/frontend/distributed/test_fsdp.py \
  2>&1 | tee "$out/cuda_explorer_tests.log"
# notebook 06 on the device (needs nbclient and ipykernel; its outputs say which device ran it)
timeout 180 $py - <<'PYEOF' 2>&1 | tee "$out/notebook06.log"
import sys
sys.path.insert(0, "tests")
from pathlib import Path
from support.notebooks import notebook_errors, run_notebook
nb = run_notebook(Path("notebooks/06_fusion_and_cuda.ipynb"), timeout=170)
print("errors:", notebook_errors(nb))
for c in nb.cells:
    for o in c.get("outputs", []):
        if o.get("output_type") == "stream":
            print(o["text"][:1500])
PYEOF
