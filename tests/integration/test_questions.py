"""Question sets: format, splits, determinism, the data card, gold resolution (real PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from citegate.core import paths
from citegate.core.errors import InputError
from citegate.corpus import datacheck
from citegate.corpus.builds import heldout_gita_chapters
from citegate.corpus.questions import SETS, build_sets, check_set, load_set, resolve_gold
from citegate.models.embed import default_embedder


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


def good_record(**changes: object) -> dict:
    """The first committed gita question as a dict, with some fields changed (None: removed)."""
    first = (paths.QUESTIONS / "gita.jsonl").read_text(encoding="utf-8").splitlines()[0]
    rec = {**json.loads(first), **changes}
    return {k: v for k, v in rec.items() if v is not None}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"record 3: not valid JSON at line 3, column 2"),
        ('["a list"]', r"record 3: expected a JSON object, got list"),
        (json.dumps(good_record(id="x", group=None)), r"record 3: missing field\(s\) \['group'\]"),
        (
            json.dumps(good_record(id="x", language=5)),
            r"record 3: field 'language' must be a string, got number 5",
        ),
        (json.dumps(good_record(id="x", gold="BG 1.1")), r"record 3: field 'gold' must be a list"),
        (json.dumps(good_record(id="x", gold=[1])), r"record 3: gold must be a list of references"),
        (
            json.dumps(good_record(id="x", mentions_address="yes")),
            r"record 3: field 'mentions_address' must be true/false",
        ),
        (json.dumps(good_record(id="x", extra=1)), r"record 3: unknown field\(s\) \['extra'\]"),
        (json.dumps(good_record()), r"record 3: duplicate id 'HF1-en-1:2-006' \(first on line 1\)"),
    ],
)
def test_bad_set_files_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    lines = [json.dumps(good_record()), "", line]  # a blank line: records are numbered by line
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.jsonl: " + message):
        load_set("bad", tmp_path)


def test_bad_source_file_names_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "sources" / "gitaverse"
    src.mkdir(parents=True)
    rec = {"qid": "q1", "question": "Who speaks?", "language": "en", "chapter": 1, "verse": 2}
    bad = {**rec, "qid": "q2", "chapter": "one"}
    (src / "gitaverse_dev.jsonl").write_text(
        f"{json.dumps(rec)}\n{json.dumps(bad)}\n", encoding="utf-8"
    )
    monkeypatch.setattr(paths, "QUESTIONS", tmp_path)
    with pytest.raises(
        InputError, match=r"gitaverse_dev\.jsonl: record 2: field 'chapter' must be an integer"
    ):
        build_sets()


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


def test_data_check_names_the_bad_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "gita.jsonl").write_text(json.dumps(good_record()) + "\n{oops\n", encoding="utf-8")
    monkeypatch.setattr(paths, "QUESTIONS", tmp_path)
    with pytest.raises(InputError, match=r"gita\.jsonl: record 2: not valid JSON at line 2"):
        datacheck.check_all(None, None)


@pytest.mark.db
def test_audit_support_addresses_are_indexed_verses(demo: psycopg.Connection) -> None:
    """Every "answerable" judgment of the label audit names a verse the split build holds."""
    from citegate.corpus.audit import audit_path, load_audit

    supports = {j.address for j in load_audit(audit_path("gita-split")).values() if j.address}
    rows = demo.execute(
        "SELECT DISTINCT addr_label FROM fragments WHERE corpus = 'gita-split' AND kind = 'verse' "
        "AND embedder_id = %s AND addr_label = ANY(%s)",
        (default_embedder().id, sorted(supports)),
    ).fetchall()
    assert supports and {r[0] for r in rows} == supports
