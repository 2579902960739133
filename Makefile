# Set-up and the main jobs. `make reproduce` and `make test` do everything on a
# fresh machine: venv, pinned CPU torch first (an unpinned torch pulls gigabytes
# of CUDA packages), then the project with its test extra.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  := torch==2.13.0
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

.PHONY: venv test reproduce headline bench clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

test: venv
	$(BIN)/python -m pytest -q

reproduce: venv
	$(BIN)/dsr reproduce sample --out out/sample

# the README's headline table: the public judged set cmu_dog_dev, built from CMU_DoG
# (CMU_DOG=DIR: a local copy; else $$DSR_HOME/data/cmu_dog, which `dsr data fetch cmu_dog` fills)
headline: venv
	$(BIN)/dsr reproduce cmu_dog_dev $(if $(CMU_DOG),--source $(CMU_DOG)) --out out/cmu_dog_dev

bench: venv
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) out *.egg-info
