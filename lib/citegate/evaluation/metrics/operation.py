"""Operating the gate: risk–coverage and its area, the rates at one threshold, the threshold
for a target false-answer rate, per-question versus global thresholds, and Wilson intervals of
rates (`rate_ci`), which stay honest at 0 of n and n of n where a bootstrap collapses to a point.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from citegate.evaluation.metrics.validation import (
    _both_classes,
    _check_alpha,
    _groups,
    _labels,
    _per_group,
    _scored,
)

_FPR_TOL = 1e-12  # slack when comparing an observed rate with a requested one (0.1 vs 1/10)


@dataclass(frozen=True)
class RiskCoverage:
    """Risk and coverage at each distinct threshold, thresholds decreasing."""

    thresholds: np.ndarray
    coverage: np.ndarray
    risk: np.ndarray


def risk_coverage(scores: ArrayLike, labels: ArrayLike) -> RiskCoverage:
    """Risk–coverage curve of the gate "answer when score >= t".

    Why: the trade-off between answering more and answering wrongly. At each distinct score t
    (decreasing): coverage = share of all questions answered, risk = share of answered questions
    that are negatives (the false-answer rate among answers).
    """
    s, y = _scored(scores, labels)
    if not len(s):
        raise ValueError("scores must not be empty")
    order = np.argsort(-s, kind="stable")
    s_sorted, neg = s[order], 1 - y[order]
    last_of_tie = np.r_[s_sorted[1:] != s_sorted[:-1], True]
    answered = np.arange(1, len(s) + 1)[last_of_tie]
    false_answers = np.cumsum(neg)[last_of_tie]
    return RiskCoverage(s_sorted[last_of_tie], answered / len(s), false_answers / answered)


def aurc(rc: RiskCoverage) -> float:
    """Area under the risk–coverage curve (lower is better).

    Step integral ``sum(risk_i * (coverage_i - coverage_{i-1}))`` from coverage 0; without ties
    it equals the mean of the risk after each answered question (Geifman et al.'s AURC).
    """
    widths = np.diff(np.r_[0.0, rc.coverage])
    return float(np.sum(rc.risk * widths))


def _ratio(num: float, den: float) -> float:
    """num / den, NaN when den is 0."""
    return float(num / den) if den else float("nan")


def operating_point(scores: ArrayLike, labels: ArrayLike, threshold: float) -> dict[str, float]:
    """The gate's rates at "answer when score >= threshold".

    Why: reports one chosen threshold. Keys: tpr (answerable questions answered), fpr
    (unanswerable questions answered, the false-answer rate over negatives), coverage (share of
    all answered), risk (share of answers that are false), precision (1 - risk), n, n_answered,
    threshold. A rate whose denominator is 0 is NaN.
    """
    s, y = _scored(scores, labels)
    answer = s >= threshold
    n_pos, n_answered = int(y.sum()), int(answer.sum())
    tp = int((answer & (y == 1)).sum())
    fp = n_answered - tp
    return {
        "tpr": _ratio(tp, n_pos),
        "fpr": _ratio(fp, len(y) - n_pos),
        "coverage": _ratio(n_answered, len(y)),
        "risk": _ratio(fp, n_answered),
        "precision": _ratio(tp, n_answered),
        "n": float(len(y)),
        "n_answered": float(n_answered),
        "threshold": float(threshold),
    }


def threshold_for_fpr(scores: ArrayLike, labels: ArrayLike, target_fpr: float) -> float:
    """Smallest observed score t whose false-answer rate over negatives is <= target_fpr.

    Why: the gate should answer as much as possible while at most `target_fpr` of the
    unanswerable questions get answered. The rate at t counts negatives with score >= t, so a
    negative tied at t counts as answered. +inf (answer nothing) when no observed score works.
    """
    s, y = _scored(scores, labels)
    if not 0.0 <= target_fpr <= 1.0:
        raise ValueError(f"target_fpr must lie in [0, 1], got {target_fpr}")
    negatives = np.sort(s[y == 0])
    if not len(negatives):
        raise ValueError("labels must contain at least one negative")
    candidates = np.unique(s)
    fpr = (len(negatives) - np.searchsorted(negatives, candidates, side="left")) / len(negatives)
    ok = np.flatnonzero(fpr <= target_fpr + _FPR_TOL)
    return float(candidates[ok[0]]) if len(ok) else float("inf")


def _bal_acc_at(s: np.ndarray, y: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Balanced accuracy of (s >= t) against y at each threshold t."""
    pos, neg = np.sort(s[y == 1]), np.sort(s[y == 0])
    tpr = (len(pos) - np.searchsorted(pos, thresholds, side="left")) / len(pos)
    tnr = np.searchsorted(neg, thresholds, side="left") / len(neg)
    return (tpr + tnr) / 2


def _eligible(s: np.ndarray, y: np.ndarray, groups: ArrayLike) -> list[tuple[Hashable, np.ndarray]]:
    """(group key, member indices) of each group holding both classes, keys sorted."""
    g = _groups(groups, len(s))
    keys = np.unique(g)
    out = []
    for key, idx in zip(keys, _per_group(s, g), strict=True):
        if _both_classes(y[idx]):
            out.append((key.item() if isinstance(key, np.generic) else key, idx))
    return out


def _best_in_group(s: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(threshold, balanced accuracy) maximizing balanced accuracy; ties -> smallest threshold."""
    candidates = np.unique(s)
    bal = _bal_acc_at(s, y, candidates)
    best = int(np.argmax(bal))
    return float(candidates[best]), float(bal[best])


def best_threshold_per_group(
    scores: ArrayLike, labels: ArrayLike, groups: ArrayLike
) -> dict[Hashable, float]:
    """Per group holding both classes, the threshold maximizing balanced accuracy.

    Why: shows how widely the per-question optimal thresholds spread, i.e. whether a single
    global threshold can work. Candidates are the group's distinct scores; ties go to the
    smallest threshold.
    """
    s, y = _scored(scores, labels)
    return {key: _best_in_group(s[idx], y[idx])[0] for key, idx in _eligible(s, y, groups)}


def global_vs_oracle_threshold(
    scores: ArrayLike, labels: ArrayLike, groups: ArrayLike
) -> dict[str, float]:
    """How much one global threshold loses against a per-question oracle threshold.

    Why: quantifies the cost of the gate's single threshold. Over groups holding both classes,
    the global threshold (among their distinct scores; ties -> smallest) maximizes mean
    per-group balanced accuracy. Returns global_threshold, global_bal_acc, oracle_bal_acc (mean
    of each group's best), loss = oracle - global, and n_groups.
    """
    s, y = _scored(scores, labels)
    eligible = _eligible(s, y, groups)
    if not eligible:
        raise ValueError("no group contains both classes")
    candidates = np.unique(np.concatenate([s[idx] for _, idx in eligible]))
    total = np.zeros(len(candidates))
    oracle = 0.0
    for _, idx in eligible:
        total += _bal_acc_at(s[idx], y[idx], candidates)
        oracle += _best_in_group(s[idx], y[idx])[1]
    best = int(np.argmax(total))
    global_acc, oracle_acc = total[best] / len(eligible), oracle / len(eligible)
    return {
        "global_threshold": float(candidates[best]),
        "global_bal_acc": float(global_acc),
        "oracle_bal_acc": float(oracle_acc),
        "loss": float(oracle_acc - global_acc),
        "n_groups": float(len(eligible)),
    }


def rate_ci(
    successes: Sequence[bool] | ArrayLike, alpha: float = 0.05
) -> tuple[float, float, float]:
    """A success rate and its (1 - alpha) Wilson score interval: (rate, lower, upper).

    Why: rates over a few dozen questions need error bars that stay honest at the edges: 0 of 40
    is not "certainly 0" (its upper bound is about 0.09), which a bootstrap of the observed rate
    cannot show. Computed by ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``.
    """
    x = _labels(successes, "successes")
    if not len(x):
        raise ValueError("successes must not be empty")
    _check_alpha(alpha)
    k, n = int(x.sum()), len(x)
    from scipy.stats import binomtest  # heavy: imported when used, not by every command

    ci = binomtest(k, n).proportion_ci(confidence_level=1 - alpha, method="wilson")
    return k / n, float(ci.low), float(ci.high)


def rate_ci_or_nan(values: Any, alpha: float = 0.05) -> tuple[float, float, float]:
    """`rate_ci` of any iterable of truthy values, or three NaNs when it is empty: a report's
    table cell with no observations shows as missing instead of failing the run."""
    x = np.asarray([bool(v) for v in values], dtype=bool)
    return rate_ci(x, alpha=alpha) if len(x) else (np.nan, np.nan, np.nan)


__all__ = [
    "RiskCoverage",
    "aurc",
    "best_threshold_per_group",
    "global_vs_oracle_threshold",
    "operating_point",
    "rate_ci",
    "rate_ci_or_nan",
    "risk_coverage",
    "threshold_for_fpr",
]
