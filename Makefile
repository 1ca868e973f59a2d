# calibrank: `make report` reruns the study for a profile, `make test` checks everything.
# Each notebook run is a file target, so unchanged steps are not rerun and `make -j` works.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PROFILE ?= laptop

# PROFILE and DATASET reach shell commands: each must be one of its known names, checked on its
# raw text (a value such as `smoke $$(touch x)` is refused before anything expands or runs it).
# A profile is a params/<name>.yaml whose name is letters, digits, _ and -.
NAME_CHARS := a b c d e f g h i j k l m n o p q r s t u v w x y z A B C D E F G H I J K L M N O P Q R S T U V W X Y Z 0 1 2 3 4 5 6 7 8 9 _ -
strip_chars = $(if $(2),$(call strip_chars,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,$(words $(2)),$(2))),$(1))
is_name = $(and $(filter 1,$(words $(1))),$(if $(call strip_chars,$(1),$(NAME_CHARS)),,yes))
# The profiles are the params files beside this Makefile, whichever folder make runs in (`make -f
# <checkout>/Makefile`): its folder is read before any other makefile is included.
MAKEFILE_DIR := $(dir $(realpath $(lastword $(MAKEFILE_LIST))))
# Paths below are relative to the checkout: `make -f <checkout>/Makefile` from another folder would
# write .venv, runs/ and reports/ there. Say so instead (make -C <checkout> runs it in place).
ifneq ($(realpath $(CURDIR))/,$(MAKEFILE_DIR))
$(error run make in the checkout: make -C $(patsubst %/,%,$(MAKEFILE_DIR)) $(or $(MAKECMDGOALS),help) (this folder, $(CURDIR), is not $(MAKEFILE_DIR)))
endif
PROFILES := $(foreach p,$(sort $(patsubst $(MAKEFILE_DIR)params/%.yaml,%,$(wildcard $(MAKEFILE_DIR)params/*.yaml))),$(if $(call is_name,$(p)),$(p)))
DATASETS := msdialog mantis udc_dstc8
ifeq ($(and $(call is_name,$(value PROFILE)),$(filter $(value PROFILE),$(PROFILES))),)
$(error PROFILE: expected one of $(PROFILES) (params/<name>.yaml), got '$(value PROFILE)')
endif
ifneq ($(value DATASET),)
ifeq ($(and $(call is_name,$(value DATASET)),$(filter $(value DATASET),$(DATASETS))),)
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

# Notebooks of the study, in order; each reads only what the ones before it wrote.
# 03_train runs once per ranker, training corpus and training seed of the profile
# (03_train-<ranker>-<corpus> for the main seed, 03_train-<ranker>-<corpus>-seed<N> for others).
NOTEBOOKS := 01_data 02_negatives
LIB := $(shell find lib -name '*.py' 2>/dev/null)
# Goals that read no profile; any other goal checks the profile first, so that its error is
# the first and only thing printed (not a notebook's traceback, nor a missing nb-03 target).
NO_PROFILE_GOALS := help setup data test unit bench clean distclean report assess
NEEDS_PROFILE := $(if $(MAKECMDGOALS),$(filter-out $(NO_PROFILE_GOALS),$(MAKECMDGOALS)))
ifneq ($(NEEDS_PROFILE),)
PROFILE_ERROR := $(shell test -x $(BIN)/python && $(BIN)/python -m calibrank.config check $(PROFILE) 2>&1 >/dev/null)
ifneq ($(PROFILE_ERROR),)
$(error $(PROFILE_ERROR))
endif
endif
PROFILE_QUERY = $(shell test -x $(BIN)/python && $(BIN)/python -m calibrank.config $(1) $(PROFILE) 2>/dev/null)
PROFILE_QUERY_GRID = $(shell test -x $(BIN)/python && $(BIN)/python -m calibrank.grid $(1) $(PROFILE) 2>/dev/null)
TRAIN_RUNS := $(call PROFILE_QUERY,train-runs)
# The params files the profile reads (itself and the profiles it extends).
PARAMS := $(or $(call PROFILE_QUERY,sources),params/$(PROFILE).yaml)
TRAIN_CORPORA := $(call PROFILE_QUERY,train-corpora)
ANALYSES := 04_calibration 05_risk_aware 06_nota 08_beyond 07_efficiency
STEPS := $(NOTEBOOKS) $(addprefix 03_train-,$(TRAIN_RUNS)) $(ANALYSES)

# `make report` runs independent notebooks side by side: JOBS of them, each with
# cores / JOBS threads (two 1-thread trainings do 1.4x the pairs/s of one 2-thread training
# on 2 cores). Steps that run alone (01, 02, 07) use every core; 07 times the rankers, so
# nothing else runs beside it. The paper profile runs one job at a time (one GPU).
NPROC := $(shell nproc 2>/dev/null || echo 1)
REPORT_JOBS ?= $(if $(filter paper,$(PROFILE)),1,$(shell n=$(NPROC); echo $$(( n < 4 ? n : 4 ))))
JOBS ?= 1
THREADS := $(shell n=$(NPROC); j=$(JOBS); t=$$(( n / j )); echo $$(( t < 1 ? 1 : t )))

export PIP_CONSTRAINT := $(CURDIR)/constraints.txt
export CALIBRANK_ROOT := $(CURDIR)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export TRANSFORMERS_VERBOSITY := error
export TOKENIZERS_PARALLELISM := false
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: help setup data report index test unit bench assess clean distclean check-profile $(addprefix nb-,$(STEPS))

help: ## list the targets
	@echo "calibrank — calibration and uncertainty of neural rankers"
	@echo
	@echo "  make report [PROFILE=laptop|smoke|paper]  run every notebook of a profile into reports/PROFILE/index.html"
	@echo "  make test                                 unit tests + every notebook on the smoke profile (nbval)"
	@echo "  make setup                                create .venv and install the package (run by the targets above)"
	@echo "  make data DATASET=msdialog|mantis|udc_dstc8  download a research dataset to data/raw/DATASET"
	@echo "  make bench                                speed figures into reports/bench/bench.json and bench.md"
	@echo "  make assess RUN=r.trec QRELS=q.txt [VALID_RUN=... VALID_QRELS=...] [SCORE=logit] [RELEVANT_AT=1] [NAME=...]"
	@echo "                                            judge any ranker's run into reports/assess/NAME/index.html"
	@echo "  make nb-NAME [PROFILE=...]                one notebook (and the ones it needs), e.g. make nb-02_negatives"
	@echo "  make clean / distclean                    remove generated outputs / also .venv and caches"

setup: $(STAMP) ## create the virtual environment (idempotent)

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

data: $(STAMP) ## download a research dataset: make data DATASET=msdialog
	@test -n "$(DATASET)" || { echo "usage: make data DATASET=msdialog|mantis|udc_dstc8"; exit 2; }
	$(BIN)/python -m calibrank.data.download $(DATASET)

# --- the report -------------------------------------------------------------------------

# The profile is checked before any notebook starts (its error alone, not a notebook traceback).
check-profile: $(STAMP)
	@$(BIN)/python -m calibrank.config check $(PROFILE) >/dev/null

# papermill writes a temporary notebook that is renamed only when every cell ran. Its name
# holds the writing shell's pid and host (as calibrank.runs names temporary files), so two
# makes never write one file, and the sweep before each notebook removes only the leftovers
# of runs that died (never a live one's).
RUN_START := $(shell date +%s)
OWNER = pid$$$$@$$(uname -n | tr -cd 'A-Za-z0-9-')
SWEEP = $(BIN)/python -m calibrank.runs sweep --started $(RUN_START) $(REPORT)
SOLO := 01_data 02_negatives 07_efficiency
# After each step: one line with the time since `make report` started, the step's own time and an
# estimate of what is left (python -m calibrank.eta progress; it never fails the step). Each
# recipe line that calls it sets `start` first.
ETA_PROGRESS = $(BIN)/python -m calibrank.eta progress $(PROFILE) $(1) --seconds $$(( $$(date +%s) - start )) || true
$(REPORT)/%.ipynb: notebooks/%.ipynb $(PARAMS) $(LIB) $(STAMP) | check-profile
	@mkdir -p $(REPORT)
	@echo "== $* ($(PROFILE))"
	@$(SWEEP)
	start=$$(date +%s); tmp=$(REPORT)/.tmp-$*.$(OWNER).ipynb; \
	OMP_NUM_THREADS=$(if $(filter $*,$(SOLO)),$(NPROC),$(THREADS)) TQDM_DISABLE=1 \
	  $(BIN)/papermill $< "$$tmp" -p profile $(PROFILE) --cwd notebooks --log-output --no-progress-bar; \
	mv "$$tmp" $@; \
	$(call ETA_PROGRESS,$*)

# One notebook, many runs: the stem names the ranker, the training corpus and the seed.
$(REPORT)/03_train-%.ipynb: notebooks/03_train.ipynb $(REPORT)/02_negatives.ipynb $(PARAMS) $(LIB) $(STAMP) | check-profile
	@echo "== 03_train $* ($(PROFILE))"
	@$(SWEEP)
	start=$$(date +%s); tmp=$(REPORT)/.tmp-03_train-$*.$(OWNER).ipynb; \
	OMP_NUM_THREADS=$(THREADS) TQDM_DISABLE=1 $(BIN)/papermill $< "$$tmp" -p profile $(PROFILE) \
	  $$($(BIN)/python -m calibrank.config run-params $(PROFILE) $*) --cwd notebooks --log-output --no-progress-bar; \
	mv "$$tmp" $@; \
	$(call ETA_PROGRESS,03_train-$*)

# Each 03 run's Predictions files (python -m calibrank.runs predictions) are prerequisites of
# its notebook with an empty rule: one that is deleted counts as changed, so the run (and
# every analysis after it) is made again. The list is cached in a generated makefile, made
# again when the profile or the library changes.
PREDICTIONS_MK := build/make/predictions-$(PROFILE).mk
ifneq ($(NEEDS_PROFILE),)
-include $(PREDICTIONS_MK)
endif
$(PREDICTIONS_MK): $(PARAMS) $(LIB) $(STAMP)
	@mkdir -p $(@D)
	@$(BIN)/python -m calibrank.runs predictions $(PROFILE) \
	  | awk '{ printf "PREDICTIONS_%s :=", $$1; for (i = 2; i <= NF; i++) printf " %s", $$i; print "" }' > $@.tmp-$$$$ \
	  && mv $@.tmp-$$$$ $@
$(foreach run,$(TRAIN_RUNS),$(eval $(REPORT)/03_train-$(run).ipynb: $(PREDICTIONS_$(run))))
$(sort $(foreach run,$(TRAIN_RUNS),$(PREDICTIONS_$(run)))):

# Runs that load a model another run trains (MC Dropout, temperature scaling and ensemble member
# 0 reuse bert's, as calibrank.registry says) wait for that run, so `make -j` never trains a
# model twice: RUN=OTHER pairs from python -m calibrank.grid shared.
SHARED_RUNS := $(call PROFILE_QUERY_GRID,shared)
$(foreach tok,$(SHARED_RUNS),$(eval $(REPORT)/03_train-$(firstword $(subst =, ,$(tok))).ipynb: $(REPORT)/03_train-$(lastword $(subst =, ,$(tok))).ipynb))

# Ensemble members after member 0 train as targets of their own (python -m calibrank.grid
# train; its marker runs/<profile>/grid/<model>.json is the target), so that they run side by
# side with the other notebooks instead of one after the other inside the ensemble's run.
comma := ,
GRID := runs/$(PROFILE)/grid
ENSEMBLE_MEMBERS := $(if $(filter ensemble-%,$(TRAIN_RUNS)),$(shell test -x $(BIN)/python && $(BIN)/python -m calibrank.grid members $(PROFILE) 2>/dev/null))
$(foreach tok,$(ENSEMBLE_MEMBERS),$(eval $(REPORT)/03_train-$(firstword $(subst =, ,$(tok))).ipynb: $(patsubst %,$(GRID)/%.json,$(subst $(comma), ,$(lastword $(subst =, ,$(tok)))))))
MEMBER_ARGS = $(word 1,$(subst -, ,$(1))) --seed $(patsubst seed%,%,$(word 2,$(subst -, ,$(1)))) --member $(patsubst member%,%,$(word 3,$(subst -, ,$(1))))
$(GRID)/ensemble-%.json: $(REPORT)/02_negatives.ipynb $(PARAMS) $(LIB) $(STAMP) | check-profile
	@echo "== ensemble member $* ($(PROFILE))"
	start=$$(date +%s); \
	OMP_NUM_THREADS=$(THREADS) TQDM_DISABLE=1 $(BIN)/python -m calibrank.grid train $(PROFILE) ensemble $(call MEMBER_ARGS,$*); \
	$(call ETA_PROGRESS,ensemble-$*)

$(REPORT)/%.html: $(REPORT)/%.ipynb
	tmp=.tmp-$*.$(OWNER); \
	$(BIN)/jupyter nbconvert --log-level WARN --to html $< --output "$$tmp"; \
	mv "$(REPORT)/$$tmp.html" $@

# Data flow between notebooks (each reads files the previous one wrote).
$(REPORT)/02_negatives.ipynb: $(REPORT)/01_data.ipynb
# The analyses read the Predictions of every 03_train run of the profile.
$(addprefix $(REPORT)/,$(addsuffix .ipynb,$(ANALYSES))): $(foreach r,$(TRAIN_RUNS),$(REPORT)/03_train-$(r).ipynb)
# 07 times the rankers: it waits for every other notebook, so nothing runs beside it.
$(REPORT)/07_efficiency.ipynb: | $(foreach nb,$(filter-out 07_efficiency,$(STEPS)),$(REPORT)/$(nb).ipynb)

$(REPORT)/index.html: $(foreach nb,$(STEPS),$(REPORT)/$(nb).html)
	start=$$(date +%s); $(BIN)/python -m calibrank.report $(PROFILE); \
	$(call ETA_PROGRESS,index)

$(addprefix nb-,$(STEPS)): nb-%: $(REPORT)/%.html

index: $(REPORT)/index.html

# Setup first, in its own make, so that the run list above is read with the package installed.
# Before the run, python -m calibrank.eta measures this machine's throughput for the profile (about
# 10-20 s), asks `make -n` which steps are pending and prints the estimated wall time; it writes
# reports/PROFILE/eta.json, which the progress lines and the report's setup section read. An
# estimate that cannot be made is said and the run goes on.
report: ## run the study for PROFILE (default laptop) into reports/PROFILE/index.html
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory setup && \
	$(BIN)/python -m calibrank.config check $(PROFILE) && \
	{ $(BIN)/python -m calibrank.eta $(PROFILE) --jobs $(REPORT_JOBS) --cores $(NPROC) --started $$start \
	    --make "$(MAKE)" || true; } && \
	CALIBRANK_RUN_START=$$start $(MAKE) --no-print-directory -j$(REPORT_JOBS) index PROFILE=$(PROFILE) JOBS=$(REPORT_JOBS) && \
	echo "report: $(REPORT)/index.html (wall time $$(( $$(date +%s) - start )) s)"

# --- checks -----------------------------------------------------------------------------

test: $(STAMP) ## unit tests and every notebook on the smoke profile under nbval
	@rm -rf $(NBVAL_DIR) $(TEST_ROOT) && mkdir -p $(NBVAL_DIR) $(TEST_ROOT) && cp -r params $(TEST_ROOT)/
	@for nb in $(NOTEBOOKS); do \
	  $(BIN)/papermill --prepare-only notebooks/$$nb.ipynb $(NBVAL_DIR)/$$nb.ipynb -p profile smoke --log-level WARNING >/dev/null; \
	done
	@for run in $$($(BIN)/python -m calibrank.config train-runs smoke); do \
	  $(BIN)/papermill --prepare-only notebooks/03_train.ipynb $(NBVAL_DIR)/03_train-$$run.ipynb -p profile smoke \
	    $$($(BIN)/python -m calibrank.config run-params smoke $$run) --log-level WARNING >/dev/null; \
	done
	@for nb in $(ANALYSES); do \
	  $(BIN)/papermill --prepare-only notebooks/$$nb.ipynb $(NBVAL_DIR)/$$nb.ipynb -p profile smoke --log-level WARNING >/dev/null; \
	done
	CALIBRANK_ROOT=$(CURDIR)/$(TEST_ROOT) TQDM_DISABLE=1 $(BIN)/python -m pytest tests $(NBVAL_DIR) --nbval-lax --nbval-current-env -p no:cacheprovider

unit: $(STAMP) ## unit tests only
	$(BIN)/python -m pytest tests -p no:cacheprovider

bench: $(STAMP) ## speed benchmarks into reports/bench/
	$(BIN)/python -m benchmarks --out reports/bench

# --- assess any ranker ------------------------------------------------------------------
# The values reach the shell inside single quotes: a value holding one is refused before any shell
# sees it. RUN and VALID_RUN may list several files (samples of one ranker), separated by spaces.
ASSESS_VARS := RUN QRELS VALID_RUN VALID_QRELS TABLE VALID_TABLE CHECKPOINT QUERIES VALID_QUERIES PASSES SCORE RELEVANT_AT NAME SEED
$(foreach v,$(ASSESS_VARS),$(if $(findstring ',$(value $(v))),$(error $(v): a value holding a single quote is refused)))

assess: $(STAMP) ## judge a ranker's scores: make assess RUN=run.trec QRELS=qrels.txt | TABLE=scores.csv | CHECKPOINT=dir QUERIES=q.jsonl
	@test -n '$(value RUN)$(value TABLE)$(value CHECKPOINT)' || { echo "usage: make assess RUN=run.trec QRELS=qrels.txt [VALID_RUN=... VALID_QRELS=...]"; \
	  echo "                   | TABLE=scores.csv [QRELS=...] [VALID_TABLE=...]"; \
	  echo "                   | CHECKPOINT=folder QUERIES=queries.jsonl [QRELS=...] [VALID_QUERIES=...] [PASSES=T]"; \
	  echo "       [SCORE=probability|logit|score] [RELEVANT_AT=1] [SEED=0] [NAME=...]"; exit 2; }
	$(BIN)/python -m calibrank.assess $(foreach r,$(value RUN),--run '$(r)') $(if $(value QRELS),--qrels '$(value QRELS)') \
	  $(foreach r,$(value VALID_RUN),--valid-run '$(r)') $(if $(value VALID_QRELS),--valid-qrels '$(value VALID_QRELS)') \
	  $(if $(value TABLE),--table '$(value TABLE)') $(if $(value VALID_TABLE),--valid-table '$(value VALID_TABLE)') \
	  $(if $(value CHECKPOINT),--checkpoint '$(value CHECKPOINT)') $(if $(value QUERIES),--queries '$(value QUERIES)') \
	  $(if $(value VALID_QUERIES),--valid-queries '$(value VALID_QUERIES)') $(if $(value PASSES),--passes '$(value PASSES)') \
	  $(if $(value SCORE),--score '$(value SCORE)') $(if $(value RELEVANT_AT),--relevant-at '$(value RELEVANT_AT)') \
	  $(if $(value SEED),--seed '$(value SEED)') $(if $(value NAME),--name '$(value NAME)')

clean: ## remove reports, runs and build outputs (keeps .venv, downloads and caches)
	rm -rf reports/*/ runs build

distclean: clean ## also remove .venv and data caches (keeps data/raw downloads)
	rm -rf $(VENV) data/cache
