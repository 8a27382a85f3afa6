#!/usr/bin/env bash
# The lower bounds of pyproject.toml hold: the unit tests pass in a virtualenv where every direct
# requirement of the core and of the research and dev extras is at the lowest version its range
# allows (uv's lowest-direct resolution; what they pull in at the newest that fits). The llm
# extra's two requirements are exact, and the lock's environment already runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$SECONDS
python3 -m venv "$work/tools"
"$work/tools/bin/pip" install -q "uv==$(sed -n 's/^UV_VERSION := //p' Makefile)"
uv="$work/tools/bin/uv"
"$uv" pip compile -q pyproject.toml --extra research --extra dev --resolution lowest-direct \
  --python-version 3.11 --no-annotate --no-header -o "$work/lowest.txt"
"$uv" venv -q --python "$(command -v python3)" "$work/venv"
export VIRTUAL_ENV="$work/venv"
"$uv" pip install -q -r "$work/lowest.txt"
"$uv" pip install -q --no-deps -e "$repo"
"$uv" pip check
echo "lowest check: the direct requirements at their lower bounds:"
"$work/venv/bin/python" - <<'PY'
import importlib.metadata as md
import tomllib

from packaging.requirements import Requirement

project = tomllib.load(open("pyproject.toml", "rb"))["project"]
extras = project["optional-dependencies"]
for line in project["dependencies"] + extras["research"] + extras["dev"]:
    req = Requirement(line)
    print(f"  {req.name} {md.version(req.name)} ({req.specifier})")
PY
# The unit tests marked llm_model need the llm extra's model installed (the lock's environment runs
# them); a marker rather than a path, so a renamed test file cannot turn this check red.
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider tests/unit -m "not llm_model"
echo "lowest check: unit tests pass at the lower bounds ($((SECONDS - start)) s)"
