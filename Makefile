# Two entry points: `make run` (set up + main job) and `make test` (set up + whole suite).
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
CONFIG  ?= config/config.yaml
# Snakemake looks for profiles/default next to the Snakefile; ours lives in workflow/profiles.
SMK     := PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake --workflow-profile workflow/profiles/default
# forwarded to snakemake, e.g. make run SMK_ARGS="fig2" or SMK_ARGS="--dry-run"
SMK_ARGS ?=

.PHONY: setup run test report bench clean

setup: $(STAMP)

# Reinstalls only when the requirement files change (idempotent).
$(STAMP): envs/requirements.txt envs/constraints.txt pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r envs/requirements.txt -c envs/constraints.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

run: setup
	$(SMK) --configfile $(CONFIG) $(SMK_ARGS)

test: setup
	$(BIN)/python -m pytest -q tests

report: setup
	$(SMK) --configfile $(CONFIG) --report results/report.html

bench: setup
	$(BIN)/python -m depthlab.bench

clean:
	rm -rf results/* .snakemake
