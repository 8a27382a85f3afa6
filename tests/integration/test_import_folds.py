"""`citegate data split NAME --folds K` against real PostgreSQL on the shipped example: the fold
builds partition the documents, each question is out_of_corpus in at most one fold (its own),
a re-run writes nothing, a K that cannot divide or a changed K without `replace` changes
nothing, the K ingests are one transaction, and a fold study loads."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from citegate.cli import main
from citegate.core import paths
from citegate.core.config_files import resolve
from citegate.core.errors import ConfigError
from citegate.core.fragments import Fragment
from citegate.corpus.builds import (
    build_id,
    fold_builds,
    fold_count,
    import_document_folds,
    import_folder,
    import_record,
    parent_build,
)
from citegate.corpus.holdout import Folds, Holdout
from citegate.corpus.questions import load_set, question_fold, resolve_gold
from citegate.models.embed import default_embedder
from citegate.research.folds import fold_selector, load_fold_studies, question_unit
from citegate.store import db
from citegate.store.imports import fold_import, import_beir, split_import
from citegate.store.ingest import CorpusReplaceError, ingest
from citegate.studies.gate_signals.run import fold_columns

pytestmark = pytest.mark.db

EXAMPLE = paths.DATA / "examples" / "xquad-mini"
BY_ARTICLE = Folds(3, "article")


def snapshot(conn: psycopg.Connection) -> list[tuple]:
    """Every fragment row and every recorded origin."""
    rows = conn.execute(
        "SELECT corpus, frag_key, content_hash FROM fragments ORDER BY corpus, frag_key"
    ).fetchall()
    return rows + conn.execute("SELECT corpus, origin FROM corpora ORDER BY 1, 2").fetchall()


def folder_bytes(name: str) -> dict[str, bytes]:
    """Every file of an import folder by name."""
    return {p.name: p.read_bytes() for p in sorted(import_folder(name).iterdir())}


def documents_of(conn: psycopg.Connection, corpus: str) -> set[str]:
    """The document ids stored in a corpus build."""
    rows = conn.execute("SELECT DISTINCT addr_label FROM fragments WHERE corpus = %s", (corpus,))
    return {r[0] for r in rows}


def test_folds_partition_the_documents_and_each_question_is_held_out_once(
    conn: psycopg.Connection,
) -> None:
    emb = default_embedder()
    import_beir(conn, EXAMPLE, "fx1", emb, progress=False)
    rep = fold_import(conn, "fx1", emb, BY_ARTICLE, progress=False)
    assert [b.name for b in rep.builds] == fold_builds("fx1") == [f"fx1-fold{i}" for i in (1, 2, 3)]
    assert fold_count("fx1") == 3 and parent_build("fx1-fold3") == "fx1"
    everything = documents_of(conn, "fx1")
    fold_of = import_document_folds("fx1")
    assert set(fold_of) == everything and len(everything) == 150
    held_union: set[str] = set()
    for b in rep.builds:
        i = int(b.name.rsplit("fold", 1)[1])
        held = {d for d, k in fold_of.items() if k == i}
        assert documents_of(conn, b.name) == everything - held  # each build lacks its fold only
        assert b.held_documents == len(held) == 50  # 10 of 30 articles, 5 paragraphs each
        assert not held & held_union
        held_union |= held
    assert held_union == everything
    by_article: dict[str, set[int]] = {}
    for d, k in fold_of.items():
        by_article.setdefault(d.rsplit("-", 1)[0], set()).add(k)
    assert len(by_article) == 30 and all(len(ks) == 1 for ks in by_article.values())
    record = import_record("fx1-fold2")
    assert record is not None and record["folds"] == BY_ARTICLE.to_json()
    assert record["builds"]["fx1-fold2"]["build_id"] == build_id("fx1-fold2")
    out: Counter[str] = Counter()
    for name in fold_builds("fx1"):
        qset = load_set(name)  # found in the import folder, labeled against its fold build
        assert qset.corpus == name and len(qset.questions) == 90
        gold = resolve_gold(conn, qset, emb.id)  # answerable in the fold, out_of_corpus in fx1
        assert sum(1 for ids in gold.values() if ids) == sum(
            q.label == "answerable" for q in qset.questions
        )
        for q in qset.questions:
            assert question_unit(q) == q.group
            if q.label == "out_of_corpus":
                out[q.id] += 1
                assert question_fold(q) == int(name.rsplit("fold", 1)[1])
                assert q.group == f"fx1:{q.gold[0]}"  # the fold of its first relevant document
    assert set(out.values()) == {1} and len(out) == 90  # one-article gold: each out once
    manifest = json.loads((import_folder("fx1") / "MANIFEST.json").read_text())
    assert manifest["fx1-fold1"]["build_id"] == build_id("fx1-fold1")
    assert "Leave-out folds `fx1-fold1..3`" in (import_folder("fx1") / "CARD.md").read_text()


def test_a_question_spanning_folds_is_never_out_of_corpus_and_keeps_its_first_documents_fold(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    emb = default_embedder()
    qs = tmp_path / "q.csv"
    qs.write_text(
        "id,text,gold\n"
        "s1,What did the embargo cause and how did it end?,"
        "1973_oil_crisis-2;1973_oil_crisis-1\n"
        "s2,What did Syria and Egypt launch in 1973?,1973_oil_crisis-1\n",
        encoding="utf-8",
    )
    import_beir(conn, EXAMPLE, "fx2", emb, questions=qs, progress=False)
    fold_import(conn, "fx2", emb, Folds(2), progress=False)  # folds of documents
    fold_of = import_document_folds("fx2")
    labels = {n: {q.id: q.label for q in load_set(n).questions} for n in fold_builds("fx2")}
    assert fold_of["1973_oil_crisis-1"] != fold_of["1973_oil_crisis-2"]  # s1 spans both folds
    s1 = next(q for q in load_set("fx2-fold1").questions if q.id == "s1")
    assert question_fold(s1) == fold_of["1973_oil_crisis-1"]  # the first (sorted) document's
    assert all(lab["s1"] == "answerable" for lab in labels.values())
    assert sum(lab["s2"] == "out_of_corpus" for lab in labels.values()) == 1


def test_rerun_is_idempotent_and_a_changed_k_needs_replace(conn: psycopg.Connection) -> None:
    emb = default_embedder()
    import_beir(conn, EXAMPLE, "fx3", emb, holdout=Holdout(0.25, "article"), progress=False)
    fold_import(conn, "fx3", emb, BY_ARTICLE, progress=False)
    before, files = snapshot(conn), folder_bytes("fx3")
    again = fold_import(conn, "fx3", emb, BY_ARTICLE, progress=False)
    assert [b.ingest.written for b in again.builds] == [0, 0, 0]
    assert snapshot(conn) == before and folder_bytes("fx3") == files
    for other in (Folds(4, "article"), Folds(3), Folds(2, "article")):
        with pytest.raises(CorpusReplaceError, match=r"fx3 has 3 leave-out fold builds.*--replace"):
            fold_import(conn, "fx3", emb, other, progress=False)
        assert snapshot(conn) == before and folder_bytes("fx3") == files
    for k in (1, 31):  # 30 articles
        with pytest.raises(ConfigError, match=rf"^fx3: --folds {k} is out of range"):
            fold_import(conn, "fx3", emb, Folds(k, "article"), progress=False)
        assert snapshot(conn) == before and folder_bytes("fx3") == files
    fewer = fold_import(conn, "fx3", emb, Folds(2, "article"), replace=True, progress=False)
    assert fewer.removed == ("fx3-fold3",) and fold_count("fx3") == 2
    assert documents_of(conn, "fx3-fold3") == set()
    assert not (import_folder("fx3") / "fx3-fold3.jsonl").exists()
    assert load_set("fx3-split").corpus == "fx3-split"  # the split is untouched
    split_import(conn, "fx3", emb, Holdout(0.25, "article"), progress=False)
    assert load_set("fx3-fold2").corpus == "fx3-fold2"  # and the split keeps the folds
    kept = import_beir(conn, EXAMPLE, "fx3", emb, progress=False)  # a re-import keeps both
    assert kept.folds is not None and [b.ingest.written for b in kept.folds.builds] == [0, 0]
    assert fold_count("fx3") == 2


def test_the_fold_builds_are_one_transaction(conn: psycopg.Connection) -> None:
    emb = default_embedder()
    import_beir(conn, EXAMPLE, "fx4", emb, progress=False)
    squatter = Fragment(
        key="x#1",
        corpus="fx4-fold3",
        kind="prose_chapter",
        source_id="x",
        text="unrelated",
        lang="en",
        loc_token="doc#1",
        addr_label="x",
    )
    ingest(conn, [squatter], "fx4-fold3", emb, origin="/elsewhere", progress=False)
    before, files = snapshot(conn), folder_bytes("fx4")
    with pytest.raises(CorpusReplaceError, match="fx4-fold3"):  # folds 1 and 2 went in first
        fold_import(conn, "fx4", emb, BY_ARTICLE, progress=False)
    assert snapshot(conn) == before and folder_bytes("fx4") == files
    assert fold_count("fx4") == 0


def test_the_command_and_a_fold_study(
    fresh_db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("DATABASE_URL", fresh_db)
    emb = default_embedder()
    with db.connect(fresh_db) as conn:
        import_beir(conn, EXAMPLE, "fx5", emb, progress=False)
    assert main(["data", "split", "fx5", "--folds", "--holdout-by", "article"]) == 0
    out = capsys.readouterr().out
    assert "fx5: 4 leave-out fold builds (4 folds of field article" in out
    assert out.count("fragments written") == 4
    assert main(["data", "split", "fx5", "--folds", "5"]) == 2
    assert "fx5 has 4 leave-out fold builds" in capsys.readouterr().err
    cfg = resolve("design").replace(reranker="none")
    studies = load_fold_studies(["fx5"], cfg, limit=2, reranker="none")
    assert list(studies) == fold_builds("fx5")
    select = fold_selector("fx5", 1)
    for name, study in studies.items():
        assert set(study.sets) == {name, "out-of-scope"}
        labels = Counter(q.label for s in study.sets.values() for q in s.questions)
        assert labels == {"answerable": 2, "out_of_corpus": 2, "out_of_scope": 2}
    assert all(select("fx5-fold1", q) for q in studies["fx5-fold1"].sets["fx5-fold1"].questions)
    cols = fold_columns(studies)
    assert set(cols["base"]) == {"fx5"} and set(cols["cv_fold"]) == {1, 2, 3, 4}
    mine = cols[cols["set"] != "out-of-scope"]
    assert (mine["unit"].str.startswith("fx5:")).all()
