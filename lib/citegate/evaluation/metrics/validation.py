"""Input validation and the helpers every metric family shares.

Inputs may be lists or numpy arrays; they are validated (equal lengths, labels in {0, 1}, finite
scores) and a ValueError names what is wrong. Private to `citegate.evaluation.metrics`: the
families import these, callers never do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike


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


def _mean_or_nan(values: list[float]) -> float:
    """Mean of a list, NaN when empty (no question counted)."""
    return float(np.mean(values)) if values else float("nan")


def _per_group(s: np.ndarray, groups: ArrayLike) -> list[np.ndarray]:
    """Index arrays of each group's members."""
    _, inverse = np.unique(_groups(groups, len(s)), return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.flatnonzero(np.diff(inverse[order])) + 1
    return np.split(order, bounds) if len(s) else []
