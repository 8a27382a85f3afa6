"""Notebook 07's files: the recommendation `citegate promote` reads from the run folder
(`recommended_config.yaml`: production's config with curated memory on, the pre-check and boost
thresholds chosen on the tune part and the boost strength; `recommendation.json`: why). A plain writer:
nothing here imports `citegate.tracking`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from citegate.core.config import PipelineConfig, save_config


def save_recommendation(
    run_dir: Any,
    base: PipelineConfig,
    threshold: float,
    boost_threshold: float,
    boost: float,
    facts: dict[str, Any],
) -> PipelineConfig:
    """Write both files into the run folder; returns the recommended config."""
    folder = Path(run_dir)
    cfg = base.replace(
        memory=True,
        memory_threshold=min(threshold, 1.0),
        boost_threshold=min(boost_threshold, 1.0),
        memory_boost=boost,
    )
    save_config(cfg, folder / "recommended_config.yaml")
    why = {
        "memory_threshold": cfg.memory_threshold,
        "boost_threshold": cfg.boost_threshold,
        "memory_boost": cfg.memory_boost,
        "tuned_on": "tune split of the curated-memory questions (data/memory)",
        **facts,
    }
    text = json.dumps(why, indent=2, default=float, allow_nan=True)
    (folder / "recommendation.json").write_text(text, encoding="utf-8")
    return cfg


__all__ = ["save_recommendation"]
