"""Limits a hostile but realistic user met: a search of a corpus that holds no fragments, a
question the size of a document, an unknown `--holdout-by` field, leave-out folds whose files and
database disagree, and an experiment asked to study a label its imported sets lack. Each is
refused in one line with exit 2 naming the input and what to do, changing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from conftest import fingerprint

from citegate.cli import main
from citegate.core.config import PipelineConfig
from citegate.core.config_files import resolve
from citegate.core.errors import EmptyCorpus, InputError, QuestionError
from citegate.core.fragments import Fragment
from citegate.core.inputs import MAX_QUESTION_CHARS
from citegate.corpus.beir import read_out_of_scope
from citegate.corpus.holdout import Folds
from citegate.models.embed import default_embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline.retrieve import collect, retrieve
from citegate.research.folds import load_fold_studies
from citegate.store import db, imports
from citegate.store.ingest import ingest
from citegate.store.presence import fold_mismatch, ingest_hint, require_fragments

pytestmark = pytest.mark.db

SPEC_03 = "experiments/03_gate_roc.yaml"


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_refusal(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for n in needles:
        assert n in err, err


def tiny(conn: psycopg.Connection, corpus: str = "tiny") -> None:
    """One fragment in `corpus` under the default embedder."""
    frag = Fragment(
        key="t#1",
        corpus=corpus,
        kind="prose_chapter",
        source_id="t",
        text="The 1973 oil crisis began with an embargo.",
        lang="en",
        loc_token="doc#1",
        addr_label="t",
    )
    ingest(conn, [frag], corpus, default_embedder(), origin="/tiny", progress=False)


def beir_folder(root: Path, n: int = 4) -> Path:
    """A BEIR folder of `n` documents (metadata field `article`), one question per document."""
    (root / "qrels").mkdir(parents=True)
    docs = [
        {"_id": f"d{i}", "title": f"T{i}", "text": f"Topic {i}: the river number {i} floods.",
         "metadata": {"article": f"a{i}"}}
        for i in range(n)
    ]  # fmt: skip
    queries = [{"_id": f"q{i}", "text": f"When does river {i} flood?"} for i in range(n)]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), "utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), "utf-8")
    qrels = "".join(f"q{i}\td{i}\t1\n" for i in range(n))
    (root / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    return root


# ---------------------------------------------------------------- a corpus without fragments


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["--corpus", "nosuchcorpus"], ["'nosuchcorpus'", "citegate data import-beir"]),
        ([], ["'gita'", "citegate ingest --corpus gita"]),  # the design corpus, never ingested
        (["--corpus", "nosuchcorpus", "--json"], ["'nosuchcorpus'"]),
        (["--corpus", "nosuchcorpus", "--answer"], ["'nosuchcorpus'"]),  # the whole turn
    ],
)
def test_ask_of_a_corpus_without_fragments_is_refused_never_insufficient(
    cli_db: str, argv: list[str], needles: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = fingerprint(cli_db)
    code, out, err = run_cli(["ask", "--design", "oil crisis", *argv], capsys)
    assert_one_line_refusal(code, err, "holds no fragments", *needles)
    assert "insufficient" not in out + err and fingerprint(cli_db) == before


def test_retrieve_names_only_the_empty_corpus_and_writes_nothing(
    conn: psycopg.Connection, fresh_db: str
) -> None:
    tiny(conn)
    emb = default_embedder()
    ok = retrieve(conn, "oil crisis", PipelineConfig(embedder=emb.id, corpora=("tiny",)), emb,
                  CosineReranker())  # fmt: skip
    assert [n.frag_key for n in ok.notes] == ["t#1"]
    before = fingerprint(fresh_db)
    both = PipelineConfig(embedder=emb.id, corpora=("tiny", "nosuch"))
    with pytest.raises(EmptyCorpus, match=r"^corpus 'nosuch' holds no fragments") as e:
        collect(conn, "oil crisis", both, emb, CosineReranker())  # what traces and studies call
    assert "tiny" not in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(EmptyCorpus, match=r"for embedder other/model"):  # another embedder's
        require_fragments(conn, "other/model", ["tiny"])
    assert fingerprint(fresh_db) == before


@pytest.mark.parametrize("name", ["a b", "../etc", "x" * 65, "nul\x00l"])
def test_a_bad_corpus_name_is_refused_at_the_library_boundary(
    conn: psycopg.Connection, name: str
) -> None:
    with pytest.raises(InputError, match=r"^corpora: record .*the name "):
        require_fragments(conn, "any", [name])


def test_a_bad_corpus_name_on_the_command_line_is_one_line(
    cli_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(["ask", "--design", "oil crisis", "--corpus", "a b"], capsys)
    assert_one_line_refusal(code, err, "the name holds U+0020 (whitespace)")


def test_the_hint_names_the_command_that_fills_each_kind_of_corpus(cli_db: str) -> None:
    assert ingest_hint("xquad-split") == "citegate ingest --corpus xquad-split"
    assert ingest_hint("gita-fold3") == "citegate ingest --corpus gita-fold3"
    assert "citegate data import-beir DIR --name mine" in ingest_hint("mine")


def test_doctor_reports_production_without_fragments_as_a_problem(
    cli_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(["doctor"], capsys)
    assert_one_line_refusal(code, err, "production searches gita", "citegate ingest --corpus gita")
    assert "  problem: no fragments of gita" in out
    lexical = out[out.index("lexical lane") :].splitlines()
    assert "  ok" not in lexical
    with db.connect(cli_db) as c:
        tiny(c, "gita")  # production's corpus holds a fragment now
    code, out, err = run_cli(["doctor"], capsys)
    assert code == 0 and "problem" not in out and err == ""


# ---------------------------------------------------------------- a question the size of a document


@pytest.mark.parametrize("json_out", [False, True])
def test_a_megabyte_question_is_refused_in_one_line(
    cli_db: str, json_out: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    question = "why " * (1 << 18)  # 1 MiB
    argv = ["ask", "--design", question, *(["--json"] if json_out else [])]
    code, out, err = run_cli(argv, capsys)
    assert_one_line_refusal(
        code, err, "1,048,576 characters long", f"limit is {MAX_QUESTION_CHARS:,}"
    )
    assert out == "" and question[:100] not in err


def test_the_question_limit_holds_at_the_library_boundary(conn: psycopg.Connection) -> None:
    tiny(conn)
    emb = default_embedder()
    cfg = PipelineConfig(embedder=emb.id, corpora=("tiny",))
    at_limit = ("oil " * MAX_QUESTION_CHARS)[:MAX_QUESTION_CHARS]
    assert retrieve(conn, at_limit, cfg, emb, CosineReranker()).trace.question == at_limit.strip()
    with pytest.raises(QuestionError, match=r"is 2,001 characters long; the limit is 2,000"):
        retrieve(conn, at_limit + "x", cfg, emb, CosineReranker())


def test_an_imported_question_over_the_limit_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "oos.jsonl"
    rows = [{"text": "Who won the cup?"}, {"text": "w" * (MAX_QUESTION_CHARS + 1)}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(InputError, match=r"oos.jsonl:2: 'text' is 2,001 characters long"):
        read_out_of_scope(path, "en")


# ---------------------------------------------------------------- --holdout-by, folds, dry-run


def test_an_unknown_holdout_field_is_one_line_naming_the_fields(
    cli_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = beir_folder(tmp_path / "b", n=30)
    argv = ["data", "import-beir", str(root), "--name", "hb", "--holdout-by", "chapter"]
    before = fingerprint(cli_db)
    code, _, err = run_cli(argv, capsys)
    assert_one_line_refusal(
        code,
        err,
        "--holdout-by 'chapter'",
        "30 of 30 documents",
        "fields every document has: 'article'",
    )
    assert fingerprint(cli_db) == before


def test_folds_whose_files_and_database_disagree_are_named_and_repaired_by_replace(
    cli_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    emb = default_embedder()
    root = beir_folder(tmp_path / "b", n=6)
    with db.connect(cli_db) as conn:
        imports.import_beir(conn, root, "fk", emb, progress=False)
        imports.fold_import(conn, "fk", emb, Folds(2), progress=False)
        assert fold_mismatch(conn, "fk", emb.id) is None

        def killed(*_: object) -> None:
            raise KeyboardInterrupt  # the process dies after the database commit

        with monkeypatch.context() as m:
            m.setattr(imports, "_write_folds", killed)
            with pytest.raises(KeyboardInterrupt):
                imports.fold_import(conn, "fk", emb, Folds(3), replace=True, progress=False)
        problem = fold_mismatch(conn, "fk", emb.id)
    assert problem is not None and "the database holds 3 fold builds" in problem
    assert "the import records 2 fold builds (fk-fold1, fk-fold2)" in problem
    before = fingerprint(cli_db)
    for k in ("3", "2"):
        code, _, err = run_cli(["data", "split", "fk", "--folds", k], capsys)
        assert_one_line_refusal(
            code, err, "leave-out folds are inconsistent", "--folds K --replace"
        )
    assert fingerprint(cli_db) == before
    with pytest.raises(InputError, match="leave-out folds are inconsistent"):
        load_fold_studies(["fk"], resolve("design"), limit=1, reranker="none")
    code, _, err = run_cli(["data", "split", "fk", "--folds", "3", "--replace"], capsys)
    assert code == 0, err
    with db.connect(cli_db) as conn:
        assert fold_mismatch(conn, "fk", emb.id) is None
    assert ingest_hint("fk-fold2") == "citegate data split fk --folds 3 --replace"


def test_dry_run_refuses_an_experiment_on_a_label_the_import_lacks(
    cli_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emb = default_embedder()
    with db.connect(cli_db) as conn:
        imports.import_beir(conn, beir_folder(tmp_path / "b", n=8), "mini", emb, progress=False)
    argv = ["run", SPEC_03, "--corpus", "mini", "--profile", "tiny", "--dry-run"]
    code, _, err = run_cli(argv, capsys)
    assert_one_line_refusal(
        code, err, "03_gate_roc studies out_of_corpus questions", "citegate data split mini"
    )
    assert run_cli(["data", "split", "mini", "--holdout", "0.5"], capsys)[0] == 0
    code, out, err = run_cli(argv, capsys)
    assert code == 0 and "mini-split" in out, err
