"""Notebook 05's MLflow metrics: the headline AUROCs and transfer AUROCs, each certified gate's
answer rate, bounds and realised false-answer rates (per question or per question group), and the
cross-fitted folds' out-of-fold rates, named so the experiment spec's `expected` block can pin
them.

Pure functions of the study's tables; a value that is not finite is left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from citegate.research.study import metric_prefix
from citegate.studies.gate_signals.compute.contrasts import ALL, RAW, SUBSET_AUDITED, SUBSET_RAW
from citegate.studies.gate_signals.compute.fit import PRODUCTION_GATE
from citegate.studies.gate_signals.compute.frame import NEGATIVES


def _a(alpha: float) -> str:
    """The α part of a metric name: 0.05 -> a05."""
    return f"a{round(alpha * 100):02d}"


def headline(
    aurocs: pd.DataFrame,
    learned: pd.DataFrame,
    transfer: pd.DataFrame,
    realised: pd.DataFrame,
    alphas: Sequence[float],
) -> dict[str, float]:
    """MLflow metrics: test AUROCs (max cosine, learned gate; audited when measured), transfer
    AUROCs, and each corpus's certified answer rate, bounds and realised false-answer rates."""
    out: dict[str, float] = {}
    for r in learned[(learned["language"] == ALL)].to_dict("records"):
        name = {"max_cosine": "max_cosine", PRODUCTION_GATE: "learned"}.get(r["signal"])
        view = {RAW: "", SUBSET_RAW: "_subset_raw", SUBSET_AUDITED: "_audited"}[r["labels"]]
        if name:
            key = f"{metric_prefix(r['corpus'])}auroc_{name}{view}_vs_{r['negatives']}"
            out[key] = r["AUROC"]
            out[key + "_ci_low"] = r["CI low"]
    for r in transfer[transfer["model"] == "logistic"].to_dict("records"):
        if r["trained on"] != r["tested on"]:
            key = f"transfer_{metric_prefix(r['trained on'])}to_{metric_prefix(r['tested on'])}auroc_vs_{r['negatives']}"
            out[key] = r["AUROC"]
    out |= certified_metrics(realised, alphas)
    del aurocs  # the per-signal table is reported, not logged metric by metric
    return {k: float(v) for k, v in out.items() if v is not None and math.isfinite(float(v))}


def certified_metrics(
    realised: pd.DataFrame, alphas: Sequence[float], suffix: str = ""
) -> dict[str, float]:
    """`<corpus>_<gate>_<a><suffix>_answer_rate`, `..._bound_<kind>`, `..._test_false_answer_rate_
    <kind>` (every language) and `..._answer_rate_<lang>` (vs the first kind) of the production
    gate and max cosine at each α, raw labels (`suffix` "_unit", `compute.UNIT`, for the per-unit
    certificate). Values that are not finite are left out."""
    out: dict[str, float] = {}
    for r in realised[(realised["labels"] == RAW)].to_dict("records"):
        if (
            r["gate"] not in (PRODUCTION_GATE, "max_cosine")
            or not np.isclose(alphas, r["alpha"]).any()
        ):
            continue
        g = "learned" if r["gate"] == PRODUCTION_GATE else "max_cosine"
        head = f"{metric_prefix(r['corpus'])}{g}_{_a(r['alpha'])}{suffix}"
        if r["language"] == ALL:
            out[f"{head}_answer_rate"] = r["answer rate"]
            out[f"{head}_bound_{r['negatives']}"] = r["bound"]
            out[f"{head}_test_false_answer_rate_{r['negatives']}"] = r["false-answer rate"]
            if suffix:
                out[f"{head}_n_units_{r['negatives']}"] = r["n_neg cal"]
        elif r["negatives"] == NEGATIVES[0]:
            out[f"{head}_answer_rate_{r['language']}"] = r["answer rate"]
    return {k: float(v) for k, v in out.items() if v is not None and math.isfinite(float(v))}


def crossfit_metrics(table: pd.DataFrame, alpha: float) -> dict[str, float]:
    """MLflow metrics of the cross-fitted summary (`crossfit.summary`) at α, e.g.
    `gita_folds_a05_unit_answer_rate`, `..._answer_rate_ru`, `..._false_answer_rate_<kind>`,
    `..._max_fold_bound_<kind>`, `..._final_bound_<kind>`, `..._final_n_<kind>`; audited labels
    add `_audited` after the level."""
    out: dict[str, float] = {}
    for r in table.to_dict("records"):
        view = "" if r["labels"] == RAW else "_audited"
        key = f"{r['corpus']}_folds_{_a(alpha)}_{r['level']}{view}"
        kind = r["negatives"]
        if r["language"] != ALL:
            if kind == NEGATIVES[0]:
                out[f"{key}_answer_rate_{r['language']}"] = r["answer rate"]
            continue
        out[f"{key}_answer_rate"] = r["answer rate"]
        out[f"{key}_false_answer_rate_{kind}"] = r["false-answer rate"]
        out[f"{key}_max_fold_bound_{kind}"] = r["max fold bound"]
        out[f"{key}_final_bound_{kind}"] = r["final bound"]
        out[f"{key}_final_n_{kind}"] = r["final n"]
    return {k: float(v) for k, v in out.items() if v is not None and math.isfinite(float(v))}
