"""Importing a test collection (`citegate data import-beir`, `data import-questions`, `data
split`): validate everything, then ingest through the ordinary ingest path, then write the
question sets and the import record.

Order, so an error leaves the database as it was: the collection, the holdout field and the
out-of-scope file are validated in full (`citegate.corpus.beir`: every bad record with its file
and line) before the first write; the corpus is one all-or-nothing source of `ingest_sources`
(origins and `--replace` as for any ingest); the split build `NAME-split` is a second ingest of the
documents the holdout keeps; only then are the sets and `build.json` written, after every
imported question's gold resolved against the stored fragments.

Leave-out folds (`data split NAME --folds K`): the K fold builds `NAME-fold1..K` are K ingests
inside ONE database transaction, with every fold set's gold resolved before it commits, so an
error (a refused replace, a failed embedding, a gold that does not resolve) leaves no fold build
changed; a fold rule other than the recorded one needs `replace` and then also removes the fold
builds the new rule no longer makes. The fold builds' fragments are the full build's texts, so
the embedding cache serves all of them (nothing is embedded again).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
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
    file_sha256,
    read_collection,
    read_documents,
    read_out_of_scope,
)
from citegate.corpus.builds import (
    FOLD_MAP_FILE,
    SPLIT_SUFFIX,
    fold_build,
    fold_map_json,
    import_folder,
    import_record,
    imported_build_id,
    parse_fold,
)
from citegate.corpus.holdout import Folds, Holdout
from citegate.corpus.import_sets import (
    collection_fragments,
    out_of_scope_set,
    question_set,
    split_set,
    write_import,
)
from citegate.corpus.questions import QuestionSet, load_set, resolve_gold
from citegate.models.embed import Embedder
from citegate.store import tables as store
from citegate.store.ingest import CorpusReplaceError, IngestReport, Source, ingest_sources
from citegate.store.presence import check_folds

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
    folds: FoldsReport | None = None  # the recorded leave-out folds, rebuilt


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
    fold_rule = recorded_folds(previous) if previous else None
    if fold_rule is not None:  # validated before the first write, as the holdout field is
        fold_rule.assign(check_holdout_field(coll, fold_rule), name)
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
    folds = None
    if fold_rule is not None:  # a re-import rebuilds the recorded folds from the new source
        folds, fold_sets, fold_of = _folds(
            conn, record, coll, full, fold_rule, embedder, replace, progress
        )
        _write_folds(import_folder(name), record, {**sets, **fold_sets}, fold_of)
        sets.update(fold_sets)
    else:
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
        folds,
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
    coll = _recorded_collection(record)
    full = load_set(name)
    field_of = check_holdout_field(coll, holdout)
    report, qs = _split(conn, record, coll, full, holdout, field_of, embedder, replace, progress)
    folder = import_folder(name)
    sets = {n: load_set(n) for n in _set_names(record) if n != qs.name}
    sets[qs.name] = qs
    _check_gold(conn, sets, embedder.id)
    write_import(folder, record, sets)
    return report


@dataclass(frozen=True)
class FoldBuildReport:
    """What one fold build `NAME-foldI` holds and what its ingest did."""

    name: str
    held_documents: int
    answerable: int
    out_of_corpus: int
    ingest: IngestReport


@dataclass(frozen=True)
class FoldsReport:
    """What building the leave-out folds of an imported corpus did."""

    name: str
    rule: str
    documents: int
    builds: tuple[FoldBuildReport, ...]
    removed: tuple[str, ...]  # fold builds of a replaced rule that the new one does not make


def recorded_folds(record: Mapping[str, Any]) -> Folds | None:
    """The fold rule an import recorded (None when it has no folds)."""
    rule = record.get("folds")
    return Folds.from_json(rule) if rule else None


def _recorded_fold_builds(record: Mapping[str, Any]) -> list[str]:
    """The fold builds of `record`'s corpus named in its builds."""
    return [b for b in record["builds"] if (p := parse_fold(b)) and p[0] == record["name"]]


def _refuse_changed_folds(record: Mapping[str, Any], rule: Folds, replace: bool) -> None:
    """A fold rule other than the recorded one replaces every fold build: refused without
    `replace`, before anything is written."""
    old = recorded_folds(record)
    if old is not None and old != rule and not replace:
        raise CorpusReplaceError(
            f"{record['name']} has {old.k} leave-out fold builds ({old.spec}); --folds "
            f"{rule.k} ({rule.spec}) would replace them. Pass --replace to do that (nothing "
            "was changed)"
        )


def _folds(
    conn: psycopg.Connection,
    record: dict[str, Any],
    coll: Collection,
    full: QuestionSet,
    rule: Folds,
    embedder: Embedder,
    replace: bool,
    progress: bool,
) -> tuple[FoldsReport, dict[str, QuestionSet], dict[str, int]]:
    """Ingest fold builds `NAME-fold1..k` of `rule` in one transaction, drop the fold builds of
    a replaced rule that this one does not make, and resolve every fold set's gold before the
    transaction commits; the record gains the rule and the builds' entries. Returns the report,
    the fold sets and each document's fold (for folds.json)."""
    name = record["name"]
    field_of = check_holdout_field(coll, rule)
    fold_of = rule.assign(field_of, name)  # refuses k < 2 or k > units, naming the corpus
    _refuse_changed_folds(record, rule, replace)
    old = _recorded_fold_builds(record)
    new = [fold_build(name, i) for i in range(1, rule.k + 1)]
    digest = f"{coll.corpus_digest}|{record['kind']}|{record['language']}"
    sets: dict[str, QuestionSet] = {}
    builds: list[FoldBuildReport] = []
    entries: dict[str, dict[str, Any]] = {}
    with conn.transaction():
        for i, fold_name in enumerate(new, 1):
            held = frozenset(d for d, k in fold_of.items() if k == i)
            origin = f"{_origin(coll.root)} holding out fold {i} of {rule.spec}"
            rep = ingest_sources(
                conn,
                [
                    Source(
                        f"{coll.root / CORPUS_FILE} without fold {i}'s {len(held)} documents",
                        partial(
                            collection_fragments,
                            coll,
                            fold_name,
                            record["kind"],
                            record["language"],
                            held,
                        ),
                    )
                ],
                fold_name,
                embedder,
                origin=origin,
                replace=replace,
                progress=progress,
            )
            qs = split_set(full, held, fold_name)
            sets[fold_name] = qs
            labels = [q.label for q in qs.questions]
            builds.append(
                FoldBuildReport(
                    fold_name,
                    len(held),
                    labels.count("answerable"),
                    labels.count("out_of_corpus"),
                    rep,
                )
            )
            entries[fold_name] = {
                "build_id": imported_build_id(fold_name, digest, f"fold {i} of {rule.spec}"),
                "origin": origin,
                "fold": i,
                "held_out_documents": len(held),
            }
        removed = tuple(b for b in old if b not in entries)
        for b in removed:
            store.drop_corpus(conn, embedder.id, b)
        _check_gold(conn, sets, embedder.id)
    if removed or any(b.ingest.written or b.ingest.deleted for b in builds):
        store.vacuum(conn)  # skipped inside the transaction (see `tables.vacuum`)
    for b in old:
        record["builds"].pop(b, None)
    record["builds"].update(entries)
    record["folds"] = rule.to_json()
    report = FoldsReport(name, rule.spec, len(coll.documents), tuple(builds), removed)
    return report, sets, fold_of


def fold_import(
    conn: psycopg.Connection,
    name: str,
    embedder: Embedder,
    rule: Folds,
    *,
    replace: bool = False,
    progress: bool = True,
) -> FoldsReport:
    """Build the leave-out folds `NAME-fold1..k` of an imported corpus from its recorded source
    (refused when corpus.jsonl changed since the import: re-import first) and its stored
    question set: every document (or every value of `rule.field`) is held out by exactly one
    fold build, and a question whose relevant documents all lie in fold i is out_of_corpus in
    `NAME-foldi`. Re-running the same rule writes nothing new; another rule needs `replace`.
    Without `replace`, folds whose files and database disagree (a split stopped after its
    commit) are refused naming what disagrees (`presence.check_folds`); `replace` repairs them."""
    record = import_record(name)
    if record is None or record["name"] != name:
        raise InputError(name, "-", "no imported corpus of that name (`citegate data import-beir`)")
    if not replace:  # with replace, this run is the repair of an interrupted one
        check_folds(conn, name, embedder.id)
    coll = _recorded_collection(record)
    full = load_set(name)
    keep = {n: load_set(n) for n in _set_names(record) if not parse_fold(n)}
    report, fold_sets, fold_of = _folds(conn, record, coll, full, rule, embedder, replace, progress)
    _write_folds(import_folder(name), record, {**keep, **fold_sets}, fold_of)
    return report


def _recorded_collection(record: Mapping[str, Any]) -> Collection:
    """The documents of an import's recorded source folder (no questions), refused when its
    corpus.jsonl changed or vanished since the import."""
    root = Path(record["source"])
    path = root / CORPUS_FILE
    pr = Problems()
    docs = read_documents(path, pr) if path.is_file() else {}
    pr.raise_any()
    if not path.is_file() or file_sha256(path) != record["files"][CORPUS_FILE]:
        raise InputError(
            path,
            "-",
            f"changed or missing since {record['name']!r} was imported; run import-beir again",
        )
    return Collection(root, docs, [], dict(record["files"]), record["split_source"])


def _write_folds(
    folder: Path,
    record: Mapping[str, Any],
    sets: Mapping[str, QuestionSet],
    fold_of: Mapping[str, int],
) -> None:
    """Write folds.json (each document's fold; replaced atomically) and then the import folder
    (`write_import`: build.json, the sets, MANIFEST.json, CARD.md)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / FOLD_MAP_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(fold_map_json(record["folds"], fold_of), encoding="utf-8")
    os.replace(tmp, path)
    write_import(folder, record, sets)


def _set_names(record: Mapping[str, Any]) -> list[str]:
    """The sets an import folder holds (its own, not the shipped out-of-scope set): the full
    set, the user's out-of-scope set, and the set of every split and fold build recorded."""
    names = [record["name"]]
    if record.get("out_of_scope", SHIPPED_OUT_OF_SCOPE) != SHIPPED_OUT_OF_SCOPE:
        names.append(record["out_of_scope"])
    names += [b for b in record["builds"] if b != record["name"]]
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
