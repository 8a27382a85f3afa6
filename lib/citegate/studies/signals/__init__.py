"""Notebook 05: which gate signals know what the corpus cannot answer, on gita-split and
xquad-split side by side; a learned gate over them; certified false-answer bounds.

`run` loads one Study per corpus (cached traces, no LLM call) and fetches what the signals need
besides the traces (`pipeline.signals.index_facts`, `fragment_texts`); `compute` builds the signal
frame, AUROCs (raw and audited labels, per language), fits the learned gates with grouped CV,
their transfer across corpora and the certified thresholds (pure); `plots` draws them, `report`
writes the goals table, metrics and conclusion, `artifacts` writes `gate_model.json`,
`recommended_config.yaml` and `recommendation.json` for `citegate promote`; `crossfit` repeats
the learned gate's fit and certificate over the leave-out folds (every chapter and article held
out once) and scores each question out of fold. The notebook imports
this package as `from citegate.studies import signals as sg`.
"""

from __future__ import annotations

from citegate.research.folds import load_fold_studies
from citegate.research.study import record_studies
from citegate.studies.signals.artifacts import (
    GATE_MODEL_FILE,
    fold_trained_on,
    production_base,
    recommended_config,
    save_recommendation,
    trained_on,
)
from citegate.studies.signals.compute import (
    COLUMNS,
    NEGATIVES,
    SUBSET_AUDITED,
    auroc_table,
    best_signals,
    calibration_negative_groups,
    certified_points,
    feature_pushes,
    find_point,
    fit_gates,
    gate_agreement,
    group_sensitivity,
    language_gap_by_address,
    learned_auroc_table,
    learned_gate,
    learned_name,
    realised_table,
    signal_frame,
    transfer_table,
)
from citegate.studies.signals.crossfit import cross_fit, language_by_address
from citegate.studies.signals.crossfit import summary as crossfit_summary
from citegate.studies.signals.plots import (
    plot_auroc_forest,
    plot_bound_vs_realised,
    plot_crossfit,
    plot_group_sensitivity,
    plot_learned_roc,
    plot_max_cosine_by_language,
    plot_transfer,
)
from citegate.studies.signals.report import (
    PRODUCTION_GATE,
    conclusion,
    crossfit_lines,
    crossfit_metrics,
    goal_alphas,
    goals_table,
    headline,
    language_address_lines,
    language_gap_lines,
)
from citegate.studies.signals.run import fold_frame, load_studies, signal_inputs
from citegate.studies.signals.units import levels_table, unit_lines, unit_metrics, unit_points

__all__ = [
    "cross_fit",
    "language_address_lines",
    "language_by_address",
    "crossfit_lines",
    "fold_trained_on",
    "crossfit_metrics",
    "crossfit_summary",
    "fold_frame",
    "load_fold_studies",
    "plot_crossfit",
    "levels_table",
    "unit_lines",
    "unit_metrics",
    "unit_points",
    "COLUMNS",
    "GATE_MODEL_FILE",
    "NEGATIVES",
    "PRODUCTION_GATE",
    "SUBSET_AUDITED",
    "auroc_table",
    "best_signals",
    "calibration_negative_groups",
    "certified_points",
    "feature_pushes",
    "conclusion",
    "find_point",
    "gate_agreement",
    "fit_gates",
    "group_sensitivity",
    "language_gap_by_address",
    "language_gap_lines",
    "goal_alphas",
    "goals_table",
    "headline",
    "learned_auroc_table",
    "learned_gate",
    "learned_name",
    "load_studies",
    "plot_auroc_forest",
    "plot_bound_vs_realised",
    "plot_group_sensitivity",
    "plot_learned_roc",
    "plot_max_cosine_by_language",
    "plot_transfer",
    "production_base",
    "realised_table",
    "recommended_config",
    "record_studies",
    "save_recommendation",
    "signal_frame",
    "signal_inputs",
    "trained_on",
    "transfer_table",
]
