"""Notebook 07's pure compute (`studies.curated_memory.compute`): the threshold recommendation, what
counts as a right lean decision, the lean/wide comparison, boost strength, memory never cited."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from citegate.studies.curated_memory import compute as C


def row(
    qid: str, best: float, answers: bool, key: str = "n1", note: str = "n1", **kw: object
) -> C.PrecheckRow:
    base = dict(language="en", kind="answered_by_memory" if answers else "in_corpus",
                echo="trigger" if answers else "neither", note=note if answers else "",
                note_kind="pinned" if answers else "", memory_answers=answers, split="tune",
                group=qid, best_pinned=best, best_key=key, via="trigger")  # fmt: skip
    base.update(kw)
    return C.PrecheckRow(qid=qid, **base)  # type: ignore[arg-type]


def test_a_lean_decision_led_by_the_wrong_pinned_note_counts_against_precision() -> None:
    rows = [row("a", 0.95, True), row("b", 0.96, True, key="other")]
    at = C.counts_at(rows, 0.9)
    assert (at["taken"], at["right"], at["precision"], at["recall"]) == (2, 1, 0.5, 0.5)


def test_the_threshold_is_the_lowest_from_which_precision_stays_on_target() -> None:
    rows = [row("p1", 0.97, True), row("p2", 0.95, True), row("n1", 0.93, False),
            row("p3", 0.92, True), row("n2", 0.80, False)]  # fmt: skip
    assert C.recommend_threshold(rows, 0.95) == pytest.approx(0.95)
    # at 0.93 precision falls to 2/3: a lower threshold is recommended only when every higher
    # one stays on target too (3/4 at 0.92, 3/5 at 0.80)
    assert C.recommend_threshold(rows, 0.75) == pytest.approx(0.95)
    assert C.recommend_threshold(rows, 0.66) == pytest.approx(0.92)
    assert C.recommend_threshold([row("n", 0.99, False)], 0.95) == 1.0  # none: never lean


def test_precheck_metrics_split_recall_by_echo_and_false_lean_by_negative_kind() -> None:
    rows = [row("t", 0.95, True), row("b", 0.85, True, echo="body"),
            row("o", 0.91, False, kind="out_of_scope"), row("c", 0.5, False)]  # fmt: skip
    m = C.precheck_metrics(rows, 0.9, n_boot=50)
    assert m["recall.trigger"] == 1.0 and m["recall.body"] == 0.0
    assert m["false_lean_rate.out_of_scope"] == 1.0 and m["false_lean_rate.in_corpus"] == 0.0
    assert m["precision"] == 0.5 and m["precision.ci_lo"] < 0.5 < m["precision.ci_hi"]


def path(qid: str, policy: str, seconds: float, notes: tuple[str, ...], **kw: object) -> C.PathRow:
    base = dict(group=qid, language="en", decision="answer", decided_by="memory", searches=10,
                candidates=20, reranked=20, note_keys=(), cited_keys=(), gold=("BG 2.13",))  # fmt: skip
    base.update(kw)
    return C.PathRow(qid=qid, policy=policy, seconds=seconds, notes=notes, **base)  # type: ignore[arg-type]


def test_lean_against_wide_is_a_ratio_of_medians_and_a_paired_recall_difference() -> None:
    rows = [path("a", "lean", 0.1, ("BG 2.13",)), path("a", "wide", 0.3, ("BG 2.13",)),
            path("b", "lean", 0.2, ()), path("b", "wide", 0.4, ("BG 2.13",), decision="weak")]  # fmt: skip
    v = C.lean_vs_wide(rows, n_boot=50)
    assert v["p50_ratio"] == pytest.approx(0.15 / 0.35)
    assert v["recall_diff"] == pytest.approx(-0.5) and v["decisions_changed"] == 1
    table = C.path_table(rows, n_boot=50)
    assert list(table["policy"]) == ["lean", "wide"]
    assert table.set_index("policy").loc["wide", "final-notes recall"] == 1.0


def test_memory_cited_counts_memory_and_boost_notes_among_notes_or_citations() -> None:
    kinds = {"pin": "pinned", "mem": "memory", "bst": "boost"}
    clean = [path("a", "lean", 0.1, (), note_keys=("pin",), cited_keys=("pin",))]
    assert C.memory_cited(clean, kinds) == 0
    bad = [path("a", "lean", 0.1, (), note_keys=("mem",), cited_keys=("bst",))]
    assert C.memory_cited(bad, kinds) == 2


def test_boost_strength_is_the_smallest_best_that_spares_other_questions() -> None:
    table = pd.DataFrame({"strength": [0.0, 0.1, 0.2, 0.4],
                          "boost topic recall": [0.5, 0.7, 0.7, 0.9],
                          "other recall": [0.8, 0.8, 0.795, 0.7]})  # fmt: skip
    assert C.recommend_boost(table, tolerance=0.01) == 0.1
    rows = [
        C.BoostRow("q", "g", s, on, r) for s in (0.0, 0.2) for on, r in ((True, s), (False, 1.0))
    ]
    out = C.boost_table(rows, n_boot=20)
    assert list(out["boost topic recall"]) == [0.0, 0.2] and math.isfinite(out["other recall"][0])
