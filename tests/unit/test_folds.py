"""Leave-out folds: every chapter (article) held out by exactly one fold build, fold question
sets labeled against their build, each question asked in the folds of its own group."""

from __future__ import annotations

from collections import Counter

import pytest

from citegate.core.errors import ConfigError, InputError
from citegate.corpus import builds as B
from citegate.corpus.holdout import folds, held_out
from citegate.corpus.questions import fold_set, load_set, question_fold, scope_fold
from citegate.research.folds import fold_selector, question_unit


def test_folds_deal_every_value_to_one_fold_in_balanced_sizes() -> None:
    got = folds(range(1, 19), "gita", 6)
    assert set(got) == set(range(1, 19))
    assert Counter(got.values()) == {i: 3 for i in range(1, 7)}
    assert got == folds(reversed(range(1, 19)), "gita", 6)  # the draw, never the input order
    # the first fold's first value is the split's first held-out value: one salted order
    assert min(held_out(range(1, 19), "gita", 1)) in {v for v, k in got.items() if k == 1}


@pytest.mark.parametrize("k", [1, 19])
def test_folds_refuse_a_count_that_cannot_divide(k: int) -> None:
    with pytest.raises(ConfigError, match="leave-out folds"):
        folds(range(1, 19), "gita", k)


def test_fold_builds_hold_out_exactly_their_chapters() -> None:
    chapters = B.gita_chapter_folds()
    for name in B.fold_builds("gita"):
        base, k = B.parse_fold(name)  # type: ignore[misc]
        assert base == "gita" and B.parent_build(name) == "gita"
        kept = {B.fragment_chapter(f) for f in B.BUILDS[name]()} - {None}
        assert kept == {c for c, i in chapters.items() if i != k}
    assert B.parse_fold("gita-split") is None and B.parent_build("gita-split") == "gita"
    assert len({B.build_id(n) for n in B.fold_builds("gita")}) == 6


def test_an_unknown_fold_build_has_no_id() -> None:
    with pytest.raises(ConfigError, match="unknown corpus build"):
        B.build_id("gita-fold7")


def test_every_gita_question_is_out_of_corpus_in_exactly_one_fold_set() -> None:
    sets = [load_set(n) for n in B.fold_builds("gita")]
    ooc: Counter[str] = Counter()
    for s in sets:
        for q in s.questions:
            if q.label == "out_of_corpus":
                ooc[q.id] += 1
                assert question_fold(q) == B.parse_fold(s.name)[1]  # type: ignore[index]
    assert set(ooc.values()) == {1} and len(ooc) == len(load_set("gita").questions)


def test_a_fold_audit_applies_only_where_its_label_holds(tmp_path) -> None:
    q = next(q for q in load_set("gita-fold1").questions if q.label == "out_of_corpus")
    other = next(c for c, i in B.gita_chapter_folds().items() if i != 1)
    rec = (
        '{"id": "%s", "label": "out_of_corpus", "judgment": "answerable", "address": "BG %d.1",'
        ' "reason": "r", "judged_by": "t", "method_version": "1", "sheet_digest": "x"}'
    )
    (tmp_path / "gita-folds.jsonl").write_text(rec % (q.id, other) + "\n", encoding="utf-8")
    one = {x.id: x for x in fold_set("gita-fold1", tmp_path).questions}[q.id]
    assert one.audited_label == "held_out_answerable" and one.audit_address == f"BG {other}.1"
    two = {x.id: x for x in fold_set("gita-fold2", tmp_path).questions}[q.id]
    assert two.label == "answerable" and two.audit == ""  # judged where it is out_of_corpus only
    held = next(c for c, i in B.gita_chapter_folds().items() if i == 1)
    (tmp_path / "gita-folds.jsonl").write_text(rec % (q.id, held) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="not indexed"):
        fold_set("gita-fold1", tmp_path)


def test_each_question_is_asked_in_the_folds_of_its_group() -> None:
    rows: dict[str, set[tuple[str, int]]] = {}
    for name in B.fold_builds("xquad"):
        _, k = B.parse_fold(name)  # type: ignore[misc]
        keep = fold_selector("xquad", k)
        for s in (load_set(name), load_set("out-of-scope")):
            for q in s.questions:
                if keep(s.name, q):
                    fold = scope_fold(q, 4) if q.label == "out_of_scope" else question_fold(q)
                    rows.setdefault(q.id, set()).add((q.label, fold))
    for got in rows.values():
        labels = [label for label, _ in got]
        assert len(labels) == len(set(labels))  # at most one row per label
        assert len({fold for _, fold in got}) == 1  # every row in the fold of its group
    assert {label for got in rows.values() for label, _ in got} == {
        "answerable",
        "out_of_corpus",
        "out_of_scope",
    }


def test_an_xquad_unit_is_the_paragraph_in_every_language() -> None:
    qs = load_set("xquad").questions
    en = next(q for q in qs if q.language == "en")
    ru = next(q for q in qs if q.id == en.id.replace("-en-", "-ru-"))
    assert question_unit(en) == question_unit(ru) == en.gold[0].replace(":en:", ":")
    gita = load_set("gita").questions[0]
    assert question_unit(gita) == gita.group
