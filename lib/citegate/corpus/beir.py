"""Reading a BEIR-format test collection (or a corpus plus questions with gold ids) into citegate's
own forms: fragments for the store, and question sets in the project's JSONL schema.

BEIR's layout: `corpus.jsonl` (`_id`, `title`, `text`, optional `metadata`), `queries.jsonl`
(`_id`, `text`) and `qrels/<split>.tsv` (`query-id`, `corpus-id`, `score`; a header line is
optional). A user without qrels gives a CSV or JSONL of questions with their gold document ids
instead (`read_questions_file`).

Everything is validated before anything is written: each bad record (bad JSON, a missing or
duplicate id, empty text, a qrel that names an unknown query or document) becomes a `Problem`
naming the file and the line, and all of them are raised together in one `ImportProblems`, so a
user fixes a file in one pass. Ids may not hold whitespace: TREC run files separate by spaces.

Each document is packed by the library chunker (`pack_text`); every chunk keeps the document id
as its address (`addr_label`), with loc_token `doc#<chunk>`, so gold = document ids resolves to
every chunk of the document. Splits: `tune`/`test` by BEIR's own files when two or more of
train/dev/test are present (test is `test`, the others `tune`), else by a salted hash of the
question's group, its first relevant document (so one document's questions sit on one side,
the rule the shipped sets follow).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from citegate.core.errors import InputError
from citegate.core.inputs import (
    MAX_SOURCE_BYTES,
    check_size,
    id_problem,
    loads_json,
    megabytes,
    question_problem,
    text_problem,
)
from citegate.core.inputs import check_name as check_printable_name
from citegate.corpus.builds import BUILDS, SPLIT_SUFFIX, parse_fold
from citegate.corpus.holdout import Folds, Holdout
from citegate.corpus.questions import (
    SETS,
    SPLITS,
)

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_DIR = "qrels"
FILE_SPLITS = {"train": "tune", "dev": "tune", "test": "test"}
QRELS_HEADER = ("query-id", "corpus-id", "score")
MAX_SHOWN = 25  # problems listed in the error message (all are kept on the exception)
OUT_OF_SCOPE_SUFFIX = "-out-of-scope"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.]*(-[A-Za-z0-9_.]+)*")
_SPACE = re.compile(r"\s")


@dataclass(frozen=True)
class Problem:
    """One bad record: the file, its line (or '-' for the file as a whole) and what is wrong."""

    path: str
    line: int | str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class ImportProblems(InputError):
    """Every bad record of an import, raised together before anything is written."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        shown = "\n  ".join(str(p) for p in self.problems[:MAX_SHOWN])
        more = len(self.problems) - MAX_SHOWN
        tail = f"\n  ... and {more} more" if more > 0 else ""
        first = self.problems[0]
        super().__init__(
            first.path,
            first.line,
            f"{len(self.problems)} bad record(s); nothing was imported:\n  {shown}{tail}",
        )


@dataclass(frozen=True)
class Document:
    """One corpus record."""

    id: str
    title: str
    text: str
    metadata: dict[str, Any]
    line: int


@dataclass(frozen=True)
class Query:
    """One question with its relevant documents (score > 0) and, when its source fixes one, its
    split; `line` is where it was read (queries.jsonl or the questions file)."""

    id: str
    text: str
    line: int
    relevant: tuple[str, ...] = ()
    split: str | None = None
    language: str | None = None


@dataclass
class Collection:
    """A validated collection: documents, questions with gold, and the digests of its files."""

    root: Path
    documents: dict[str, Document]
    queries: list[Query]
    files: dict[str, str]  # path relative to root (or absolute for a questions file) -> sha256
    split_source: str  # "files" (BEIR's dev/test), "questions" (the file's column) or "salted"
    skipped_queries: int = 0  # queries without any relevant document
    duplicate_texts: int = 0  # repeated question texts dropped (the shipped sets' rule)

    @property
    def corpus_digest(self) -> str:
        """sha256 of corpus.jsonl: what the fragments are made from."""
        return self.files[CORPUS_FILE]


@dataclass
class Problems:
    """Collects problems while a file is read."""

    items: list[Problem] = field(default_factory=list)
    max_bytes: int = MAX_SOURCE_BYTES  # the limit on one record's text (`--max-source-mb`)

    def add(self, path: Path | str, line: int | str, message: str) -> None:
        """Note one bad record."""
        self.items.append(Problem(str(path), line, message))

    def raise_any(self) -> None:
        """Raise every noted problem at once (`ImportProblems`), if there is any."""
        if self.items:
            raise ImportProblems(self.items)


# ---------------------------------------------------------------- names


def check_name(name: str) -> None:
    """A corpus name an import may take: letters, digits, `_ . -`; not a built-in build or set,
    not ending in `-split`, `-foldN` or `-out-of-scope` (the import makes those); at most
    `MAX_NAME_CHARS` characters (it names files and folders)."""
    check_printable_name("--name", name)
    if not _NAME.fullmatch(name):
        raise InputError("--name", name, "use letters, digits, '_', '.' and '-' (no spaces)")
    if name in BUILDS or name in SETS or name.split("-")[0] in {"gita", "xquad"}:
        raise InputError("--name", name, "taken by a built-in corpus or question set")
    if name.endswith((SPLIT_SUFFIX, OUT_OF_SCOPE_SUFFIX)) or parse_fold(name):
        raise InputError("--name", name, f"the import makes {name!r} itself; choose another name")


# ---------------------------------------------------------------- reading


def file_sha256(path: Path) -> str:
    """sha256 hex digest of a file's bytes (recorded per imported file)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _lines(path: Path, problems: Problems) -> list[tuple[int, str]]:
    """(line number, text) of the non-blank lines of a UTF-8 file."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        problems.add(path, "-", f"not UTF-8 at byte {exc.start}")
        return []
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _json_records(path: Path, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, object) of a JSONL file; a bad line is a problem, not an exception."""
    for n, line in _lines(path, problems):
        try:
            rec = loads_json(line)
        except json.JSONDecodeError as exc:
            problems.add(path, n, f"not valid JSON (column {exc.colno}: {exc.msg})")
            continue
        if not isinstance(rec, dict):
            problems.add(path, n, f"expected a JSON object, got {type(rec).__name__}")
            continue
        yield n, rec


def _record_id(path: Path, n: int, rec: Mapping[str, Any], key: str, pr: Problems) -> str | None:
    """The record's id (a string, or an integer read as one), or None after adding a problem."""
    value = rec.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        pr.add(path, n, f"missing {key!r} (a non-empty string)")
        return None
    if _SPACE.search(value):
        pr.add(path, n, f"{key} {value!r} holds whitespace (TREC run files are space-separated)")
        return None
    problem = id_problem(value)
    if problem:
        pr.add(path, n, f"{key} {_cut(value)} {problem}")
        return None
    return value


def _cut(value: str, chars: int = 40) -> str:
    """A value's repr cut to `chars` characters, for a problem line."""
    text = repr(value)
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _record_text(path: Path, n: int, rec: Mapping[str, Any], key: str, pr: Problems) -> str | None:
    """The record's non-empty text field, or None after adding a problem."""
    value = rec.get(key)
    if not isinstance(value, str) or not value.strip():
        pr.add(path, n, f"empty or missing {key!r}")
        return None
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > pr.max_bytes:
        pr.add(
            path,
            n,
            f"{key!r} is {megabytes(size)}, over the limit of {megabytes(pr.max_bytes)} on one "
            "source of text (raise it with --max-source-mb, or split the record)",
        )
        return None
    problem = text_problem(value)
    if problem:
        pr.add(path, n, f"{key!r} {problem}")
        return None
    return value


def _question_text(
    path: Path, n: int, rec: Mapping[str, Any], key: str, pr: Problems
) -> str | None:
    """A question record's text (`_record_text`), also refused over the question limit
    (`inputs.question_problem`): a question the pipeline would refuse is refused at import, with
    its line, not in the middle of a study."""
    text = _record_text(path, n, rec, key, pr)
    problem = None if text is None else question_problem(text)
    if problem:
        pr.add(path, n, f"{key!r} {problem}")
        return None
    return text


def _first_seen(
    seen: dict[str, int], key: str, path: Path, n: int, what: str, pr: Problems
) -> bool:
    """Record `key` at line `n`; False (and a problem) when it was seen before."""
    if key in seen:
        pr.add(path, n, f"duplicate {what} {key!r} (first on line {seen[key]})")
        return False
    seen[key] = n
    return True


def read_documents(path: Path, pr: Problems) -> dict[str, Document]:
    """The documents of corpus.jsonl, in file order."""
    docs: dict[str, Document] = {}
    seen: dict[str, int] = {}
    for n, rec in _json_records(path, pr):
        did = _record_id(path, n, rec, "_id", pr)
        text = _record_text(path, n, rec, "text", pr)
        title = rec.get("title", "")
        meta = rec.get("metadata", {})
        if not isinstance(title, str):
            pr.add(path, n, "'title' must be a string")
        if not isinstance(meta, dict):
            pr.add(path, n, "'metadata' must be an object")
        if did is None or not _first_seen(seen, did, path, n, "_id", pr):
            continue
        if text is not None and isinstance(title, str) and isinstance(meta, dict):
            docs[did] = Document(did, title.strip(), text, meta, n)
    if not docs and not pr.items:
        pr.add(path, "-", "no documents")
    return docs


def read_queries(path: Path, pr: Problems) -> dict[str, Query]:
    """The queries of queries.jsonl by id (no gold yet)."""
    out: dict[str, Query] = {}
    seen: dict[str, int] = {}
    for n, rec in _json_records(path, pr):
        qid = _record_id(path, n, rec, "_id", pr)
        text = _question_text(path, n, rec, "text", pr)
        if qid is None or not _first_seen(seen, qid, path, n, "_id", pr):
            continue
        if text is not None:
            out[qid] = Query(qid, text, n)
    return out


def read_qrels(
    path: Path, queries: Mapping[str, Query], docs: Mapping[str, Document], pr: Problems
) -> dict[str, dict[str, int]]:
    """query id -> {document id: score} of one qrels TSV (a header line is optional)."""
    out: dict[str, dict[str, int]] = {}
    seen: dict[tuple[str, str], int] = {}
    for n, line in _lines(path, pr):
        cols = line.rstrip("\r\n").split("\t")
        if n == 1 and tuple(c.strip() for c in cols) == QRELS_HEADER:
            continue
        if len(cols) != 3:
            pr.add(path, n, f"expected 3 tab-separated columns {QRELS_HEADER}, got {len(cols)}")
            continue
        qid, did, score = (c.strip() for c in cols)
        try:
            value = int(score)
        except ValueError:
            pr.add(path, n, f"score {score!r} is not an integer")
            continue
        bad = [
            f"unknown query-id {qid!r} (not in {QUERIES_FILE})" * (qid not in queries),
            f"unknown corpus-id {did!r} (not in {CORPUS_FILE})" * (did not in docs),
        ]
        if any(bad):
            pr.add(path, n, "; ".join(b for b in bad if b))
            continue
        if (qid, did) in seen:
            pr.add(path, n, f"duplicate pair {qid} {did} (first on line {seen[(qid, did)]})")
            continue
        seen[(qid, did)] = n
        out.setdefault(qid, {})[did] = value
    return out


def _with_gold(
    queries: Mapping[str, Query],
    qrels_by_file: Mapping[Path, dict[str, dict[str, int]]],
    pr: Problems,
) -> tuple[list[Query], str]:
    """Queries with their relevant documents and split; the split source."""
    names = {p.stem for p in qrels_by_file}
    by_file = len(names & set(FILE_SPLITS)) >= 2
    relevant: dict[str, set[str]] = {}
    split: dict[str, tuple[str, Path]] = {}
    for path, qrels in qrels_by_file.items():
        for qid, scores in qrels.items():
            relevant.setdefault(qid, set()).update(d for d, s in scores.items() if s > 0)
            side = FILE_SPLITS.get(path.stem, "tune")
            if by_file and qid in split and split[qid][0] != side:
                pr.add(
                    path,
                    "-",
                    f"query {qid!r} is also judged in {split[qid][1].name}: one query "
                    "cannot sit on both the tune and the test side",
                )
            split.setdefault(qid, (side, path))
    out = [
        replace(
            q, relevant=tuple(sorted(relevant[q.id])), split=split[q.id][0] if by_file else None
        )
        for q in queries.values()
        if relevant.get(q.id)
    ]
    return out, "files" if by_file else "salted"


def read_collection(
    root: Path, questions_file: Path | None = None, max_bytes: int = MAX_SOURCE_BYTES
) -> Collection:
    """Read and validate a BEIR folder: corpus.jsonl, and either queries.jsonl + qrels/*.tsv or
    `questions_file` (CSV/JSONL with gold document ids). Raises `ImportProblems` listing every bad
    record with its file and line (a document or question over `max_bytes` is one); nothing is
    returned half-checked."""
    root = Path(root)
    pr = Problems(max_bytes=max_bytes)
    corpus = root / CORPUS_FILE
    if not root.is_dir() or not corpus.is_file():
        raise InputError(root, "-", f"not a BEIR folder: no {CORPUS_FILE} in it")
    files = {CORPUS_FILE: file_sha256(corpus)}
    docs = read_documents(corpus, pr)
    if questions_file is not None:
        queries = read_questions_file(Path(questions_file), docs, pr)
        files[str(Path(questions_file).resolve())] = file_sha256(Path(questions_file))
        split_source = "questions" if any(q.split for q in queries) else "salted"
        skipped = 0
    else:
        queries, split_source, skipped = _beir_queries(root, docs, files, pr)
    pr.raise_any()
    kept, dupes = _dedup(queries)
    if not kept:
        raise InputError(root, "-", "no question has a relevant document (score > 0)")
    return Collection(root, docs, kept, files, split_source, skipped, dupes)


def _beir_queries(
    root: Path, docs: Mapping[str, Document], files: dict[str, str], pr: Problems
) -> tuple[list[Query], str, int]:
    """Queries with gold from queries.jsonl and qrels/*.tsv, the split source, and how many
    queries had no relevant document (skipped)."""
    qpath, qdir = root / QUERIES_FILE, root / QRELS_DIR
    qrels_files = sorted(qdir.glob("*.tsv")) if qdir.is_dir() else []
    if not qpath.is_file() or not qrels_files:
        raise InputError(
            root,
            "-",
            f"needs {QUERIES_FILE} and {QRELS_DIR}/*.tsv (or questions with gold ids: "
            "--questions FILE)",
        )
    files[QUERIES_FILE] = file_sha256(qpath)
    queries = read_queries(qpath, pr)
    by_file = {}
    for path in qrels_files:
        files[f"{QRELS_DIR}/{path.name}"] = file_sha256(path)
        by_file[path] = read_qrels(path, queries, docs, pr)
    judged, split_source = _with_gold(queries, by_file, pr)
    return judged, split_source, len(queries) - len(judged)


def _dedup(queries: Sequence[Query]) -> tuple[list[Query], int]:
    """The queries with each text once (casefolded, spaces collapsed: the shipped sets' rule)."""
    seen: set[str] = set()
    out = []
    for q in queries:
        norm = " ".join(q.text.split()).casefold()
        if norm not in seen:
            seen.add(norm)
            out.append(q)
    return out, len(queries) - len(out)


# ---------------------------------------------------------------- questions with gold ids


def read_questions_file(
    path: Path, docs: Mapping[str, Document], pr: Problems | None = None
) -> list[Query]:
    """Questions with gold document ids from a CSV (header `id,text,gold[,language,split]`, gold
    ids separated by ';') or a JSONL file (`id`, `text`, `gold`: a list or a ';' string; optional
    `language`, `split`). Every bad row is a problem naming the line."""
    own = pr is None
    pr = pr or Problems()
    if not path.is_file():
        raise InputError(path, "-", "no such questions file")
    check_size(path, "-", path.stat().st_size, pr.max_bytes)
    rows = _csv_rows(path, pr) if path.suffix.lower() == ".csv" else _json_records(path, pr)
    out: list[Query] = []
    seen: dict[str, int] = {}
    for n, rec in rows:
        q = _question_row(path, n, rec, docs, pr)
        if q is not None and _first_seen(seen, q.id, path, n, "id", pr):
            out.append(q)
    if not out and not pr.items:
        pr.add(path, "-", "no questions")
    if own:
        pr.raise_any()
    return out


def _csv_rows(path: Path, pr: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    lines = _lines(path, pr)
    if not lines:
        return
    reader = csv.DictReader(io.StringIO("\n".join(line for _, line in lines)))
    missing = {"id", "text", "gold"} - set(reader.fieldnames or [])
    if missing:
        pr.add(path, lines[0][0], f"CSV header lacks column(s) {sorted(missing)}")
        return
    for (n, _), row in zip(lines[1:], reader, strict=False):
        yield n, dict(row)


def _question_row(
    path: Path, n: int, rec: Mapping[str, Any], docs: Mapping[str, Document], pr: Problems
) -> Query | None:
    qid = _record_id(path, n, rec, "id", pr)
    text = _question_text(path, n, rec, "text", pr)
    gold = rec.get("gold")
    if isinstance(gold, str):
        gold = [g.strip() for g in gold.split(";") if g.strip()]
    if not isinstance(gold, list) or not gold or not all(isinstance(g, str) for g in gold):
        pr.add(path, n, "'gold' must list at least one document id")
        return None
    unknown = [g for g in gold if g not in docs]
    if unknown:
        pr.add(path, n, f"gold names unknown document id(s) {unknown[:5]} (not in {CORPUS_FILE})")
    split = rec.get("split") or None
    if split is not None and split not in SPLITS:
        pr.add(path, n, f"split {split!r} is not one of {SPLITS}")
    lang = rec.get("language") or None
    if qid is None or text is None or unknown or (split is not None and split not in SPLITS):
        return None
    return Query(
        qid, text, n, tuple(sorted(set(gold))), split, lang if isinstance(lang, str) else None
    )


def read_out_of_scope(path: Path, language: str) -> list[tuple[str, str, str]]:
    """(id, text, language) of an out-of-scope file: one question a line (.txt), or JSONL with
    `text` (and optional `id`, `language`)."""
    pr = Problems()
    if not Path(path).is_file():
        raise InputError(path, "-", "no such out-of-scope file")
    out: list[tuple[str, str, str]] = []
    seen: dict[str, int] = {}
    if Path(path).suffix.lower() != ".jsonl":
        records: Iterator[tuple[int, dict[str, Any]]] = (
            (n, {"text": line.strip()}) for n, line in _lines(Path(path), pr)
        )
    else:
        records = _json_records(Path(path), pr)
    for n, rec in records:
        text = _question_text(Path(path), n, rec, "text", pr)
        given = rec.get("id") not in (None, "")
        qid = _record_id(Path(path), n, rec, "id", pr) if given else f"oos-{n}"
        lang = _language(Path(path), n, rec, language, pr)
        if text is None or qid is None or lang is None:
            continue
        if _first_seen(seen, qid, Path(path), n, "id", pr):
            out.append((qid, " ".join(text.split()), lang))
    if not out and not pr.items:
        pr.add(path, "-", "no questions")
    pr.raise_any()
    return out


def _language(path: Path, n: int, rec: Mapping[str, Any], default: str, pr: Problems) -> str | None:
    """A record's optional `language` (a short printable code), else `default`; None after
    adding a problem."""
    value = rec.get("language")
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        pr.add(path, n, f"'language' must be a string, not {type(value).__name__}")
        return None
    problem = id_problem(value, 16)
    if problem:
        pr.add(path, n, f"language {_cut(value)} {problem}")
        return None
    return value


def check_holdout_field(collection: Collection, holdout: Holdout | Folds) -> dict[str, str | None]:
    """document id -> its value of the holdout (or fold) rule's field (every document must have
    it as a string or number); None values when the rule is over documents. A field some
    document lacks is refused in one line (`InputError`): how many documents lack it, the first
    one, and the fields every document has (what `--holdout-by` may name)."""
    if holdout.field is None:
        return {d: None for d in collection.documents}
    out: dict[str, str | None] = {}
    lacking: list[Document] = []
    for d, doc in collection.documents.items():
        value = doc.metadata.get(holdout.field)
        if _field_value(value):
            out[d] = str(value)
        else:
            lacking.append(doc)
    if lacking:
        first = lacking[0]
        raise InputError(
            collection.root / CORPUS_FILE,
            first.line,
            f"--holdout-by {_cut(holdout.field)}: missing or not a string/number in the "
            f"metadata of {len(lacking)} of {len(collection.documents)} documents (first: "
            f"{_cut(first.id)}); fields every document has: {_shared_fields(collection)}",
        )
    return out


def _field_value(value: object) -> bool:
    """Whether a metadata value can name a holdout unit: a non-empty string or a number."""
    return not isinstance(value, bool) and isinstance(value, str | int | float) and value != ""


def _shared_fields(collection: Collection, shown: int = 10) -> str:
    """The metadata fields every document holds as a string or number (`--holdout-by`'s
    choices), comma-separated, or 'none'."""
    docs = list(collection.documents.values())
    fields = set(docs[0].metadata) if docs else set()
    for doc in docs:
        fields &= {k for k, v in doc.metadata.items() if _field_value(v)}
    names = sorted(_cut(f) for f in fields)
    more = f" (and {len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more if names else "none"
