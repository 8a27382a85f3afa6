"""Score calibration: reliability diagrams, expected calibration error, and per-question
normalizations that bring rerank scores into [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from citegate.evaluation.metrics.validation import _per_group, _scored, _scores


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
    from scipy.special import expit  # heavy: imported when used, not by every command

    s = _scores(scores)
    out = np.empty_like(s)
    for idx in _per_group(s, groups):
        std = s[idx].std()
        out[idx] = 0.5 if std == 0 else expit((s[idx] - s[idx].mean()) / std)
    return out


__all__ = [
    "Reliability",
    "expected_calibration_error",
    "minmax_per_group",
    "reliability",
    "sigmoid_per_group",
]
