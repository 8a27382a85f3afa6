"""Notebook 06's files: the recommendation `citegate promote` reads from the run folder
(`recommended_config.yaml`: production's config with the certified support threshold, the
support mode chosen on the tune part and the composer that passes the bar; and
`recommendation.json`: why, with the `certified` block the promotion's certificate guard checks
per corpus). A plain writer: nothing here imports `citegate.tracking`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from citegate.core.config import PipelineConfig, save_config
from citegate.evaluation.certify import Certified, CertifiedKinds


def recommended_config(
    base: PipelineConfig, mode: str, cert: Certified | CertifiedKinds, composer: str
) -> PipelineConfig:
    """`base` with the answer stage this run recommends. An infeasible certificate (no
    threshold keeps the bound under alpha: +inf) recommends 1.0, and its `certified` block says
    infeasible, so the promotion refuses it."""
    threshold = cert.threshold if math.isfinite(cert.threshold) else 1.0
    return base.replace(support_mode=mode, support_threshold=threshold, composer=composer)


def save_recommendation(
    run_dir: Any,
    base: PipelineConfig,
    mode: str,
    cert: Certified | CertifiedKinds,
    composer: str,
    facts: dict[str, Any],
) -> PipelineConfig:
    """Write both files into the run folder; returns the recommended config."""
    folder = Path(run_dir)
    cfg = recommended_config(base, mode, cert, composer)
    save_config(cfg, folder / "recommended_config.yaml")
    why = {
        "support_mode": mode,
        "support_threshold": cfg.support_threshold,
        "composer": composer,
        "certified": {**cert.to_dict(), "calibrated_on": "claim pairs (tune split)"},
        "tuned_on": "tune split of the labeled claim set",
        **facts,
    }
    text = json.dumps(why, indent=2, default=float, allow_nan=True)
    (folder / "recommendation.json").write_text(text, encoding="utf-8")
    return cfg


__all__ = ["recommended_config", "save_recommendation"]
