"""The coverage gate's separability: AUROC with a bootstrap interval (plain or clustered by
question), mean per-question AUROC, the ROC curve with a bootstrap band, and the PR curve.

Bootstraps take a `seed` (default 0) and draw from `np.random.default_rng(seed)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike

from citegate.evaluation.metrics.validation import (
    _both_classes,
    _check_alpha,
    _check_n_boot,
    _mean_or_nan,
    _per_group,
    _require_both_classes,
    _scored,
)

T = TypeVar("T")


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
    from scipy.stats import rankdata  # heavy: imported when used, not by every command

    ranks = rankdata(s)
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _resample(rng: np.random.Generator, n: int, members: list[np.ndarray] | None) -> np.ndarray:
    """Bootstrap indices: n draws with replacement, or whole groups drawn with replacement."""
    if members is None:
        return rng.integers(0, n, n)
    picks = rng.integers(0, len(members), len(members))
    return np.concatenate([members[i] for i in picks])


def _checked(
    scores: ArrayLike, labels: ArrayLike, n_boot: int, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """Validated (scores, labels) holding both classes, with a valid `n_boot` and `alpha`: what
    every bootstrap here needs first."""
    s, y = _scored(scores, labels)
    _require_both_classes(y)
    _check_n_boot(n_boot)
    _check_alpha(alpha)
    return s, y


def _bootstrap(
    s: np.ndarray,
    y: np.ndarray,
    n_boot: int,
    seed: int,
    groups: ArrayLike | None,
    stat: Callable[[np.ndarray, np.ndarray], T],
) -> list[T]:
    """`stat` of each of `n_boot` resamples (of rows, or of whole `groups` when given) drawn from
    `np.random.default_rng(seed)`; resamples holding a single class are skipped."""
    members = None if groups is None else _per_group(s, groups)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        idx = _resample(rng, len(s), members)
        if _both_classes(y[idx]):
            boots.append(stat(s[idx], y[idx]))
    return boots


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
    from sklearn.metrics import roc_auc_score

    s, y = _checked(scores, labels, n_boot, alpha)
    boots = _bootstrap(s, y, n_boot, seed, groups, _fast_auroc)
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
    from sklearn.metrics import roc_auc_score

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
    from sklearn.metrics import roc_curve

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
    s, y = _checked(scores, labels, n_boot, alpha)
    fpr_grid = np.linspace(0.0, 1.0, 101) if grid is None else np.asarray(grid, dtype=float)
    boots = _bootstrap(s, y, n_boot, seed, groups, lambda a, b: _tpr_on_grid(a, b, fpr_grid))
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
    from sklearn.metrics import precision_recall_curve

    precision, recall, thresholds = precision_recall_curve(y, s)
    thresholds = np.append(thresholds, np.inf)
    return Curve(recall[::-1].copy(), precision[::-1].copy(), thresholds[::-1].copy())


__all__ = ["AurocCI", "Curve", "auroc_ci", "mean_per_group_auroc", "pr_curve", "roc_curve_band"]
