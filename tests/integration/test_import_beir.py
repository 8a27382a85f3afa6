"""`citegate data import-beir` against real PostgreSQL: the shipped example imports with its
split; a bad record anywhere leaves the database (and the import folder) as they were."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import psycopg
import pytest

from citegate.core import paths
from citegate.core.errors import InputError
from citegate.corpus.beir import ImportProblems
from citegate.corpus.builds import build_id, import_folder, is_imported
from citegate.corpus.holdout import Holdout
from citegate.corpus.questions import load_set, resolve_gold
from citegate.models.embed import default_embedder
from citegate.store.imports import import_beir, import_questions, split_import
from citegate.store.ingest import CorpusReplaceError

pytestmark = pytest.mark.db

EXAMPLE = paths.DATA / "examples" / "xquad-mini"


def snapshot(conn: psycopg.Connection) -> list[tuple]:
    """Every fragment row that an import could touch, and the recorded origins."""
    rows = conn.execute(
        "SELECT corpus, frag_key, content_hash FROM fragments ORDER BY corpus, frag_key"
    ).fetchall()
    return rows + conn.execute("SELECT * FROM corpora ORDER BY 1, 2").fetchall()


def test_the_example_imports_with_a_split_by_article(conn: psycopg.Connection) -> None:
    emb = default_embedder()
    rep = import_beir(conn, EXAMPLE, "ex1", emb, holdout=Holdout(0.25, "article"), progress=False)
    assert (rep.documents, rep.questions) == (150, 90)
    assert rep.fragments == rep.ingest.written > 150  # long paragraphs are chunked
    split = rep.split
    assert split is not None and split.held_documents == 40  # 8 of 30 articles, 5 paragraphs each
    assert split.answerable + split.out_of_corpus == 90 and split.out_of_corpus > 0
    full, held = load_set("ex1"), load_set("ex1-split")  # found in the import folder
    assert full.corpus == "ex1" and held.corpus == "ex1-split"
    assert {q.label for q in full.questions} == {"answerable"}
    gold = resolve_gold(conn, held, emb.id)  # answerable in the split, out_of_corpus only in full
    assert sum(1 for ids in gold.values() if ids) == split.answerable
    manifest = json.loads((import_folder("ex1") / "MANIFEST.json").read_text())
    assert manifest["ex1-split"]["digest"] == held.digest
    assert manifest["ex1-split"]["build_id"] == build_id("ex1-split")
    assert is_imported("ex1-split") and (import_folder("ex1") / "CARD.md").is_file()
    again = import_beir(conn, EXAMPLE, "ex1", emb, progress=False)  # keeps the recorded split
    assert (again.ingest.written, again.split.ingest.written) == (0, 0)
    assert load_set("ex1-split").digest == held.digest


@pytest.mark.parametrize(
    ("file", "line", "message"),
    [
        ("corpus.jsonl", '{"_id": "1973_oil_crisis-1", "text": "again"}', "duplicate _id"),
        ("corpus.jsonl", '{"_id": "x-1", "text": ""}', "empty or missing 'text'"),
        ("corpus.jsonl", '{"text": "no id"}', "missing '_id'"),
        ("corpus.jsonl", "{bad json", "not valid JSON"),
        ("queries.jsonl", '{"_id": "57264d9edd62a815002e8100", "text": "dup"}', "duplicate _id"),
        ("qrels/test.tsv", "57264d9edd62a815002e8100\tno-such-doc\t1", "unknown corpus-id"),
        ("qrels/test.tsv", "no-such-query\t1973_oil_crisis-1\t1", "unknown query-id"),
    ],
)
def test_a_bad_record_changes_nothing(
    conn: psycopg.Connection, tmp_path: Path, file: str, line: str, message: str
) -> None:
    emb = default_embedder()
    import_beir(conn, EXAMPLE, "ex2", emb, progress=False)
    before, files = snapshot(conn), sorted(p.read_bytes() for p in import_folder("ex2").iterdir())
    bad = shutil.copytree(EXAMPLE, tmp_path / "bad")
    with (bad / file).open("a", encoding="utf-8") as f:
        f.write(line + "\n")
    n = len((bad / file).read_text(encoding="utf-8").splitlines())
    with pytest.raises(ImportProblems) as err:
        import_beir(conn, bad, "ex2", emb, replace=True, progress=False)
    assert [(p.path, p.line) for p in err.value.problems] == [(str(bad / file), n)]
    assert message in err.value.problems[0].message
    assert snapshot(conn) == before
    assert sorted(p.read_bytes() for p in import_folder("ex2").iterdir()) == files


def test_another_source_into_an_imported_corpus_needs_replace(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    emb = default_embedder()
    import_beir(conn, EXAMPLE, "ex3", emb, progress=False)
    other = shutil.copytree(EXAMPLE, tmp_path / "other")
    before = snapshot(conn)
    with pytest.raises(CorpusReplaceError, match="--replace"):
        import_beir(conn, other, "ex3", emb, progress=False)
    assert snapshot(conn) == before


def test_split_afterwards_and_questions_with_gold_ids(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    emb = default_embedder()
    import_beir(conn, EXAMPLE, "ex4", emb, progress=False)
    rep = split_import(conn, "ex4", emb, Holdout(0.2), progress=False)
    assert rep.held_documents == 30 and rep.out_of_corpus > 0
    with pytest.raises(CorpusReplaceError):  # another rule for the same split build
        split_import(conn, "ex4", emb, Holdout(0.5), progress=False)
    qs = tmp_path / "mine.csv"
    qs.write_text(
        "id,text,gold\nm1,What did Syria and Egypt launch in 1973?,1973_oil_crisis-1\n"
        "m2,Which church is this about?,United_Methodist_Church-1;United_Methodist_Church-2\n",
        encoding="utf-8",
    )
    got = import_questions(conn, qs, "ex4", emb, progress=False)
    assert got.questions == 2 and got.ingest.written == 0 and got.split is not None
    assert {q.id for q in load_set("ex4-split").questions} == {"m1", "m2"}
    bad = tmp_path / "bad.csv"
    bad.write_text("id,text,gold\nm3,What?,not-a-doc\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.csv:2: gold names unknown"):
        import_questions(conn, bad, "ex4", emb, progress=False)
    assert {q.id for q in load_set("ex4").questions} == {"m1", "m2"}


def test_own_out_of_scope_questions_become_the_runs_negatives(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    oos = tmp_path / "oos.txt"
    oos.write_text(
        "How do I bake sourdough bread?\nWho won the 2018 World Cup?\n", encoding="utf-8"
    )
    rep = import_beir(conn, EXAMPLE, "ex5", default_embedder(), out_of_scope=oos, progress=False)
    assert rep.out_of_scope == "ex5-out-of-scope"
    negatives = load_set("ex5-out-of-scope")
    assert negatives.corpus == "*" and {q.label for q in negatives.questions} == {"out_of_scope"}
    assert len(negatives.questions) == 2
    again = import_beir(conn, EXAMPLE, "ex5", default_embedder(), progress=False)
    assert again.out_of_scope == "ex5-out-of-scope"  # kept by a re-import without the flag
