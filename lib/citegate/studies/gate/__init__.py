"""Notebook 03: does max cosine separate answerable from unanswerable questions, and where should
the gate's thresholds (0.40 / 0.55 / 0.65) sit for this corpus and embedder?

`compute` replays a loaded `Study` into gate signals, AUROCs, operating points and the
recommended thresholds (pure), `plots` draws them, `report` writes the conclusion, `artifacts`
reads the production config the recommendation starts from (`core.config.production`) and writes
the recommendation files `citegate promote` reads. A study never imports `citegate.tracking`.
The notebook imports this package as `from citegate.studies import gate as gs`.
"""

from __future__ import annotations

from citegate.studies.gate.artifacts import production_base, save_recommendation
from citegate.studies.gate.compute import (
    DESIGN_POINTS,
    SIGNALS,
    arm_signals,
    auroc_table,
    contrast,
    headline,
    operating_points,
    recommend,
    recommended_config,
    signals,
    test_report,
    two_scale_sweep,
)
from citegate.studies.gate.plots import (
    plot_distributions,
    plot_risk_coverage,
    plot_roc_pr,
    plot_two_scale,
)
from citegate.studies.gate.report import conclusion

__all__ = [
    "DESIGN_POINTS",
    "SIGNALS",
    "arm_signals",
    "auroc_table",
    "conclusion",
    "contrast",
    "headline",
    "operating_points",
    "plot_distributions",
    "plot_risk_coverage",
    "plot_roc_pr",
    "plot_two_scale",
    "production_base",
    "recommend",
    "recommended_config",
    "save_recommendation",
    "signals",
    "test_report",
    "two_scale_sweep",
]
