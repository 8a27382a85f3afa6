#!/usr/bin/env bash
# The product installs as a library, without the research record: a fresh virtualenv that
# already holds a service's own versions of openai and pandas (.ci/neighbours.txt: inside
# pyproject.toml's ranges, not the locked ones), then `pip install .` (the core dependencies
# only, resolved from their ranges, not from the lock), which must keep those versions and leave
# a consistent environment (`pip check`); then a real question through `citegate ask` on an
# ingested corpus, with those versions. MLflow, papermill and JupyterLab must not be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$SECONDS
neighbours="$repo/.ci/neighbours.txt"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --upgrade pip
"$work/venv/bin/pip" install -q -r "$neighbours"
"$work/venv/bin/pip" install -q -c "$neighbours" "$repo"
"$work/venv/bin/pip" check
"$work/venv/bin/python" - "$neighbours" <<'PY'
import importlib.metadata as md
import sys

for line in open(sys.argv[1]):
    pin = line.split("#")[0].strip()
    if pin:
        name, _, want = pin.partition("==")
        have = md.version(name)
        if have != want:
            sys.exit(f"install check: pip install . changed {name} {want} to {have}")
        print(f"install check: {name} {have} kept")
PY
echo "install check: pip install . beside the neighbouring versions: $((SECONDS - start)) s"
for module in mlflow papermill jupyterlab matplotlib llama_cpp; do
  if "$work/venv/bin/python" -c "import $module" 2>/dev/null; then
    echo "install check: $module is installed by 'pip install .'; it belongs to an extra" >&2
    exit 1
  fi
done
mkdir -p "$work/corpus"
printf '%s\n\n%s\n' \
  "Krishna teaches that the self is eternal: it is not born and it does not die." \
  "One should act without attachment to the fruits of action; this is karma yoga." \
  > "$work/corpus/notes.txt"
export CITEGATE_ROOT="$repo" CITEGATE_VAR="$work/var"
unset DATABASE_URL
cd "$work"
"$work/venv/bin/citegate" ingest --corpus "$work/corpus" --name tiny
"$work/venv/bin/citegate" ask --design --corpus tiny --answer "Is the self eternal?" > "$work/answer.txt"
grep -q "branch: grounded" "$work/answer.txt"
# The production config (the default): its learned gate and LTR reranker load without
# scikit-learn; the corpus fallback is off for this call (its model is the llm extra's).
"$work/venv/bin/citegate" ask --corpus tiny --answer --no-fallback "Is the self eternal?" \
  > "$work/production.txt"
grep -q "^config: production" "$work/production.txt"
"$work/venv/bin/citegate" run "$repo/experiments/01_prefloor_recall.yaml" > "$work/run.txt" 2>&1 && {
  echo "install check: citegate run worked without the research extra" >&2; exit 1; }
grep -q "needs the research extra" "$work/run.txt"
echo "install check: pip install . answers with citegate ask; research commands name their extra" \
  "($((SECONDS - start)) s in all)"
