"""The one salted-hash sampler: a split or a sample is a pure function of its salt and its items,
and the values below pin the draws every split and sample makes, so a change to the sampler
shows here."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from citegate.corpus import builds, questions
from citegate.evaluation.sampling import salted_hash, salted_int, salted_order, salted_sample
from citegate.research import ltr_training as ltr
from citegate.research import study
from citegate.studies.prefloor_recall import followup
from citegate.studies.prefloor_recall.followup import compute as followup_compute


@dataclass(frozen=True)
class Q:
    id: str
    label: str = "answerable"


def test_salted_hash_is_sha256_of_colon_joined_parts() -> None:
    assert salted_hash("s", "gita", 3) == hashlib.sha256(b"s:gita:3").hexdigest()
    assert salted_hash("x") == hashlib.sha256(b"x").hexdigest()
    assert salted_int("s", "k") == int(hashlib.sha256(b"s:k").hexdigest(), 16)


def test_salted_order_and_sample_are_order_independent_and_nested() -> None:
    items = [f"q{i}" for i in range(50)]
    a = salted_order(items, str, "salt")
    assert a == salted_order(reversed(items), str, "salt")
    assert salted_sample(items, str, 5, "salt") == a[:5]
    assert salted_sample(items, str, 3, "salt") == a[:3]
    assert salted_sample(items, str, None, "salt") == a
    assert salted_sample(items, str, -1, "salt") == []
    assert salted_order(items, str, "other") != a


def test_heldout_parts_unchanged() -> None:
    assert sorted(builds.heldout_gita_chapters()) == [3, 8, 10, 12]
    assert sorted(builds.heldout_xquad_articles()) == [
        "American_Broadcasting_Company",
        "European_Union_law",
        "Force",
        "Fresno,_California",
        "Genghis_Khan",
        "Jacksonville,_Florida",
        "Normans",
        "Pharmacy",
        "Prime_number",
        "Super_Bowl_50",
        "Victoria_(Australia)",
        "Yuan_dynasty",
    ]


def test_split_of_unchanged() -> None:
    got = {g: questions.split_of(g) for g in ["2.13", "gita:2.13", "xquad:Normans", "", "ru:7.4"]}
    assert got == {
        "2.13": "tune",
        "gita:2.13": "tune",
        "xquad:Normans": "test",
        "": "tune",
        "ru:7.4": "test",
    }


def test_study_sample_unchanged() -> None:
    qs = [Q(f"q-{i}") for i in range(20)] + [Q(f"n-{i}", "out_of_scope") for i in range(5)]
    got = [q.id for q in study.sample(qs, 3)]  # type: ignore[arg-type]
    want = sorted(
        (q.id for q in qs if q.label == "answerable"),
        key=lambda i: hashlib.sha256(f"citegate-sample:{i}".encode()).hexdigest(),
    )[:3]
    want += sorted(
        (q.id for q in qs if q.label == "out_of_scope"),
        key=lambda i: hashlib.sha256(f"citegate-sample:{i}".encode()).hexdigest(),
    )[:3]
    assert got == want
    assert len(study.sample(qs, 0)) == len(qs)  # type: ignore[arg-type]


def test_followup_order_unchanged() -> None:
    assert followup_compute._order(0, "abc") == (
        "1ce2cd55d6ac30b4fa542a5ba1935455baf969396f7d58ed78bd6603360a0df1"
    )
    assert followup_compute._order(3, "gita-0001") == (
        "ab947d7b46b26bc558c69360a4ba805a641d4b65b8393224580347c5c0ac2800"
    )


def test_ltr_pick_questions_unchanged() -> None:
    qs = [Q(f"HF1-en-{i}") for i in range(30)]
    want = sorted(qs, key=lambda q: hashlib.sha256(q.id.encode()).hexdigest())
    assert ltr.pick_questions(qs, 4) == want[:4]
    assert ltr.pick_questions(qs, None) == want


def test_question_set_splits_unchanged(tmp_path: Path) -> None:
    """Every built question set (which carries each question's split) has the digest pinned
    here; built without label audits (an empty folder), which add fields but move no question."""
    sets = questions.build_sets(audits=tmp_path)
    assert {n: s.digest[:16] for n, s in sets.items()} == {
        "gita": "765ca4b169acfd51",
        "gita-split": "7274b3e1fed878c5",
        "out-of-scope": "f09c0dafa52b0314",
        "xquad": "f93506b35d8c0ee9",
        "xquad-split": "ea7ab614cf11bdd6",
    }
    gita = list(sets["gita"].questions)
    assert [q.id for q in study.sample(gita, 5)] == [
        "ru-gita-0174",
        "HF1-en-7:8-1438",
        "HF1-en-16:5-2873",
        "HF1-en-1:46-229",
        "HF1-en-16:5-2875",
    ]
    assert [q.id for q in ltr.pick_questions(gita, 5)] == [
        "HF1-en-18:65-3431",
        "HF1-en-6:6-1194",
        "HF1-en-2:11-289",
        "HF1-en-11:28-2210",
        "HF1-en-13:16-2523",
    ]
    convs = followup.candidate_conversations(gita, seed=1)
    assert len(convs) == 164
    assert hashlib.sha256(repr([c.id for c in convs]).encode()).hexdigest()[:16] == (
        "6d5d6f4530be8ff1"
    )
