"""Metrics of the research suite, one family per module: retrieval recall (`retrieval`), score
calibration (`calibration`), the coverage gate's ROC (`roc`) and its operation (`operation`);
inputs are checked by `validation`. Every public name is re-exported here, so callers write
`from citegate.evaluation import metrics as M; M.auroc_ci(...)`.

Every function is pure and deterministic: bootstraps take a `seed` (default 0) and draw from
`np.random.default_rng(seed)`. Rates get Wilson score intervals (`rate_ci`), which stay honest at
0 of n and n of n where a bootstrap collapses to a point. Inputs may be lists or numpy arrays;
they are validated (equal lengths, labels in {0, 1}, finite scores) and a ValueError names what
is wrong.

Conventions shared by the gate metrics: the system *answers* when ``score >= threshold``; label 1
means the question is answerable (answering is right), label 0 means it should have abstained.
"""

from __future__ import annotations

from citegate.evaluation.metrics.calibration import (
    Reliability,
    expected_calibration_error,
    minmax_per_group,
    reliability,
    sigmoid_per_group,
)
from citegate.evaluation.metrics.operation import (
    RiskCoverage,
    aurc,
    best_threshold_per_group,
    global_vs_oracle_threshold,
    operating_point,
    rate_ci,
    rate_ci_or_nan,
    risk_coverage,
    threshold_for_fpr,
)
from citegate.evaluation.metrics.retrieval import gold_recall, mrr, ndcg_at_k, recall_at_k
from citegate.evaluation.metrics.roc import (
    AurocCI,
    Curve,
    auroc_ci,
    mean_per_group_auroc,
    pr_curve,
    roc_curve_band,
)

__all__ = [
    "AurocCI",
    "Curve",
    "Reliability",
    "RiskCoverage",
    "aurc",
    "auroc_ci",
    "best_threshold_per_group",
    "expected_calibration_error",
    "global_vs_oracle_threshold",
    "gold_recall",
    "mean_per_group_auroc",
    "minmax_per_group",
    "mrr",
    "ndcg_at_k",
    "operating_point",
    "pr_curve",
    "rate_ci",
    "rate_ci_or_nan",
    "recall_at_k",
    "reliability",
    "risk_coverage",
    "roc_curve_band",
    "sigmoid_per_group",
    "threshold_for_fpr",
]
