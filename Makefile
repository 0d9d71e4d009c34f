# Two entry points: `make run` (set up + main job) and `make test` (set up + the suite; SLOW=1 adds the slow set).
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
# TORCH picks where torch comes from (README 'Install'): unset, pip's own index (on PyPI the Linux wheel carries CUDA:
# about 3 GB of nvidia-* packages; on a machine whose pip has a local wheel folder, that wheel); cpu, PyTorch's CPU
# index (a laptop, about 200 MB); cu126 / cu128, its CUDA index (a GPU machine).  Only torch and its own dependencies
# come from that index, at the pinned version; everything else as constrained.  Setting another TORCH reinstalls torch
# alone (unset keeps an installed torch of the pinned version, whichever build).
TORCH   ?=
TORCH_ROUTES := cpu cu126 cu128
ifneq ($(filter-out $(TORCH_ROUTES),$(TORCH)),)
$(error TORCH=$(TORCH): one of $(TORCH_ROUTES), or unset for pip's own index)
endif
TORCH_VERSION := $(shell sed -n 's/^torch==//p' envs/constraints.txt)
TORCH_INDEX := https://download.pytorch.org/whl/$(TORCH)
STAMP   := $(VENV)/.installed$(if $(TORCH),-$(TORCH))
CONFIG  ?= config/config.yaml
# the HTML report: into the config's results folder (results/<config name>/report.html) unless REPORT says otherwise
REPORT  ?=
# Snakemake looks for profiles/default next to the Snakefile; ours lives in workflow/profiles.
# VERBOSE=1: Snakemake's own terminal output instead of one line per finished job with an ETA (depthlab.progress);
# either way its full output is in <results>/logs/snakemake/.
VERBOSE ?=
# CONTINUE=1: run a config into a results folder that belongs to another config file with other values (depthlab.folder)
CONTINUE ?=
SMK     := PATH="$(CURDIR)/$(BIN):$$PATH" DEPTHLAB_VERBOSE="$(VERBOSE)" DEPTHLAB_CONTINUE="$(CONTINUE)" $(BIN)/snakemake --workflow-profile workflow/profiles/default
# Forwarded to snakemake *before* --configfile (which takes several values, so anything after it would be read
# as one more config file): targets and options, e.g. SMK_ARGS="mori_ueda_fig2" or SMK_ARGS="--dry-run".
SMK_ARGS ?=
# make test SLOW=1 also runs the slow set (the real one-node SLURM test, the report in headless Chromium, the local
# chaos test: root, apt-get, daemons); CI does.
SLOW ?=
PYTEST_ARGS ?=

.PHONY: setup run test test-slow test-chaos report bench plan paper-check clean help check-config format docs neutral

help: setup
	@echo "make run [CONFIG=config/smoke.yaml] [SMK_ARGS=\"<target> --dry-run\"] [VERBOSE=1]  build (default: config/config.yaml)"
	@echo "make test [SLOW=1] [TEST_WORKERS=2]   the suite on 2 workers (SLOW=1: then the slow set: SLURM, Chromium, chaos)"
	@echo "make report | plan | bench | clean"
	@$(BIN)/depthlab targets $(CONFIG)

# config/README.md's key reference, generated from the schemas (tests/test_config.py checks it is current)
docs: setup
	$(BIN)/python docs/config_reference.py

# a mistyped CONFIG, or one Snakemake itself cannot load (nested thousands deep: its RecursionError traceback, before
# the Snakefile runs): one line from depthlab's validator instead
check-config:
	@test -f "$(CONFIG)" || { echo "make: config file '$(CONFIG)' does not exist (CONFIG=...)" >&2; exit 2; }
	@$(BIN)/depthlab validate "$(CONFIG)" > /dev/null

setup: $(STAMP)

# Reinstalls only when the requirement files change (idempotent).
$(STAMP): envs/requirements.txt envs/constraints.txt pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(if $(TORCH),$(BIN)/python -m pip install --quiet --force-reinstall --no-deps "torch==$(TORCH_VERSION)" --index-url "$(TORCH_INDEX)")
	$(if $(TORCH),$(BIN)/python -m pip install --quiet "torch==$(TORCH_VERSION)" --index-url "$(TORCH_INDEX)" -c envs/constraints.txt)
	$(BIN)/python -m pip install --quiet -r envs/requirements.txt -c envs/constraints.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@$(BIN)/python -c "import torch; c = torch.version.cuda; print(f'make setup: torch {torch.__version__}, a', f'CUDA {c}' if c else 'CPU', 'build;', 'sees a GPU' if torch.cuda.is_available() else 'sees no GPU')"
	rm -f $(VENV)/.installed $(VENV)/.installed-*
	touch $(STAMP)

run: setup check-config
	$(SMK) $(SMK_ARGS) --configfile $(CONFIG)

# The fast suite on TEST_WORKERS pytest-xdist workers (they share one smoke run); then, with SLOW=1, the slow set on
# its own, one test at a time (root, daemons, fault timings: nothing else running beside it).
TEST_WORKERS ?= 2
test: setup
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) $(PYTEST_ARGS) tests
	$(if $(SLOW),$(BIN)/python -m pytest -q --run-slow -m slow $(PYTEST_ARGS) tests)

# The formatter and the linter's fixes, as tests/test_lint.py checks them.
format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test-slow: setup
	$(BIN)/python -m pytest -q --run-slow -m slow $(PYTEST_ARGS) tests

# the SLURM fault-injection test alone (scancel, requeue, a time limit and a killed submit host on the
# one-node SLURM; root, apt-get, about 15 minutes); it is part of the slow set, with the seeded local kills
test-chaos: setup
	$(BIN)/python -m pytest -q -s --run-slow -m chaos $(PYTEST_ARGS) tests

report: setup check-config
	$(SMK) $(SMK_ARGS) --configfile $(CONFIG) --report "$(or $(REPORT),$$($(BIN)/depthlab where $(CONFIG))/report.html)"

# What CONFIG costs before it runs: jobs, peak memory, core-hours per study and stage (depthlab plan).
plan: setup
	$(BIN)/depthlab plan $(CONFIG)

# The largest job of every stage of config/paper.yaml, full shapes, budgets capped: no crash, memory within the plan
# (depthlab paper-check). Into results/paper-check/; its table in paper-check.md.
paper-check: setup
	$(BIN)/depthlab paper-check config/paper.yaml

# the package's benchmarks, side by side; then one fractal job's step three ways (shipped, before, plain PyTorch)
# Did a change move a number?  The smoke config built at BASE and at the working tree, every store compared bit for
# bit and every claims row's verdict, effect, SE and z (depthlab neutral; exit 1 when anything differs).
BASE ?= HEAD
neutral: setup
	$(BIN)/depthlab neutral "$(BASE)" --config "$(or $(NEUTRAL_CONFIG),config/smoke.yaml)"

bench: setup
	$(BIN)/python benchmarks/bench.py
	$(BIN)/python benchmarks/fractal_step.py

clean:
	rm -rf results/* .snakemake
