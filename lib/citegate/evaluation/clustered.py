"""A rate's confidence interval when its trials come in clusters: the bootstrap resamples whole
units (a verse's or an article's questions move together), so dependence inside a unit widens
the interval instead of hiding in it.

Pure NumPy; the seed is fixed, so an interval is the same on every run.
"""

from __future__ import annotations

import numpy as np

SEED = 20261202  # default seed of the clustered bootstrap


def cluster_rate_ci(
    hits: np.ndarray, units: np.ndarray, n_boot: int, seed: int = SEED
) -> tuple[float, float]:
    """95% percentile interval of a rate by resampling whole units (a verse's questions move
    together), NaN when there is nothing to resample."""
    hits = np.asarray(hits, dtype=float)
    if len(hits) == 0 or n_boot <= 0:
        return float("nan"), float("nan")
    codes, inverse = np.unique(np.asarray(units), return_inverse=True)
    sums = np.bincount(inverse, weights=hits, minlength=len(codes))
    counts = np.bincount(inverse, minlength=len(codes)).astype(float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(codes), size=(n_boot, len(codes)))
    rates = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    lo, hi = np.percentile(rates, [2.5, 97.5])
    return float(lo), float(hi)
