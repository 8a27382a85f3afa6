"""`citegate data build|check|card|import-beir|import-questions|split`: rebuild, validate and
document the labeled question sets, and bring in a user's own test collection (and cut it into a
leave-out split or leave-out folds)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from citegate.core import paths
from citegate.core.errors import ConfigError
from citegate.core.inputs import MAX_SOURCE_MB
from citegate.corpus.datacheck import CARD, check_all, check_card, counts_markdown, rebuild
from citegate.corpus.holdout import DEFAULT_FOLDS, DEFAULT_SHARE, Folds, Holdout
from citegate.corpus.questions import SETS, load_set
from citegate.models.embed import default_embedder
from citegate.store.db import connect
from citegate.store.imports import (
    FoldsReport,
    ImportReport,
    SplitReport,
    fold_import,
    import_beir,
    import_questions,
    split_import,
)


def cmd_data(args: argparse.Namespace) -> int:
    """Dispatch `citegate data build|check|card`."""
    if args.action == "build":
        n = rebuild()
        print(f"wrote {n} sets to {paths.QUESTIONS} and the counts in {CARD}")
        return 0
    if args.action == "card":
        print(counts_markdown(load_set(n) for n in SETS))
        return 0
    emb = default_embedder()
    with connect() as conn:
        sets = check_all(conn, emb.id)
    table = counts_markdown(sets)
    print(table)
    check_card(table)
    print(
        f"OK: {sum(len(s.questions) for s in sets)} questions in {len(sets)} sets; gold resolved "
        f"against {emb.id}; no split leakage; card up to date"
    )
    return 0


def holdout_of(args: argparse.Namespace) -> Holdout | None:
    """The leave-out rule of `--holdout SHARE` / `--holdout-by FIELD` (None when neither)."""
    if args.holdout is None and args.holdout_by is None:
        return None
    share = DEFAULT_SHARE if args.holdout is None else args.holdout
    return Holdout(share, args.holdout_by)


def cmd_import_beir(args: argparse.Namespace) -> int:
    """Validate, ingest and write the sets of a BEIR folder; print what was imported."""
    clock = time.perf_counter()
    emb = default_embedder()
    with connect() as conn:
        rep = import_beir(
            conn,
            args.dir,
            args.name,
            emb,
            kind=args.kind,
            lang=args.language,
            questions=args.questions,
            holdout=holdout_of(args),
            out_of_scope=args.out_of_scope,
            replace=args.replace,
            max_source_bytes=max_source_bytes(args),
        )
    print(format_import(rep, time.perf_counter() - clock))
    return 0


def cmd_import_questions(args: argparse.Namespace) -> int:
    """Replace an imported corpus's questions with a CSV/JSONL with gold ids."""
    clock = time.perf_counter()
    emb = default_embedder()
    with connect() as conn:
        rep = import_questions(
            conn,
            args.file,
            args.corpus,
            emb,
            replace=args.replace,
            max_source_bytes=max_source_bytes(args),
        )
    print(format_import(rep, time.perf_counter() - clock))
    return 0


def max_source_bytes(args: argparse.Namespace) -> int:
    """`--max-source-mb` in bytes (the one limit on text, as for `citegate ingest`)."""
    if args.max_source_mb <= 0:
        raise ConfigError(f"--max-source-mb must be positive, not {args.max_source_mb:g}")
    return int(args.max_source_mb * 1024 * 1024)


def add_max_source(p: argparse.ArgumentParser) -> None:
    """`--max-source-mb`, shared by every command that brings text in."""
    p.add_argument(
        "--max-source-mb",
        type=float,
        default=MAX_SOURCE_MB,
        metavar="MB",
        help=f"refuse a document, question or file larger than this (default {MAX_SOURCE_MB:g} "
        "MB, about 5,000 fragments to embed)",
    )


def cmd_split(args: argparse.Namespace) -> int:
    """Build NAME-split (or, with --folds, NAME-fold1..K) for an imported corpus."""
    clock = time.perf_counter()
    if args.folds is not None:
        if args.holdout is not None:
            raise ConfigError(
                "--folds holds out every fold once; --holdout SHARE is for NAME-split (use one)"
            )
        emb = default_embedder()
        with connect() as conn:
            folds = fold_import(
                conn, args.name, emb, Folds(args.folds, args.holdout_by), replace=args.replace
            )
        print(format_folds(folds))
    else:
        rule = holdout_of(args) or Holdout()
        emb = default_embedder()
        with connect() as conn:
            rep = split_import(conn, args.name, emb, rule, replace=args.replace)
        print(format_split(rep))
    print(f"done in {time.perf_counter() - clock:.1f} s")
    return 0


def format_import(rep: ImportReport, seconds: float) -> str:
    """What an import did, as a user reads it."""
    ing = rep.ingest
    lines = [
        f"{rep.name}: {rep.documents} documents -> {rep.fragments} fragments "
        f"({ing.written} written, {ing.skipped} unchanged, {ing.deleted} removed) "
        f"[{ing.embedder_id}]",
        f"  questions: {rep.questions} (splits: {rep.split_source}); dropped "
        f"{rep.skipped_queries} without a relevant document, {rep.duplicate_texts} repeated texts",
    ]
    if rep.split is not None:
        lines.append(format_split(rep.split))
    if rep.folds is not None:
        lines.append(format_folds(rep.folds))
    lines += [f"  set {n}  sha256 {d[:16]}…" for n, d in rep.sets.items()]
    lines += [
        f"  out-of-scope negatives: {rep.out_of_scope}",
        f"  written to {rep.folder} (build.json, MANIFEST.json, CARD.md)",
        f"done in {seconds:.1f} s; next: `citegate run experiments/03_gate_roc.yaml --corpus "
        f"{rep.name}`",
    ]
    return "\n".join(lines)


def format_split(rep: SplitReport) -> str:
    """What building a split did."""
    return (
        f"  {rep.name}: held out {rep.held_documents} of {rep.documents} documents ({rep.rule}); "
        f"{rep.answerable} answerable, {rep.out_of_corpus} out_of_corpus questions; "
        f"{rep.ingest.written} fragments written, {rep.ingest.skipped} unchanged"
    )


def format_folds(rep: FoldsReport) -> str:
    """What building the leave-out folds did: one line per fold build."""
    lines = [f"  {rep.name}: {len(rep.builds)} leave-out fold builds ({rep.rule})"]
    lines += [
        f"  {b.name}: held out {b.held_documents} of {rep.documents} documents; "
        f"{b.answerable} answerable, {b.out_of_corpus} out_of_corpus questions; "
        f"{b.ingest.written} fragments written, {b.ingest.skipped} unchanged"
        for b in rep.builds
    ]
    if rep.removed:
        lines.append(f"  removed the fold builds of the replaced rule: {', '.join(rep.removed)}")
    return "\n".join(lines)


def _holdout_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--holdout",
        type=float,
        metavar="SHARE",
        help=f"hold out this salted share of the documents (or of --holdout-by's values) in "
        f"NAME-split (default {DEFAULT_SHARE:g} when --holdout-by is given)",
    )
    p.add_argument(
        "--holdout-by",
        metavar="FIELD",
        help="hold out whole values of this metadata field (e.g. an article or a chapter)",
    )
    p.add_argument(
        "--replace",
        action="store_true",
        help="let the import replace a stored corpus that came from another source or rule",
    )


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate data` and its actions."""
    p = sub.add_parser(
        "data", help="build / check / describe the labeled question sets; import your own"
    )
    actions = p.add_subparsers(dest="action", required=True)
    for name, what in (
        ("build", "rebuild the shipped question sets and the data card's counts"),
        ("check", "validate every shipped set (schema, leakage, gold in the database, card)"),
        ("card", "print the counts table of the shipped sets"),
    ):
        actions.add_parser(name, help=what).set_defaults(func=cmd_data)
    imp = actions.add_parser(
        "import-beir",
        help="import a BEIR-format folder (corpus.jsonl, queries.jsonl, qrels/*.tsv)",
        description="Validate every record (file and line for each bad one; nothing is written "
        "on any error), ingest the documents as fragments (library chunker; each chunk keeps its "
        "document id as its address), write the question set NAME with gold = relevant "
        "document ids, a MANIFEST and a data card stub under $CITEGATE_VAR/imports/NAME/.",
    )
    imp.add_argument("dir", type=Path, help="the BEIR folder")
    imp.add_argument("--name", required=True, help="corpus and question set name")
    imp.add_argument(
        "--kind", default="prose_chapter", help="fragment kind (default prose_chapter)"
    )
    imp.add_argument("--language", default="en", help="language of documents and questions")
    imp.add_argument(
        "--questions",
        type=Path,
        help="CSV/JSONL of questions with gold document ids, instead of queries.jsonl + qrels",
    )
    imp.add_argument(
        "--out-of-scope",
        type=Path,
        help="your out-of-scope questions (one a line, or JSONL with `text`); default: the "
        "shipped out-of-scope set",
    )
    _holdout_args(imp)
    add_max_source(imp)
    imp.set_defaults(func=cmd_import_beir)
    q = actions.add_parser(
        "import-questions",
        help="questions with gold document ids (CSV/JSONL) for an imported corpus",
    )
    q.add_argument("file", type=Path, help="CSV (id,text,gold[,language,split]) or JSONL")
    q.add_argument("--corpus", required=True, help="the imported corpus the gold ids name")
    q.add_argument("--replace", action="store_true", help="as for import-beir")
    add_max_source(q)
    q.set_defaults(func=cmd_import_questions)
    s = actions.add_parser(
        "split",
        help="build NAME-split: hold out a salted share of an imported corpus's documents "
        "(or, with --folds K, the leave-out fold builds NAME-fold1..K)",
    )
    s.add_argument("name", help="an imported corpus")
    _holdout_args(s)
    s.add_argument(
        "--folds",
        type=int,
        nargs="?",
        const=DEFAULT_FOLDS,
        metavar="K",
        help=f"instead of NAME-split, deal the documents (or --holdout-by's values) into K "
        f"salted folds (default {DEFAULT_FOLDS}: each holds out 1/{DEFAULT_FOLDS}) and build "
        "NAME-fold1..K, each holding out one fold; another K than the recorded one needs "
        "--replace",
    )
    s.set_defaults(func=cmd_split)
