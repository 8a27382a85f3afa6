"""Notebook 03's files: the recommendation (`recommended_config.yaml`, `recommendation.json`) that
`citegate promote` reads from the run folder, written over the production config
(`research.study.production_base`). A plain writer: nothing here imports `citegate.tracking`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from citegate.core.config import PipelineConfig, save_config
from citegate.studies.gate_roc.compute import recommended_config


def save_recommendation(
    run_dir: Any,
    cfg: PipelineConfig,
    rec: dict[str, float],
    test_points: pd.DataFrame,
    target_fpr: float,
) -> None:
    """Write `recommended_config.yaml` (a full PipelineConfig) and `recommendation.json` (why)."""
    folder = Path(run_dir)
    save_config(recommended_config(cfg, rec), folder / "recommended_config.yaml")
    why = {
        "thresholds": rec,
        "target_false_answer_rate": target_fpr,
        "tuned_on": "tune split",
        "test_operating_points": test_points.to_dict("records"),
    }
    (folder / "recommendation.json").write_text(
        json.dumps(why, indent=2, default=float), encoding="utf-8"
    )
