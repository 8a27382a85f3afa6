"""Notebook 08's files: the recommendation `citegate promote` reads from the run folder
(`recommended_config.yaml`: production's config with the certified pointer floor as
`fallback_admission`; `recommendation.json`: why, with the end-to-end metrics the promotion
guards read). A plain writer: nothing here imports `citegate.tracking`.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from citegate.core.config import PipelineConfig, save_config
from citegate.studies.end_to_end.compute import Floor


def save_recommendation(
    run_dir: Any, base: PipelineConfig, floor: Floor, metrics: dict[str, float]
) -> PipelineConfig:
    """Write both files into the run folder; returns the recommended config."""
    folder = Path(run_dir)
    cfg = base.replace(fallback_admission=min(floor.floor, 1.0))
    save_config(cfg, folder / "recommended_config.yaml")
    why = {
        "fallback_admission": cfg.fallback_admission,
        "pointer_floor": asdict(floor),
        "tuned_on": "tune split of gita-split and out-of-scope (the questions the gate declines)",
        "end_to_end": metrics,
    }
    text = json.dumps(why, indent=2, default=float, allow_nan=True)
    (folder / "recommendation.json").write_text(text, encoding="utf-8")
    return cfg


__all__ = ["save_recommendation"]
