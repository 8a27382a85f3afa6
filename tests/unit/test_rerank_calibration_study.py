"""Notebook 02: the pairs and the per-score table on a hand-built study whose numbers are known by
hand, and the conclusion: which score carries one threshold follows from the losses given."""

from __future__ import annotations

import pandas as pd
import pytest
from study_factory import cand, make_study, question, study_set

from citegate.research.study import Study
from citegate.studies import rerank_calibration as cal


@pytest.fixture()
def study() -> Study:
    """Rerank separates gold from the rest in both questions at one threshold (0.9 vs 0.2); the
    cosine separates each question alone (0.80 vs 0.60, 0.45 vs 0.30) but no single cosine
    threshold serves both. q3 has only its gold, n1 no gold; candidate 3 dies at the pre-floor."""
    return make_study(
        study_set(
            [
                (
                    question("q1"),
                    [cand(1, 0.8, rerank_score=0.9), cand(2, 0.6, rerank_score=0.2), cand(3, 0.1)],
                    [1],
                ),
                (
                    question("q2", language="ru"),
                    [cand(5, 0.45, rerank_score=0.9), cand(6, 0.3, rerank_score=0.2)],
                    [5],
                ),
                (question("q3"), [cand(8, 0.9)], [8]),
                (question("n1", label="out_of_corpus"), [cand(9, 0.5)], []),
            ]
        )
    )


def test_pairs_are_the_rerank_stage_candidates_of_questions_with_gold(study: Study) -> None:
    frame = cal.pairs(study, study.config)
    assert frame["qid"].tolist() == ["q1", "q1", "q2", "q2", "q3"]  # not 3 (floor), not n1
    assert frame["gold"].tolist() == [1, 0, 1, 0, 1]
    assert frame["rerank_minmax"].tolist() == [1.0, 0.0, 1.0, 0.0, 0.5]  # one pair: 0.5
    assert frame["cosine_minmax"].tolist() == [1.0, 0.0, 1.0, 0.0, 0.5]
    assert set(cal.SCORES) <= set(frame.columns)


def test_score_table_global_threshold_loss(study: Study) -> None:
    table = cal.score_table(cal.pairs(study, study.config), n_boot=20).set_index("score")
    cos, rr = table.loc["cosine"], table.loc["rerank"]
    assert cos["pooled AUROC"] == pytest.approx(0.75) and rr["pooled AUROC"] == 1.0
    assert cos["mean per-question AUROC"] == 1.0 and cos["questions with both classes"] == 2
    assert cos["global threshold"] == 0.45 and cos["global bal. acc."] == pytest.approx(0.75)
    assert cos["loss vs oracle"] == pytest.approx(0.25) and rr["loss vs oracle"] == 0.0
    assert cos["best-threshold IQR"] == pytest.approx(0.175)
    assert rr["best-threshold IQR"] == 0.0
    metrics = cal.headline(table.reset_index())
    assert metrics["global_threshold_loss_cosine"] == pytest.approx(0.25)
    assert metrics["pooled_auroc_rerank"] == 1.0
    assert "**rerank** loses less" in cal.conclusion(table.reset_index(), "ltr/default")
    best = cal.best_thresholds(cal.pairs(study, study.config))
    assert best[best["score"] == "cosine"]["threshold"].tolist() == [0.8, 0.45]


def _table(loss_cosine: float, loss_rerank: float) -> pd.DataFrame:
    row = {
        "global threshold": 0.5,
        "global bal. acc.": 0.8,
        "oracle bal. acc.": 0.9,
        "best-threshold IQR": 0.1,
        "pooled AUROC": 0.85,
        "mean per-question AUROC": 0.8,
        "ECE": 0.1,
    }
    return pd.DataFrame(
        [
            {"score": "cosine", **row, "loss vs oracle": loss_cosine},
            {"score": "rerank", **row, "loss vs oracle": loss_rerank},
        ]
    )


def test_equal_losses_name_no_winner() -> None:
    text = cal.conclusion(_table(0.136, 0.136), "none")
    assert "better carrier" not in text
    assert "neither carries an absolute threshold better" in text
    assert "the rerank score *is* the cosine" in text


def test_the_score_that_loses_less_is_named() -> None:
    text = cal.conclusion(_table(0.136, 0.054), "ltr/default")
    assert "**rerank** loses less" in text and "0.082 balanced-accuracy points" in text
    assert "*is* the cosine" not in text
    text = cal.conclusion(_table(0.05, 0.2), "ltr/default")
    assert "**cosine** loses less" in text


def test_the_conclusion_says_what_the_dense_search_means_for_reproducing_it() -> None:
    """Exact lanes give the same numbers on a fresh database; HNSW lanes move them by
    the measured build spread, and the report says so either way (and nothing when not told)."""
    table = _table(0.136, 0.054)
    exact = cal.conclusion(table, "ltr/default", exact_dense=True)
    assert "searched exactly" in exact and "gives the same numbers" in exact
    hnsw = cal.conclusion(table, "ltr/default", exact_dense=False)
    assert "HNSW index (production)" in hnsw and "4.4e-04" in hnsw and "exact_dense: true" in hnsw
    assert "Dense lanes" not in cal.conclusion(table, "ltr/default")


def test_pairs_skip_what_only_the_named_lane_found_when_the_config_does_not_pin_it() -> None:
    """A trace collected with the named lane, read under a config that does not pin spelled-out
    verse names: the lane's own find is not a candidate of that config (no KeyError, no pair),
    and under a config that pins it, it is."""
    named = cand(4, 0.2, lanes=("address:named@r1",), addr_label="BG 2.47")
    study = make_study(
        study_set([(question("q1"), [cand(1, 0.8, rerank_score=0.9), named], [1, 4])])
    )
    off = cal.pairs(study, study.config.replace(pin_named_verses=False))
    assert off["gold"].tolist() == [1]
    on = cal.pairs(study, study.config.replace(pin_named_verses=True))
    assert sorted(on["gold"].tolist()) == [1, 1]
