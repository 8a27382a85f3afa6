"""Every filesystem location citegate uses, derived from the repository root.

The root is the checkout the package runs from (an editable install, `make venv`); an installed
package (`pip install .` into a service's environment) finds the checkout holding
`experiments/production.yaml` through `CITEGATE_ROOT`, else the working directory. Importing
this module creates nothing; callers make folders when they write.
"""

from __future__ import annotations

import os
from pathlib import Path


def _root() -> Path:
    """`CITEGATE_ROOT`, else the checkout this file sits in (lib/citegate/core/), else the
    working directory (an installed package lives in site-packages, not in a checkout)."""
    if os.environ.get("CITEGATE_ROOT"):
        return Path(os.environ["CITEGATE_ROOT"]).resolve()
    checkout = Path(__file__).resolve().parents[3]
    return checkout if (checkout / "pyproject.toml").is_file() else Path.cwd().resolve()


ROOT = _root()
DATA = ROOT / "data"
CORPORA = DATA / "corpora"
QUESTIONS = DATA / "questions"
EXPERIMENTS = ROOT / "experiments"
BENCH_GOALS = EXPERIMENTS / "bench.yaml"
NOTEBOOKS = ROOT / "notebooks"
MIGRATIONS = Path(__file__).resolve().parents[1] / "store" / "migrations"


def var_dir() -> Path:
    """Root of generated state (database, caches, runs); `CITEGATE_VAR` overrides it."""
    return Path(os.environ.get("CITEGATE_VAR", ROOT / "var"))


def pgdata_dir() -> Path:
    """Data directory of the embedded PostgreSQL server."""
    return var_dir() / "pgdata"


def cache_dir() -> Path:
    """Disk cache for embeddings, rerank scores and LLM calls."""
    return Path(os.environ.get("CITEGATE_CACHE", var_dir() / "cache"))


def runs_dir() -> Path:
    """Executed notebooks, reports and figures, one folder per run."""
    return var_dir() / "runs"


def logs_dir() -> Path:
    """Tracebacks of unexpected errors, one file per failed command (`citegate --debug` prints
    them instead)."""
    return var_dir() / "logs"
