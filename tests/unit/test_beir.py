"""Reading a BEIR folder: every bad record named with its file and line, splits, chunks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citegate.core.errors import InputError
from citegate.corpus.beir import (
    ImportProblems,
    check_holdout_field,
    check_name,
    read_collection,
    read_out_of_scope,
)
from citegate.corpus.holdout import Holdout
from citegate.corpus.import_sets import (
    collection_fragments,
    question_set,
    split_set,
)

DOCS = [
    {
        "_id": f"d{i}",
        "title": f"Doc {i}",
        "text": f"Text of document {i}.",
        "metadata": {"a": i % 3},
    }
    for i in range(6)
]
QUERIES = [{"_id": f"q{i}", "text": f"Question {i}?"} for i in range(4)]
QRELS = ["q0\td0\t1", "q1\td1\t2", "q1\td2\t1", "q2\td3\t1", "q3\td4\t0"]


def beir(tmp: Path, docs=DOCS, queries=QUERIES, qrels=None, files=None) -> Path:
    """A BEIR folder; `docs`/`queries` items may be raw strings (written as the line)."""
    tmp.mkdir(parents=True, exist_ok=True)

    def dump(rows: list) -> str:
        return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)

    (tmp / "corpus.jsonl").write_text(dump(docs), encoding="utf-8")
    (tmp / "queries.jsonl").write_text(dump(queries), encoding="utf-8")
    (tmp / "qrels").mkdir(exist_ok=True)
    for name, rows in (files or {"test": qrels if qrels is not None else QRELS}).items():
        body = "query-id\tcorpus-id\tscore\n" + "".join(r + "\n" for r in rows)
        (tmp / "qrels" / f"{name}.tsv").write_text(body, encoding="utf-8")
    return tmp


def problems(root: Path, questions: Path | None = None) -> list[str]:
    with pytest.raises(ImportProblems) as err:
        read_collection(root, questions)
    return [str(p) for p in err.value.problems]


def test_a_valid_folder_gives_questions_with_their_relevant_documents(tmp_path: Path) -> None:
    coll = read_collection(beir(tmp_path))
    got = {q.id: q.relevant for q in coll.queries}
    assert got == {"q0": ("d0",), "q1": ("d1", "d2"), "q2": ("d3",)}  # q3: score 0 only
    assert coll.skipped_queries == 1
    assert coll.split_source == "salted"
    assert set(coll.files) == {"corpus.jsonl", "queries.jsonl", "qrels/test.tsv"}


def test_every_bad_record_is_named_with_file_and_line_at_once(tmp_path: Path) -> None:
    docs = [
        DOCS[0],
        "{not json",
        {"title": "no id", "text": "x"},
        {"_id": "d0", "text": "again"},
        {"_id": "d9", "text": "   "},
        {"_id": "has space", "text": "x"},
        *DOCS[1:],
    ]
    queries = [*QUERIES, {"_id": "q0", "text": "dup"}, {"_id": "q7"}]
    qrels = ["q0\td0\t1", "q0\tnope\t1", "qx\td1\t1", "q1\td1\tx", "q1\td1", "q0\td0\t1"]
    root = beir(tmp_path, docs, queries, qrels)
    found = problems(root)
    c, q, t = root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / "test.tsv"
    expected = [
        f"{c}:2: not valid JSON",
        f"{c}:3: missing '_id'",
        f"{c}:4: duplicate _id 'd0' (first on line 1)",
        f"{c}:5: empty or missing 'text'",
        f"{c}:6: _id 'has space' holds whitespace",
        f"{q}:5: duplicate _id 'q0' (first on line 1)",
        f"{q}:6: empty or missing 'text'",
        f"{t}:3: unknown corpus-id 'nope'",
        f"{t}:4: unknown query-id 'qx'",
        f"{t}:5: score 'x' is not an integer",
        f"{t}:6: expected 3 tab-separated columns",
        f"{t}:7: duplicate pair q0 d0 (first on line 2)",
    ]
    for e in expected:
        assert any(f.startswith(e) for f in found), (e, found)
    assert len(found) == len(expected)


def test_the_error_message_lists_the_problems(tmp_path: Path) -> None:
    root = beir(tmp_path, [DOCS[0], DOCS[0]], qrels=["q0\td0\t1"])
    with pytest.raises(InputError, match=r"1 bad record\(s\); nothing was imported:\n.*line 1"):
        read_collection(root)


def test_missing_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no corpus.jsonl"):
        read_collection(tmp_path)
    root = beir(tmp_path / "b")
    (root / "queries.jsonl").unlink()
    with pytest.raises(InputError, match="queries.jsonl and qrels"):
        read_collection(root)


def test_dev_and_test_files_fix_the_split(tmp_path: Path) -> None:
    root = beir(tmp_path, files={"dev": ["q0\td0\t1"], "test": ["q1\td1\t1", "q2\td3\t1"]})
    coll = read_collection(root)
    assert coll.split_source == "files"
    qs = question_set(coll, "mine", "en", "test")
    assert {q.id: q.split for q in qs.questions} == {"q0": "tune", "q1": "test", "q2": "test"}


def test_a_query_on_both_split_files_is_refused(tmp_path: Path) -> None:
    root = beir(tmp_path, files={"dev": ["q0\td0\t1"], "test": ["q0\td1\t1"]})
    assert any("cannot sit on both" in p for p in problems(root))


def test_questions_file_csv_and_jsonl(tmp_path: Path) -> None:
    root = beir(tmp_path)
    csv = tmp_path / "qs.csv"
    csv.write_text(
        "id,text,gold,split\na,What is 0?,d0,tune\nb,What is 1 and 2?,d1;d2,\n", encoding="utf-8"
    )
    coll = read_collection(root, csv)
    assert [(q.id, q.relevant, q.split) for q in coll.queries] == [
        ("a", ("d0",), "tune"),
        ("b", ("d1", "d2"), None),
    ]
    bad = tmp_path / "qs.jsonl"
    bad.write_text(
        '{"id": "a", "text": "x", "gold": ["d0"]}\n{"id": "a", "text": "y", "gold": ["d1"]}\n'
        '{"id": "c", "text": "z", "gold": ["zz"]}\n{"id": "e", "text": "w", "gold": []}\n'
        '{"id": "f", "text": "v", "gold": ["d0"], "split": "dev"}\n',
        encoding="utf-8",
    )
    found = problems(root, bad)
    assert [f.split(": ", 1)[0].rsplit(":", 1)[1] for f in found] == ["2", "3", "4", "5"]
    assert "unknown document id(s) ['zz']" in found[1]


def test_fragments_keep_the_document_id_as_address_and_chunk_long_documents(
    tmp_path: Path,
) -> None:
    long = " ".join(f"Sentence number {i} is here." for i in range(200))
    root = beir(tmp_path, [*DOCS, {"_id": "big", "title": "Big", "text": long}])
    frags = collection_fragments(read_collection(root), "mine", "prose_chapter", "en")
    big = [f for f in frags if f.source_id == "big"]
    assert len(big) > 3 and all(len(f.text) <= 1400 for f in big)
    assert {f.addr_label for f in big} == {"big"}
    assert [f.key for f in big][:2] == ["big#1", "big#2"]
    assert all(f.loc_token.startswith("doc#") and not f.problems() for f in frags)
    assert frags[0].text.startswith("Doc 0\n\n")


def test_split_set_relabels_fully_held_out_questions(tmp_path: Path) -> None:
    full = question_set(read_collection(beir(tmp_path)), "mine", "en", "test")
    split = split_set(full, frozenset({"d0", "d1"}))
    by_id = {q.id: q for q in split.questions}
    assert (by_id["q0"].label, by_id["q0"].gold) == ("out_of_corpus", ("d0",))
    assert (by_id["q1"].label, by_id["q1"].gold) == ("answerable", ("d2",))
    assert by_id["q2"].label == "answerable" and split.corpus == "mine-split"
    assert [q.split for q in split.questions] == [q.split for q in full.questions]


def test_holdout_field_must_be_on_every_document(tmp_path: Path) -> None:
    docs = [*DOCS[:2], {"_id": "x", "text": "no metadata"}]
    coll = read_collection(beir(tmp_path, docs, qrels=["q0\td0\t1"]))
    with pytest.raises(InputError, match=r"corpus.jsonl: record 3: --holdout-by 'a': ") as e:
        check_holdout_field(coll, Holdout(0.5, "a"))
    assert "\n" not in str(e.value) and "1 of 3 documents (first: 'x')" in str(e.value)


def test_out_of_scope_file_lines_or_jsonl(tmp_path: Path) -> None:
    txt = tmp_path / "oos.txt"
    txt.write_text("How do I bake bread?\n\nWho won the cup?\n", encoding="utf-8")
    assert [r[1] for r in read_out_of_scope(txt, "en")] == [
        "How do I bake bread?",
        "Who won the cup?",
    ]
    js = tmp_path / "oos.jsonl"
    js.write_text('{"text": "Как испечь хлеб?", "language": "ru"}\n{"id": 3}\n', encoding="utf-8")
    with pytest.raises(ImportProblems, match=r"oos.jsonl:2: empty or missing 'text'"):
        read_out_of_scope(js, "en")


@pytest.mark.parametrize(
    "name", ["gita", "xquad-split", "out-of-scope", "a b", "mine-split", "mine-fold2", ""]
)
def test_names_that_would_clash_are_refused(name: str) -> None:
    with pytest.raises(InputError):
        check_name(name)
