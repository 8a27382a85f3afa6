"""Certified gate thresholds: a false-answer rate bounded with an exact binomial confidence bound.

A gate answers when ``score >= threshold``. On calibration (tune) data, a *false answer* is a
negative question (label 0) the gate answers. `certify_threshold` chooses the lowest threshold
(the most answers) whose one-sided Clopper–Pearson upper bound of the false-answer rate is ≤ α
at confidence 1 − δ, testing the candidate thresholds in a fixed order, strictest first, and
stopping at the first failure (Learn-then-Test fixed-sequence testing: no multiplicity correction
is needed because each test is run only while every stricter one has passed). Then, over the
randomness of the calibration sample, P(true false-answer rate at the chosen threshold > α) ≤ δ.

Several negative kinds (out_of_corpus, out_of_scope) are certified together by `certify_kinds`:
δ is split evenly (Bonferroni), each kind picks its threshold, the strictest one wins.

Per question or per unit. The binomial bound assumes the calibration negatives are independent
draws. Questions written about one verse (or one article) are not: they rise and fall together.
Given `units` (each question's unit, e.g. its question group), the sample becomes the negative
UNITS and a unit counts as one false answer when ANY of its negative questions is answered (its
highest score is ≥ t). Assumption, in one sentence: the calibration units are exchangeable with
the units production will meet, questions inside a unit may depend on each other in any way.
What is bounded is then P(a new unit gets at least one false answer), which is ≥ the share of its
questions answered falsely, so it also bounds the unit-averaged per-question false-answer rate.
The scan over thresholds is the same fixed-sequence test (the unit indicator only grows as t
falls), so the guarantee keeps its form. A simulation with clustered data checks it (unit test).

Pure functions on NumPy arrays; `scipy.stats.beta` gives the exact bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "Certified",
    "CertifiedKinds",
    "Realised",
    "certify_kinds",
    "certify_threshold",
    "clopper_pearson_upper",
    "realised",
    "unit_maxima",
]


def clopper_pearson_upper(k: int, n: int, delta: float) -> float:
    """One-sided exact (Clopper–Pearson) upper bound at confidence 1 − δ of a rate seen as k of n:
    the p with P(Binomial(n, p) ≤ k) = δ. 1.0 when n = 0 (no evidence) or k = n."""
    _check_unit("delta", delta)
    if n < 0 or not 0 <= k <= max(n, 0):
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0 or k == n:
        return 1.0
    from scipy.stats import beta  # heavy: imported when used, not by every command

    return float(beta.ppf(1.0 - delta, k + 1, n - k))


def _cp_upper_many(k: np.ndarray, n: int, delta: float) -> np.ndarray:
    """`clopper_pearson_upper` for an array of counts (one n)."""
    if n == 0:
        return np.ones(len(k))
    out = np.ones(len(k))
    below = k < n
    from scipy.stats import beta

    out[below] = beta.ppf(1.0 - delta, k[below] + 1, n - k[below])
    return out


@dataclass(frozen=True)
class Certified:
    """A certified operating point on calibration data.

    `threshold`: answer when score ≥ it (+inf when no candidate passed: answer nothing).
    `bound`: the Clopper–Pearson upper bound of the false-answer rate there (for an infeasible
    result, the bound of the first, strictest candidate, which failed: it is > α, so a guard
    "bound ≤ α" refuses it). `false_answers` of `n_neg` negatives score ≥ threshold;
    `answer_rate`: share of positives at/above the threshold (NaN without positives).
    """

    threshold: float
    bound: float
    n_neg: int
    false_answers: int
    alpha: float
    delta: float
    answer_rate: float
    feasible: bool
    kind: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain values for JSON (recommendation.json's `certified` block)."""
        return asdict(self)


@dataclass(frozen=True)
class CertifiedKinds:
    """Several negative kinds certified together at family confidence 1 − δ (Bonferroni: δ/m per
    kind). `threshold` is the strictest kind's; `per_kind[kind]` describes that kind AT this
    threshold (its false answers and bound there, its δ/m); `kind_thresholds[kind]` is the
    threshold that kind alone would have chosen."""

    threshold: float
    alpha: float
    delta: float
    answer_rate: float
    feasible: bool
    per_kind: dict[str, Certified] = field(default_factory=dict)
    kind_thresholds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain values for JSON."""
        return {
            "threshold": self.threshold,
            "alpha": self.alpha,
            "delta": self.delta,
            "answer_rate": self.answer_rate,
            "feasible": self.feasible,
            "per_kind": {k: c.to_dict() for k, c in self.per_kind.items()},
            "kind_thresholds": dict(self.kind_thresholds),
        }


@dataclass(frozen=True)
class Realised:
    """What a threshold does on (test) data: false answers among negatives, answers among
    positives (rates NaN when a class is empty)."""

    threshold: float
    n_neg: int
    false_answers: int
    false_answer_rate: float
    n_pos: int
    answered: int
    answer_rate: float


def _check_unit(name: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie in (0, 1), got {value!r}")


def _arrays(scores: ArrayLike, labels: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Scores (finite floats) and labels (0/1) of equal length; ValueError naming what's wrong."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels)
    if s.ndim != 1 or y.ndim != 1 or len(s) != len(y):
        raise ValueError(f"scores and labels must be 1-D of equal length ({s.shape} vs {y.shape})")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite")
    if not np.all(np.isin(y, (0, 1))):
        raise ValueError("labels must be 0 (negative) or 1 (answerable)")
    return s, y.astype(int)


def _candidates(s: np.ndarray, candidates: ArrayLike | None) -> np.ndarray:
    """Candidate thresholds, strictest (highest) first: the distinct scores by default."""
    c = np.unique(s) if candidates is None else np.unique(np.asarray(candidates, dtype=float))
    return c[::-1]


def _answer_rate(pos: np.ndarray, threshold: float) -> float:
    return float(np.mean(pos >= threshold)) if len(pos) else math.nan


def unit_maxima(scores: np.ndarray, units: ArrayLike) -> np.ndarray:
    """The highest score of each distinct unit (the score at which that unit is first answered);
    one value per unit, in no particular order."""
    u = np.asarray(units, dtype=object)
    if u.shape != scores.shape:
        raise ValueError(f"units must align with the scores ({u.shape} vs {scores.shape})")
    _, idx = np.unique(u.astype(str), return_inverse=True)
    out = np.full(int(idx.max()) + 1 if len(idx) else 0, -np.inf)
    np.maximum.at(out, idx, scores)
    return out


def certify_threshold(
    scores: ArrayLike,
    labels: ArrayLike,
    alpha: float = 0.05,
    delta: float = 0.05,
    candidates: ArrayLike | None = None,
    *,
    kind: str = "",
    units: ArrayLike | None = None,
) -> Certified:
    """The lowest threshold whose false-answer bound is ≤ α, by fixed-sequence testing.

    Candidates (default: the distinct scores) are tested from the highest down; at each, k =
    negatives with score ≥ t and the test passes when `clopper_pearson_upper(k, n_neg, δ)` ≤ α.
    The scan stops at the first failure; the last passing candidate is returned. When the first
    candidate already fails, nothing is certified: feasible False, threshold +inf. With `units`
    (aligned with the scores), the negatives are counted per unit (see the module docstring):
    `n_neg` and `false_answers` are then numbers of units.
    """
    _check_unit("alpha", alpha)
    _check_unit("delta", delta)
    s, y = _arrays(scores, labels)
    neg, pos = s[y == 0], s[y == 1]
    if units is not None:
        u = np.asarray(units, dtype=object)
        if u.shape != s.shape:
            raise ValueError(f"units must align with the scores ({u.shape} vs {s.shape})")
        neg = unit_maxima(neg, u[y == 0])
    neg = np.sort(neg)
    cand = _candidates(s, candidates)
    k = len(neg) - np.searchsorted(neg, cand, side="left")
    bounds = _cp_upper_many(k, len(neg), delta)
    failed = np.flatnonzero(bounds > alpha)
    n_pass = int(failed[0]) if len(failed) else len(cand)
    if n_pass == 0:
        first = float(bounds[0]) if len(cand) else 1.0
        return Certified(
            math.inf, first, len(neg), 0, alpha, delta, _answer_rate(pos, math.inf), False, kind
        )
    i = n_pass - 1
    t = float(cand[i])
    return Certified(
        t, float(bounds[i]), len(neg), int(k[i]), alpha, delta, _answer_rate(pos, t), True, kind
    )


def _at(
    s: np.ndarray,
    y: np.ndarray,
    t: float,
    alpha: float,
    delta: float,
    kind: str,
    units: np.ndarray | None = None,
) -> Certified:
    """A kind's false answers and bound at a given threshold (not a new certification)."""
    neg, pos = s[y == 0], s[y == 1]
    if units is not None:
        neg = unit_maxima(neg, units[y == 0])
    k = int(np.sum(neg >= t))
    bound = clopper_pearson_upper(k, len(neg), delta)
    return Certified(
        t, bound, len(neg), k, alpha, delta, _answer_rate(pos, t), bound <= alpha, kind
    )


def certify_kinds(
    scores: ArrayLike,
    labels_by_kind: Mapping[str, ArrayLike],
    alpha: float = 0.05,
    delta: float = 0.05,
    candidates: ArrayLike | None = None,
    units: ArrayLike | None = None,
) -> CertifiedKinds:
    """Certify every negative kind at δ/m (m kinds): the threshold is the strictest kind's.

    `labels_by_kind[kind]` is aligned with `scores`: 1 = answerable, 0 = a negative of this kind,
    -1 = not part of this kind's calibration (e.g. a negative of another kind). The candidates
    (default: the distinct scores of all questions) are shared, so every kind's sequence contains
    the final threshold and its bound there is ≤ its own certified bound. The answer rate is over
    the positives of the first kind's labels. `units` (aligned with `scores`) counts negatives
    per unit (`certify_threshold`).
    """
    if not labels_by_kind:
        raise ValueError("labels_by_kind is empty: nothing to certify")
    s_all = np.asarray(scores, dtype=float)
    cand = np.unique(s_all) if candidates is None else np.asarray(candidates, dtype=float)
    each = delta / len(labels_by_kind)
    own: dict[str, Certified] = {}
    parts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    unit_parts: dict[str, np.ndarray | None] = {}
    u_all = None if units is None else np.asarray(units, dtype=object)
    for kind, lab in labels_by_kind.items():
        y_all = np.asarray(lab)
        if y_all.shape != s_all.shape:
            raise ValueError(f"labels of kind {kind!r} do not align with the scores")
        keep = y_all != -1
        parts[kind] = _arrays(s_all[keep], y_all[keep])
        unit_parts[kind] = None if u_all is None else u_all[keep]
        own[kind] = certify_threshold(
            *parts[kind], alpha, each, cand, kind=kind, units=unit_parts[kind]
        )
    t = max(c.threshold for c in own.values())
    per_kind = {
        k: _at(*parts[k], t, alpha, each, k, unit_parts[k]) if c.feasible else c
        for k, c in own.items()
    }
    first = next(iter(parts.values()))
    feasible = all(c.feasible for c in own.values())
    return CertifiedKinds(
        t,
        alpha,
        delta,
        _answer_rate(first[0][first[1] == 1], t),
        feasible,
        per_kind,
        {k: c.threshold for k, c in own.items()},
    )


def realised(scores: ArrayLike, labels: ArrayLike, threshold: float) -> Realised:
    """False answers and answer rate of `threshold` on held-out data (the realised test rate to
    set beside the certified bound)."""
    s, y = _arrays(scores, labels)
    neg, pos = s[y == 0], s[y == 1]
    k, a = int(np.sum(neg >= threshold)), int(np.sum(pos >= threshold))
    return Realised(
        float(threshold),
        len(neg),
        k,
        k / len(neg) if len(neg) else math.nan,
        len(pos),
        a,
        a / len(pos) if len(pos) else math.nan,
    )
