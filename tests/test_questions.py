"""Question sets: format, splits, determinism, the data card, gold resolution (real PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from citegate import datacheck, paths
from citegate.builds import heldout_gita_chapters
from citegate.embed import default_embedder
from citegate.errors import InputError
from citegate.questions import SETS, build_sets, check_set, load_set, resolve_gold


def test_committed_sets_equal_a_fresh_build() -> None:
    fresh = build_sets()
    for name in SETS:
        assert load_set(name).digest == fresh[name].digest, name


def test_card_counts_agree_with_the_sets() -> None:
    table = datacheck.counts_markdown(load_set(n) for n in SETS)
    assert table == datacheck.card_counts()


def test_no_leakage_duplicates_or_missing_labels() -> None:
    for name in SETS:
        s = load_set(name)
        assert check_set(s) == []
        assert {q.split for q in s.questions} == {"tune", "test"}


def test_split_build_labels_follow_the_heldout_chapters() -> None:
    s = load_set("gita-split")
    held = heldout_gita_chapters()
    for q in s.questions:
        chapters = {int(g.split()[1].split(".")[0]) for g in q.gold}
        if q.label == "out_of_corpus":
            assert chapters <= held
        else:
            assert chapters.isdisjoint(held)
    assert len(s.where(label="out_of_corpus", language="ru")) >= 30


def test_minimum_sizes_of_written_sets() -> None:
    ru = load_set("gita").where(language="ru")
    oos = load_set("out-of-scope")
    written = [q for q in oos.questions if not q.id.startswith("nq-")]
    assert len(ru) >= 150 and len(written) >= 100
    assert {q.language for q in written} == {"en", "ru"}
    assert {q.topic for q in written} >= {"cooking", "sport", "code", "news", "everyday"}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "JSON"),
        ('{"id": "x"}', "missing"),
    ],
)
def test_bad_set_files_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    (tmp_path / "bad.jsonl").write_text(line + "\n", encoding="utf-8")
    with pytest.raises((InputError, json.JSONDecodeError)):
        load_set("bad", tmp_path)


def test_wrong_label_is_rejected(tmp_path: Path) -> None:
    first = (paths.QUESTIONS / "gita.jsonl").read_text(encoding="utf-8").splitlines()[0]
    rec = json.loads(first)
    rec["label"] = "maybe"
    (tmp_path / "bad.jsonl").write_text(json.dumps(rec) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.jsonl: record 1: bad label"):
        load_set("bad", tmp_path)


@pytest.mark.db
def test_gold_resolves_against_the_demo_database(demo: psycopg.Connection) -> None:
    emb = default_embedder()
    sets = datacheck.check_all(demo, emb.id)
    assert len(sets) == len(SETS)
    gold = resolve_gold(demo, load_set("gita"), emb.id)
    q = load_set("gita").questions[0]
    assert len(gold[q.id]) == 5  # one verse fragment per English translator


@pytest.mark.db
def test_unresolvable_gold_is_an_error(demo: psycopg.Connection) -> None:
    from dataclasses import replace

    s = load_set("gita")
    broken = replace(s, questions=(replace(s.questions[0], gold=("BG 19.99",)),))
    with pytest.raises(InputError, match="BG 19.99"):
        resolve_gold(demo, broken, default_embedder().id)
