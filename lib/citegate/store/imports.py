"""Importing a test collection (`citegate data import-beir`, `data import-questions`, `data
split`): validate everything, then ingest through the ordinary ingest path, then write the
question sets and the import record.

Order, so an error leaves the database as it was: the collection, the holdout field and the
out-of-scope file are validated in full (`citegate.corpus.beir`: every bad record with its file
and line) before the first write; the corpus is one all-or-nothing source of `ingest_sources`
(origins and `--replace` as for any ingest); the split build `NAME-split` is a second ingest of the
documents the holdout keeps; only then are the sets and `build.json` written, after every
imported question's gold resolved against the stored fragments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from citegate.core.errors import InputError
from citegate.core.inputs import MAX_SOURCE_BYTES
from citegate.corpus.beir import (
    CORPUS_FILE,
    OUT_OF_SCOPE_SUFFIX,
    Collection,
    Problems,
    check_holdout_field,
    check_name,
    collection_fragments,
    file_sha256,
    out_of_scope_set,
    question_set,
    read_collection,
    read_documents,
    read_out_of_scope,
    split_set,
    write_import,
)
from citegate.corpus.builds import SPLIT_SUFFIX, import_folder, import_record, imported_build_id
from citegate.corpus.holdout import Holdout
from citegate.corpus.questions import QuestionSet, load_set, resolve_gold
from citegate.models.embed import Embedder
from citegate.store.ingest import IngestReport, Source, ingest_sources

SHIPPED_OUT_OF_SCOPE = "out-of-scope"


@dataclass(frozen=True)
class SplitReport:
    """What building `NAME-split` did."""

    name: str
    rule: str
    held_documents: int
    documents: int
    answerable: int
    out_of_corpus: int
    ingest: IngestReport


@dataclass(frozen=True)
class ImportReport:
    """What one import did: counts, the ingest, the split (if any) and the sets written."""

    name: str
    folder: Path
    documents: int
    fragments: int
    questions: int
    skipped_queries: int
    duplicate_texts: int
    split_source: str
    ingest: IngestReport
    split: SplitReport | None
    sets: dict[str, str]  # set name -> digest
    out_of_scope: str  # the set notebook runs pair with it


def _origin(root: Path) -> str:
    return f"beir:{root.resolve()}"


def _full_record(
    name: str, coll: Collection, kind: str, lang: str, fragments: int, oos: str
) -> dict[str, Any]:
    digest = f"{coll.corpus_digest}|{kind}|{lang}"
    return {
        "name": name,
        "format": "beir",
        "source": str(coll.root.resolve()),
        "files": dict(coll.files),
        "kind": kind,
        "language": lang,
        "documents": len(coll.documents),
        "fragments": fragments,
        "split_source": coll.split_source,
        "skipped_queries": coll.skipped_queries,
        "duplicate_texts": coll.duplicate_texts,
        "out_of_scope": oos,
        "builds": {
            name: {"build_id": imported_build_id(name, digest), "origin": _origin(coll.root)}
        },
    }


def import_beir(
    conn: psycopg.Connection,
    root: Path,
    name: str,
    embedder: Embedder,
    *,
    kind: str = "prose_chapter",
    lang: str = "en",
    questions: Path | None = None,
    holdout: Holdout | None = None,
    out_of_scope: Path | None = None,
    replace: bool = False,
    progress: bool = True,
    max_source_bytes: int = MAX_SOURCE_BYTES,
) -> ImportReport:
    """Import a BEIR folder (or corpus.jsonl plus `questions` with gold ids) as corpus `name`,
    its question set `name`, and with `holdout` the split build and set `name-split`; with
    `out_of_scope` a set `name-out-of-scope` of the user's own negatives. A document or question
    over `max_source_bytes` is refused, as `citegate ingest` refuses a file over it."""
    check_name(name)
    root = Path(root)
    coll = read_collection(root, questions, max_source_bytes)
    previous = import_record(name)
    if holdout is None and previous and name + SPLIT_SUFFIX in previous["builds"]:
        holdout = Holdout.from_json(previous["builds"][name + SPLIT_SUFFIX]["holdout"])
    field_of = check_holdout_field(coll, holdout) if holdout else {}
    oos_rows = read_out_of_scope(out_of_scope, lang) if out_of_scope else None
    frags = collection_fragments(coll, name, kind, lang)
    origin = f"questions {questions.name}" if questions else "BEIR queries + qrels"
    full = question_set(coll, name, lang, f"{origin} of {root.name} (imported; licence unstated)")
    sets: dict[str, QuestionSet] = {name: full}
    oos = SHIPPED_OUT_OF_SCOPE
    if oos_rows is not None:
        oos = name + OUT_OF_SCOPE_SUFFIX
        sets[oos] = out_of_scope_set(name, oos_rows, f"{out_of_scope.name} (user's)")  # type: ignore[union-attr]
    elif previous and previous.get("out_of_scope") == name + OUT_OF_SCOPE_SUFFIX:
        oos = previous["out_of_scope"]
        sets[oos] = load_set(oos)
    rep = ingest_sources(
        conn,
        [Source(str(root / CORPUS_FILE), lambda: frags)],
        name,
        embedder,
        origin=_origin(root),
        replace=replace,
        progress=progress,
    )
    record = _full_record(name, coll, kind, lang, len(frags), oos)
    split = None
    if holdout is not None:
        split, split_qs = _split(
            conn, record, coll, full, holdout, field_of, embedder, replace, progress
        )
        sets[split_qs.name] = split_qs
    _check_gold(conn, sets, embedder.id)
    write_import(import_folder(name), record, sets)
    return ImportReport(
        name,
        import_folder(name),
        len(coll.documents),
        len(frags),
        len(full.questions),
        coll.skipped_queries,
        coll.duplicate_texts,
        coll.split_source,
        rep,
        split,
        {n: s.digest for n, s in sets.items()},
        oos,
    )


def _split(
    conn: psycopg.Connection,
    record: dict[str, Any],
    coll: Collection,
    full: QuestionSet,
    holdout: Holdout,
    field_of: Mapping[str, str | None],
    embedder: Embedder,
    replace: bool,
    progress: bool,
) -> tuple[SplitReport, QuestionSet]:
    """Ingest `NAME-split` (the documents the holdout keeps) and relabel the set for it; the
    record gains the split build's entry."""
    name = record["name"]
    split_name = name + SPLIT_SUFFIX
    held = holdout.documents(field_of)
    frags = collection_fragments(coll, split_name, record["kind"], record["language"], held)
    qs = split_set(full, held)
    origin = f"{_origin(coll.root)} holding out {holdout.spec}"
    rep = ingest_sources(
        conn,
        [
            Source(
                f"{coll.root / CORPUS_FILE} without {len(held)} held-out documents", lambda: frags
            )
        ],
        split_name,
        embedder,
        origin=origin,
        replace=replace,
        progress=progress,
    )
    digest = f"{coll.corpus_digest}|{record['kind']}|{record['language']}"
    record["builds"][split_name] = {
        "build_id": imported_build_id(split_name, digest, holdout.spec),
        "origin": origin,
        "holdout": holdout.to_json(),
        "held_out_documents": len(held),
    }
    labels = [q.label for q in qs.questions]
    report = SplitReport(
        split_name,
        holdout.spec,
        len(held),
        len(coll.documents),
        labels.count("answerable"),
        labels.count("out_of_corpus"),
        rep,
    )
    return report, qs


def split_import(
    conn: psycopg.Connection,
    name: str,
    embedder: Embedder,
    holdout: Holdout,
    *,
    replace: bool = False,
    progress: bool = True,
) -> SplitReport:
    """Build `NAME-split` for an imported corpus from its recorded source (refused when
    corpus.jsonl changed since the import: re-import first) and its stored question set."""
    record = import_record(name)
    if record is None or record["name"] != name:
        raise InputError(name, "-", "no imported corpus of that name (`citegate data import-beir`)")
    root = Path(record["source"])
    path = root / CORPUS_FILE
    pr = Problems()
    docs = read_documents(path, pr) if path.is_file() else {}
    pr.raise_any()
    coll = Collection(root, docs, [], dict(record["files"]), record["split_source"])
    if not path.is_file() or file_sha256(path) != record["files"][CORPUS_FILE]:
        raise InputError(
            path, "-", f"changed or missing since {name!r} was imported; run import-beir again"
        )
    full = load_set(name)
    field_of = check_holdout_field(coll, holdout)
    report, qs = _split(conn, record, coll, full, holdout, field_of, embedder, replace, progress)
    folder = import_folder(name)
    sets = {n: load_set(n) for n in _set_names(record) if n != qs.name}
    sets[qs.name] = qs
    _check_gold(conn, sets, embedder.id)
    write_import(folder, record, sets)
    return report


def _set_names(record: Mapping[str, Any]) -> list[str]:
    """The sets an import folder holds (its own, not the shipped out-of-scope set)."""
    names = [record["name"]]
    if record.get("out_of_scope", SHIPPED_OUT_OF_SCOPE) != SHIPPED_OUT_OF_SCOPE:
        names.append(record["out_of_scope"])
    return names


def _check_gold(
    conn: psycopg.Connection, sets: Mapping[str, QuestionSet], embedder_id: str
) -> None:
    """Every answerable question's gold resolves in its build, every out_of_corpus one only in
    the full build (`resolve_gold`): checked before the sets are written."""
    for s in sets.values():
        if s.corpus != "*":
            resolve_gold(conn, s, embedder_id)


def import_questions(
    conn: psycopg.Connection,
    path: Path,
    corpus: str,
    embedder: Embedder,
    *,
    replace: bool = False,
    progress: bool = True,
    max_source_bytes: int = MAX_SOURCE_BYTES,
) -> ImportReport:
    """Replace the question set of imported corpus `corpus` with a CSV/JSONL of questions with
    gold document ids (and rebuild its split set with the recorded holdout); the corpus itself is
    re-ingested only where its source changed."""
    check_name(corpus)
    record = import_record(corpus)
    if record is None or record["name"] != corpus:
        raise InputError(
            corpus,
            "-",
            "no imported corpus of that name: import its corpus.jsonl first "
            "(`citegate data import-beir DIR --name NAME --questions FILE`)",
        )
    return import_beir(
        conn,
        Path(record["source"]),
        corpus,
        embedder,
        kind=record["kind"],
        lang=record["language"],
        questions=Path(path),
        replace=replace,
        progress=progress,
        max_source_bytes=max_source_bytes,
    )
