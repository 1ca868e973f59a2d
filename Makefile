# calibrank: `make report` reruns the study for a profile, `make test` checks everything.
# The graph of runs is workflow/Snakefile (one rule per step of calibrank.study.pipeline.grid.steps): `make report`
# sets up the .venv and runs it with snakemake; this file holds the setup and the user's goals.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PROFILE ?= laptop

# Paths below are relative to the checkout: `make -f <checkout>/Makefile` from another folder would
# write .venv, runs/ and reports/ there. Say so instead (make -C <checkout> runs it in place).
MAKEFILE_DIR := $(dir $(realpath $(lastword $(MAKEFILE_LIST))))
ifneq ($(realpath $(CURDIR))/,$(MAKEFILE_DIR))
$(error run make in the checkout: make -C $(patsubst %/,%,$(MAKEFILE_DIR)) $(or $(MAKECMDGOALS),help) (this folder, $(CURDIR), is not $(MAKEFILE_DIR)))
endif

# PROFILE, DATASET and REPORT_JOBS reach shell commands: each is checked on its raw text, before
# anything expands or runs it (a value such as `smoke $$(touch x)` is refused). A profile is a
# params/<name>.yaml whose name is made of letters, digits, _ and -.
strip_chars = $(if $(2),$(call strip_chars,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,$(words $(2)),$(2))),$(1))
only_chars = $(and $(filter 1,$(words $(1))),$(if $(call strip_chars,$(1),$(2)),,yes))
DIGITS := 0 1 2 3 4 5 6 7 8 9
NAME_CHARS := a b c d e f g h i j k l m n o p q r s t u v w x y z A B C D E F G H I J K L M N O P Q R S T U V W X Y Z $(DIGITS) _ -
PROFILES := $(foreach p,$(sort $(basename $(notdir $(wildcard params/*.yaml)))),$(if $(call only_chars,$(p),$(NAME_CHARS)),$(p)))
DATASETS := msdialog mantis udc_dstc8
ifeq ($(and $(call only_chars,$(value PROFILE),$(NAME_CHARS)),$(filter $(value PROFILE),$(PROFILES))),)
$(error PROFILE: expected one of $(PROFILES) (params/<name>.yaml), got '$(value PROFILE)')
endif
ifneq ($(value DATASET),)
ifeq ($(and $(call only_chars,$(value DATASET),$(NAME_CHARS)),$(filter $(value DATASET),$(DATASETS))),)
$(error DATASET: expected one of $(DATASETS), got '$(value DATASET)')
endif
endif

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.calibrank-installed
REPORT := reports/$(PROFILE)
NBVAL_DIR := build/nbval
# The notebooks under test run in a root of their own: a local `make test` never reuses the
# models, negatives or reports of `make report PROFILE=smoke`, and never overwrites them.
TEST_ROOT := build/test-root

# `make report` runs independent steps side by side: REPORT_JOBS of them, each with
# cores / REPORT_JOBS threads (two 1-thread trainings do 1.4x the pairs/s of one 2-thread training
# on 2 cores). Steps that run alone (01, 02, 07, and any step no other step of the run can run beside)
# take every core; 07 times the rankers, so nothing else runs beside it. The paper profile runs one
# step at a time (one GPU).
NPROC := $(shell nproc 2>/dev/null || echo 1)
ifeq ($(origin REPORT_JOBS),undefined)
REPORT_JOBS := $(if $(filter paper,$(PROFILE)),1,$(shell n=$(NPROC); echo $$(( n < 4 ? n : 4 ))))
else ifeq ($(and $(call only_chars,$(value REPORT_JOBS),$(DIGITS)),$(filter-out 0,$(value REPORT_JOBS))),)
$(error REPORT_JOBS: expected a whole number of at least 1, got '$(value REPORT_JOBS)')
endif
THREADS := $(shell t=$$(( $(NPROC) / $(REPORT_JOBS) )); echo $$(( t < 1 ? 1 : t )))
SNAKEMAKE = $(BIN)/snakemake -s workflow/Snakefile --workflow-profile workflow/profiles/local

export PIP_CONSTRAINT := $(CURDIR)/constraints.txt
export CALIBRANK_ROOT := $(CURDIR)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export TRANSFORMERS_VERBOSITY := error
export TOKENIZERS_PARALLELISM := false
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: help setup lock data report test unit lint ranges bench assess docs clean distclean

help: ## list the targets
	@echo "calibrank — calibration and uncertainty of neural rankers"
	@echo
	@echo "  make report [PROFILE=laptop|smoke|paper]  run every notebook of a profile into reports/PROFILE/index.html"
	@echo "  make test                                 unit tests + every notebook on the smoke profile (nbval), lint, ranges"
	@echo "  make lint                                 ruff (lint, format check) and mypy"
	@echo "  make ranges                               the core's tests at its lowest dependency versions and beside numpy<2"
	@echo "  make setup                                create .venv and install the package (run by the targets above)"
	@echo "  make data DATASET=msdialog|mantis|udc_dstc8  download a research dataset to data/raw/DATASET"
	@echo "  make bench                                speed figures into reports/bench/bench.json and bench.md"
	@echo "  make assess RUN=r.trec QRELS=q.txt [VALID_RUN=... VALID_QRELS=...] [SCORE=logit] [PRECISION=0.9] [NAME=...]"
	@echo "                                            calibrank assess into reports/assess/NAME (index.html, calibrator.json)"
	@echo "  make docs                                 the API page from the docstrings into build/docs (pdoc)"
	@echo "  make nb-STEP [PROFILE=...]                one notebook step (and the steps it reads), e.g. make nb-02_negatives"
	@echo "  make clean / distclean                    remove generated outputs / also .venv and caches"

setup: $(STAMP) ## create the virtual environment (idempotent)

# TORCH=system: a machine that brings its own (CUDA) torch keeps it: the venv sees the system's site
# packages and the lock's torch line is left out, so pip never replaces that torch with the CPU wheel.
TORCH ?= locked
ifeq ($(filter $(value TORCH),locked system),)
$(error TORCH: expected locked (the lock's CPU torch) or system (the torch this machine has), got '$(value TORCH)')
endif
VENV_FLAGS := $(if $(filter system,$(TORCH)),--system-site-packages)
ifeq ($(TORCH),system)
export PIP_CONSTRAINT := $(CURDIR)/build/constraints-system-torch.txt
endif

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV_FLAGS) $(VENV)
	@if [ "$(TORCH)" = system ]; then mkdir -p build && grep -v '^torch==' constraints.txt > build/constraints-system-torch.txt; \
	  $(BIN)/python -c 'import torch; print("setup: keeping torch", torch.__version__, "cuda" if torch.cuda.is_available() else "cpu")'; fi
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[study,dev]'
	@touch $@

# The lock: after changing a range in pyproject.toml, a fresh venv resolves the ranges and its exact
# versions become constraints.txt (torch kept at the CPU wheel's version).
lock: ## re-resolve pyproject.toml's ranges into constraints.txt
	rm -rf build/lock-venv && $(PYTHON) -m venv build/lock-venv
	PIP_CONSTRAINT= build/lock-venv/bin/python -m pip install --quiet 'torch==2.13.0' -e '.[study,dev]'
	{ awk '/^#/{print; next} {exit}' constraints.txt; \
	  build/lock-venv/bin/python -m pip freeze --exclude-editable | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'; } > build/constraints.new
	mv build/constraints.new constraints.txt

data: $(STAMP) ## download a research dataset: make data DATASET=msdialog
	@test -n "$(DATASET)" || { echo "usage: make data DATASET=msdialog|mantis|udc_dstc8"; exit 2; }
	$(BIN)/python -m calibrank.study.data.download $(DATASET)

# --- the report -------------------------------------------------------------------------

# The profile is checked first (its error alone, before anything runs). Then python -m calibrank.study.pipeline.launch
# runs snakemake holding the profile's run lock: while another run of the profile is alive it says so on one line
# (its pid) and stops, exit status 2, before writing anything; after a run that was killed it removes the lock
# snakemake left (snakemake --unlock when no writer is alive). Before the run (--estimate),
# python -m calibrank.study.pipeline.eta measures this machine's throughput for the profile and prints the
# estimated wall time; it writes reports/PROFILE/eta.json, which the progress line after each step
# and the report's setup section read. An estimate that cannot be made is said and the run goes on.
# The wall time counts from when make started (setup included).
RUN_START := $(shell date +%s)
LAUNCH = $(BIN)/python -m calibrank.study.pipeline.launch $(PROFILE) --started $(RUN_START)
report: $(STAMP) ## run the study for PROFILE (default laptop) into reports/PROFILE/index.html
	@$(BIN)/python -m calibrank.study.settings.config check $(PROFILE)
	$(LAUNCH) --estimate --jobs $(REPORT_JOBS) --cores $(NPROC) -- $(SNAKEMAKE) --cores $(NPROC) --config profile=$(PROFILE) threads=$(THREADS)
	@echo "report: $(REPORT)/index.html (wall time $$(( $$(date +%s) - $(RUN_START) )) s)"

# One notebook step and the steps it reads: make nb-02_negatives, make nb-03_train-sngp-chitchat PROFILE=smoke.
# The step name reaches snakemake's command line: it is checked like a profile's name. It comes before
# --config, which takes every word after it as a name=value pair.
$(foreach g,$(filter nb-%,$(MAKECMDGOALS)),$(if $(call only_chars,$(g),$(NAME_CHARS)),,$(error $(g): a step's name is made of letters, digits, _ and -)))
# A step that no other step of the run can run beside (here most often the step itself and the steps it reads, one
# after the other) takes every core (calibrank.study.pipeline.schedule.alone).
nb-%: $(STAMP)
	@$(BIN)/python -m calibrank.study.settings.config check $(PROFILE) >/dev/null
	$(LAUNCH) -- $(SNAKEMAKE) $(REPORT)/$*.html --cores $(NPROC) --config profile=$(PROFILE) threads=$(THREADS)

# --- checks -----------------------------------------------------------------------------

# Every notebook step of the smoke profile (python -m calibrank.study.pipeline.grid steps: name, notebook, papermill
# parameters; the training jobs, "-", are left to the 03 notebooks), prepared with its parameters
# and executed by nbval in the test root.
test: $(STAMP) ## unit tests and every notebook on the smoke profile under nbval
	@rm -rf $(NBVAL_DIR) $(TEST_ROOT) && mkdir -p $(NBVAL_DIR) $(TEST_ROOT) && cp -r params $(TEST_ROOT)/
	@$(BIN)/python -m calibrank.study.pipeline.grid steps smoke | while read -r step notebook params; do \
	  if [ "$$notebook" != - ]; then \
	    $(BIN)/papermill --prepare-only notebooks/$$notebook.ipynb $(NBVAL_DIR)/$$step.ipynb $$params --log-level WARNING >/dev/null; \
	  fi; \
	done
	CALIBRANK_ROOT=$(CURDIR)/$(TEST_ROOT) TQDM_DISABLE=1 $(BIN)/python -m pytest tests $(NBVAL_DIR) --nbval-lax --nbval-current-env -p no:cacheprovider
	$(MAKE) --no-print-directory lint ranges

# The habits that keep the code as it is: ruff's lint and format check over the library, the tests and the
# benchmarks, and mypy over the library (settings in pyproject.toml).
lint: $(STAMP) ## ruff (lint, format check) and mypy
	$(BIN)/ruff check lib tests benchmarks
	$(BIN)/ruff format --check lib tests benchmarks
	$(BIN)/mypy

# The core's version ranges, proven: its tests (marked core) in venvs holding the core alone, at the lowest
# versions pyproject.toml allows and beside numpy<2 (tests/ranges.py).
ranges: $(STAMP) ## the core's tests at its lowest dependency versions and beside numpy<2
	$(BIN)/python tests/ranges.py lowest
	$(BIN)/python tests/ranges.py numpy1

unit: $(STAMP) ## unit tests only
	$(BIN)/python -m pytest tests -p no:cacheprovider

bench: $(STAMP) ## speed benchmarks into reports/bench/
	$(BIN)/python -m benchmarks --out reports/bench

# The API page: pdoc renders the numpydoc docstrings of the public API into build/docs. pdoc says
# what it cannot resolve (an annotation, a reference) through Python's warnings: -W error fails on any.
# tests/test_docs.py builds the same modules and runs their examples.
DOC_MODULES := calibrank calibrank.assess.api calibrank.assess.deploy.calibrator calibrank.assess.deploy.fit calibrank.assess.deploy.certify calibrank.assess.deploy.watch \
  calibrank.assess.engine calibrank.assess.options calibrank.assess.command calibrank.assess.read.trec \
  calibrank.assess.read.score_tables calibrank.assess.read.load calibrank.assess.read.scored calibrank.metrics.calibration \
  calibrank.metrics.ranking

docs: $(STAMP) ## the API page from the docstrings into build/docs (pdoc)
	rm -rf build/docs
	$(BIN)/python -W error -m pdoc --docformat numpy -o build/docs $(DOC_MODULES)
	@echo "docs: build/docs/index.html"

# --- assess any ranker ------------------------------------------------------------------
# `make assess` is `calibrank assess` with the report under reports/assess/NAME. The values reach the
# shell inside single quotes: a value holding one is refused before any shell sees it. RUN and VALID_RUN
# may list several files (samples of one ranker), separated by spaces.
ASSESS_VARS := RUN QRELS VALID_RUN VALID_QRELS TABLE VALID_TABLE CHECKPOINT QUERIES VALID_QUERIES PASSES SCORE \
  RELEVANT_AT PRECISION RECALL CONFIDENCE COVERAGE RISK ALPHA MAP NAME SEED
$(foreach v,$(ASSESS_VARS),$(if $(findstring ',$(value $(v))),$(error $(v): a value holding a single quote is refused)))
ASSESS_NAME = $(or $(value NAME),$(basename $(notdir $(patsubst %.gz,%,$(firstword $(value RUN) $(value TABLE) $(patsubst %/,%,$(value CHECKPOINT)))))))
ASSESS_OPTS := QRELS:qrels VALID_QRELS:valid-qrels TABLE:table VALID_TABLE:valid-table CHECKPOINT:checkpoint \
  QUERIES:queries VALID_QUERIES:valid-queries PASSES:passes SCORE:score RELEVANT_AT:relevant-at PRECISION:precision \
  RECALL:recall CONFIDENCE:confidence COVERAGE:coverage RISK:risk ALPHA:alpha MAP:map SEED:seed

assess: $(STAMP) ## judge a ranker's scores: make assess RUN=run.trec QRELS=qrels.txt | TABLE=scores.csv | CHECKPOINT=dir QUERIES=q.jsonl
	@test -n '$(value RUN)$(value TABLE)$(value CHECKPOINT)' || { echo "usage: make assess RUN=run.trec QRELS=qrels.txt [VALID_RUN=... VALID_QRELS=...]"; \
	  echo "                   | TABLE=scores.csv [QRELS=...] [VALID_TABLE=...]"; \
	  echo "                   | CHECKPOINT=folder QUERIES=queries.jsonl [QRELS=...] [VALID_QUERIES=...] [PASSES=T]"; \
	  echo "       [SCORE=probability|logit|score] [PRECISION=0.9 | RECALL=...] [CONFIDENCE=0.9] [COVERAGE=0.8 | RISK=...]"; \
	  echo "       [ALPHA=0.1] [MAP=auto] [RELEVANT_AT=1] [SEED=0] [NAME=...]   (calibrank assess --help)"; exit 2; }
	$(BIN)/calibrank assess $(foreach r,$(value RUN),'$(r)') $(if $(value RUN),$(if $(value QRELS),'$(value QRELS)')) \
	  $(foreach r,$(value VALID_RUN),--valid-run '$(r)') \
	  $(foreach o,$(ASSESS_OPTS),$(if $(and $(value $(word 1,$(subst :, ,$(o)))),$(if $(filter QRELS,$(word 1,$(subst :, ,$(o)))),$(if $(value RUN),,x),x)),--$(word 2,$(subst :, ,$(o))) '$(value $(word 1,$(subst :, ,$(o))))')) \
	  --name '$(ASSESS_NAME)' --out 'reports/assess/$(ASSESS_NAME)'

clean: ## remove reports, runs and build outputs (keeps .venv, downloads and caches)
	rm -rf reports/*/ runs build .snakemake

distclean: clean ## also remove .venv and data caches (keeps data/raw downloads)
	rm -rf $(VENV) data/cache
