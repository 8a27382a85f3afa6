"""Notebook 03's study code: every sentence of the conclusion follows from the numbers given;
the compute functions on a hand-built study; the recommendation files."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from study_factory import cand, make_study, question, study_set

from citegate.core import config
from citegate.evaluation import metrics as M
from citegate.research.study import Study
from citegate.studies import gate as gs


def _aurocs(low: float, high: float, auc: float) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "negatives": "out_of_corpus",
                "signal": "max_cosine",
                "AUROC": auc,
                "CI low": low,
                "CI high": high,
                "answerable": 40,
                "negative": 40,
            }
        ]
    )


def _frame(
    pos_scores: list[float], neg_scores: list[float], neg: str = "out_of_corpus"
) -> pd.DataFrame:
    """A signals frame: label, max cosine, group (one per question), gate decision."""
    rows = [("answerable", s) for s in pos_scores] + [(neg, s) for s in neg_scores]
    return pd.DataFrame(
        {
            "label": [r[0] for r in rows],
            "max_cosine": [r[1] for r in rows],
            "group": [f"g{i}" for i in range(len(rows))],
            "decision": ["answer" if r[1] >= 0.5 else "insufficient" for r in rows],
            "split": "test",
        }
    )


def _conclusion(design: pd.DataFrame, aurocs: pd.DataFrame | None = None, fpr: float = 0.05) -> str:
    test_points = pd.DataFrame(
        [{"point": "sufficient_score = 0.6", "tpr": 0.7, "fpr": fpr, "negatives": "out_of_corpus"}]
    )
    rec = {"bail_out_score": 0.4, "sufficient_score": 0.6, "good_enough_score": 0.7}
    return gs.conclusion(
        _aurocs(0.6, 0.8, 0.7) if aurocs is None else aurocs, design, test_points, rec, 0.10
    )


def test_a_bail_out_that_rejects_most_negatives_is_not_said_to_never_bail() -> None:
    # every answerable question above 0.40, 8 of 10 negatives below it
    frame = _frame([0.5 + 0.01 * i for i in range(10)], [0.1] * 8 + [0.45, 0.46])
    design = gs.operating_points(frame, "out_of_corpus", gs.DESIGN_POINTS)
    text = _conclusion(design)
    assert "never bails" not in text
    assert "rejects most out_of_corpus questions (80.0%)" in text


def test_a_bail_out_below_every_score_never_bails() -> None:
    frame = _frame([0.8] * 10, [0.7] * 10)
    text = _conclusion(gs.operating_points(frame, "out_of_corpus", gs.DESIGN_POINTS))
    assert "never bails" in text and "of out_of_corpus questions" in text


@pytest.mark.parametrize(
    ("low", "high", "auc", "claim"),
    [
        (0.6, 0.8, 0.7, "separates answerable from **out_of_corpus**"),
        (0.40, 0.52, 0.459, "does not separate answerable from **out_of_corpus** questions better"),
        (0.30, 0.45, 0.38, "*above* answerable ones, worse than chance"),
    ],
)
def test_separation_claim_follows_the_interval(
    low: float, high: float, auc: float, claim: str
) -> None:
    frame = _frame([0.8] * 10, [0.7] * 10)
    text = _conclusion(
        gs.operating_points(frame, "out_of_corpus", gs.DESIGN_POINTS), _aurocs(low, high, auc)
    )
    assert claim in text
    if low <= 0.5:
        assert "Max cosine separates" not in text


def test_test_split_rate_is_compared_with_its_target() -> None:
    design = gs.operating_points(_frame([0.8] * 4, [0.7] * 4), "out_of_corpus", gs.DESIGN_POINTS)
    assert "(within the 10% target)" in _conclusion(design, fpr=0.05)
    assert "above the 10% target" in _conclusion(design, fpr=0.2)
    assert "against out_of_corpus questions" in _conclusion(design)


def test_roc_band_resamples_the_same_groups_as_the_auroc_interval() -> None:
    rng = np.random.default_rng(1)
    base_pos, base_neg = rng.normal(0.65, 0.08, 15), rng.normal(0.55, 0.08, 15)
    frame = _frame(list(np.repeat(base_pos, 6)), list(np.repeat(base_neg, 6)))
    frame["group"] = [f"g{i // 6}" for i in range(len(frame))]  # 30 groups of 6 identical rows
    fig = gs.plot_roc_pr(frame, ["out_of_corpus"], {}, n_boot=50)
    xy = fig.axes[0].collections[0].get_paths()[0].vertices
    drawn = 0.5 * abs(
        np.dot(xy[:, 0], np.roll(xy[:, 1], 1)) - np.dot(xy[:, 1], np.roll(xy[:, 0], 1))
    )
    sub = gs.contrast(frame, "out_of_corpus")
    grid, _, lo, hi = M.roc_curve_band(sub["max_cosine"], sub["y"], n_boot=50, groups=sub["group"])
    _, _, row_lo, row_hi = M.roc_curve_band(sub["max_cosine"], sub["y"], n_boot=50)
    clustered_area = np.trapezoid(hi - lo, grid)
    assert drawn == pytest.approx(clustered_area, rel=1e-6)
    assert drawn > np.trapezoid(row_hi - row_lo, grid)


# --------------------------------------------------------------------------- compute, golden study


@pytest.fixture()
def study() -> Study:
    """Eight one-round questions whose max cosines are known: answerable 0.70, 0.60 (tune), 0.80,
    0.45 (test); out_of_corpus 0.35, 0.50 (tune), 0.30, 0.62 (test)."""
    rows = []
    cases = [
        ("answerable", "tune", [0.7, 0.5]),
        ("answerable", "tune", [0.6]),
        ("answerable", "test", [0.8, 0.3]),
        ("answerable", "test", [0.45]),
        ("out_of_corpus", "tune", [0.35]),
        ("out_of_corpus", "tune", [0.5, 0.2]),
        ("out_of_corpus", "test", [0.3]),
        ("out_of_corpus", "test", [0.62]),
    ]
    for i, (label, split, scores) in enumerate(cases):
        q = replace(question(f"q{i}", label), split=split)
        rows.append((q, [cand(10 * i + j, s) for j, s in enumerate(scores)], []))
    return make_study(study_set(rows))


def test_signals_per_question(study: Study) -> None:
    frame = gs.signals(study, study.config).set_index("qid")
    assert frame["max_cosine"].tolist() == [0.7, 0.6, 0.8, 0.45, 0.35, 0.5, 0.3, 0.62]
    assert frame.loc["q0", "top3_mean_cosine"] == pytest.approx(0.6)
    assert frame.loc["q0", "margin_top1_top2"] == pytest.approx(0.2)
    assert frame.loc["q1", "margin_top1_top2"] == pytest.approx(0.6)  # one note: top1 - 0
    assert frame["decision"].tolist() == [
        "answer",
        "answer",
        "answer",
        "weak",
        "insufficient",
        "weak",
        "insufficient",
        "answer",
    ]
    assert frame.loc["q3", "rounds"] == 2  # between the bounds: a second round
    assert set(frame.columns) >= set(gs.SIGNALS)


def test_auroc_recommend_test_report_and_headline(study: Study) -> None:
    frame = gs.signals(study, study.config)
    aurocs = gs.auroc_table(frame, ["out_of_corpus", "out_of_scope"], n_boot=50)
    assert aurocs["negatives"].unique().tolist() == ["out_of_corpus"]  # no out_of_scope rows
    cos = aurocs.set_index("signal").loc["max_cosine"]
    assert cos["AUROC"] == pytest.approx(13 / 16)
    assert (cos["answerable"], cos["negative"]) == (4, 4)
    rec = gs.recommend(frame, "out_of_corpus", 0.5, 0.0, 0.5)
    assert rec == {"bail_out_score": 0.5, "sufficient_score": 0.5, "good_enough_score": 0.6}
    points = gs.test_report(frame, ["out_of_corpus"], rec).set_index("point")
    assert points.loc["sufficient_score = 0.500", ["tpr", "fpr"]].tolist() == [0.5, 0.5]
    assert points.loc["full gate: does not bail out", ["tpr", "fpr"]].tolist() == [1.0, 0.5]
    metrics = gs.headline(aurocs, points.reset_index(), rec)
    assert metrics["rec_sufficient_score"] == 0.5
    assert metrics["auroc_max_cosine_vs_out_of_corpus"] == pytest.approx(0.8125)
    assert metrics["test_fpr_at_rec_sufficient_vs_out_of_corpus"] == 0.5


def test_two_scale_sweep_rates(study: Study) -> None:
    sweep = gs.two_scale_sweep(gs.signals(study, study.config), [0.01])
    rates = sweep.set_index(["scale", "label"])["answer_rate"]
    assert rates[("fusion scale", "answerable")] == 1.0
    assert rates[("fusion scale", "out_of_corpus")] == 0.5  # q4 and q6 have no fused dense hit
    assert rates[("reranker scale", "answerable")] == 0.0  # no reranker: no rerank scores


def test_recommendation_files_and_production_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config, "PRODUCTION", tmp_path / "absent.yaml")
    assert gs.production_base() == config.DESIGN
    rec = {"bail_out_score": 0.3, "sufficient_score": 0.7, "good_enough_score": 0.8}
    points = pd.DataFrame([{"point": "sufficient_score = 0.700", "tpr": 0.9, "fpr": 0.05}])
    gs.save_recommendation(tmp_path, config.DESIGN, rec, points, 0.1)
    saved = config.load_config(tmp_path / "recommended_config.yaml")
    assert saved == gs.recommended_config(config.DESIGN, rec)
    assert saved.sufficient_score == 0.7 and saved.cap == config.DESIGN.cap
    why = json.loads((tmp_path / "recommendation.json").read_text())
    assert why["thresholds"] == rec and why["target_false_answer_rate"] == 0.1
    assert why["test_operating_points"][0]["fpr"] == 0.05
