"""The production file, `experiments/production.yaml`: the full `PipelineConfig`, its provenance
and the metrics it was accepted on, rendered deterministically; and how two configs differ."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from citegate.core import config_files
from citegate.core.config import PipelineConfig

# The file promotion reads and writes; read at call time (`production_file.PRODUCTION`), so a test
# can point every promotion step at a copy.
PRODUCTION: Path = config_files.PRODUCTION
FILE_HEADER = (
    "# Production configuration of the citegate pipeline. Written by `citegate promote`;\n"
    "# read by citegate.store.load_production_config(). Do not edit by hand: promote instead.\n"
)


def render_production(
    cfg: PipelineConfig, provenance: dict[str, Any], accepted_on: dict[str, Any], version: int
) -> str:
    """The production file's text (deterministic key order)."""
    doc = {
        "version": version,
        "pipeline": cfg.to_dict(),
        "provenance": provenance,
        "accepted_on": accepted_on,
    }
    return FILE_HEADER + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def diff(old: PipelineConfig, new: PipelineConfig) -> list[tuple[str, Any, Any]]:
    """Every changed key as (key, old, new), in declaration order."""
    a, b = old.to_dict(), new.to_dict()
    return [(k, a[k], b[k]) for k in a if a[k] != b[k]]


def format_diff(changes: list[tuple[str, Any, Any]]) -> str:
    """`key: old → new`, one per line."""
    return "\n".join(f"  {k}: {o} → {n}" for k, o, n in changes) or "  (no change)"


def accepted_on_block(measured: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The `accepted_on` block of a new production file: every measured metric under its own
    (per-kind) name, with its 95% interval and the number of questions behind it."""
    return {
        m: {
            "value": round(v["value"], 4),
            "ci95": [round(v["low"], 4), round(v["high"], 4)],
            "n": int(v["n"]),
        }
        for m, v in measured.items()
    }
