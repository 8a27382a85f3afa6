"""Tests of citegate.evaluation.metrics: against scikit-learn where it has the metric, by hand otherwise."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import ndcg_score, precision_recall_curve, roc_auc_score, roc_curve

from citegate.evaluation import metrics as m
from citegate.evaluation.metrics import calibration, operation, retrieval, roc


@pytest.fixture()
def noisy() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """200 scores in [0, 1] that separate the classes imperfectly, in 20 groups of 10."""
    rng = np.random.default_rng(42)
    labels = rng.integers(0, 2, 200)
    scores = np.clip(0.5 + 0.2 * (labels - 0.5) + rng.normal(0, 0.2, 200), 0, 1)
    groups = np.repeat(np.arange(20), 10)
    return scores, labels, groups


# --------------------------------------------------------------------------- retrieval


def test_recall_at_k_hand() -> None:
    ranked = [[1, 2, 3], [4, 5, 6], [7, 8, 9], [1]]
    gold = [{3}, {9, 4}, {10}, set()]
    assert m.recall_at_k(ranked, gold, k=1) == pytest.approx(1 / 3)
    assert m.recall_at_k(ranked, gold, k=3) == pytest.approx(2 / 3)
    assert m.recall_at_k(ranked, gold) == pytest.approx(2 / 3)


def test_recall_at_k_all_empty_gold_is_nan() -> None:
    assert math.isnan(m.recall_at_k([[1]], [set()]))


def test_gold_recall_hand() -> None:
    ranked = [[1, 2, 3, 4], [5, 6], [7]]
    # q0: address A = {2, 20} (hit at rank 2), B = {4} (rank 4), C = {30} (never retrieved)
    # q1: one address {6} (rank 2); q2: no gold addresses, skipped
    gold_groups = [[{2, 20}, {4}, {30}], [{6}], []]
    assert m.gold_recall(ranked, gold_groups, k=1) == pytest.approx(0.0)
    assert m.gold_recall(ranked, gold_groups, k=2) == pytest.approx((1 / 3 + 1) / 2)
    assert m.gold_recall(ranked, gold_groups, k=4) == pytest.approx((2 / 3 + 1) / 2)
    assert m.gold_recall(ranked, gold_groups) == pytest.approx((2 / 3 + 1) / 2)


def test_gold_recall_address_with_several_fragments_counts_once() -> None:
    assert m.gold_recall([[1, 2]], [[{1, 2}, {3}]]) == pytest.approx(0.5)


def test_mrr_hand() -> None:
    ranked = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    gold = [{1}, {6, 5}, {10}]
    assert m.mrr(ranked, gold) == pytest.approx((1 + 1 / 2 + 0) / 3)
    assert m.mrr(ranked, gold, k=1) == pytest.approx(1 / 3)


def test_ndcg_matches_sklearn() -> None:
    rng = np.random.default_rng(0)
    ranked, gold = [], []
    for _ in range(30):
        ids = rng.permutation(20)
        ranked.append(ids.tolist())
        gold.append(set(rng.choice(20, size=rng.integers(1, 6), replace=False).tolist()))
    for k in (1, 3, 5, 10):
        y_true = np.array(
            [[1.0 if i in g else 0.0 for i in r] for r, g in zip(ranked, gold, strict=True)]
        )
        y_score = np.tile(np.arange(20, 0, -1, dtype=float), (30, 1))  # rank order, no ties
        assert m.ndcg_at_k(ranked, gold, k=k) == pytest.approx(ndcg_score(y_true, y_score, k=k))


def test_ndcg_hand() -> None:
    # one gold at rank 2 of 2 golds: dcg = 1/log2(3), idcg = 1 + 1/log2(3)
    expected = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert m.ndcg_at_k([[5, 1, 6]], [{1, 2}], k=3) == pytest.approx(expected)


def test_retrieval_validation() -> None:
    with pytest.raises(ValueError, match="length"):
        m.recall_at_k([[1]], [{1}, {2}])
    with pytest.raises(ValueError, match="k must"):
        m.mrr([[1]], [{1}], k=0)


# --------------------------------------------------------------------------- calibration


def test_ece_hand() -> None:
    assert m.expected_calibration_error([0.1, 0.9], [0, 1], n_bins=10) == pytest.approx(0.1)
    assert m.expected_calibration_error([0.0, 1.0], [0, 1]) == pytest.approx(0.0)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_reliability_matches_sklearn(noisy: tuple, strategy: str) -> None:
    scores, labels, _ = noisy
    rel = m.reliability(scores, labels, n_bins=8, strategy=strategy)
    prob_true, prob_pred = calibration_curve(labels, scores, n_bins=8, strategy=strategy)
    nonempty = rel.count > 0
    np.testing.assert_allclose(rel.frac_positive[nonempty], prob_true)
    np.testing.assert_allclose(rel.mean_score[nonempty], prob_pred)
    assert rel.count.sum() == len(scores)
    weights = rel.count[nonempty] / len(scores)
    assert rel.ece == pytest.approx(float(np.sum(weights * np.abs(prob_true - prob_pred))))
    assert len(rel.bin_lower) == len(rel.bin_upper) == 8


def test_reliability_rejects_out_of_range_and_bad_labels() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        m.reliability([0.2, 1.5], [0, 1])
    with pytest.raises(ValueError, match="0/1"):
        m.reliability([0.2, 0.5], [0, 2])
    with pytest.raises(ValueError, match="length"):
        m.reliability([0.2, 0.5], [0])
    with pytest.raises(ValueError, match="strategy"):
        m.reliability([0.2, 0.5], [0, 1], strategy="nope")  # type: ignore[arg-type]


def test_minmax_per_group() -> None:
    out = m.minmax_per_group([1.0, 3.0, 2.0, 7.0, 7.0], ["a", "a", "a", "b", "b"])
    np.testing.assert_allclose(out, [0.0, 1.0, 0.5, 0.5, 0.5])


def test_sigmoid_per_group() -> None:
    out = m.sigmoid_per_group([1.0, 3.0, 5.0, 5.0], [0, 0, 1, 1])
    z = 1 / np.std([1.0, 3.0])
    np.testing.assert_allclose(out, [1 / (1 + np.exp(z)), 1 / (1 + np.exp(-z)), 0.5, 0.5])


def test_group_length_checked() -> None:
    with pytest.raises(ValueError, match="groups"):
        m.minmax_per_group([1.0, 2.0], [0])


# --------------------------------------------------------------------------- ROC


def test_auroc_ci(noisy: tuple) -> None:
    scores, labels, groups = noisy
    ci = m.auroc_ci(scores, labels, n_boot=300)
    assert ci.auroc == pytest.approx(roc_auc_score(labels, scores))
    assert ci.lower <= ci.auroc <= ci.upper
    assert ci.n_pos + ci.n_neg == len(labels) and ci.n_pos == labels.sum()
    assert m.auroc_ci(scores, labels, n_boot=300) == ci  # same seed, same interval
    assert m.auroc_ci(scores, labels, n_boot=300, seed=1) != ci
    clustered = m.auroc_ci(scores, labels, n_boot=300, groups=groups)
    assert clustered.auroc == ci.auroc
    assert clustered.lower <= clustered.auroc <= clustered.upper


def test_fast_auroc_equals_sklearn_with_ties() -> None:
    scores = np.array([0.1, 0.4, 0.4, 0.4, 0.8, 0.2, 0.8])
    labels = np.array([0, 1, 0, 1, 1, 0, 0])
    assert roc._fast_auroc(scores, labels) == pytest.approx(roc_auc_score(labels, scores))


def test_auroc_ci_needs_both_classes() -> None:
    with pytest.raises(ValueError, match="both classes"):
        m.auroc_ci([0.1, 0.2], [1, 1])


def test_mean_per_group_auroc() -> None:
    scores = [0.1, 0.9, 0.8, 0.2, 0.5, 0.6]
    labels = [0, 1, 0, 1, 1, 1]
    groups = [0, 0, 1, 1, 2, 2]  # group 2 has one class only
    assert m.mean_per_group_auroc(scores, labels, groups) == (0.5, 2)


def test_roc_curve_band(noisy: tuple) -> None:
    scores, labels, _ = noisy
    fpr, tpr, lower, upper = m.roc_curve_band(scores, labels, n_boot=100)
    np.testing.assert_allclose(fpr, np.linspace(0, 1, 101))
    ref_fpr, ref_tpr, _ = roc_curve(labels, scores)
    np.testing.assert_allclose(tpr, np.interp(fpr, ref_fpr, ref_tpr))
    assert tpr[-1] == 1.0
    assert np.all(lower <= upper) and np.all(np.diff(tpr) >= 0)
    again = m.roc_curve_band(scores, labels, n_boot=100)
    np.testing.assert_array_equal(again[2], lower)


def test_pr_curve_matches_sklearn(noisy: tuple) -> None:
    scores, labels, _ = noisy
    curve = m.pr_curve(scores, labels)
    precision, recall, thresholds = precision_recall_curve(labels, scores)
    np.testing.assert_allclose(curve.x, recall[::-1])
    np.testing.assert_allclose(curve.y, precision[::-1])
    assert curve.thresholds[0] == np.inf
    np.testing.assert_allclose(curve.thresholds[1:], thresholds[::-1])


# --------------------------------------------------------------------------- gate operation


def test_risk_coverage_hand() -> None:
    rc = m.risk_coverage([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 1])
    np.testing.assert_allclose(rc.thresholds, [0.9, 0.8, 0.7, 0.6])
    np.testing.assert_allclose(rc.coverage, [0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(rc.risk, [0.0, 1 / 2, 1 / 3, 1 / 4])
    assert m.aurc(rc) == pytest.approx((0 + 1 / 2 + 1 / 3 + 1 / 4) / 4)


def test_risk_coverage_ties_share_a_point() -> None:
    rc = m.risk_coverage([0.5, 0.9, 0.5, 0.1], [0, 1, 1, 0])
    np.testing.assert_allclose(rc.thresholds, [0.9, 0.5, 0.1])
    np.testing.assert_allclose(rc.coverage, [0.25, 0.75, 1.0])
    np.testing.assert_allclose(rc.risk, [0.0, 1 / 3, 2 / 4])


def test_operating_point_hand() -> None:
    op = m.operating_point([0.9, 0.8, 0.5, 0.3, 0.2], [1, 0, 1, 1, 0], threshold=0.5)
    assert op["tpr"] == pytest.approx(2 / 3)
    assert op["fpr"] == pytest.approx(1 / 2)
    assert op["coverage"] == pytest.approx(3 / 5)
    assert op["risk"] == pytest.approx(1 / 3)
    assert op["precision"] == pytest.approx(2 / 3)
    assert op["n"] == 5
    assert math.isnan(m.operating_point([0.1], [1], threshold=0.5)["risk"])


def test_threshold_for_fpr_boundaries() -> None:
    scores = [0.2, 0.5, 0.5, 0.8]
    labels = [0, 0, 1, 1]  # a negative ties the positive at 0.5
    assert m.threshold_for_fpr(scores, labels, 0.4) == 0.8  # 0.5 would answer 1/2 negatives
    assert m.threshold_for_fpr(scores, labels, 0.5) == 0.5  # exactly on target is allowed
    assert m.threshold_for_fpr(scores, labels, 1.0) == 0.2
    assert m.threshold_for_fpr(scores, labels, 0.0) == 0.8
    assert m.threshold_for_fpr([0.9, 0.1], [0, 1], 0.0) == math.inf
    op = m.operating_point(scores, labels, m.threshold_for_fpr(scores, labels, 0.5))
    assert op["fpr"] <= 0.5


def test_threshold_for_fpr_float_target() -> None:
    scores = np.arange(101) / 101
    labels = np.zeros(101, dtype=int)
    labels[-1] = 1  # 100 negatives
    target = 1 - 0.93  # 0.06999999999999995: arithmetic noise must not cost a negative
    t = m.threshold_for_fpr(scores, labels, target)
    assert m.operating_point(scores, labels, t)["fpr"] == pytest.approx(0.07)


def test_best_threshold_per_group() -> None:
    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.3, 0.4]
    labels = [0, 0, 1, 1, 0, 0, 1, 1, 1, 1]
    groups = ["a", "a", "a", "a", "b", "b", "b", "b", "c", "c"]
    assert m.best_threshold_per_group(scores, labels, groups) == {"a": 0.3, "b": 0.7}


def test_global_vs_oracle_threshold() -> None:
    # group a separates at 0.3, group b at 0.7: no single threshold separates both
    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    labels = [0, 0, 1, 1, 0, 0, 1, 1]
    groups = [0, 0, 0, 0, 1, 1, 1, 1]
    res = m.global_vs_oracle_threshold(scores, labels, groups)
    assert res["oracle_bal_acc"] == 1.0
    assert res["global_bal_acc"] == pytest.approx(0.75)
    assert res["global_threshold"] == 0.3
    assert res["loss"] == pytest.approx(0.25) and res["loss"] > 0
    with pytest.raises(ValueError, match="both classes"):
        m.global_vs_oracle_threshold([0.1, 0.2], [1, 1], [0, 0])


def test_global_equals_oracle_when_one_threshold_fits() -> None:
    res = m.global_vs_oracle_threshold([0.1, 0.6, 0.2, 0.7], [0, 1, 0, 1], [0, 0, 1, 1])
    assert res["loss"] == 0.0 and res["global_bal_acc"] == 1.0


def test_rate_ci_is_wilson() -> None:
    successes = [True] * 30 + [False] * 70
    rate, lo, hi = m.rate_ci(successes)
    assert rate == pytest.approx(0.3)
    # Wilson 95% for 30/100: 0.2189 - 0.3958 (Newcombe 1998, method 3)
    assert (lo, hi) == (pytest.approx(0.2189, abs=1e-4), pytest.approx(0.3958, abs=1e-4))
    assert m.rate_ci(successes, alpha=0.5)[2] < hi  # a 50% interval is narrower
    with pytest.raises(ValueError, match="empty"):
        m.rate_ci([])


def test_rate_ci_is_not_a_point_at_zero_or_all() -> None:
    rate, lo, hi = m.rate_ci([False] * 40)
    assert (rate, lo) == (0.0, 0.0) and hi > 0.08  # 0 of 40 is not "certainly never"
    rate, lo, hi = m.rate_ci([True] * 40)
    assert (rate, hi) == (1.0, pytest.approx(1.0)) and lo < 0.92


def test_no_bootstrap_rate_ci_name_remains() -> None:
    assert not hasattr(m, "bootstrap_rate_ci")


def test_the_package_reexports_every_family_name() -> None:
    families = (retrieval, calibration, roc, operation)
    names = [n for f in families for n in f.__all__]
    assert sorted(names) == sorted(m.__all__) and len(set(names)) == len(names)
    assert all(getattr(m, n) is getattr(f, n) for f in families for n in f.__all__)


def test_roc_band_follows_the_roc_path() -> None:
    # ROC points (0, 0), (0, 0.5), (0.5, 1), (1, 1): a vertical step, then a diagonal (a tie)
    fpr, tpr, lower, upper = m.roc_curve_band(
        [0.9, 0.5, 0.5, 0.1], [1, 0, 1, 0], n_boot=20, grid=[0.0, 0.25, 0.5, 1.0]
    )
    np.testing.assert_allclose(tpr, [0.5, 0.75, 1.0, 1.0])
    assert lower.shape == upper.shape == (4,)


def test_rate_ci_or_nan_is_nan_when_empty_and_wilson_otherwise() -> None:
    assert all(np.isnan(v) for v in m.rate_ci_or_nan([]))
    assert m.rate_ci_or_nan([1, 0, "yes", None]) == m.rate_ci([True, False, True, False])


def _clustered() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """40 groups of 10 near-identical rows: the effective sample is 40, not 400."""
    rng = np.random.default_rng(7)
    labels = np.repeat(rng.integers(0, 2, 40), 10)
    base = np.repeat(rng.normal(0, 1, 40), 10) + 0.8 * labels
    scores = base + rng.normal(0, 1e-3, 400)
    return scores, labels, np.repeat(np.arange(40), 10)


def test_roc_band_resamples_groups_like_the_auroc_ci() -> None:
    scores, labels, groups = _clustered()
    _, _, row_lo, row_hi = m.roc_curve_band(scores, labels, n_boot=200)
    _, tpr, lo, hi = m.roc_curve_band(scores, labels, n_boot=200, groups=groups)
    inner = slice(10, 91)  # away from the corners, where every band is 0 or 1
    assert np.mean((hi - lo)[inner]) > 1.5 * np.mean((row_hi - row_lo)[inner])
    assert np.all(lo <= tpr + 1e-12) and np.all(tpr <= hi + 1e-12)
    again = m.roc_curve_band(scores, labels, n_boot=200, groups=groups)
    np.testing.assert_array_equal(again[2], lo)
