"""Notebook 05's study code: the signal frame of a hand-built study, standardisation fit on tune
only, grouped folds and the calibration part never splitting a group, the certified-threshold path
(calibration part only, bound ≤ α, realised rates on test), the transfer table's shape, the
production model file scoring exactly as scikit-learn, and the recommendation files."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from study_factory import cand, make_study, question, study_set

from citegate.core import paths
from citegate.core.config import DESIGN, load_config
from citegate.core.errors import ConfigError
from citegate.evaluation.certify import clopper_pearson_upper
from citegate.models import gate_model as gm
from citegate.models.ltr.features import FEATURE_NAMES
from citegate.models.ltr.fit import model_factories
from citegate.models.ltr.model import LTRReranker
from citegate.pipeline.signals import SIGNALS, IndexFacts
from citegate.research.tables import rows_where
from citegate.studies import gate_signals as sg
from citegate.studies.gate_signals import compute as C
from citegate.studies.gate_signals import report as R
from citegate.studies.gate_signals.compute import units as U
from citegate.studies.gate_signals.run import SignalInputs

FACTS = IndexFacts(("c",), frozenset({"BG 2.47"}), {}, 10)


# ---------------------------------------------------------------- a hand-built study


def _q(qid: str, label: str, lang: str, split: str, group: str, text: str | None = None):
    """A question whose text is in its language's script (production reads the language from
    the text, and so does the study)."""
    default = f"вопрос {qid}" if lang == "ru" else qid
    return replace(question(qid, label, lang), split=split, group=group, text=text or default)


def _study():
    """Six questions: answerable en/ru on tune and test, one negative of each kind."""
    rows = [
        (_q("a1", "answerable", "en", "tune", "g1"), [cand(1, 0.90), cand(2, 0.80)], [1]),
        (_q("a2", "answerable", "en", "tune", "g2"), [cand(3, 0.86)], [3]),
        (_q("a3", "answerable", "ru", "tune", "g3"), [cand(4, 0.80), cand(5, 0.70)], [4]),
        (_q("a4", "answerable", "ru", "tune", "g4"), [cand(6, 0.76)], [6]),
        (_q("t1", "answerable", "ru", "test", "g5"), [cand(7, 0.99)], [7]),
        (
            _q("o1", "out_of_corpus", "en", "tune", "g6", "In Chapter 2, Verse 47, what is duty?"),
            [cand(8, 0.60)],
            [],
        ),
        (_q("s1", "out_of_scope", "en", "test", "g7"), [cand(9, 0.50)], []),
    ]
    return make_study(study_set(rows))


def test_signal_frame_has_one_row_per_question_with_every_signal() -> None:
    study = _study()
    frame = C.signal_frame({"c": study}, {"c": SignalInputs(FACTS, {})})
    assert len(frame) == 7 and list(frame["qid"]) == ["a1", "a2", "a3", "a4", "t1", "o1", "s1"]
    assert set(C.COLUMNS) <= set(frame.columns) and (frame["corpus"] == "c").all()
    row = frame.set_index("qid").loc["a1"]
    assert row["max_cosine"] == pytest.approx(0.90) and row["margin_top1_top2"] == pytest.approx(
        0.1
    )
    named = frame.set_index("qid").loc["o1"]
    assert named["address_named"] == 1.0 and named["address_found"] == 1.0  # BG 2.47 is indexed
    assert np.isnan(frame.set_index("qid").loc["a2", "margin_top1_top2"])  # one note only
    # audit columns exist (empty: no audit) and audited_label falls back to the label
    assert (frame["audit"] == "").all() and (frame["audited_label"] == frame["label"]).all()


def test_language_z_is_fit_on_tune_answerable_questions_only() -> None:
    frame = C.signal_frame({"c": _study()}, {"c": SignalInputs(FACTS, {})})
    stats = C.language_stats(frame)
    assert stats["en"] == pytest.approx((0.88, 0.02))  # a1, a2
    assert stats["ru"] == pytest.approx((0.78, 0.02))  # a3, a4: not t1 (test), not o1
    z = frame.set_index("qid")["max_cosine_lang_z"]
    assert z["t1"] == pytest.approx((0.99 - 0.78) / 0.02)  # a test question uses tune's stats
    moved = frame.copy()
    moved.loc[moved["split"] == "test", "max_cosine"] = 0.1  # test values never move the stats
    moved.loc[moved["label"] != "answerable", "max_cosine"] = 0.1
    assert C.language_stats(moved) == stats
    assert C.language_z([0.5], ["hi"], stats)[0] == pytest.approx(
        (0.5 - stats["*"][0]) / stats["*"][1]
    )


def test_the_study_reads_the_language_from_the_text_as_production_does() -> None:
    """A question its set labels "en" but written in Cyrillic is standardised, split and scored
    as Russian, the key `pipeline.gate.question_language` gives the served gate; the set's label
    stays in `set_language`."""
    study = _study()
    (s,) = study.sets.values()
    s.questions[0] = replace(s.questions[0], text="что такое долг?")  # a1, labelled en
    frame = C.signal_frame({"c": study}, {"c": SignalInputs(FACTS, {})}).set_index("qid")
    assert (frame.loc["a1", "language"], frame.loc["a1", "set_language"]) == ("ru", "en")
    stats = C.language_stats(frame.reset_index())
    assert stats["en"] == pytest.approx((0.86, 1.0))  # a2 alone (one value: std 1.0)
    assert stats["ru"][0] == pytest.approx((0.90 + 0.80 + 0.76) / 3)


# ---------------------------------------------------------------- a synthetic signal frame


def synthetic(corpus: str, n: int = 120, seed: int = 0, shift: float = 0.06) -> pd.DataFrame:
    """A frame like `signal_frame`'s: answerable questions score higher on max cosine (and
    its relatives); groups of 3 questions (a verse), out-of-scope questions their own group;
    split by group; some NaN in ltr_max_prob."""
    rng = np.random.default_rng(seed)
    rows = []
    for label, mu in (
        ("answerable", 0.85),
        ("out_of_corpus", 0.85 - shift),
        ("out_of_scope", 0.75),
    ):
        for i in range(n):
            group = f"{corpus}:{label}:{i // 3 if label != 'out_of_scope' else i}"
            mc = float(rng.normal(mu, 0.03))
            sig = {k: float(rng.normal()) for k in SIGNALS}
            sig.update(max_cosine=mc, topk_mean_cosine=mc - 0.01, address_named=float(i % 2))
            sig["ltr_max_prob"] = np.nan if i % 5 == 0 else float(mc + rng.normal(0, 0.02))
            rows.append(
                {
                    "corpus": corpus,
                    "set": corpus,
                    "qid": f"{corpus}-{label}-{i}",
                    "group": group,
                    "label": label,
                    "audit": "",
                    "audited_label": label,
                    "split": "tune" if (i // 3) % 3 else "test",
                    "language": "ru" if i % 4 == 0 else "en",
                    "decision": "answer",
                    **sig,
                }
            )
    frame = pd.DataFrame(rows)
    return C.with_language_z(frame, C.language_stats(frame))


@pytest.fixture(scope="module")
def two() -> pd.DataFrame:
    return pd.concat(
        [synthetic("A", seed=1), synthetic("B", seed=2, shift=0.03)], ignore_index=True
    )


@pytest.fixture(scope="module")
def fitted(two: pd.DataFrame):
    return C.fit_gates(two, cal_share=0.5, n_splits=3)


def test_grouped_folds_never_split_a_group(two: pd.DataFrame) -> None:
    groups = two["group"].to_numpy()
    folds = C.grouped_folds(list(groups), 5)
    assert len(folds) == 5
    for train, val in folds:
        assert not set(groups[train]) & set(groups[val])
    assert sorted(np.concatenate([v for _, v in folds])) == list(range(len(groups)))


def test_calibration_part_is_disjoint_by_group_and_near_the_share(two: pd.DataFrame) -> None:
    a = two[two["corpus"] == "A"]
    fit, cal = C.tune_parts(a, 0.5)
    assert not set(fit["group"]) & set(cal["group"])
    assert set(fit["split"]) == set(cal["split"]) == {"tune"}
    assert len(fit) + len(cal) == int((a["split"] == "tune").sum())
    for label, g in cal.groupby("label"):
        n = int(((a["split"] == "tune") & (a["label"] == label)).sum())
        assert 0.5 * n <= len(g) <= 0.5 * n + 3  # whole groups of 3 (1 for out-of-scope)
    few = pd.DataFrame({"label": ["x"] * 4, "group": ["g1", "g1", "g2", "g2"]})
    assert 0 < C.calibration_part(few, 0.99).sum() < 4  # one group always stays for fitting


def test_fit_gates_chooses_by_grouped_cv_and_drops_unusable_signals(
    two: pd.DataFrame, fitted
) -> None:
    gates, cv = fitted
    assert set(gates) == {(c, k) for c in ("A", "B") for k in C.GATES}
    assert cv.groupby(["corpus", "model"])["chosen"].sum().eq(1).all()
    chosen = cv[cv["chosen"]].set_index(["corpus", "model"])["cv AUROC"]
    best = cv.groupby(["corpus", "model"])["cv AUROC"].max()
    assert (chosen == best.loc[chosen.index]).all()
    g = gates[("A", "logistic")]
    fit, _ = C.tune_parts(two[two["corpus"] == "A"], 0.5)
    assert g.n_fit == len(fit) and "ltr_max_prob" in g.features  # NaNs imputed, not dropped
    constant = two.assign(lexical_rank=1.0)
    assert "lexical_rank" not in C.usable_features(constant)


def test_learned_auroc_beats_chance_on_separable_data(two: pd.DataFrame, fitted) -> None:
    gates, _ = fitted
    table = C.learned_auroc_table(two, gates, n_boot=20)
    row = rows_where(
        table, corpus="A", labels=C.RAW, negatives="out_of_corpus", language="all"
    ).set_index("signal")
    assert row.loc["learned (logistic)", "AUROC"] > 0.8
    assert {"learned (logistic)", "learned (boosting)", "max_cosine"} <= set(row.index)


def test_transfer_table_has_every_train_test_pair(two: pd.DataFrame, fitted) -> None:
    gates, _ = fitted
    t = C.transfer_table(two, gates, n_boot=20)
    assert len(t) == 2 * 2 * 2 * 2  # trained on × tested on × model × kind
    assert set(zip(t["trained on"], t["tested on"], strict=True)) == {
        ("A", "A"),
        ("A", "B"),
        ("B", "A"),
        ("B", "B"),
    }
    learned = C.learned_auroc_table(two, gates, n_boot=20)
    home = rows_where(t, model="logistic", negatives="out_of_corpus")
    home = home[home["trained on"] == home["tested on"]].set_index("tested on")["AUROC"]
    same = rows_where(
        learned,
        labels=C.RAW,
        negatives="out_of_corpus",
        language="all",
        signal="learned (logistic)",
    ).set_index("corpus")["AUROC"]
    assert home.to_dict() == pytest.approx(same.to_dict())  # the diagonal is the in-corpus test


def test_certified_path_calibrates_on_the_held_out_part_and_reports_test(
    two: pd.DataFrame, fitted
) -> None:
    gates, _ = fitted
    points = C.certified_points(two, gates, [0.10], 0.05, 0.5)
    assert {(p.corpus, p.gate) for p in points} == {
        (c, g) for c in ("A", "B") for g in ("learned (logistic)", "max_cosine")
    }
    a = two[two["corpus"] == "A"]
    _, cal = C.tune_parts(a, 0.5)
    tune = a[a["split"] == "tune"]
    learned = C.find_point(points, "A", "learned (logistic)", 0.10)
    mc = C.find_point(points, "A", "max_cosine", 0.10)
    assert learned is not None and mc is not None
    for kind in C.NEGATIVES:
        c = learned.kind(kind)
        assert c is not None and c.n_neg == int((cal["label"] == kind).sum())  # calibration only
        assert mc.kind(kind).n_neg == int((tune["label"] == kind).sum())  # max cosine: all tune
        scores = gates[("A", "logistic")].score(cal[cal["label"] == kind])
        k = int((scores >= learned.certified.threshold).sum())
        assert c.false_answers == k
        assert c.bound == pytest.approx(clopper_pearson_upper(k, c.n_neg, 0.025))  # δ/2 each
        if learned.certified.feasible:
            assert c.bound <= 0.10
    real = C.realised_table(two, points, gates)
    row = rows_where(
        real, corpus="A", gate="max_cosine", labels=C.RAW, language="all", negatives="out_of_corpus"
    ).iloc[0]
    test = a[a["split"] == "test"]
    answered = test["max_cosine"] >= mc.certified.threshold
    assert row["answer rate"] == pytest.approx(answered[test["label"] == "answerable"].mean())
    assert row["false-answer rate"] == pytest.approx(
        answered[test["label"] == "out_of_corpus"].mean()
    )
    assert row["FA low"] <= row["false-answer rate"] <= row["FA high"]
    block = C.certificate_block(learned)
    assert set(block["kinds"]) == set(C.NEGATIVES)
    assert set(block["kinds"]["out_of_corpus"]) == {
        "alpha",
        "delta",
        "n_neg",
        "false_answers",
        "bound",
        "kind",
    }


def test_held_out_units_and_the_clean_sample_size() -> None:
    assert C.held_out_unit("BG 3.5") == "BG 3" and C.held_out_unit("BG 12.20") == "BG 12"
    assert C.held_out_unit("xquad:Pharmacy") == "xquad:Pharmacy"  # an article is its own unit
    assert C.held_out_unit("nq-0005") == "nq-0005"
    n = C.min_clean_n(0.05, 0.025)
    assert clopper_pearson_upper(0, n, 0.025) <= 0.05 < clopper_pearson_upper(0, n - 1, 0.025)


def test_group_sensitivity_recounts_the_certificate_by_group_and_unit(
    two: pd.DataFrame, fitted
) -> None:
    """The question level reproduces the certificate; the group level counts each calibration
    negative group once (answered when any question is), with its CP bound at the kind's δ."""
    gates, _ = fitted
    frame = two.copy()  # out_of_corpus groups as verses of 4 chapters
    frame.loc[frame["label"] == "out_of_corpus", "group"] = [
        f"BG {i % 4}.{i // 12}" for i in range(int((frame["label"] == "out_of_corpus").sum()))
    ]
    points = C.certified_points(frame, gates, [0.10], 0.05, 0.5)
    table = C.group_sensitivity(frame, points, gates, 0.5)
    point = C.find_point(points, "A", "learned (logistic)", 0.10)
    rows = rows_where(table, corpus="A", gate="learned (logistic)", negatives="out_of_corpus")
    at = rows.set_index("level")
    cert = point.kind("out_of_corpus")
    q = at.loc[C.LEVEL_QUESTION]
    assert (q["n"], q["false answers"]) == (cert.n_neg, cert.false_answers)
    assert q["bound"] == pytest.approx(cert.bound)
    _, cal = C.tune_parts(frame[frame["corpus"] == "A"], 0.5)
    neg = cal[cal["label"] == "out_of_corpus"]
    hit = pd.Series(gates[("A", "logistic")].score(neg) >= point.certified.threshold)
    by_group = hit.groupby(neg["group"].to_numpy()).any()
    g = at.loc[C.LEVEL_GROUP]
    assert (g["n"], g["false answers"]) == (neg["group"].nunique(), int(by_group.sum()))
    assert g["bound"] == pytest.approx(clopper_pearson_upper(g["false answers"], g["n"], 0.025))
    u = at.loc[C.LEVEL_UNIT]
    assert u["n"] == neg["group"].map(C.held_out_unit).nunique() <= 4  # chapters BG 0..3
    assert u["bound"] >= g["bound"] >= q["bound"] - 1e-12  # fewer units, weaker bound
    counts = C.calibration_negative_groups(table).set_index(["corpus", "gate", "negatives"])
    assert counts.loc[("A", "learned (logistic)", "out_of_corpus"), C.LEVEL_GROUP] == g["n"]
    oos = rows_where(table, corpus="A", gate="max_cosine", negatives="out_of_scope")
    assert oos["n"].nunique() == 1  # one question per group: every level the same sample
    text = R.sensitivity_lines(table, 0.10)
    assert any(
        "Sensitivity check, not the certificate" in t and "(A, vs out_of_corpus)" in t for t in text
    )
    assert not any("out_of_scope" in t for t in text)


def test_language_gap_by_address_and_feature_pushes_add_up(two: pd.DataFrame, fitted) -> None:
    gates, _ = fitted
    points = C.certified_points(two, gates, [0.10], 0.05, 0.5)
    point = C.find_point(points, "A", "learned (logistic)", 0.10)
    gap = C.language_gap_by_address(two, point, gates).set_index(["language", "questions"])
    test = two[(two["corpus"] == "A") & (two["split"] == "test") & (two["label"] == "answerable")]
    answered = gates[("A", "logistic")].score(test) >= point.certified.threshold
    for lang in ("en", "ru"):
        mine = (test["language"] == lang).to_numpy()
        assert gap.loc[(lang, "all"), "answered"] == int(answered[mine].sum())
        parts = [gap.loc[(lang, q), "answerable"] for q in C.ADDRESS_STRATA.values()]
        assert sum(parts) == gap.loc[(lang, "all"), "answerable"] == int(mine.sum())
    fit = gates[("A", "logistic")]
    pushes = C.feature_pushes(two, fit).set_index("feature")
    logit = np.log(fit.score(test) / (1 - fit.score(test)))
    intercept = float(fit.estimator.named_steps["logisticregression"].intercept_[0])
    for lang in ("en", "ru"):  # contributions + intercept = the mean logit of the language
        mine = (test["language"] == lang).to_numpy()
        assert pushes[lang].sum() + intercept == pytest.approx(logit[mine].mean())
    assert pushes["ru − en"].to_numpy() == pytest.approx((pushes["ru"] - pushes["en"]).to_numpy())
    lines = R.language_gap_lines(gap.reset_index(), pushes.reset_index())
    assert lines[0].startswith("- Language gap (A, learned (logistic), α=0.1")
    assert "Features pushing ru answerable questions down most" in lines[1]


def test_production_model_file_scores_exactly_as_scikit_learn(
    two: pd.DataFrame, fitted, tmp_path: Path
) -> None:
    gates, _ = fitted
    points = C.certified_points(two, gates, [0.10], 0.05, 0.5)
    point = C.find_point(points, "A", "learned (logistic)", 0.10)
    fit = gates[("A", "logistic")]
    gate = C.learned_gate(fit, point, {"corpus": "A"})
    a = two[two["corpus"] == "A"]
    assert C.gate_agreement(gate, fit, a) < 1e-12  # NaN ltr_max_prob rows included
    digest = gate.save(tmp_path / "g.json")
    assert gm.load(tmp_path / "g.json", digest) == gate
    assert gate.threshold == point.certified.threshold
    with pytest.raises(ValueError, match="only a logistic"):
        C.learned_gate(gates[("A", "boosting")], point, {})


def test_audited_labels_flip_held_out_answerable_questions() -> None:
    frame = pd.DataFrame(
        {
            "label": ["answerable", "out_of_corpus", "out_of_corpus", "out_of_corpus"],
            "audit": ["answerable", "answerable", "not_answerable", ""],
            "audited_label": [
                "answerable",
                "held_out_answerable",
                "out_of_corpus",
                "out_of_corpus",
            ],
            "group": ["a", "b", "c", "d"],
        }
    )
    assert C.label_views(frame) == (C.RAW, C.SUBSET_RAW, C.SUBSET_AUDITED)
    assert list(C.contrast(frame, "out_of_corpus")["y"]) == [1, 0, 0, 0]
    assert list(C.contrast(frame, "out_of_corpus", C.SUBSET_RAW)["y"]) == [1, 0, 0]
    assert list(C.contrast(frame, "out_of_corpus", C.SUBSET_AUDITED)["y"]) == [1, 1, 0]
    assert C.label_views(frame.assign(audit="")) == (C.RAW,)


def spec_goals() -> list[dict]:
    """Experiment 05's `GOALS` as its spec sets them."""
    spec = yaml.safe_load((paths.EXPERIMENTS / "05_gate_signals.yaml").read_text(encoding="utf-8"))
    return spec["parameters"]["GOALS"]


def test_the_spec_goals_are_the_goals_the_study_certifies() -> None:
    """The spec's GOALS parse to exactly these goals, certified at α 0.05 and 0.10."""
    audited = C.SUBSET_AUDITED
    gap = "|answer rate ru − en| ≤ 0.05 at the same bound"
    assert R.goals_from(spec_goals()) == [
        R.Goal(
            "answer rate ≥ 0.85 at certified bound ≤ 0.05", "xquad-split", 0.05, 0.85, "answer_rate"
        ),
        R.Goal(
            "learned-gate AUROC ≥ 0.85 on audited labels",
            "gita-split",
            0.05,
            0.85,
            "audited_auroc",
            audited,
        ),
        R.Goal(
            "answer rate ≥ 0.5 at certified bound ≤ 0.10", "gita-split", 0.10, 0.5, "answer_rate"
        ),
        R.Goal(
            "answer rate ≥ 0.5 at certified bound ≤ 0.10 (audited labels)",
            "gita-split",
            0.10,
            0.5,
            "answer_rate",
            audited,
        ),
        R.Goal(gap, "gita-split", 0.05, 0.05, "language_gap"),
        R.Goal(gap, "xquad-split", 0.05, 0.05, "language_gap"),
    ]
    assert R.goal_alphas(0.05, R.goals_from(spec_goals())) == [0.05, 0.10]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"kind": "recall"}, "kind 'recall'"),
        ({"labels": "audited"}, "labels 'audited'"),
        ({"alpha": "0.05"}, "alpha must be a number"),
        ({"target": True}, "target must be a number"),
        ({"threshold": 0.5}, "unknown key 'threshold'"),
        ({"corpus": None}, "missing key 'corpus'"),
    ],
)
def test_a_malformed_goal_is_refused_naming_the_goal_and_key(change: dict, said: str) -> None:
    goal = {**spec_goals()[0], **change}
    goal = {k: v for k, v in goal.items() if v is not None}
    with pytest.raises(ConfigError, match=r"GOALS\[1\] \('answer rate") as err:
        R.goals_from([spec_goals()[1], goal])
    assert said in str(err.value)


def test_goals_say_met_from_the_values(two: pd.DataFrame, fitted) -> None:
    gates, _ = fitted
    frame = two.replace({"corpus": {"A": "gita-split", "B": "xquad-split"}})
    gates = {("gita-split" if c == "A" else "xquad-split", k): g for (c, k), g in gates.items()}
    for g in gates.values():
        g.corpus = "gita-split" if g.corpus == "A" else "xquad-split"
    wanted = R.goals_from(spec_goals())
    points = C.certified_points(frame, gates, R.goal_alphas(0.05, wanted), 0.05, 0.5)
    real = C.realised_table(frame, points, gates)
    learned = C.learned_auroc_table(frame, gates, n_boot=20)
    goals = R.goals_table(real, learned, wanted)
    assert len(goals) == 2 * len(wanted)
    for r in goals.to_dict("records"):
        if not np.isfinite(r["value"]):
            assert r["met"] == "not measured"  # no audit in this frame
        elif r["goal"].startswith("answer rate"):
            expect = r["value"] >= r["target"] and all(
                rows_where(
                    real, corpus=r["corpus"], gate=r["gate"], labels=C.RAW, language="all"
                ).query("alpha == @r['α']")["bound"]
                <= r["α"]
            )
            assert r["met"] == ("met" if expect else "not met")
        elif r["goal"].startswith("|answer rate"):
            assert r["met"] == ("met" if r["value"] <= 0.05 else "not met")
        else:
            raise AssertionError(f"audited AUROC measured without audits: {r}")
    text = R.conclusion(
        C.auroc_table(frame, 20),
        learned,
        C.transfer_table(frame, gates, 20),
        real,
        goals,
        0.05,
        0.05,
    )
    assert "Transfer: the logistic gate trained on xquad-split" in text and "Goals:" in text
    metrics = C.headline(
        C.auroc_table(frame, 20), learned, C.transfer_table(frame, gates, 20), real, [0.05]
    )
    assert "gita_auroc_learned_vs_out_of_corpus" in metrics and all(
        np.isfinite(list(metrics.values()))
    )


def test_recommendation_files_name_the_model_and_its_certificate(
    two: pd.DataFrame, fitted, tmp_path: Path
) -> None:
    gates, _ = fitted
    points = C.certified_points(two, gates, [0.10], 0.05, 0.5)
    point = C.find_point(points, "A", "learned (logistic)", 0.10)
    gate = C.learned_gate(gates[("A", "logistic")], point, {"corpus": "A"})
    real = C.realised_table(two, points, gates)
    base = DESIGN.replace(corpora=["gita"], sufficient_score=0.88, good_enough_score=0.89)
    study_cfg = DESIGN.replace(corpora=["gita-split"], reranker="ltr/default")
    with pytest.raises(ConfigError, match="LTR model object was not passed"):
        sg.save_recommendation(tmp_path, base, study_cfg, gate, point, real, {"note": 1})
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, len(FEATURE_NAMES)))
    ltr = LTRReranker("default", model_factories()["logreg"]().fit(X, X[:, 0] > 0), {})
    digest = sg.save_recommendation(
        tmp_path, base, study_cfg, gate, point, real, {"note": 1}, reranker=ltr
    )
    cfg = load_config(tmp_path / "recommended_config.yaml")
    # the LTR model the study scored with travels with the gate, by digest
    assert (cfg.reranker_model, cfg.reranker_model_digest) == ("ltr_model.json", ltr.digest)
    assert (tmp_path / "ltr_model.json").read_bytes() == ltr.to_bytes()
    assert (cfg.gate, cfg.gate_model, cfg.gate_model_digest) == (
        "learned",
        "gate_model.json",
        digest,
    )
    assert cfg.corpora == ("gita",) or list(cfg.corpora) == ["gita"]
    assert cfg.reranker == "ltr/default" and cfg.sufficient_score == DESIGN.sufficient_score
    assert gm.load(tmp_path / "gate_model.json", digest).threshold == gate.threshold
    why = json.loads((tmp_path / "recommendation.json").read_text(encoding="utf-8"))
    kinds = why["certified"]["kinds"]
    assert {k: v["n_neg"] for k, v in kinds.items()} == {
        k: point.kind(k).n_neg for k in C.NEGATIVES
    }
    assert why["gate_model_digest"] == digest and why["note"] == 1


def test_figures_draw(two: pd.DataFrame, fitted) -> None:
    import matplotlib.pyplot as plt

    gates, _ = fitted
    points = C.certified_points(two, gates, [0.10], 0.05, 0.5)
    figs = [
        sg.plot_auroc_forest(C.auroc_table(two, 20)),
        sg.plot_max_cosine_by_language(two),
        sg.plot_learned_roc(two, gates, "out_of_corpus"),
        sg.plot_bound_vs_realised(C.realised_table(two, points, gates)),
        sg.plot_transfer(C.transfer_table(two, gates, 20)),
        sg.plot_group_sensitivity(C.group_sensitivity(two, points, gates, 0.5), 0.10),
    ]
    assert all(f.axes for f in figs)
    for f in figs:
        plt.close(f)


def test_unit_certificate_counts_question_groups_and_sits_beside_the_question_one(
    two: pd.DataFrame, fitted
) -> None:
    """Each out_of_corpus group (3 questions) is one unit: its n is the number of calibration
    groups, its bound at its own threshold is ≤ α when feasible, never below the per-question
    bound at the same α for the same scores, and the report lines say which certifies."""
    gates, _ = fitted
    q_points = C.certified_points(two, gates, [0.10], 0.05, 0.5)
    u_points = C.certified_points(two, gates, [0.10], 0.05, 0.5, per_group=True)
    assert [(p.corpus, p.gate) for p in u_points] == [(p.corpus, p.gate) for p in q_points]
    _, cal = C.tune_parts(two[two["corpus"] == "A"], 0.5)
    unit = C.find_point(u_points, "A", "learned (logistic)", 0.10)
    question = C.find_point(q_points, "A", "learned (logistic)", 0.10)
    neg = cal[cal["label"] == "out_of_corpus"]
    assert unit.kind("out_of_corpus").n_neg == neg["group"].nunique() < len(neg)
    assert unit.certified.threshold >= question.certified.threshold  # fewer units: stricter
    assert "per question group" in unit.calibrated_on
    by_q = C.realised_table(two, q_points, gates)
    by_u = C.realised_table(two, u_points, gates)
    levels = U.levels_table(by_q, by_u)
    row = levels[(levels["corpus"] == "A") & (levels["gate"] == "learned (logistic)")]
    row = row[row["negatives"] == "out_of_corpus"].iloc[0]
    assert row["n_neg cal (unit)"] == neg["group"].nunique()
    assert row["n_neg cal (question)"] == len(neg)
    metrics = C.certified_metrics(by_u, [0.10], U.UNIT)
    assert metrics["A_learned_a10_unit_n_units_out_of_corpus"] == neg["group"].nunique()
    lines = R.unit_lines(levels, 0.10)
    assert lines[0] == R.ASSUMPTION
    ok = row["bound (unit)"] <= 0.10
    assert any(
        "**A**" in t and f"per unit {'certified' if ok else 'not certified'}" in t for t in lines
    )
