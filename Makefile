# Two entry points: `make lab` (set up + JupyterLab on the tutorials) and `make test`
# (set up + the whole suite). Both work on a fresh Debian machine.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
APT_PKGS := graphviz chromium chromium-driver

.PHONY: lab demo test lint system venv clean

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

test: system $(STAMP)
	$(VPY) -m pytest -q

lint: $(STAMP)
	$(VPY) -m ruff check thunder explorer tests bench
	$(VPY) -m ruff format --check thunder explorer tests bench

lab: system $(STAMP)
	$(VPY) -m jupyterlab --ServerApp.root_dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root,)

demo: system $(STAMP)
	$(VPY) bench/demo.py report.html
	@echo "wrote report.html"

clean:
	rm -rf $(VENV)
