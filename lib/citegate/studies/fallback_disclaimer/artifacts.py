"""Notebook 04's file: the fallback bar's verdicts (`bar.json` in the run folder: per model whether
it passed and each criterion's value, interval, n, threshold and reason), for whoever decides which
model may hold the fallback role. A plain writer: nothing here imports `citegate.tracking`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from citegate.core.verdicts import VERDICT_NOTEBOOKS, CriterionResult, RoleVerdict
from citegate.research.models import role_model_id
from citegate.studies.fallback_disclaimer.compute import bar_verdicts

BAR_FILE = "bar.json"


def _plain(value: Any) -> Any:
    """A JSON-safe scalar: NaN and missing become None, numpy scalars plain Python."""
    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def bar_record(
    table: pd.DataFrame, run_id: str | None = None, run_folder: str = ""
) -> dict[str, Any]:
    """Model -> {passed, criteria: {criterion: value, ci95, n, threshold, rule, required, passed,
    reason}, run_id (when known), run_folder (when given)}."""
    verdicts = bar_verdicts(table)
    out: dict[str, Any] = {}
    for model, g in table.groupby("model", sort=True):
        criteria = {
            r["criterion"]: {
                "value": _plain(r["value"]),
                "ci95": [_plain(r["ci95 low"]), _plain(r["ci95 high"])],
                "n": _plain(r["n"]),
                "threshold": _plain(r["threshold"]),
                "rule": r["rule"],
                "required": _plain(r["required"]),
                "passed": _plain(r["passed"]),
                "reason": r["reason"],
            }
            for r in g.to_dict("records")
        }
        entry: dict[str, Any] = {"passed": verdicts[str(model)], "criteria": criteria}
        if run_id:
            entry["run_id"] = run_id
        if run_folder:
            entry["run_folder"] = run_folder
        out[str(model)] = entry
    return out


def fallback_verdicts(table: pd.DataFrame, run: str) -> list[RoleVerdict]:
    """The bar table as one verdict on the fallback role per model (what `citegate models adopt`
    reads), each on the id a config's `fallback_model` runs the model as
    (`research.models.role_model_id`); `run` is the run folder's name."""
    out = []
    for model, g in table.groupby("model", sort=True):
        lines = [
            CriterionResult(
                r["criterion"],
                r["label"],
                _plain(r["value"]),
                (_plain(r["ci95 low"]), _plain(r["ci95 high"])),
                int(r["n"]),
                _plain(r["threshold"]),
                r["rule"],
                bool(r["required"]),
                None if pd.isna(r["passed"]) else bool(r["passed"]),
                r["reason"],
            )  # fmt: skip
            for r in g.to_dict("records")
        ]
        role_model = role_model_id(str(model))
        out.append(
            RoleVerdict("fallback", role_model, VERDICT_NOTEBOOKS["fallback"], run, tuple(lines))
        )
    return out


def save_bar(run_dir: Any, table: pd.DataFrame, run_id: str | None = None) -> Path:
    """Write `bar.json` into the run folder; returns its path. The notebook is not told the MLflow
    run id, so `run_id` is written only when a caller knows it; the run folder's name (which, for a
    `citegate run`, ends with the run id's first characters) is always written."""
    folder = Path(run_dir)
    path = folder / BAR_FILE
    record = bar_record(table, run_id, folder.name)
    text = json.dumps(record, indent=2, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    return path


__all__ = ["BAR_FILE", "bar_record", "fallback_verdicts", "save_bar"]
