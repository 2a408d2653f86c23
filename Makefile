# Two entry points: `make lab` (set up + JupyterLab on the tutorials) and `make test`
# (set up + the whole suite). Both work on a fresh Debian machine.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
APT_PKGS := graphviz chromium chromium-driver

.PHONY: lab demo test lint system venv clean check-nvfuser check-nvfuser-legacy check-torchcompile check-opinfo

$(STAMP): pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	# torch is pinned in the same command so pip takes the local CPU wheel.
	$(VPY) -m pip install -q torch==2.13.0 -e ".[dev]"
	touch $(STAMP)

venv: $(STAMP)

# Debian packages the tests and the graph view need; installed only when missing.
system:
	@missing=""; \
	command -v dot >/dev/null || missing="$$missing graphviz"; \
	command -v chromium >/dev/null || missing="$$missing chromium chromium-driver"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# The suite in as many processes as the machine has cores (2 on the project's machines:
# about 8.5 minutes with Inductor's cache empty, 5 with it filled; one process: 10.5 and 6).
test: system $(STAMP)
	$(VPY) -m pytest -q -n auto --dist worksteal

# Every op of the op database through the torch.compile executor (about 8 minutes; `make test`
# takes every tenth op, and every elementwise op with NaN and inf).
check-torchcompile: $(STAMP)
	THUNDER_EVERY_OP=1 $(VPY) -m pytest -q tests/executors/inductor/test_torchcompile.py -k op_database

# Every sample of every PyTorch OpInfo entry that has a thunder op (forward, gradients, in-place
# variants) against eager; `make test` takes the first two samples of each entry.
check-opinfo: $(STAMP)
	THUNDER_ALL_OPINFO=1 $(VPY) -m pytest -q tests/ops/test_opinfo.py

lint: $(STAMP)
	$(VPY) -m ruff check thunder explorer tests bench
	$(VPY) -m ruff format --check thunder explorer tests bench

lab: system $(STAMP)
	$(VPY) -m jupyterlab --ServerApp.root_dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root,)

demo: system $(STAMP)
	$(VPY) bench/demo.py report.html
	@echo "wrote report.html"

# nvFuser translation checks: define (never execute) the fusions of the op database and the
# models with real nvFuser, no GPU needed. nvFuser wheels exist for Python 3.10/3.12 and one
# torch each, so each check has its own Python 3.12 venv (~7 GB, ~2 min to build); not part
# of `make test`. The legacy check uses nvFuser 0.2.35's older `nvfuser` module.
PY312 ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12 /usr/bin/python3.12 /usr/local/bin/python3.12; do \
  $$p -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1 && { echo $$p; break; }; done)
NVF_PKGS := "torch==2.10.*" "nvfuser-cu128-torch210==0.2.36.*" numpy
NVF_LEGACY_PKGS := "torch==2.9.*" "nvfuser-cu128-torch29==0.2.35.*" numpy

.venv-nvfuser/.installed .venv-nvfuser-legacy/.installed:
	@test -n "$(PY312)" || { echo "check-nvfuser needs python3.12 (nvFuser wheels: Python 3.10/3.12)"; exit 1; }
	test -x $(@D)/bin/python || $(PY312) -m venv $(@D)
	$(@D)/bin/python -m pip install -q --upgrade pip
	$(@D)/bin/python -m pip install -q $(if $(findstring legacy,$(@D)),$(NVF_LEGACY_PKGS),$(NVF_PKGS))
	touch $@

check-nvfuser: .venv-nvfuser/.installed
	PYTHONPATH=$(CURDIR) .venv-nvfuser/bin/python tests/support/nvfuser_check.py --api nvfuser_direct

check-nvfuser-legacy: .venv-nvfuser-legacy/.installed
	PYTHONPATH=$(CURDIR) .venv-nvfuser-legacy/bin/python tests/support/nvfuser_check.py --api nvfuser

clean:
	rm -rf $(VENV) .venv-nvfuser .venv-nvfuser-legacy
