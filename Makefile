# Set-up and the main jobs. `make reproduce` and `make test` do everything on a
# fresh machine: venv, pinned CPU torch first (an unpinned torch pulls gigabytes
# of CUDA packages), then the project with its test extra.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  := torch==2.13.0
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

.PHONY: venv test lint reproduce bench clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

test: venv
	$(BIN)/python -m pytest -q

# What people write, checked by machines (pyproject's [tool.ruff] and [tool.mypy]): CI
# (.ci/run), pre-commit (.pre-commit-config.yaml) and tests/test_lint.py all run this. It
# uses the tools already in $(BIN) (make venv installs them) and installs nothing.
# FORMAT=1 adds `ruff format --check`; it becomes the default once the tree has been
# formatted in one commit (`ruff format .`).
FORMAT ?= 0
lint:
	$(BIN)/ruff check --no-cache .
	@if [ "$(FORMAT)" = 1 ]; then echo "$(BIN)/ruff format --check --no-cache ."; $(BIN)/ruff format --check --no-cache .; fi
	$(BIN)/mypy

reproduce: venv
	$(BIN)/dsr reproduce sample --out out/sample

bench: venv
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) out *.egg-info
