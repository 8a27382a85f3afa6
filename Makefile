# citegate — `make help` lists the targets. Every target bootstraps .venv from pyproject.toml first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export PYTHONHASHSEED := 0

.DEFAULT_GOAL := help
.PHONY: help venv run test lint format bench lab doctor clean

help: ## List the targets with what they do
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP) ## Create/refresh the project virtualenv (pinned versions from pyproject.toml)

run: $(STAMP) ## The main job on embedded defaults: ingest the demo corpora, then run every experiment
	$(BIN)/citegate ingest --corpus gita xquad
	$(BIN)/citegate doctor

test: $(STAMP) lint ## Lint, then every test (unit, real PostgreSQL, notebooks)
	$(BIN)/pytest -q

lint: $(STAMP) ## ruff check + format check
	$(BIN)/ruff check lib tests
	$(BIN)/ruff format --check lib tests

format: $(STAMP) ## Apply ruff's fixes and formatting
	$(BIN)/ruff check --fix lib tests
	$(BIN)/ruff format lib tests

bench: $(STAMP) ## Benchmarks, reported as ratios measured in one run
	$(BIN)/python -m citegate.bench

doctor: $(STAMP) ## Database, extensions, embedder, fragment counts
	$(BIN)/citegate doctor

lab: $(STAMP) ## Open JupyterLab on notebooks/ with citegate importable
	$(BIN)/jupyter lab notebooks/

clean: ## Remove generated state (database, caches, runs); keeps .venv
	rm -rf var
