"""Notebook 08's pure part: a turn's outcome, the tables and headline over outcomes (per set,
stratum, language and negative kind), the error share that fails a run, and the pointer floor
certified on the tune part."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from citegate.studies.end_to_end import compute as C
from citegate.studies.end_to_end import report
from citegate.tracking.promote.guards import EvalRow, compute_metrics


def row(
    qid: str, label: str = "answerable", outcome: str = "answered_gold", **kw: object
) -> C.TurnRow:
    values: dict[str, object] = {
        "qid": qid, "set": "gita-split", "corpus": "gita-split", "split": "test",
        "language": "en", "label": label, "group": f"g{qid}", "names_source": False,
        "branch": "grounded" if outcome.startswith("answered") else "decline",
        "decision": "answer", "outcome": outcome, "cited": "", "gold": "BG 2.20",
        "gold_in_notes": True, "gold_pointer": False, "pointers": 0, "policies": "",
        "ms": 10.0,
    }  # fmt: skip
    values.update(kw)
    return C.TurnRow(**values)  # type: ignore[arg-type]


def test_outcome_reads_what_the_user_was_shown() -> None:
    assert C.outcome("grounded", [False, True], False) == "answered_gold"
    assert C.outcome("grounded", [False, False], False) == "answered_wrong_source"
    assert C.outcome("grounded", [], False) == "answered_wrong_source"  # cites nothing gold
    assert C.outcome("decline", [], False) == "declined"
    assert C.outcome("fallback", [], False) == "fallback"
    assert C.outcome("grounded", [True], True) == "error"
    assert C.outcome("error", [], False) == "error"


def test_wrong_source_share_is_among_answered_per_stratum() -> None:
    rows = [
        row("1", names_source=True),
        row("2", outcome="answered_wrong_source", names_source=True),
        row("3", outcome="declined", names_source=True),
        row("4", outcome="answered_wrong_source"),
        row("5", label="out_of_corpus", outcome="answered_wrong_source"),
        row("6", label="out_of_scope", outcome="declined", set="out-of-scope"),
    ]
    m = C.headline(C.frame(rows), n_boot=50)
    assert m["wrong_source_share.gita.named"] == 0.5  # 1 of the 2 answered naming a verse
    assert m["wrong_source_share.gita.unnamed"] == 1.0
    assert m["gold_answer_rate.gita.named"] == pytest.approx(1 / 3)
    assert m["answer_rate.gita"] == 0.75
    assert m["false_answer_rate.out_of_corpus.gita"] == 1.0
    assert m["false_answer_rate.out_of_scope"] == 0.0
    assert m["wrong_source_share.gita.named.n"] == 2.0
    assert (
        m["wrong_source_share.gita.named.ci_low"]
        <= 0.5
        <= m["wrong_source_share.gita.named.ci_high"]
    )
    assert m["error_share"] == 0.0 and m["turn_ms_p50"] == 10.0
    # 0 of 1 is not "certainly 0": Wilson widens what the bootstrap cannot
    assert m["false_answer_rate.out_of_scope.ci_high"] > 0.5


def test_a_rate_over_nothing_is_left_out_not_zero() -> None:
    m = C.headline(C.frame([row("1", outcome="declined")]), n_boot=20)
    assert "wrong_source_share.gita" not in m and m["wrong_source_share.gita.n"] == 0.0
    assert all(math.isfinite(v) for v in C.finite({"a": float("nan"), "b": 1.0}).values())
    assert C.finite({"a": float("nan"), "b": 1.0}) == {"b": 1.0}


def test_outcome_table_counts_every_outcome_with_wilson_intervals() -> None:
    rows = [row("1"), row("2", outcome="answered_wrong_source"), row("3", outcome="error")]
    t = C.outcome_table(C.frame(rows))
    r = t.iloc[0]
    assert (r["answered_gold"], r["answered_wrong_source"], r["error"], r["n"]) == (1, 1, 1, 3)
    assert r["wrong_source_share"] == 0.5 and r["wrong_ci"].startswith("[")


def test_errors_beyond_the_share_fail_the_run_with_the_first_cause() -> None:
    rows = [row("1"), row("2", outcome="error", error="QuestionError: boom")]
    with pytest.raises(RuntimeError, match="1 of 2 turns failed.*QuestionError: boom"):
        C.check_errors(C.frame(rows), 0.01)
    C.check_errors(C.frame(rows), 0.5)
    with pytest.raises(RuntimeError, match="no turn"):
        C.check_errors(C.frame([]), 0.5)


def test_policy_table_compares_both_policies_on_the_same_turns() -> None:
    rows = [
        row(
            "1",
            outcome="answered_wrong_source",
            policies="named=answered_wrong_source;nearest=answered_gold",
        ),
        row("2", policies="named=answered_gold;nearest=declined"),
        row("3", policies=""),
    ]
    t = C.policy_table(C.frame(rows)).set_index("policy")
    assert t.loc["named", "wrong_source_share"] == 0.5 and t.loc["named", "answered"] == 2
    assert t.loc["nearest", "wrong_source_share"] == 0.0 and t.loc["nearest", "answered"] == 1


def notes(
    split: str, cosines_gold: list[tuple[float, bool]], q: str = "q"
) -> list[dict[str, object]]:
    return [
        {"qid": f"{split}{q}{i}", "split": split, "rank": 1, "cosine": c, "gold": g}
        for i, (c, g) in enumerate(cosines_gold)
    ]


def test_the_floor_is_the_lowest_cosine_whose_exact_lower_bound_meets_the_target() -> None:
    # above 0.85 every pointer is gold (40 of them); below, none is
    tune = [(0.86 + i * 0.001, True) for i in range(40)] + [
        (0.80 + i * 0.001, False) for i in range(40)
    ]
    test = [(0.9, True)] * 10 + [(0.82, False)] * 10
    df = pd.DataFrame(notes("tune", tune) + notes("test", test))
    f = C.certify_floor(df, target=0.8, k=3, delta=0.05)
    # 0.836 admits 40 gold and 4 others: lower bound 0.804; one step lower falls below 0.8
    assert f.feasible and f.floor == 0.836 and f.tune_n == 44
    assert f.tune_low >= 0.8 and f.test_precision == 1.0 and f.test_n == 10


def test_no_floor_reaching_the_target_shows_no_pointer() -> None:
    df = pd.DataFrame(
        notes("tune", [(0.9, i % 2 == 0) for i in range(60)]) + notes("test", [(0.9, True)])
    )
    f = C.certify_floor(df, target=0.9, k=3)
    assert not f.feasible and f.floor == 1.0 and f.test_n == 0
    assert f.best_n == 60 and f.best_low < 0.9  # the best any floor reached, for the report
    assert "no cosine floor" in report.floor_line(f) and "over 60 pointers" in report.floor_line(f)


def test_pointers_are_the_first_k_notes_at_the_floor_in_rank_order() -> None:
    df = pd.DataFrame(
        [
            {"qid": "a", "rank": 1, "cosine": 0.7, "gold": False},
            {"qid": "a", "rank": 2, "cosine": 0.9, "gold": True},
            {"qid": "a", "rank": 3, "cosine": 0.8, "gold": False},
            {"qid": "a", "rank": 4, "cosine": 0.95, "gold": False},
        ]
    )
    assert C.pointer_labels(df, 0.75, 2).tolist() == [True, False]


def test_the_guards_measure_the_wrong_source_share_per_stratum() -> None:
    rows = [
        EvalRow("answerable", "en", "g1", True, 0.9, True, False, True),
        EvalRow("answerable", "en", "g2", True, 0.9, True, True, True),
        EvalRow("answerable", "en", "g3", True, 0.9, True, True, False),
        EvalRow("answerable", "en", "g4", False, 0.2, True, False, False),
        EvalRow("out_of_scope", "en", "g5", False, 0.1, None),
    ]
    m = compute_metrics(rows, n_boot=20)
    assert (
        m["wrong_source_share"]["value"] == pytest.approx(2 / 3)
        and m["wrong_source_share"]["n"] == 3
    )
    assert m["wrong_source_rate"]["value"] == 0.5  # 2 of the 4 answerable questions
    assert m["wrong_source_share.named"]["value"] == 0.5
    assert m["wrong_source_share.unnamed"]["value"] == 1.0


def test_the_conclusion_states_each_goal_from_the_measured_value() -> None:
    rows = [row("1", names_source=True), row("2", outcome="answered_wrong_source")]
    m = C.headline(C.frame(rows), n_boot=20)
    floor = C.Floor(1.0, 0.5, False, *([float("nan")] * 2), 0, *([float("nan")] * 3), 0)
    text = report.conclusion(m, floor, {"wrong_source_share.gita.named": 0.10})
    assert text.startswith("**Conclusion.**")
    assert "`wrong_source_share.gita.named` 0.0% meets the goal ≤ 10%" in text
    assert "none is shown" in text
