"""Certified thresholds: the exact bound, the fixed-sequence scan, several negative kinds, and the
guarantee itself on synthetic scores whose true false-answer rate is known analytically."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import beta, binom, binomtest

from citegate.evaluation.certify import (
    certify_kinds,
    certify_threshold,
    clopper_pearson_upper,
    realised,
    unit_maxima,
)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (1, 100), (3, 40), (17, 250), (99, 100)])
@pytest.mark.parametrize("delta", [0.05, 0.1])
def test_clopper_pearson_upper_agrees_with_scipy_binomtest(k: int, n: int, delta: float) -> None:
    one_sided = binomtest(k, n, alternative="less").proportion_ci(1 - delta, method="exact").high
    two_sided = binomtest(k, n).proportion_ci(1 - 2 * delta, method="exact").high
    assert clopper_pearson_upper(k, n, delta) == pytest.approx(one_sided, abs=1e-12)
    assert clopper_pearson_upper(k, n, delta) == pytest.approx(two_sided, abs=1e-12)


def test_clopper_pearson_edges() -> None:
    assert clopper_pearson_upper(0, 0, 0.05) == 1.0  # no evidence
    assert clopper_pearson_upper(5, 5, 0.05) == 1.0
    assert clopper_pearson_upper(0, 100, 0.05) == pytest.approx(1 - 0.05 ** (1 / 100))
    with pytest.raises(ValueError, match="k <= n"):
        clopper_pearson_upper(3, 2, 0.05)
    with pytest.raises(ValueError, match="delta"):
        clopper_pearson_upper(0, 2, 0.0)


def test_scan_keeps_the_lowest_threshold_before_the_first_failure() -> None:
    # 100 negatives at 0.00 … 0.99; at n=100, α=δ=0.05 the bound passes for k ≤ 1 only
    assert clopper_pearson_upper(1, 100, 0.05) <= 0.05 < clopper_pearson_upper(2, 100, 0.05)
    neg = np.arange(100) / 100
    pos = np.array([0.985, 0.995, 0.5])
    scores = np.concatenate([neg, pos])
    labels = np.array([0] * 100 + [1] * 3)
    c = certify_threshold(scores, labels, 0.05, 0.05)
    assert c.feasible and c.threshold == 0.985  # 0.98 would answer 2 negatives
    assert (c.n_neg, c.false_answers) == (100, 1)
    assert c.bound == pytest.approx(clopper_pearson_upper(1, 100, 0.05))
    assert c.answer_rate == pytest.approx(2 / 3)
    # explicit candidates are scanned too (highest first), whatever order they come in
    coarse = certify_threshold(scores, labels, 0.05, 0.05, candidates=[0.5, 0.999, 0.9])
    assert coarse.threshold == 0.999 and coarse.false_answers == 0


def test_too_few_negatives_certify_nothing() -> None:
    scores, labels = [0.1, 0.2, 0.9, 0.95], [0, 0, 1, 1]
    c = certify_threshold(scores, labels, 0.05, 0.05)
    assert not c.feasible and c.threshold == math.inf and c.answer_rate == 0.0
    assert c.bound == pytest.approx(clopper_pearson_upper(0, 2, 0.05)) and c.bound > 0.05
    assert c.to_dict()["feasible"] is False


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="labels must be 0"):
        certify_threshold([0.1, 0.2], [0, 2])
    with pytest.raises(ValueError, match="equal length"):
        certify_threshold([0.1, 0.2], [0])
    with pytest.raises(ValueError, match="alpha"):
        certify_threshold([0.1], [0], alpha=1.5)


def test_kinds_split_delta_and_take_the_strictest_threshold() -> None:
    rng = np.random.default_rng(0)
    pos = rng.beta(5, 2, 300)
    easy, hard = rng.beta(1, 6, 300), rng.beta(2, 3, 300)
    scores = np.concatenate([pos, easy, hard])
    ones, minus = np.ones(300), -np.ones(300)
    by_kind = {
        "out_of_scope": np.concatenate([ones, 0 * ones, minus]),
        "out_of_corpus": np.concatenate([ones, minus, 0 * ones]),
    }
    both = certify_kinds(scores, by_kind, 0.05, 0.05)
    assert both.feasible and both.delta == 0.05
    alone = {  # each kind alone at δ/2, on the shared grid of every question's score
        k: certify_threshold(scores[lab != -1], lab[lab != -1], 0.05, 0.025, candidates=scores)
        for k, lab in by_kind.items()
    }
    assert both.kind_thresholds == {k: c.threshold for k, c in alone.items()}
    assert both.threshold == alone["out_of_corpus"].threshold > alone["out_of_scope"].threshold
    for kind, c in both.per_kind.items():
        assert c.delta == 0.025 and c.threshold == both.threshold and c.kind == kind
        assert c.bound <= alone[kind].bound <= 0.05
    assert both.answer_rate == pytest.approx(np.mean(pos >= both.threshold))


def test_one_infeasible_kind_makes_the_family_infeasible() -> None:
    scores = np.array([0.9, 0.8, 0.1, 0.2] + [0.05] * 200)
    by_kind = {
        "few": np.array([1, 1, 0, 0] + [-1] * 200),
        "many": np.array([1, 1, -1, -1] + [0] * 200),
    }
    both = certify_kinds(scores, by_kind, 0.05, 0.05)
    assert not both.feasible and both.threshold == math.inf
    assert not both.per_kind["few"].feasible and both.per_kind["few"].bound > 0.05


def test_realised_counts_answers_on_held_out_data() -> None:
    r = realised([0.1, 0.6, 0.7, 0.4, 0.9], [0, 0, 1, 1, 1], 0.5)
    assert (r.n_neg, r.false_answers, r.n_pos, r.answered) == (2, 1, 3, 2)
    assert r.false_answer_rate == 0.5 and r.answer_rate == pytest.approx(2 / 3)


def _draw(seed: int, n_neg: int, n_pos: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    scores = np.concatenate([rng.beta(2, 5, n_neg), rng.beta(5, 2, n_pos)])
    return scores, np.array([0] * n_neg + [1] * n_pos)


def test_bound_holds_in_at_least_95_percent_of_seeded_repetitions() -> None:
    """Negatives ~ Beta(2, 5), positives ~ Beta(5, 2): the TRUE false-answer rate at threshold t
    is Beta(2, 5)'s survival function at t. Over 400 seeded calibration samples (150 negatives
    each) the certified threshold's true rate must be ≤ α in at least 1 − δ of them.

    For continuous scores the miss probability is exactly P(Binomial(n, α) ≤ k_max), k_max the
    most false answers the bound allows (1.8% here; n = 300 would give 3.4%, too close to δ for
    a few hundred seeds to show reliably), so the observed share must also sit near it."""
    alpha, delta, seeds, n_neg = 0.05, 0.05, 400, 150
    k_max = max(k for k in range(n_neg) if clopper_pearson_upper(k, n_neg, delta) <= alpha)
    p_miss = binom.cdf(k_max, n_neg, alpha)
    missed, naive_missed, answer = 0, 0, []
    for seed in range(seeds):
        scores, labels = _draw(seed, n_neg, 300)
        c = certify_threshold(scores, labels, alpha, delta)
        assert c.feasible and c.false_answers <= k_max
        missed += beta.sf(c.threshold, 2, 5) > alpha
        answer.append(beta.sf(c.threshold, 5, 2))
        # the uncertified rule (empirical rate ≤ α) for contrast: it must miss often
        neg = np.sort(scores[labels == 0])
        naive_missed += beta.sf(neg[n_neg - int(alpha * n_neg)], 2, 5) > alpha
    assert missed / seeds <= delta
    assert abs(missed / seeds - p_miss) <= 3 * math.sqrt(p_miss * (1 - p_miss) / seeds)
    assert naive_missed / seeds > 0.3  # the test tells a bound from a point estimate
    assert np.mean(answer) > 0.5  # and the certified gate still answers most positives


def _clustered(rng: np.random.Generator, n_units: int) -> tuple[np.ndarray, np.ndarray]:
    """Negative questions in units (1 + Poisson(3) each) sharing a unit effect: scores of one
    unit rise and fall together, as questions about one verse do."""
    effect = rng.normal(0.0, 1.2, n_units)
    unit = np.repeat(np.arange(n_units), 1 + rng.poisson(3, n_units))
    return expit(-2.0 + effect[unit] + 0.4 * rng.normal(size=len(unit))), unit


def test_unit_bound_holds_on_clustered_data_where_the_question_bound_does_not() -> None:
    """The true rates come from a reference population of 200k units: P(a unit has a negative
    question at or above t) for the unit certificate, the share of negative questions at or above
    t for the per-question one. Over 400 seeded calibration samples (120 negative units, ~480
    questions), the unit certificate's true rate is ≤ α in at least 1 − δ of them; the
    per-question certificate, which counts the correlated questions as independent, misses far
    more often than δ (18% with these settings)."""
    alpha, delta, seeds = 0.05, 0.05, 400
    ref, ref_unit = _clustered(np.random.default_rng(12345), 200_000)
    unit_max = np.full(200_000, -np.inf)
    np.maximum.at(unit_max, ref_unit, ref)
    unit_max, ref = np.sort(unit_max), np.sort(ref)

    def above(sorted_values: np.ndarray, t: float) -> float:
        return 1.0 - np.searchsorted(sorted_values, t, side="left") / len(sorted_values)

    unit_missed = question_missed = 0
    answer = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        neg, unit = _clustered(rng, 120)
        pos = expit(1.0 + rng.normal(size=300))
        scores = np.concatenate([neg, pos])
        labels = np.r_[np.zeros(len(neg), int), np.ones(300, int)]
        units = np.r_[unit.astype(str), [f"pos{i}" for i in range(300)]]
        by_unit = certify_threshold(scores, labels, alpha, delta, units=units)
        assert by_unit.n_neg == len(np.unique(unit))  # units, not questions
        unit_missed += above(unit_max, by_unit.threshold) > alpha
        question_missed += (
            above(ref, certify_threshold(scores, labels, alpha, delta).threshold) > alpha
        )
        answer.append(by_unit.answer_rate)
    assert unit_missed / seeds <= delta
    assert question_missed / seeds > 2 * delta  # the check tells the two certificates apart
    assert np.mean(answer) > 0.3  # and the unit certificate still answers


def test_units_count_once_with_their_highest_score() -> None:
    scores = np.array([0.9, 0.2, 0.3, 0.1, 0.8, 0.95])
    labels = np.array([0, 0, 0, 0, 1, 1])
    units = np.array(["a", "a", "b", "c", "x", "y"])  # unit a is answered from 0.9 down
    np.testing.assert_array_equal(np.sort(unit_maxima(scores[:4], units[:4])), [0.1, 0.3, 0.9])
    c = certify_threshold(scores, labels, 0.5, 0.5, candidates=[0.85], units=units)
    assert (c.n_neg, c.false_answers) == (3, 1)
    kinds = certify_kinds(scores, {"k": labels}, 0.5, 0.5, candidates=[0.85], units=units)
    assert (kinds.per_kind["k"].n_neg, kinds.per_kind["k"].false_answers) == (3, 1)
    with pytest.raises(ValueError, match="align"):
        certify_threshold(scores, labels, units=units[:3])
