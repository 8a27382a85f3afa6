"""Metrics of the research suite: retrieval recall, score calibration, the coverage gate's ROC.

Every function is pure and deterministic: bootstraps take a `seed` (default 0) and draw from
`np.random.default_rng(seed)`. Rates get Wilson score intervals (`rate_ci`), which stay honest at
0 of n and n of n where a bootstrap collapses to a point. Inputs may be lists or numpy arrays; they are validated (equal
lengths, labels in {0, 1}, finite scores) and a ValueError names what is wrong.

Conventions shared by the gate metrics: the system *answers* when ``score >= threshold``; label 1
means the question is answerable (answering is right), label 0 means it should have abstained.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit
from scipy.stats import binomtest, rankdata
from sklearn.metrics import precision_recall_curve, roc_auc_score, roc_curve

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

_FPR_TOL = 1e-12  # slack when comparing an observed rate with a requested one (0.1 vs 1/10)


# --------------------------------------------------------------------------- validation


def _scores(values: ArrayLike, name: str = "scores") -> np.ndarray:
    """A 1-D float array of finite values."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


def _labels(values: ArrayLike, name: str = "labels") -> np.ndarray:
    """A 1-D int array whose values all lie in {0, 1} (booleans accepted)."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size and not np.isin(arr, (0, 1)).all():
        bad = np.unique(arr[~np.isin(arr, (0, 1))])[:5]
        raise ValueError(f"{name} must be 0/1, found {bad.tolist()}")
    return arr.astype(int)


def _groups(values: ArrayLike, n: int) -> np.ndarray:
    """A 1-D array of group keys of length n."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"groups must be 1-D, got shape {arr.shape}")
    if len(arr) != n:
        raise ValueError(f"groups has length {len(arr)}, expected {n}")
    return arr


def _scored(scores: ArrayLike, labels: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Validated (scores, labels) of equal length."""
    s, y = _scores(scores), _labels(labels)
    if len(s) != len(y):
        raise ValueError(f"scores and labels differ in length: {len(s)} != {len(y)}")
    return s, y


def _both_classes(y: np.ndarray) -> bool:
    """Whether labels hold at least one positive and one negative."""
    return bool(0 < y.sum() < len(y))


def _require_both_classes(y: np.ndarray) -> None:
    """Raise unless labels hold both classes (AUROC and ROC need them)."""
    if not _both_classes(y):
        raise ValueError("labels must contain both classes (0 and 1)")


def _check_k(k: int | None) -> None:
    """k is None (whole list) or a positive int."""
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1 or None, got {k}")


def _check_alpha(alpha: float) -> None:
    """alpha must lie strictly between 0 and 1."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")


def _check_n_boot(n_boot: int) -> None:
    """At least one bootstrap resample."""
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")


def _check_paired(ranked_ids: Sequence[Any], gold: Sequence[Any]) -> None:
    """One gold entry per ranked list."""
    if len(ranked_ids) != len(gold):
        raise ValueError(f"ranked_ids and gold differ in length: {len(ranked_ids)} != {len(gold)}")


# --------------------------------------------------------------------------- retrieval


def _head(ranked: Sequence[int], k: int | None) -> list[int]:
    """The first k ids (all of them when k is None), duplicates dropped keeping the first."""
    head = list(ranked) if k is None else list(ranked)[:k]
    return list(dict.fromkeys(head))


def _first_hit(ranked: Sequence[int], gold: Collection[int], k: int | None) -> int | None:
    """0-based rank of the first gold id among the first k, or None."""
    gold_set = set(gold)
    for i, fid in enumerate(list(ranked) if k is None else list(ranked)[:k]):
        if fid in gold_set:
            return i
    return None


def _mean_or_nan(values: list[float]) -> float:
    """Mean of a list, NaN when empty (no question counted)."""
    return float(np.mean(values)) if values else float("nan")


def recall_at_k(
    ranked_ids: Sequence[Sequence[int]], gold: Sequence[Collection[int]], k: int | None = None
) -> float:
    """Hit rate: share of questions with at least one gold id among the first k ranked ids.

    Why: the answer can cite a trusted source as soon as one gold fragment is retrieved.
    Questions with empty gold (unanswerable) are skipped; NaN when none remain.
    ``k=None`` looks at the whole ranked list.
    """
    _check_paired(ranked_ids, gold)
    _check_k(k)
    hits = [
        float(_first_hit(r, g, k) is not None)
        for r, g in zip(ranked_ids, gold, strict=True)
        if len(g)
    ]
    return _mean_or_nan(hits)


def gold_recall(
    ranked_ids: Sequence[Sequence[int]],
    gold_groups: Sequence[Sequence[Collection[int]]],
    k: int | None = None,
) -> float:
    """Share of gold addresses reached in the first k, averaged over questions.

    Why: a question may need several sources; each gold *address* is a set of fragment ids
    (several fragments carry one address) and counts as found when any of them is retrieved.
    Questions without addresses are skipped (NaN when none remain); an address with no fragment
    ids can never be found and counts as missed.
    """
    _check_paired(ranked_ids, gold_groups)
    _check_k(k)
    per_question = []
    for ranked, addresses in zip(ranked_ids, gold_groups, strict=True):
        if not len(addresses):
            continue
        head = set(_head(ranked, k))
        per_question.append(float(np.mean([bool(head & set(a)) for a in addresses])))
    return _mean_or_nan(per_question)


def mrr(
    ranked_ids: Sequence[Sequence[int]], gold: Sequence[Collection[int]], k: int | None = None
) -> float:
    """Mean reciprocal rank of the first gold id within the first k (0 when absent).

    Why: rewards putting a citable fragment near the top, not merely somewhere in the list.
    Questions with empty gold are skipped; NaN when none remain.
    """
    _check_paired(ranked_ids, gold)
    _check_k(k)
    rr = []
    for ranked, g in zip(ranked_ids, gold, strict=True):
        if not len(g):
            continue
        rank = _first_hit(ranked, g, k)
        rr.append(0.0 if rank is None else 1.0 / (rank + 1))
    return _mean_or_nan(rr)


def _ndcg_one(ranked: Sequence[int], gold: Collection[int], k: int) -> float:
    """nDCG@k of one ranked list with binary relevance."""
    gold_set = set(gold)
    head = _head(ranked, k)
    dcg = sum(1.0 / np.log2(i + 2) for i, fid in enumerate(head) if fid in gold_set)
    idcg = sum(1.0 / np.log2(i + 2) for i in range(min(len(gold_set), k)))
    return float(dcg / idcg)


def ndcg_at_k(
    ranked_ids: Sequence[Sequence[int]], gold: Sequence[Collection[int]], k: int = 10
) -> float:
    """Mean nDCG@k with binary relevance and a log2 discount.

    Why: graded view of ranking quality when a question has several gold fragments. The ideal
    DCG puts ``min(|gold|, k)`` relevant ids first; a repeated id counts once (its first rank).
    Questions with empty gold are skipped; NaN when none remain.
    """
    _check_paired(ranked_ids, gold)
    _check_k(k)
    return _mean_or_nan(
        [_ndcg_one(r, g, k) for r, g in zip(ranked_ids, gold, strict=True) if len(g)]
    )


# --------------------------------------------------------------------------- calibration


@dataclass(frozen=True)
class Reliability:
    """A reliability diagram: one entry per bin (empty bins have count 0 and NaN means)."""

    bin_lower: np.ndarray
    bin_upper: np.ndarray
    mean_score: np.ndarray
    frac_positive: np.ndarray
    count: np.ndarray
    ece: float


def _bin_edges(s: np.ndarray, n_bins: int, strategy: str) -> np.ndarray:
    """n_bins + 1 edges over [0, 1] (uniform) or at score quantiles (quantile)."""
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, n_bins + 1)
    if strategy == "quantile":
        return np.percentile(s, np.linspace(0, 1, n_bins + 1) * 100)
    raise ValueError(f"strategy must be 'uniform' or 'quantile', got {strategy!r}")


def reliability(
    scores: ArrayLike,
    labels: ArrayLike,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
) -> Reliability:
    """Bin scores and compare each bin's mean score with its share of positives.

    Why: a gate threshold only means "probability of being answerable" if scores are
    calibrated. Binning matches ``sklearn.calibration.calibration_curve`` (a score equal to an
    inner edge falls in the lower bin). ECE = sum over non-empty bins of
    ``count / N * |frac_positive - mean_score|``. Scores must lie in [0, 1].
    """
    s, y = _scored(scores, labels)
    if not len(s):
        raise ValueError("scores must not be empty")
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    if s.min() < 0.0 or s.max() > 1.0:
        raise ValueError("scores must lie in [0, 1]; normalize them first")
    edges = _bin_edges(s, n_bins, strategy)
    ids = np.searchsorted(edges[1:-1], s)
    count = np.bincount(ids, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_score = np.bincount(ids, weights=s, minlength=n_bins) / count
        frac_positive = np.bincount(ids, weights=y, minlength=n_bins) / count
    nonempty = count > 0
    gap = np.abs(frac_positive[nonempty] - mean_score[nonempty])
    ece = float(np.sum(count[nonempty] / len(s) * gap))
    return Reliability(edges[:-1], edges[1:], mean_score, frac_positive, count, ece)


def expected_calibration_error(
    scores: ArrayLike,
    labels: ArrayLike,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
) -> float:
    """Expected calibration error of scores in [0, 1] (see `reliability`)."""
    return reliability(scores, labels, n_bins, strategy).ece


def _per_group(s: np.ndarray, groups: ArrayLike) -> list[np.ndarray]:
    """Index arrays of each group's members."""
    _, inverse = np.unique(_groups(groups, len(s)), return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.flatnonzero(np.diff(inverse[order])) + 1
    return np.split(order, bounds) if len(s) else []


def minmax_per_group(scores: ArrayLike, groups: ArrayLike) -> np.ndarray:
    """Min-max normalize scores within each group (question) to [0, 1]; constant group -> 0.5.

    Why: rerank scores are only comparable within one question; this makes them usable in
    [0, 1]-bounded diagnostics such as reliability diagrams.
    """
    s = _scores(scores)
    out = np.empty_like(s)
    for idx in _per_group(s, groups):
        lo, hi = s[idx].min(), s[idx].max()
        out[idx] = 0.5 if hi == lo else (s[idx] - lo) / (hi - lo)
    return out


def sigmoid_per_group(scores: ArrayLike, groups: ArrayLike) -> np.ndarray:
    """Z-score within each group (population std), then the logistic; std 0 -> 0.5.

    Why: a softer per-question normalization than min-max, less driven by one extreme score.
    """
    s = _scores(scores)
    out = np.empty_like(s)
    for idx in _per_group(s, groups):
        std = s[idx].std()
        out[idx] = 0.5 if std == 0 else expit((s[idx] - s[idx].mean()) / std)
    return out


# --------------------------------------------------------------------------- ROC


@dataclass(frozen=True)
class AurocCI:
    """AUROC with a percentile-bootstrap confidence interval."""

    auroc: float
    lower: float
    upper: float
    n_pos: int
    n_neg: int


def _fast_auroc(s: np.ndarray, y: np.ndarray) -> float:
    """AUROC via the Mann-Whitney rank sum (ties averaged); equals sklearn's roc_auc_score."""
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    ranks = rankdata(s)
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _resample(rng: np.random.Generator, n: int, members: list[np.ndarray] | None) -> np.ndarray:
    """Bootstrap indices: n draws with replacement, or whole groups drawn with replacement."""
    if members is None:
        return rng.integers(0, n, n)
    picks = rng.integers(0, len(members), len(members))
    return np.concatenate([members[i] for i in picks])


def _percentile_ci(values: list[float], alpha: float) -> tuple[float, float]:
    """Percentile interval of bootstrap values; NaNs when there are none."""
    if not values:
        return float("nan"), float("nan")
    lo, hi = np.percentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(lo), float(hi)


def auroc_ci(
    scores: ArrayLike,
    labels: ArrayLike,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    groups: ArrayLike | None = None,
) -> AurocCI:
    """AUROC of scores against labels with a (1 - alpha) percentile-bootstrap interval.

    Why: the gate's separability must be reported with its uncertainty. With `groups`, whole
    groups (questions) are resampled (cluster bootstrap), since scores of one question are
    correlated. Resamples holding a single class are skipped; NaN bounds if all are.
    """
    s, y = _scored(scores, labels)
    _require_both_classes(y)
    _check_n_boot(n_boot)
    _check_alpha(alpha)
    members = None if groups is None else _per_group(s, groups)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        idx = _resample(rng, len(s), members)
        if _both_classes(y[idx]):
            boots.append(_fast_auroc(s[idx], y[idx]))
    lo, hi = _percentile_ci(boots, alpha)
    n_pos = int(y.sum())
    return AurocCI(float(roc_auc_score(y, s)), lo, hi, n_pos, len(y) - n_pos)


def mean_per_group_auroc(
    scores: ArrayLike, labels: ArrayLike, groups: ArrayLike
) -> tuple[float, int]:
    """Mean AUROC over groups holding both classes, and how many such groups there are.

    Why: separability *within* a question says whether ranking works even when a global
    threshold cannot. NaN and 0 when no group holds both classes.
    """
    s, y = _scored(scores, labels)
    aucs = [
        float(roc_auc_score(y[idx], s[idx]))
        for idx in _per_group(s, groups)
        if _both_classes(y[idx])
    ]
    return _mean_or_nan(aucs), len(aucs)


@dataclass(frozen=True)
class Curve:
    """A curve as x/y arrays plus the score threshold of each point."""

    x: np.ndarray
    y: np.ndarray
    thresholds: np.ndarray


def _tpr_on_grid(s: np.ndarray, y: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """ROC tpr at each fpr of the grid, linear along the ROC path; on a vertical step, its top.

    Between two distinct fprs the path runs from the top of the first step to the bottom of the
    next, so collapsing ties first would overstate the curve.
    """
    fpr, tpr, _ = roc_curve(y, s)
    j = np.searchsorted(fpr, grid, side="right") - 1  # last point with fpr <= x
    j = np.clip(j, 0, len(fpr) - 1)
    nxt = np.minimum(j + 1, len(fpr) - 1)
    span = fpr[nxt] - fpr[j]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(span > 0, (grid - fpr[j]) / span, 0.0)
    return tpr[j] + np.clip(frac, 0.0, 1.0) * (tpr[nxt] - tpr[j])


def roc_curve_band(
    scores: ArrayLike,
    labels: ArrayLike,
    n_boot: int = 200,
    seed: int = 0,
    grid: ArrayLike | None = None,
    alpha: float = 0.05,
    groups: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """ROC curve on an fpr grid with a pointwise percentile-bootstrap band.

    Why: plots of the gate's ROC must show how much the curve would move on another sample.
    Returns (fpr grid, full-sample tpr interpolated on the grid, lower, upper), the bounds being
    the alpha/2 and 1 - alpha/2 percentiles (2.5 / 97.5 by default) of bootstrap tprs.
    `grid` defaults to ``np.linspace(0, 1, 101)``. With `groups`, whole groups are resampled
    exactly as `auroc_ci` does, so a band drawn beside a clustered AUROC interval measures the
    same uncertainty. Single-class resamples are skipped.
    """
    s, y = _scored(scores, labels)
    _require_both_classes(y)
    _check_n_boot(n_boot)
    _check_alpha(alpha)
    fpr_grid = np.linspace(0.0, 1.0, 101) if grid is None else np.asarray(grid, dtype=float)
    members = None if groups is None else _per_group(s, groups)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        idx = _resample(rng, len(s), members)
        if _both_classes(y[idx]):
            boots.append(_tpr_on_grid(s[idx], y[idx], fpr_grid))
    tpr = _tpr_on_grid(s, y, fpr_grid)
    if not boots:
        nan = np.full_like(fpr_grid, np.nan)
        return fpr_grid, tpr, nan, nan.copy()
    lower, upper = np.percentile(np.vstack(boots), [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    return fpr_grid, tpr, lower, upper


def pr_curve(scores: ArrayLike, labels: ArrayLike) -> Curve:
    """Precision (y) against recall (x), recall increasing, from sklearn's precision_recall_curve.

    Why: with few answerable questions, precision among answers is more telling than fpr.
    The point (recall 0, precision 1), which has no score threshold, gets threshold +inf.
    """
    s, y = _scored(scores, labels)
    if not y.sum():
        raise ValueError("labels must contain at least one positive")
    precision, recall, thresholds = precision_recall_curve(y, s)
    thresholds = np.append(thresholds, np.inf)
    return Curve(recall[::-1].copy(), precision[::-1].copy(), thresholds[::-1].copy())


# --------------------------------------------------------------------------- gate operation


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
    ci = binomtest(k, n).proportion_ci(confidence_level=1 - alpha, method="wilson")
    return k / n, float(ci.low), float(ci.high)


def rate_ci_or_nan(values: Any, alpha: float = 0.05) -> tuple[float, float, float]:
    """`rate_ci` of any iterable of truthy values, or three NaNs when it is empty: a report's
    table cell with no observations shows as missing instead of failing the run."""
    x = np.asarray([bool(v) for v in values], dtype=bool)
    return rate_ci(x, alpha=alpha) if len(x) else (np.nan, np.nan, np.nan)
