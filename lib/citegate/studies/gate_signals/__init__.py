"""Notebook 05: which gate signals know what the corpus cannot answer, on gita-split and
xquad-split side by side; a learned gate over them; certified false-answer bounds.

`research.study.load_studies` loads one Study per corpus (cached traces, no LLM call); `run`
fetches what the signals need besides the traces (`pipeline.signals.index_facts`, `store.tables.fragment_texts`); `compute`
(a package, one
module per step, all pure) builds the signal frame, AUROCs (raw and audited labels, per
language), fits the learned gates with grouped CV, their transfer across corpora and the
certified thresholds, per question and per question group (`compute.units`), repeats the learned
gate's fit and certificate over the leave-out folds (`compute.crossfit`: every chapter and
article held out once, each question scored out of fold) and names the MLflow metrics
(`compute.headline`); `plots` draws them, `report` parses the experiment spec's goals and writes
the goals table and conclusion, `artifacts` writes `gate_model.json`, `recommended_config.yaml`
and `recommendation.json` for `citegate promote`. The notebook imports this package as
`from citegate.studies import gate_signals as sg`.
"""

from __future__ import annotations

from citegate.research.folds import load_fold_studies
from citegate.research.study import load_studies, production_base, record_studies
from citegate.studies.gate_signals.artifacts import (
    GATE_MODEL_FILE,
    fold_trained_on,
    recommended_config,
    save_recommendation,
    trained_on,
)
from citegate.studies.gate_signals.compute import (
    COLUMNS,
    NEGATIVES,
    PRODUCTION_GATE,
    SUBSET_AUDITED,
    UNIT,
    auroc_table,
    best_signals,
    calibration_negative_groups,
    certified_metrics,
    certified_points,
    cross_fit,
    crossfit_metrics,
    crossfit_summary,
    feature_pushes,
    find_point,
    fit_gates,
    gate_agreement,
    group_sensitivity,
    headline,
    language_by_address,
    language_gap_by_address,
    learned_auroc_table,
    learned_gate,
    learned_name,
    levels_table,
    realised_table,
    signal_frame,
    transfer_table,
)
from citegate.studies.gate_signals.plots import (
    plot_auroc_forest,
    plot_bound_vs_realised,
    plot_crossfit,
    plot_group_sensitivity,
    plot_learned_roc,
    plot_max_cosine_by_language,
    plot_transfer,
)
from citegate.studies.gate_signals.report import (
    Goal,
    conclusion,
    crossfit_lines,
    goal_alphas,
    goals_from,
    goals_table,
    language_address_lines,
    language_gap_lines,
    unit_lines,
)
from citegate.studies.gate_signals.run import fold_frame, signal_inputs

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
    "certified_metrics",
    "Goal",
    "goals_from",
    "UNIT",
    "unit_lines",
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
