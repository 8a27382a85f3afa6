"""The committed fold audit (`gita-folds.jsonl`): it loads, covers exactly the fold sample the
review sheet reads, each out_of_corpus judgment applies in exactly one fold set, and the data
card's fold audit entry is the file's own (no database)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from citegate.core.errors import InputError
from citegate.corpus import datacheck
from citegate.corpus.audit import audit_path, load_audit
from citegate.corpus.builds import fold_builds, gita_chapter_folds
from citegate.corpus.questions import fold_audit_name, fold_set, load_set, question_fold
from citegate.research.audit_sheet import (
    FOLD_CONTROL,
    FOLD_OOC,
    SheetNote,
    SheetRow,
    fold_audit_sample,
    fold_audit_samples,
    fold_held_out,
    sheet_markdown,
)
from citegate.research.folds import FOLD_LIMIT, fold_selector
from citegate.research.study import sample

FOLD_AUDIT = audit_path(fold_audit_name("gita"))


@pytest.fixture(scope="module")
def audit() -> dict:
    return load_audit(FOLD_AUDIT, frozenset())


@pytest.fixture(scope="module")
def fold_sets() -> dict:
    return {name: load_set(name) for name in fold_builds("gita")}


def test_fold_audit_loads_and_is_large_enough(audit: dict) -> None:
    ooc = [j for j in audit.values() if j.label == "out_of_corpus"]
    control = [j for j in audit.values() if j.label == "answerable"]
    assert len(ooc) >= 400 and len(control) >= 100
    gita = {q.id: q for q in load_set("gita").questions}
    chapters = {int(gita[j.id].gold[0].split()[1].split(".")[0]) for j in ooc}  # "BG 5.4"
    assert len(chapters) >= 12
    assert {j.sheet_digest for j in audit.values()} and all(
        len(j.sheet_digest) == 64 for j in audit.values()
    )


def test_fold_audit_covers_exactly_the_fold_sheet_sample(audit: dict, fold_sets: dict) -> None:
    """The judged ids are `fold_audit_sample` of 05's fold sample of every fold build (the
    sample is drawn without the database, as `load_fold_studies` draws it)."""
    drawn = {}
    for k, (name, qset) in enumerate(fold_sets.items(), 1):
        keep = fold_selector("gita", k)
        drawn[name] = sample([q for q in qset.questions if keep(name, q)], FOLD_LIMIT)
    chosen = fold_audit_samples(drawn, FOLD_OOC, FOLD_CONTROL)
    want = {q.id: q.label for qs in chosen.values() for q in qs}
    assert len(want) == sum(len(qs) for qs in chosen.values())  # no question twice
    assert {i: j.label for i, j in audit.items()} == want


def test_each_out_of_corpus_judgment_applies_in_exactly_one_fold_set(
    audit: dict, fold_sets: dict
) -> None:
    """Loading every fold set applies the audit (and refuses a held-out supporting address);
    an out_of_corpus record is carried by the one fold set that holds its chapter out."""
    gita = {q.id: q for q in load_set("gita").questions}
    for j in audit.values():
        carriers = [
            name
            for name, s in fold_sets.items()
            for q in s.questions
            if q.id == j.id and q.label == j.label and q.audit == j.judgment
        ]
        if j.label == "out_of_corpus":
            assert carriers == [f"gita-fold{question_fold(gita[j.id])}"], j.id
        else:
            assert len(carriers) == len(fold_sets) - 1, j.id  # answerable wherever indexed


def test_card_fold_audit_entry_is_computed_from_the_file() -> None:
    datacheck.check_audit_card()  # both audit entries of the data card match their files
    datacheck.check_fold_audit_card()
    entry = datacheck.card_counts(
        datacheck.CARD, datacheck.FOLD_AUDIT_BEGIN, datacheck.FOLD_AUDIT_END
    )
    assert entry == datacheck.fold_audit_entry()
    for k in range(1, 7):
        assert f"| gita-fold{k} | " in entry


def test_stale_fold_audit_entry_is_refused(tmp_path: Path) -> None:
    card = tmp_path / "CARD.md"
    card.write_text(f"x\n{datacheck.FOLD_AUDIT_BEGIN}\n| stale |\n{datacheck.FOLD_AUDIT_END}\n")
    with pytest.raises(InputError, match="fold audit entry disagrees"):
        datacheck.check_fold_audit_card(card)
    datacheck.write_card_counts(
        datacheck.fold_audit_entry(), card, datacheck.FOLD_AUDIT_BEGIN, datacheck.FOLD_AUDIT_END
    )
    datacheck.check_fold_audit_card(card)  # rewritten from the file: accepted


def test_fold_audit_entry_counts_per_fold() -> None:
    j = next(iter(load_audit(FOLD_AUDIT, frozenset()).values()))
    items = [
        replace(j, id="a", label="out_of_corpus", judgment="answerable", address="BG 2.47"),
        replace(j, id="b", label="out_of_corpus", judgment="not_answerable", address=""),
        replace(j, id="c", label="answerable", judgment="answerable", address="BG 2.47"),
    ]
    md = datacheck.fold_audit_markdown(items, {"a": 2, "b": 2, "c": 5}, {2: [9, 1], 5: [4]})
    assert "| gita-fold2 | 1, 9 | 1 | 1 | 0 | 2 | 0.500 [" in md
    assert "gita-fold5" not in md  # controls count in the per-label table only


def test_fold_sheet_rows_name_their_fold_and_held_out_chapters() -> None:
    held = fold_held_out("gita", 3)
    assert held == tuple(sorted(c for c, k in gita_chapter_folds().items() if k == 3))
    row = SheetRow(
        "q1",
        "out_of_corpus",
        "en",
        "test",
        "What is yoga?",
        ["BG 8.27"],
        {"BG 8.27": "Steadfast in yoga ..."},
        "answer",
        [SheetNote(1, 7, "BG 2.48", "verse", 0.91, "Evenness of mind is called yoga.")],
        3,
        held,
    )
    assert f"fold 3 (held out: ch. {', '.join(map(str, held))})" in sheet_markdown([row], "d")
    plain = replace(row, fold=0, held_out=())
    assert "fold" not in plain.to_json() and '"held_out"' in row.to_json()


def test_fold_audit_sample_is_first_ooc_then_control() -> None:
    j = next(iter(load_set("gita").questions))
    qs = [
        replace(j, id=f"{lab}-{i}", label=lab)
        for i in range(80)
        for lab in ("answerable", "out_of_corpus")
    ]
    got = [q.id for q in fold_audit_sample(qs, 70, 17)]
    assert got == [f"out_of_corpus-{i}" for i in range(70)] + [f"answerable-{i}" for i in range(17)]
    got = [q.id for q in fold_audit_sample(qs, 2, 2, frozenset({"answerable-0"}))]
    assert got == ["out_of_corpus-0", "out_of_corpus-1", "answerable-1", "answerable-2"]


def test_a_held_out_address_is_refused_in_its_fold(tmp_path: Path, audit: dict) -> None:
    gita = {q.id: q for q in load_set("gita").questions}
    j = next(j for j in audit.values() if j.label == "out_of_corpus")
    k = question_fold(gita[j.id])
    chapter = fold_held_out("gita", k)[0]
    bad = replace(j, judgment="answerable", address=f"BG {chapter}.1")
    (tmp_path / "gita-folds.jsonl").write_text(bad.to_json() + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="not indexed"):
        fold_set(f"gita-fold{k}", tmp_path)


def test_data_check_passes_with_the_fold_audit() -> None:
    """`citegate data check` without a database: every set equals a fresh build (the fold
    audit's judgments load into the fold sets) and both audit entries of the card match."""
    assert len(datacheck.check_all(None, None)) == len(datacheck.SETS)
