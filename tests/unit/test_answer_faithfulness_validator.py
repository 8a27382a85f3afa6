"""The validator part end to end on a small real claim set with the bundled embedder: every mode
scored, the mode chosen on the tune part only, and a set too small to certify refused (no
threshold, nothing passes) instead of certified."""

from __future__ import annotations

import math

import pytest

from citegate.corpus.claims import ClaimPair, build_claims
from citegate.models.embed import default_embedder
from citegate.studies.answer_faithfulness.compute import RocRow, Slice
from citegate.studies.answer_faithfulness.validator import (
    ModeRow,
    choose_mode,
    mode_table,
    validate,
)


@pytest.fixture(scope="module")
def small() -> list[ClaimPair]:
    return build_claims(gita_limit=12, xquad_limit=4)


def _row(name: str, auroc: float) -> RocRow:
    sl = Slice() if name == "all" else Slice(corpus=name)
    return RocRow(sl, 10, 10, 5, auroc, auroc, auroc, auroc, auroc)


def test_the_mode_is_chosen_by_the_tune_auroc_over_all_pairs() -> None:
    rows = [
        ModeRow("qp-note", "tune", _row("all", 0.80)),
        ModeRow("qp-note", "tune", _row("gita", 0.99)),  # a slice does not choose
        ModeRow("qq-sentence", "tune", _row("all", 0.90)),
        ModeRow("pp-note", "test", _row("all", 0.99)),  # the test part does not choose
    ]
    assert choose_mode(rows) == "qq-sentence"
    with pytest.raises(ValueError, match="no tune AUROC"):
        choose_mode(rows[-1:])


def test_mode_table_scores_each_mode_on_real_pairs(small: list[ClaimPair]) -> None:
    rows = mode_table(small, default_embedder(), ("qp-note", "qp-sentence"), n_boot=20)
    assert {r.mode for r in rows} == {"qp-note", "qp-sentence"}
    pooled = {r.mode: r.row for r in rows if r.row.slice.name == "all"}
    tune = [p for p in small if p.split == "tune"]
    assert pooled["qp-note"].n_pos + pooled["qp-note"].n_neg == len(tune)
    assert all(0.0 <= r.auroc <= 1.0 for r in pooled.values())


def test_a_set_too_small_to_certify_is_refused(small: list[ClaimPair]) -> None:
    report = validate(small, default_embedder(), "qp-sentence", n_boot=20)
    assert not report.certified.feasible and math.isinf(report.certified.threshold)
    assert all(r.kept == 0 and r.false_supports == 0 for r in report.realised)
    assert report.roc[0].slice.name == "all"
