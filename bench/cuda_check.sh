#!/usr/bin/env bash
# One prepared run for a machine with a GPU (python3.12 + torch already there, no network):
# the CUDA tests, then the overhead benchmark on the device. Writes to $OUT when set.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
python3 -m pytest -q -p no:cacheprovider tests/test_cuda.py tests/test_models.py 2>&1 | tee "$out/cuda_tests.log"
python3 bench/overhead.py --no-compile 2>&1 | tee "$out/overhead.log"
