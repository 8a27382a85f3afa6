"""What an import makes of a read collection (`corpus.beir`): the fragments the store ingests,
the question sets in the project's schema (full, split, fold and out-of-scope), and the files an
import writes beside them (the sets, build.json, the data card stub). Split from the reader so
each module has one job: `beir` reads and validates, this module builds and writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from citegate.core.errors import InputError
from citegate.core.fragments import LIBRARY_KINDS, Fragment
from citegate.corpus.beir import OUT_OF_SCOPE_SUFFIX, Collection, Document
from citegate.corpus.builds import DOC_LOC_PREFIX, SPLIT_SUFFIX, parse_fold
from citegate.corpus.chunking import pack_text
from citegate.corpus.datacheck import counts_markdown
from citegate.corpus.holdout import Folds, Holdout
from citegate.corpus.questions import (
    ANY_CORPUS,
    Question,
    QuestionSet,
    mentions_address,
    split_of,
    write_sets,
)

# ---------------------------------------------------------------- fragments and question sets


def document_fragments(doc: Document, corpus: str, kind: str, lang: str) -> Iterator[Fragment]:
    """The chunks of one document (title as its first paragraph), each addressed by the id."""
    body = f"{doc.title}\n\n{doc.text}" if doc.title else doc.text
    for j, chunk in enumerate(pack_text(body), 1):
        yield Fragment(
            key=f"{doc.id}#{j}",
            corpus=corpus,
            kind=kind,
            source_id=doc.id,
            text=chunk,
            lang=lang,
            book=doc.title or None,
            loc_token=f"{DOC_LOC_PREFIX}{j}",
            addr_label=doc.id,
            tokens=doc.title,
        )


def collection_fragments(
    collection: Collection,
    corpus: str,
    kind: str,
    lang: str,
    exclude: frozenset[str] = frozenset(),
) -> list[Fragment]:
    """Every fragment of the collection's documents not in `exclude`, in file order."""
    if kind not in LIBRARY_KINDS:
        raise InputError("--kind", kind, f"an imported corpus is library text: {LIBRARY_KINDS}")
    return [
        f
        for d, doc in collection.documents.items()
        if d not in exclude
        for f in document_fragments(doc, corpus, kind, lang)
    ]


def question_set(collection: Collection, name: str, lang: str, origin: str) -> QuestionSet:
    """The imported questions as set `name` (all `answerable`, gold = relevant document ids)."""
    qs = []
    for q in collection.queries:
        group = f"{name}:{q.relevant[0]}"
        text = " ".join(q.text.split())
        qs.append(
            Question(
                q.id,
                text,
                q.language or lang,
                "answerable",
                q.relevant,
                origin,
                q.split or split_of(group),
                name,
                group,
                "",
                mentions_address(text),
            )
        )
    return QuestionSet(name, name, tuple(qs))


def split_set(full: QuestionSet, held: frozenset[str], name: str | None = None) -> QuestionSet:
    """The full set relabeled for a leave-out build (`NAME-split` by default, or fold build
    `name`): a question whose relevant documents are all held out is `out_of_corpus` (gold
    kept: it must resolve in the full build only); the others stay `answerable` with the
    held-out documents dropped from their gold."""
    name = name or full.name + SPLIT_SUFFIX
    out = []
    for q in full.questions:
        kept = tuple(g for g in q.gold if g not in held)
        label = "answerable" if kept else "out_of_corpus"
        out.append(replace(q, corpus=name, label=label, gold=kept or q.gold))
    return QuestionSet(name, name, tuple(out))


def out_of_scope_set(name: str, rows: Sequence[tuple[str, str, str]], origin: str) -> QuestionSet:
    """A user's out-of-scope questions as set `NAME-out-of-scope` (searched against any build)."""
    set_name = name + OUT_OF_SCOPE_SUFFIX
    qs = tuple(
        Question(
            qid,
            text,
            lang,
            "out_of_scope",
            (),
            origin,
            split_of(f"{set_name}:{qid}"),
            ANY_CORPUS,
            f"{set_name}:{qid}",
            "general",
            mentions_address(text),
        )
        for qid, text, lang in rows
    )
    return QuestionSet(set_name, ANY_CORPUS, qs)


# ---------------------------------------------------------------- what an import writes


def write_import(folder: Path, record: Mapping[str, Any], sets: Mapping[str, QuestionSet]) -> None:
    """Write an import's folder: build.json (the record), each set as JSONL with MANIFEST.json
    (corpus, build id, digest, count), and CARD.md (a data card stub). A set file of an earlier
    import that this one no longer makes is removed, so `load_set` cannot find a stale set."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "build.json").write_text(
        json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    for old in folder.glob("*.jsonl"):
        if old.stem not in sets:
            old.unlink()
    write_sets(dict(sets), folder)
    (folder / "CARD.md").write_text(card_stub(record, sets.values()), encoding="utf-8")


def card_stub(record: Mapping[str, Any], sets: Iterable[QuestionSet]) -> str:
    """A data card for an imported corpus: where it came from (files and digests), how it was
    split and held out, the counts per set, label, language and split; the licence and the known
    weaknesses are left for the user to state."""
    sets = list(sets)
    lines = [
        f"# Data card: {record['name']} (imported)",
        "",
        f"Source: `{record['source']}` ({record['format']}), imported as `{record['kind']}` "
        f"fragments in `{record['language']}`: {record['documents']} documents, "
        f"{record['fragments']} fragments (library chunker, ~900 characters).",
        "",
        "**Licence: not stated.** Say under which licence this data may be used and shared "
        "before publishing results computed on it.",
        "",
        "| file | sha256 |",
        "|---|---|",
        *[f"| `{p}` | `{h[:16]}…` |" for p, h in sorted(record["files"].items())],
        "",
        "| build | id | origin |",
        "|---|---|---|",
        *[f"| {b} | `{v['build_id']}` | {v['origin']} |" for b, v in record["builds"].items()],
        "",
        f"Splits: {SPLIT_SOURCES[record['split_source']]}.",
    ]
    split = record["builds"].get(record["name"] + SPLIT_SUFFIX)
    if split:
        lines.append(
            f"Held out in `{record['name']}{SPLIT_SUFFIX}`: {split['held_out_documents']} of "
            f"{record['documents']} documents ({Holdout.from_json(split['holdout']).spec}); a "
            "question whose relevant documents are all held out is `out_of_corpus`."
        )
    if record.get("folds"):
        rule = Folds.from_json(record["folds"])
        held = [
            str(v["held_out_documents"])
            for b, v in record["builds"].items()
            if parse_fold(b) and parse_fold(b)[0] == record["name"]  # type: ignore[index]
        ]
        lines.append(
            f"Leave-out folds `{record['name']}-fold1..{rule.k}` ({rule.spec}): each holds out "
            f"its fold's documents ({', '.join(held)} of {record['documents']}); a question "
            "whose relevant documents are all in one fold is `out_of_corpus` in that fold's "
            "build only."
        )
    lines += [
        f"Dropped on import: {record['skipped_queries']} queries without a relevant document, "
        f"{record['duplicate_texts']} repeated question texts.",
        "",
        counts_markdown(sets),
        "",
        "Known weaknesses: (to be written by whoever imported the data).",
        "",
    ]
    return "\n".join(lines)


SPLIT_SOURCES = {
    "files": "tune/test from the collection's own qrels files (test.tsv is test; train/dev tune)",
    "questions": "tune/test from the questions file's `split` column where given, else by a "
    "salted hash of the question's first relevant document",
    "salted": "tune/test by a salted hash of each question's first relevant document, so one "
    "document's questions sit on one side",
}
