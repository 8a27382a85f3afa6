"""Notebook 03's study code: every sentence of the conclusion follows from the numbers given;
the compute functions on a hand-built study; the recommendation files; several corpora side by
side (each corpus keeps the numbers of its own run)."""

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

from citegate.core import config, config_files
from citegate.core.errors import ConfigError
from citegate.corpus.questions import QuestionSet
from citegate.evaluation import metrics as M
from citegate.research.study import Study, StudySet
from citegate.studies import gate_roc as gs
from citegate.tracking.recorder import CONFIG_FILE, DATASETS_FILE, INFO_FILE, Recorder


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
    assert frame.loc["q0", "topk_mean_cosine"] == pytest.approx(0.6)
    assert frame.loc["q0", "margin_top1_top2_zero_filled"] == pytest.approx(0.2)
    assert frame.loc["q1", "margin_top1_top2_zero_filled"] == pytest.approx(0.6)  # top1 - 0
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
    monkeypatch.setattr(config_files, "PRODUCTION", tmp_path / "absent.yaml")
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


# --------------------------------------------------------------------------- several corpora


def _other_study() -> Study:
    """A second corpus whose max cosine separates perfectly: answerable 0.90, 0.85 (tune), 0.88,
    0.86 (test); out_of_corpus 0.60, 0.70 (tune), 0.65, 0.84 (test)."""
    cases = [
        ("answerable", "tune", 0.90),
        ("answerable", "tune", 0.85),
        ("answerable", "test", 0.88),
        ("answerable", "test", 0.86),
        ("out_of_corpus", "tune", 0.60),
        ("out_of_corpus", "tune", 0.70),
        ("out_of_corpus", "test", 0.65),
        ("out_of_corpus", "test", 0.84),
    ]
    rows = [
        (replace(question(f"x{i}", label), split=split), [cand(100 + i, score)], [])
        for i, (label, split, score) in enumerate(cases)
    ]
    return make_study(study_set(rows))


def _two(study: Study) -> dict[str, Study]:
    return {"gita-split": study, "xquad-split": _other_study()}


def test_two_corpora_give_each_corpus_the_numbers_of_its_own_run(study: Study) -> None:
    studies = _two(study)
    frame = gs.corpus_signals(studies)
    assert frame.columns[0] == "corpus"
    assert frame["corpus"].tolist() == ["gita-split"] * 8 + ["xquad-split"] * 8
    negs = ["out_of_corpus", "out_of_scope"]
    aurocs = gs.per_corpus(frame, lambda c, g: gs.auroc_table(g, negs, 50))
    recs = gs.recommend_per_corpus(frame, "out_of_corpus", 0.5, 0.0, 0.5)
    points = gs.test_report_per_corpus(frame, negs, recs)
    metrics = gs.corpus_headline(aurocs, points, recs, "gita-split")

    alone = {}
    for corpus, s in studies.items():
        one = gs.signals(s, s.config)
        pd.testing.assert_frame_equal(gs.of_corpus(frame, corpus), one)
        one_aurocs = gs.auroc_table(one, negs, 50)
        pd.testing.assert_frame_equal(gs.of_corpus(aurocs, corpus), one_aurocs)
        one_rec = gs.recommend(one, "out_of_corpus", 0.5, 0.0, 0.5)
        assert recs[corpus] == one_rec
        one_points = gs.test_report(one, negs, one_rec)
        alone[corpus] = gs.headline(one_aurocs, one_points, one_rec)
    # the production corpus keeps the one-corpus names (the spec's expected values read them)
    assert {k: v for k, v in metrics.items() if not k.startswith("xquad_")} == alone["gita-split"]
    assert {
        k.removeprefix("xquad_"): v for k, v in metrics.items() if k.startswith("xquad_")
    } == alone["xquad-split"]
    assert metrics["xquad_auroc_max_cosine_vs_out_of_corpus"] == 1.0
    assert recs["gita-split"] != recs["xquad-split"]


def test_side_by_side_rows_rates_and_the_recommendations_threshold_elsewhere(
    study: Study,
) -> None:
    frame = gs.corpus_signals(_two(study))
    negs = ["out_of_corpus"]
    aurocs = gs.per_corpus(frame, lambda c, g: gs.auroc_table(g, negs, 50))
    recs = {
        "gita-split": {"bail_out_score": 0.4, "sufficient_score": 0.5, "good_enough_score": 0.6},
        "xquad-split": {"bail_out_score": 0.8, "sufficient_score": 0.85, "good_enough_score": 0.9},
    }
    table = gs.side_by_side(frame, aurocs, recs, negs, "gita-split").set_index("corpus")
    gita, xquad = table.loc["gita-split"], table.loc["xquad-split"]

    def cell(successes: list[bool]) -> str:
        rate, low, high = M.rate_ci(successes)
        return f"{rate:.3f} [{low:.3f}, {high:.3f}]"

    # gita test: answerable 0.80, 0.45; out_of_corpus 0.30, 0.62 at sufficient 0.5
    assert gita["answer rate"] == cell([True, False])
    assert gita["false answers vs out_of_corpus"] == cell([False, True])
    assert gita["answer rate at gita-split's 0.5000"] == "(same)"
    # xquad test: answerable 0.88, 0.86; out_of_corpus 0.65, 0.84
    assert xquad["answer rate"] == cell([True, True])
    assert xquad["false answers vs out_of_corpus"] == cell([False, False])
    assert xquad["false answers vs out_of_corpus at gita-split's 0.5000"] == cell([True, True])
    assert xquad["recommended sufficient (tune)"] == "0.8500"
    assert xquad["AUROC vs out_of_corpus"].startswith("1.000 [")
    assert xquad["test questions (answerable / out_of_corpus)"] == "2 / 2"


def _corpus_aurocs() -> pd.DataFrame:
    """gita-split does not separate (CI holds 0.5), xquad-split does."""
    rows = [("gita-split", 0.459, 0.401, 0.509), ("xquad-split", 0.981, 0.969, 0.991)]
    return pd.concat(
        [_aurocs(low, high, auc).assign(corpus=c) for c, auc, low, high in rows],
        ignore_index=True,
    )


def _points(corpus: str, tpr: float, fpr: float, t: float) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "corpus": corpus,
                "point": f"sufficient_score = {t:.3f}",
                "tpr": tpr,
                "fpr": fpr,
                "negatives": "out_of_corpus",
            }
        ]
    )


def test_corpora_conclusion_contrasts_the_corpora_from_their_numbers() -> None:
    recs = {
        "gita-split": {"bail_out_score": 0.82, "sufficient_score": 0.885, "good_enough_score": 0.9},
        "xquad-split": {
            "bail_out_score": 0.8,
            "sufficient_score": 0.834,
            "good_enough_score": 0.84,
        },
    }
    own = pd.concat(
        [_points("gita-split", 0.14, 0.109, 0.885), _points("xquad-split", 0.876, 0.032, 0.834)]
    )
    shared = pd.concat(
        [_points("gita-split", 0.14, 0.109, 0.885), _points("xquad-split", 0.5, 0.01, 0.885)]
    )
    design = pd.DataFrame(
        [{"corpus": c, "point": "bail_out_score = 0.400", "tpr": 1.0, "fpr": 1.0} for c in recs]
    ).assign(threshold=0.4, negatives="out_of_corpus")
    languages = pd.DataFrame(
        [
            {
                "corpus": "gita-split",
                "language": lang,
                "negatives": "out_of_corpus",
                "AUROC": a,
                "CI low": a - 0.05,
                "CI high": a + 0.05,
                "answerable": 30,
                "negative": 30,
                "median max cosine, answerable": m,
                "median max cosine, negative": 0.85,
            }
            for lang, a, m in (("en", 0.5, 0.87), ("ru", 0.45, 0.81))
        ]
    )
    rates = pd.DataFrame(
        [
            {
                "corpus": "gita-split",
                "language": lang,
                "sufficient_score": 0.885,
                "answer rate": r,
                "CI low": r - 0.1,
                "CI high": r + 0.1,
                "answerable": 20,
            }
            for lang, r in (("en", 0.2), ("ru", 0.05))
        ]
    )
    text = gs.corpora_conclusion(
        _corpus_aurocs(), design, own, shared, recs, 0.10, "gita-split", languages, rates
    )
    assert (
        "on gita-split, AUROC 0.459 (CI 0.401–0.509): no better than chance (the interval "
        "includes 0.5); on xquad-split, AUROC 0.981 (CI 0.969–0.991): it separates answerable"
    ) in text
    assert "a property of the corpus" in text
    assert "gita-split 0.885, xquad-split 0.834" in text
    assert (
        "On xquad-split's test split, at its own sufficient score 0.834: 87.6% of answerable "
        "answered, 3.2% of out_of_corpus answered falsely; at gita-split's 0.885" in text
    )
    assert "50.0% of answerable answered, 1.0% of out_of_corpus" in text
    assert "### gita-split (its thresholds are the recommendation)" in text
    assert "### xquad-split\n" in text
    assert "(within the 10% target)" in text and "above the 10% target" in text
    assert (
        "AUROC per query language: against out_of_corpus en 0.500 [0.450, 0.550], ru 0.450" in text
    )
    assert "answerable questions per language: ru 0.810, en 0.870 (spread 0.060)" in text
    assert "sufficient score 0.885, per language: en 20.0% [10.0%, 30.0%] (n=20), ru 5.0%" in text
    assert text.count("per query language") == 1  # xquad-split has no language table here
    same = _corpus_aurocs().assign(**{"CI low": 0.6, "CI high": 0.99})
    assert "The verdict is the same on every corpus." in gs.corpora_conclusion(
        same, design, own, shared, recs, 0.10, "gita-split"
    )


def test_corpora_parameter_is_checked() -> None:
    gs.check_corpora({"gita-split": {"gita-split": "gita-split"}}, "gita-split")
    with pytest.raises(ConfigError, match="'gita-split' must map question sets"):
        gs.check_corpora({"gita-split": "gita-split"}, "gita-split")  # a name, not a mapping
    with pytest.raises(ConfigError, match="'xquad-split' is not among"):
        gs.check_corpora({"gita-split": {"gita-split": "gita-split"}}, "xquad-split")


def test_record_studies_keeps_the_same_set_of_two_corpora_apart(tmp_path: Path) -> None:
    def corpus_study(build: str) -> Study:
        own = [replace(question(f"{build}-a"), corpus=build)]
        oos = [replace(question(f"oos-{build}", "out_of_scope"), corpus="*")]
        sets = {
            build: StudySet(QuestionSet(build, build, tuple(own)), build, own, {}, {}),
            "out-of-scope": StudySet(
                QuestionSet("out-of-scope", "*", tuple(oos)), build, oos, {}, {}
            ),
        }
        return Study(sets, config.PipelineConfig(embedder="e"), "none", "e", {build: 1.5})

    studies = {b: corpus_study(b) for b in ("gita-split", "xquad-split")}
    gs.record_studies(Recorder(tmp_path), studies)
    datasets = json.loads((tmp_path / DATASETS_FILE).read_text(encoding="utf-8"))
    assert [d["name"] for d in datasets] == [
        "gita-split/gita-split",
        "gita-split/out-of-scope",
        "xquad-split/xquad-split",
        "xquad-split/out-of-scope",
    ]
    assert datasets[3]["source"] == "data/questions/out-of-scope.jsonl"
    assert datasets[3]["build_id"].startswith("xquad-split@")
    assert [r["id"] for r in datasets[3]["records"]] == ["oos-xquad-split"]
    cfg = json.loads((tmp_path / CONFIG_FILE).read_text(encoding="utf-8"))
    assert cfg["corpora"] == ["gita-split", "xquad-split"]
    info = json.loads((tmp_path / INFO_FILE).read_text(encoding="utf-8"))
    assert info["retrieval_seconds"] == 3.0
    shown = gs.corpora_config_table(studies).set_index("key")["value"]
    assert shown["corpora"] == "['gita-split', 'xquad-split']"
    assert (
        gs.corpora_data_table(studies)["corpus"].tolist()
        == ["gita-split"] * 2 + ["xquad-split"] * 2
    )


def test_figures_have_one_row_per_corpus(study: Study) -> None:
    frame = gs.corpus_signals(_two(study))
    roc = gs.plot_roc_pr(frame, ["out_of_corpus"], {}, n_boot=10)
    assert [ax.get_title().split(":")[0] for ax in roc.axes] == [
        "gita-split",
        "gita-split",
        "xquad-split",
        "xquad-split",
    ]
    recs = {"xquad-split": {"sufficient_score": 0.85}}
    marked = gs.plot_roc_pr(frame, ["out_of_corpus"], {}, n_boot=10, recommended=recs)
    legend = [t.get_text() for t in marked.axes[2].get_legend().get_texts()]
    assert "recommended sufficient_score 0.850" in legend  # xquad's own
    assert not any("recommended" in t.get_text() for t in marked.axes[0].get_legend().get_texts())
    dist = gs.plot_distributions(frame, gs.DESIGN_POINTS, recs)
    assert len(dist.axes) == 2
    assert any("recommended sufficient_score 0.850" in t.get_text() for t in dist.axes[1].texts)
    assert not any("recommended" in t.get_text() for t in dist.axes[0].texts)
    risk = gs.plot_risk_coverage(frame, {}, recs)
    assert len(risk.axes) == 2
    assert "recommended sufficient_score 0.850" in [
        t.get_text() for t in risk.axes[1].get_legend().get_texts()
    ]
    sweep = gs.per_corpus(frame, lambda c, g: gs.two_scale_sweep(g, [0.01]))
    assert len(gs.plot_two_scale(sweep, {}).axes) == 2
    assert len(gs.plot_roc_pr(gs.of_corpus(frame, "gita-split"), ["out_of_corpus"], {}).axes) == 2


def test_language_aurocs_per_corpus_and_language(study: Study) -> None:
    frame = gs.corpus_signals(_two(study))
    frame.loc[frame["qid"].isin(["q0", "q4", "q5"]), "language"] = (
        "ru"  # one answerable, two negatives
    )
    table = gs.language_aurocs(frame, ["out_of_corpus", "out_of_scope"], n_boot=20)
    got = table.set_index(["corpus", "language"])
    assert list(got.index) == [("gita-split", "en"), ("gita-split", "ru"), ("xquad-split", "en")]
    # ru: answerable 0.70 against 0.35, 0.50 -> perfectly separated
    assert got.loc[("gita-split", "ru"), "AUROC"] == 1.0
    assert got.loc[("gita-split", "ru"), "median max cosine, negative"] == pytest.approx(0.425)
    assert (table["negatives"] == "out_of_corpus").all()


def test_language_answer_rates_use_each_corpus_threshold_on_test(study: Study) -> None:
    frame = gs.corpus_signals(_two(study))
    frame.loc[frame["qid"] == "q3", "language"] = "ru"  # gita test answerable: en 0.80, ru 0.45
    recs = {"gita-split": {"sufficient_score": 0.5}, "xquad-split": {"sufficient_score": 0.87}}
    got = gs.language_answer_rates(frame, recs).set_index(["corpus", "language"])
    assert got.loc[("gita-split", "en"), ["answer rate", "answerable"]].tolist() == [1.0, 1]
    assert got.loc[("gita-split", "ru"), "answer rate"] == 0.0
    # xquad test answerable 0.88, 0.86 at 0.87: one of two, with its Wilson interval
    rate, low, high = M.rate_ci([True, False])
    assert got.loc[("xquad-split", "en"), ["answer rate", "CI low", "CI high"]].tolist() == [
        rate,
        low,
        high,
    ]


def test_a_corpus_without_test_rows_still_gets_its_recommendation_metrics() -> None:
    empty = gs.of_corpus(pd.DataFrame(), "xquad-split")  # per_corpus gave no part
    rec = {"bail_out_score": 0.8, "sufficient_score": 0.85, "good_enough_score": 0.9}
    got = gs.corpus_headline(empty, empty, {"xquad-split": rec}, "gita-split")
    assert got == {f"xquad_rec_{k}": v for k, v in rec.items()}


def test_metric_prefix_is_notebook_05s_rule_except_for_the_production_corpus() -> None:
    assert gs.metric_prefix("xquad-split", "gita-split") == "xquad_"
    assert gs.metric_prefix("gita-split", "gita-split") == ""
    assert gs.metric_prefix("gita-split") == "gita_"  # 05 prefixes every corpus
