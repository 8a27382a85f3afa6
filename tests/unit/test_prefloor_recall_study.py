"""Notebook 01: its compute functions on a hand-built study whose every fate is known, and its
conclusion's claims about the floors following from the numbers given."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest
from study_factory import cand, make_study, question, study_set

from citegate.core.errors import ConfigError
from citegate.research.study import Study
from citegate.studies import prefloor_recall as fs


@pytest.fixture()
def study() -> Study:
    """q1's gold (0.30) survives the 0.18 floor and dies at 0.45; q2's (0.70) survives both; q3's
    gold was never retrieved; n1 has no gold."""
    return make_study(
        study_set(
            [
                (question("q1"), [cand(1, 0.3), cand(2, 0.5), cand(3, 0.1)], [1]),
                (question("q2", language="ru"), [cand(5, 0.7), cand(6, 0.2)], [5]),
                (question("q3"), [cand(7, 0.6)], [99]),
                (question("n1", label="out_of_corpus"), [cand(8, 0.2)], []),
            ]
        )
    )


def test_recall_by_floor_and_overall(study: Study) -> None:
    frame = fs.recall_by_floor(study, [0.18, 0.45])
    by = frame.set_index(["language", "gold_kind", "floor"])
    assert by.loc[("en", "verse", 0.18), "recall"] == 1.0
    assert by.loc[("en", "verse", 0.45), ["recall", "lost_at_floor"]].tolist() == [0.0, 1.0]
    assert by.loc[("ru", "verse", 0.45), "recall"] == 1.0
    assert by.loc[("en", "unretrieved", 0.18), "recall"] == 0.0
    overall = fs.overall_recall(frame).set_index("floor")
    assert overall["questions"].tolist() == [3, 3]
    assert overall["recall"].tolist() == pytest.approx([2 / 3, 1 / 3])
    assert overall["lost_at_floor"].tolist() == pytest.approx([0.0, 1 / 3])
    side = fs.at_floors(frame, [0.18, 0.45])
    assert side.columns.tolist() == [
        "set",
        "language",
        "gold_kind",
        "recall @ 0.18",
        "recall @ 0.45",
        "questions",
    ]


def test_waterfall_killed_cosines_and_headline(study: Study) -> None:
    table = fs.waterfall(study, study.config)
    assert table.columns.tolist() == list(fs.LOSS_ORDER)
    assert table.loc["s", "kept"] == 2 and table.loc["s", "not retrieved"] == 1
    killed = fs.killed_between(study, 0.18, 0.45)
    assert killed[["address", "cosine"]].values.tolist() == [["A1", 0.3]]
    cosines = fs.gold_cosines(study)
    assert sorted(cosines.loc[cosines["gold"], "cosine"]) == [0.3, 0.7]
    assert len(cosines) == 6
    overall = fs.overall_recall(fs.recall_by_floor(study, [0.18, 0.45]))
    metrics = fs.headline(overall, table, killed, cosines)
    assert metrics["recall_s_floor_0.18"] == pytest.approx(2 / 3)
    assert metrics["recall_s_floor_0.45"] == pytest.approx(1 / 3)
    assert metrics["kept_share_s"] == pytest.approx(2 / 3)
    assert metrics["ann_miss_share_s"] == 0.0
    assert metrics["gold_killed_by_high_floor"] == 1.0
    assert metrics["gold_cosine_min"] == 0.3


def test_arm_table(study: Study) -> None:
    arms = [
        fs.Arm("design", study.config, study, recollected=False),
        fs.Arm("high", study.config.replace(pre_floor=0.45), study, recollected=False),
    ]
    table = fs.arm_table(arms, n_boot=200)
    every = table[table["language"] == "all"].set_index("arm")
    assert every["questions"].tolist() == [3, 3]
    assert every["recall"].tolist() == pytest.approx([2 / 3, 1 / 3])
    assert every["notes per question"].tolist() == [1.5, 0.75]
    assert every["answered"].tolist() == [0.5, 0.5]
    assert (every["recall lo"] <= every["recall"]).all() and (
        every["recall"] <= every["recall hi"]
    ).all()
    ru = table[(table["language"] == "ru")].set_index("arm")
    assert ru["recall"].tolist() == [1.0, 1.0] and ru["questions"].tolist() == [1, 1]
    metrics = fs.arm_metrics(table)
    assert metrics["recall_s_high"] == pytest.approx(1 / 3) and metrics["recall_s_high.ru"] == 1.0
    falls = fs.arm_waterfall(arms).set_index(["arm", "language", "gold_kind"])
    assert falls.loc[("high", "en", "verse"), "pre-floor"] == 1
    assert falls.loc[("design", "en", "unretrieved"), "not retrieved"] == 1
    split = fs.arm_split_table(arms, n_boot=50)
    assert set(split["split"]) == {"all", *{q.split for q in study.sets["s"].questions}}
    line = fs.arm_conclusion(table, "design", "high")
    assert "0.333 of 3 questions" in line and "against 0.667 for `design` (-0.333)" in line


def test_recall_by_whether_the_question_names_its_verse(study: Study) -> None:
    """q1 names its verse (its gold survives the design floor, not 0.45), q2 and q3 name none
    (q2's gold survives both floors, q3's was never retrieved)."""
    s = study.sets["s"]
    s.questions[0] = replace(s.questions[0], mentions_address=True)
    arms = [
        fs.Arm("design", study.config, study, recollected=False),
        fs.Arm("high", study.config.replace(pre_floor=0.45), study, recollected=False),
    ]
    table = fs.arm_naming_table(arms, n_boot=50).set_index(["arm", "naming"])
    assert table.loc[("design", "names a verse"), "recall"] == 1.0
    assert table.loc[("high", "names a verse"), "recall"] == 0.0
    assert table.loc[("high", "names no verse"), "questions"] == 2
    assert table.loc[("high", "names no verse"), "recall"] == pytest.approx(0.5)
    assert fs.naming_metrics(table.reset_index()) == pytest.approx(
        {
            "recall_s_design.names_verse": 1.0,
            "recall_s_design.names_no_verse": 0.5,
            "recall_s_high.names_verse": 0.0,
            "recall_s_high.names_no_verse": 0.5,
        }
    )
    s.questions[0] = replace(s.questions[0], mentions_address=False)
    none_named = fs.arm_naming_table(arms[:1], n_boot=50)
    assert set(none_named["naming"]) == {"all", "names no verse"}
    s.questions[1] = replace(s.questions[1], mentions_address=True)
    s.gold.pop("q2")  # the one question naming a verse has no gold: no recall, no metric
    named_nogold = fs.arm_naming_table(arms[:1], n_boot=50)
    assert "recall_s_design.names_verse" not in fs.naming_metrics(named_nogold)


def test_an_arm_replays_the_runs_traces_unless_its_collection_differs(study: Study) -> None:
    same = fs.arm_config(study.config, {"verse_notes": True, "fanout": "always"})
    assert fs.run.replays(study, same) and same.verse_notes and same.fanout == "always"
    other = fs.arm_config(study.config, {"lane_k": 7})
    assert not fs.run.replays(study, other)
    assert fs.arm_config(study.config, "design") == fs.arm_config(
        study.config, {"config": "design"}
    )
    with pytest.raises(ConfigError, match="mapping of config overrides"):
        fs.arm_config(study.config, 3)  # type: ignore[arg-type]


def _overall(recall_low: float, recall_high: float) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"set": "gita", "floor": f, "questions": 100, "recall": r, "lost_at_floor": 0.0}
            for f, r in ((0.0, recall_low), (0.18, recall_low), (0.45, recall_high))
        ]
    )


def _metrics(gold_min: float, killed: int = 0) -> dict[str, float]:
    return {
        "gold_killed_by_high_floor": killed,
        "gold_cosine_p05": 0.8,
        "gold_cosine_min": gold_min,
    }


def test_floors_below_every_gold_fragment_remove_nothing() -> None:
    text = fs.conclusion(_metrics(0.7), _overall(0.55, 0.55))
    assert "neither floor removes a relevant fragment" in text
    assert "No floor in the grid costs more than 1 point" in text


def test_gold_between_the_floors_without_a_recall_drop_costs_no_recall() -> None:
    text = fs.conclusion(_metrics(0.3, killed=2), _overall(0.55, 0.55))
    assert "between 0.18 and 0.45" in text
    assert "costs no recall" in text and "costs recall" not in text
    assert "drops 2 of them" in text


def test_gold_below_the_low_floor_with_a_recall_drop_says_what_it_costs() -> None:
    text = fs.conclusion(_metrics(0.1, killed=5), _overall(0.55, 0.40))
    assert "below even the 0.18 floor" in text
    assert "costs up to 0.150 recall" in text
    assert "Recall first falls by more than 1 point at floor 0.45" in text
    assert "neither floor" not in text
