"""The clustered bootstrap interval of a rate (`evaluation.clustered`): whole units resampled."""

from __future__ import annotations

import numpy as np

from citegate.evaluation.clustered import cluster_rate_ci


def test_the_clustered_interval_resamples_whole_units() -> None:
    hits = np.array([1, 1, 1, 0, 0, 0], dtype=float)
    lo, hi = cluster_rate_ci(hits, np.array(["a", "a", "a", "b", "b", "b"]), 200)
    assert lo == 0.0 and hi == 1.0  # two units: the rate is 0, 1/2 or 1
    assert np.isnan(cluster_rate_ci(np.array([]), np.array([]), 10)[0])
