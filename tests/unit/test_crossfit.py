"""Experiment 05 cross-fitted over leave-out folds (`studies.gate_signals.compute.crossfit`):
every question scored once, out of fold, by a gate fit and certified on the other folds only."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from citegate.pipeline.signals import SIGNALS
from citegate.studies.gate_signals import compute as C
from citegate.studies.gate_signals.compute import crossfit as X


def fold_frame(n_units: int = 48, k: int = 4, seed: int = 3) -> pd.DataFrame:
    """A fold frame: `n_units` verse units of 3 questions per label, units dealt to k folds;
    answerable questions score higher; out-of-scope questions are their own unit."""
    rng = np.random.default_rng(seed)
    rows = []
    for label, mu in (("answerable", 0.86), ("out_of_corpus", 0.80), ("out_of_scope", 0.74)):
        for i in range(n_units * 3):
            unit = f"{label}:{i // 3}" if label != "out_of_scope" else f"oos:{i}"
            mc = float(rng.normal(mu, 0.02))
            sig = {s: float(rng.normal()) for s in SIGNALS} | {"max_cosine": mc}
            rows.append(
                {
                    "corpus": f"A-fold{(i // 3) % k + 1}",
                    "set": "s",
                    "qid": f"{label}-{i}",
                    "group": unit,
                    "unit": unit,
                    "label": label,
                    "audit": "",
                    "audited_label": label,
                    "split": "tune",
                    "language": "ru" if i % 5 == 0 else "en",
                    "decision": "answer",
                    "base": "A",
                    "cv_fold": (i // 3) % k + 1,
                    **sig,
                }
            )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return fold_frame()


@pytest.fixture(scope="module")
def cf(frame: pd.DataFrame) -> X.CrossFit:
    return X.cross_fit(frame, 0.10, 0.10, 0.5, 3)


def test_every_question_is_scored_once_in_its_own_fold(frame: pd.DataFrame, cf) -> None:
    for _, s in cf.scored.groupby(["labels", "level"]):
        assert sorted(s["qid"]) == sorted(frame["qid"])  # each question once
        folds = frame.set_index("qid")["cv_fold"]
        assert (s["fold"].to_numpy() == folds[s["qid"]].to_numpy()).all()
    assert X.FINAL not in set(cf.scored["fold"])  # the deployable gate scores nothing


def test_a_rotation_fits_on_the_other_folds_only(frame: pd.DataFrame, cf) -> None:
    for fold, rot in cf.rotations.groupby("fold"):
        tune = frame.assign(split=np.where(frame["cv_fold"] == fold, "test", "tune"))
        fit, cal = C.tune_parts(tune, 0.5)
        assert set(fit["cv_fold"]).isdisjoint({fold}) and set(cal["cv_fold"]).isdisjoint({fold})
        assert set(rot["n_fit"]) == {len(fit)}
        q = rot[(rot["level"] == "question") & (rot["negatives"] == "out_of_corpus")]
        assert q["n_neg cal"].iloc[0] == (cal["label"] == "out_of_corpus").sum()
        u = rot[(rot["level"] == "unit") & (rot["negatives"] == "out_of_corpus")]
        assert u["n_neg cal"].iloc[0] == cal.loc[cal["label"] == "out_of_corpus", "unit"].nunique()


def test_the_summary_pools_the_out_of_fold_answers(cf) -> None:
    sm = X.summary(cf, 50)
    row = sm[
        (sm["level"] == "question")
        & (sm["negatives"] == "out_of_corpus")
        & (sm["language"] == "all")
    ].iloc[0]
    s = cf.scored[(cf.scored["level"] == "question") & (cf.scored["labels"] == "raw")]
    pos = s[s["label"] == "answerable"]["answered"]
    assert row["answer rate"] == pytest.approx(pos.mean()) and row["answerable"] == len(pos)
    assert row["AR low (clustered)"] <= row["answer rate"] <= row["AR high (clustered)"]
    assert row["folds"] == 4 and 0 <= row["folds certified"] <= 4
    assert row["answer rate"] > 0.3  # separable data: the certified gate answers


def test_audited_labels_take_judged_questions_out_of_the_negatives(frame: pd.DataFrame) -> None:
    judged = frame.copy()
    ooc = judged.index[judged["label"] == "out_of_corpus"][:30]
    judged.loc[ooc, "audit"] = "answerable"
    judged.loc[ooc, "audited_label"] = "held_out_answerable"
    cf = X.cross_fit(judged, 0.10, 0.10, 0.5, 3)
    assert set(cf.rotations["labels"]) == {"raw", "audited"}
    q = cf.rotations[
        (cf.rotations["level"] == "question") & (cf.rotations["negatives"] == "out_of_corpus")
    ]
    raw, aud = q[q["labels"] == "raw"], q[q["labels"] == "audited"]
    assert (aud["n_neg cal"].to_numpy() <= raw["n_neg cal"].to_numpy()).all()
    assert (aud["n_neg cal"].to_numpy() < raw["n_neg cal"].to_numpy()).any()


def test_language_strata_add_up_and_the_report_is_computed(frame: pd.DataFrame, cf) -> None:
    from citegate.studies.gate_signals import report as R

    named = frame.assign(address_found=(frame.index % 4 == 0).astype(float))
    cfa = X.cross_fit(named, 0.10, 0.10, 0.5, 3)
    t = X.language_by_address(cfa, n_boot=20)
    for _, g in t.groupby(["corpus", "language"]):
        g = g.set_index("questions")
        assert (
            g.loc["all", "answerable"]
            == g.loc["names indexed verses", "answerable"] + g.loc["other", "answerable"]
        )
    assert any("ru vs en" in line for line in R.language_address_lines(t))
    table = X.summary(cf, 20)
    metrics = C.crossfit_metrics(table, 0.10)
    row = table[(table["level"] == "unit") & (table["language"] == "all")].iloc[0]
    assert metrics["A_folds_a10_unit_answer_rate"] == pytest.approx(row["answer rate"])
    lines = R.crossfit_lines(table, 0.10, {"A": 2.0})
    assert lines[-1].startswith("- Goal A") and "not met" in lines[-1]  # 2.0 cannot be met
    assert "met" in R.crossfit_lines(table, 0.10, {"A": 0.0})[-1]


def test_the_deployable_gate_never_sees_the_test_split(frame: pd.DataFrame) -> None:
    half = frame.assign(split=np.where(frame["group"].str.len() % 2 == 0, "tune", "test"))
    cf = X.cross_fit(half, 0.10, 0.10, 0.5, 3)
    gate, point = cf.deployable("A")
    tune = half[half["split"] == "tune"]
    fit, cal = C.tune_parts(tune, 0.5)
    assert gate.n_fit == len(fit)
    assert (
        point.kind("out_of_corpus").n_neg
        == cal.loc[cal["label"] == "out_of_corpus", "unit"].nunique()
    )  # type: ignore[union-attr]
    assert "per unit" in point.calibrated_on and cf.corpora == ["A"]
    with pytest.raises(KeyError, match="no deployable"):
        cf.deployable("B")


def test_the_deployable_gate_falls_back_to_the_view_that_certifies(frame: pd.DataFrame) -> None:
    judged = frame.copy()
    ooc = judged.index[judged["label"] == "out_of_corpus"]
    judged.loc[ooc[:-6], ["audit", "audited_label"]] = ["answerable", "held_out_answerable"]
    cf = X.cross_fit(judged, 0.30, 0.10, 0.5, 3)  # 6 audited negatives cannot certify 0.30
    _, audited = cf.finals[("A", "audited", "unit")]
    assert not audited.certified.feasible
    _, point = cf.deployable("A")
    assert point.certified.feasible and "raw labels" in point.calibrated_on
