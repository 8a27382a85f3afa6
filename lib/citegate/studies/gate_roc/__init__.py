"""Notebook 03: does max cosine separate answerable from unanswerable questions, and where should
the gate's thresholds (0.40 / 0.55 / 0.65) sit for each corpus and embedder?

The notebook loads one `Study` per corpus (gita-split and xquad-split side by side) and records
them with the shared `research.study` helpers this package re-exports (`load_studies`,
`record_studies`, `check_corpora`, the data and config tables, `production_base`); `compute`
replays them into gate signals (`pipeline.signals`, production's names), AUROCs, operating points
and the recommended thresholds (pure; per corpus through `per_corpus`), `plots` draws them (one
row per corpus), `report` writes the conclusion, `artifacts` writes the recommendation files
`citegate promote` reads (for the production corpus only). A study never imports
`citegate.tracking`.
The notebook imports this package as `from citegate.studies import gate_roc as gs`.
"""

from __future__ import annotations

from citegate.research.study import (
    all_searched,
    check_corpora,
    corpora_config_table,
    corpora_data_table,
    load_studies,
    metric_prefix,
    production_base,
    record_studies,
)
from citegate.studies.gate_roc.artifacts import save_recommendation
from citegate.studies.gate_roc.compute import (
    DESIGN_POINTS,
    SIGNALS,
    auroc_table,
    contrast,
    corpus_headline,
    corpus_signals,
    headline,
    language_answer_rates,
    language_aurocs,
    of_corpus,
    operating_points,
    per_corpus,
    recommend,
    recommend_per_corpus,
    recommendations_table,
    recommended_config,
    side_by_side,
    signals,
    test_report,
    test_report_per_corpus,
    two_scale_sweep,
)
from citegate.studies.gate_roc.plots import (
    plot_distributions,
    plot_risk_coverage,
    plot_roc_pr,
    plot_two_scale,
)
from citegate.studies.gate_roc.report import conclusion, corpora_conclusion

__all__ = [
    "DESIGN_POINTS",
    "SIGNALS",
    "all_searched",
    "auroc_table",
    "check_corpora",
    "conclusion",
    "contrast",
    "corpora_conclusion",
    "corpora_config_table",
    "corpora_data_table",
    "corpus_headline",
    "corpus_signals",
    "headline",
    "language_answer_rates",
    "language_aurocs",
    "load_studies",
    "metric_prefix",
    "of_corpus",
    "operating_points",
    "per_corpus",
    "plot_distributions",
    "plot_risk_coverage",
    "plot_roc_pr",
    "plot_two_scale",
    "production_base",
    "recommend",
    "recommend_per_corpus",
    "recommendations_table",
    "recommended_config",
    "record_studies",
    "save_recommendation",
    "side_by_side",
    "signals",
    "test_report",
    "test_report_per_corpus",
    "two_scale_sweep",
]
