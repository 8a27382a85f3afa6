"""The labeled claim set: deterministic, balanced per kind, split by group with no group on both
sides, honest pairs (a supported claim is never a substring of its note; a gita neighbour is the
same translator's next or previous verse), and a missing data file refused in one line."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from citegate.core import paths
from citegate.core.errors import InputError
from citegate.corpus.claims import FAMILIES, build_claims, claim_text, gita_pairs, xquad_pairs
from citegate.corpus.questions import split_of


@pytest.fixture(scope="module")
def claims() -> list:
    return build_claims(gita_limit=120, xquad_limit=30)


def test_the_set_is_deterministic_and_a_smaller_limit_is_a_subset(claims: list) -> None:
    assert build_claims(gita_limit=120, xquad_limit=30) == claims
    small = {p.id for p in gita_pairs(40)} | {p.id for p in xquad_pairs(10)}
    assert small <= {p.id for p in claims}
    assert len({p.id for p in claims}) == len(claims)


def test_labels_are_balanced_per_family_and_language(claims: list) -> None:
    counts = Counter((p.corpus, p.family, p.language, p.label) for p in claims)
    for (corpus, family, lang, label), n in counts.items():
        assert counts[(corpus, family, lang, 1 - label)] == n
    assert {p.kind for p in claims} == set(FAMILIES) | set(FAMILIES.values())
    assert all(p.label == int(p.kind in FAMILIES) for p in claims)
    assert Counter(p.corpus for p in claims) == {"gita": 240, "xquad": 240}


def test_split_is_by_group_and_no_group_sits_on_both_sides(claims: list) -> None:
    sides: dict[str, set[str]] = {}
    for p in claims:
        sides.setdefault(p.group, set()).add(p.split)
        assert p.split == split_of(p.group)
    assert all(len(s) == 1 for s in sides.values())
    assert {p.split for p in claims} == {"tune", "test"}


def test_supported_claims_are_not_substrings_of_their_notes(claims: list) -> None:
    for p in claims:
        assert p.claim and p.note and p.claim not in p.note, p.id


def test_gita_pairs_compare_one_claim_with_one_translator_on_neighbouring_verses(
    claims: list,
) -> None:
    gita = [p for p in claims if p.corpus == "gita"]
    assert {(p.language, p.note_language) for p in gita} == {("en", "en")}
    by_anchor: dict[str, dict[str, object]] = {}
    for p in gita:
        by_anchor.setdefault(p.id.rsplit(":", 1)[1], {})[p.kind] = p
    for anchor, pair in by_anchor.items():
        pos, neg = pair["paraphrase"], pair["neighbour_verse"]
        assert pos.claim == neg.claim and pos.group == neg.group == f"BG {anchor}"
        _, pos_verse, translator = pos.note_key.split(":")
        _, neg_verse, neg_translator = neg.note_key.split(":")
        assert pos_verse == anchor and translator == neg_translator
        (c, v), (nc, nv) = (map(int, x.split(".")) for x in (pos_verse, neg_verse))
        assert nc == c and abs(nv - v) == 1


def test_xquad_answer_sentences_are_cross_lingual_and_question_answers_are_not(
    claims: list,
) -> None:
    xquad = [p for p in claims if p.corpus == "xquad"]
    assert {p.language for p in xquad} == {"en", "ru"}
    for p in xquad:
        assert p.cross_lingual == (p.family == "answer_sentence"), p.id
        assert p.group.startswith("xquad:") and p.note_key.startswith(f"xquad:{p.note_language}:")
    own = {p.id.rsplit(":", 1)[1]: p.note_key for p in xquad if p.kind == "question_answer"}
    for p in xquad:
        if p.kind == "question_answer_other":
            assert p.note_key != own[p.id.rsplit(":", 1)[1]]


def test_claim_text_is_a_sentence_or_two() -> None:
    text = "He spoke. Then the lord of the senses answered him at length, saying this.\n\nIAST"
    assert (
        claim_text(text)
        == "He spoke. Then the lord of the senses answered him at length, saying this."
    )
    long = "One two three four five six seven eight nine ten eleven twelve. Next sentence."
    assert claim_text(long) == "One two three four five six seven eight nine ten eleven twelve."


@pytest.mark.parametrize("missing", ["gita/translation.json", "xquad/xquad.ru.json"])
def test_a_missing_data_file_is_refused_in_one_line(tmp_path: Path, missing: str) -> None:
    for corpus in ("gita", "xquad"):
        (tmp_path / corpus).mkdir()
        for f in (paths.CORPORA / corpus).glob("*.json"):
            shutil.copy(f, tmp_path / corpus / f.name)
    (tmp_path / missing).unlink()
    with pytest.raises(InputError) as err:
        build_claims(gita_limit=5, xquad_limit=5, root=tmp_path)
    assert str(tmp_path / missing) in str(err.value) and "\n" not in str(err.value)
