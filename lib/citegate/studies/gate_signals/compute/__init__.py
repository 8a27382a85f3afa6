"""Notebook 05's numbers, one module per step: the signal frame (`frame`), contrasts and AUROCs
(`contrasts`), learned gates fit with grouped CV and their transfer (`fit`), certified thresholds
and the production gate they become (`certified`), the group-level sensitivity check
(`sensitivity`), the language gap explained (`language`), the certificate over question groups
(`units`), the cross-fit over leave-out folds (`crossfit`) and the MLflow metrics of them all
(`headline`).

Pure functions of loaded studies, the frames made from them, or fitted models (no database or
file). This package re-exports each module's public names.
"""

from __future__ import annotations

from citegate.studies.gate_signals.compute.certified import (
    GatePoint,
    certificate_block,
    certified_points,
    certify,
    find_point,
    gate_agreement,
    learned_gate,
    realised_table,
    score_of,
)
from citegate.studies.gate_signals.compute.contrasts import (
    ALL,
    MIN_PER_CLASS,
    POSITIVE,
    RAW,
    SUBSET_AUDITED,
    SUBSET_RAW,
    auroc_rows,
    auroc_table,
    best_signals,
    contrast,
    has_audit,
    label_views,
    language_keys,
    of_language,
    too_few,
)
from citegate.studies.gate_signals.compute.crossfit import (
    CrossFit,
    cross_fit,
    language_by_address,
)
from citegate.studies.gate_signals.compute.crossfit import summary as crossfit_summary
from citegate.studies.gate_signals.compute.fit import (
    CAL_SALT,
    GATES,
    PRODUCTION_GATE,
    FittedGate,
    calibration_part,
    cv_table,
    feature_matrix,
    fit_gates,
    fit_part,
    gate_scores,
    grouped_folds,
    learned_auroc_table,
    learned_name,
    make_estimator,
    param_grid,
    targets,
    transfer_table,
    tune_parts,
    usable_features,
)
from citegate.studies.gate_signals.compute.frame import (
    COLUMNS,
    NEGATIVES,
    POOLED,
    Z_SIGNAL,
    language_stats,
    language_z,
    signal_frame,
    with_language_z,
)
from citegate.studies.gate_signals.compute.headline import (
    certified_metrics,
    crossfit_metrics,
    headline,
)
from citegate.studies.gate_signals.compute.language import (
    ADDRESS_STRATA,
    feature_pushes,
    language_gap_by_address,
)
from citegate.studies.gate_signals.compute.sensitivity import (
    LEVEL_GROUP,
    LEVEL_QUESTION,
    LEVEL_UNIT,
    LEVELS,
    calibration_negative_groups,
    calibration_rows,
    group_sensitivity,
    held_out_unit,
    min_clean_n,
)
from citegate.studies.gate_signals.compute.units import (
    UNIT,
    levels_table,
)

__all__ = [
    "ADDRESS_STRATA",
    "ALL",
    "CAL_SALT",
    "COLUMNS",
    "CrossFit",
    "FittedGate",
    "GATES",
    "GatePoint",
    "LEVELS",
    "LEVEL_GROUP",
    "LEVEL_QUESTION",
    "LEVEL_UNIT",
    "MIN_PER_CLASS",
    "NEGATIVES",
    "POOLED",
    "POSITIVE",
    "PRODUCTION_GATE",
    "RAW",
    "SUBSET_AUDITED",
    "SUBSET_RAW",
    "UNIT",
    "Z_SIGNAL",
    "auroc_rows",
    "auroc_table",
    "best_signals",
    "calibration_negative_groups",
    "calibration_part",
    "calibration_rows",
    "certificate_block",
    "certified_points",
    "certify",
    "contrast",
    "cross_fit",
    "certified_metrics",
    "crossfit_metrics",
    "crossfit_summary",
    "headline",
    "cv_table",
    "feature_matrix",
    "feature_pushes",
    "find_point",
    "fit_gates",
    "fit_part",
    "gate_agreement",
    "gate_scores",
    "group_sensitivity",
    "grouped_folds",
    "has_audit",
    "held_out_unit",
    "label_views",
    "language_by_address",
    "language_gap_by_address",
    "language_keys",
    "language_stats",
    "language_z",
    "learned_auroc_table",
    "learned_gate",
    "learned_name",
    "levels_table",
    "make_estimator",
    "min_clean_n",
    "of_language",
    "param_grid",
    "realised_table",
    "score_of",
    "signal_frame",
    "targets",
    "too_few",
    "transfer_table",
    "tune_parts",
    "usable_features",
    "with_language_z",
]
