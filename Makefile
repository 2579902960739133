# Set-up and the main jobs. `make reproduce` and `make test` do everything on a
# fresh machine: venv, pinned CPU torch first (an unpinned torch pulls gigabytes
# of CUDA packages), then the project with its test extra.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  := torch==2.13.0
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

.PHONY: venv test test-fast lint reproduce headline bench docs docs-serve clean

venv: $(VENV)/.installed

# pip compiles every installed module to bytecode one file at a time; compileall does the same
# files on every core (--no-compile, then -j 0), which is quicker on a machine of several
# cores, for the same .pyc files. The bytecode is
# needed: where PYTHONDONTWRITEBYTECODE is set, as on this project's machines, nothing would
# ever write it and every `dsr` would compile torch again. A file
# that cannot compile under this Python (torch's tests of newer syntax) is left as pip
# leaves it; -qq keeps its error off the screen.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-compile $(TORCH)
	$(BIN)/pip install --quiet --no-compile -e '.[test]'
	$(BIN)/python -m compileall -qq -j 0 "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true
	touch $@

# the tiers (docs/contributing.md): test-fast is the inner loop (no servers, databases,
# browsers, OpenVINO exports or training: -m "not slow"); test is everything, what CI runs.
# Both run in parallel (pytest-xdist; -n auto is one worker per core for test-fast and one
# more than the cores for test, see tests/conftest.py; tests of one xdist_group share a
# worker) and list the slowest tests.
# PYTHONDONTWRITEBYTECODE= (empty: unset for Python): where the environment sets it (this project's
# machines do), every xdist worker rewrote every test module's asserts at collection and every
# `dsr` subprocess a test starts compiled dsr from source again; __pycache__ is git-ignored.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n auto --dist loadgroup --durations=20

test: venv
	$(PYTEST)

test-fast: venv
	$(PYTEST) -m "not slow"

# What people write, checked by machines (pyproject's [tool.ruff] and [tool.mypy]): CI
# (.ci/run), pre-commit (.pre-commit-config.yaml) and tests/test_lint.py all run this. It
# uses the tools already in $(BIN) (make venv installs them) and installs nothing.
# `ruff format --check` too (FORMAT=0 leaves it out, while a change is being shaped).
FORMAT ?= 1
lint:
	$(BIN)/ruff check --no-cache .
	@if [ "$(FORMAT)" = 1 ]; then echo "$(BIN)/ruff format --check --no-cache ."; $(BIN)/ruff format --check --no-cache .; fi
	$(BIN)/mypy

reproduce: venv
	$(BIN)/dsr reproduce sample --out out/sample

# the README's headline table: the public judged set cmu_dog_dev, built from CMU_DoG
# (CMU_DOG=DIR: a local copy; else $$DSR_HOME/data/cmu_dog, which `dsr data fetch cmu_dog` fills)
headline: venv
	$(BIN)/dsr reproduce cmu_dog_dev $(if $(CMU_DOG),--source $(CMU_DOG)) --out out/cmu_dog_dev

# every bench, then the docs' figure blocks from the result files they wrote (bench/results/)
bench: venv
	$(BIN)/python bench/run_all.py
	$(BIN)/python tools/docs_figures.py --write

# the documentation site (mkdocs.yml) into build/site, offline; --strict: a broken link, anchor
# or API reference fails it. docs-serve serves it on loopback while you edit.
DOCS_PORT ?= 8001
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict -a 127.0.0.1:$(DOCS_PORT)

clean:
	rm -rf $(VENV) out build *.egg-info
