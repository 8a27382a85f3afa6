"""`citegate audit-sheet`: build the review sheet of a label audit (what the judge reads)."""

from __future__ import annotations

import argparse
from pathlib import Path

from citegate.research.audit_sheet import (
    CONTROL,
    FOLD_CONTROL,
    FOLD_OOC,
    build_fold_sheet,
    build_sheet,
    fold_sheet_name,
    fold_study_sets,
    study_set,
    write_sheet,
)
from citegate.store.db import connect


def cmd_audit_sheet(args: argparse.Namespace) -> int:
    """Replay the cached traces of the audit sample and write the sheet (JSONL + Markdown);
    `--folds BASE`: one sheet over experiment 05's fold sample of every fold build of BASE."""
    folder = Path(args.out) if args.out else None
    if args.folds:
        sets, cfg = fold_study_sets(args.folds)
        with connect() as conn:
            rows = build_fold_sheet(conn, sets, cfg, ooc=args.fold_ooc, control=args.fold_control)
        out = write_sheet(rows, folder, fold_sheet_name(args.folds))
    else:
        sset, cfg = study_set(args.set, progress=not args.quiet)
        with connect() as conn:
            rows = build_sheet(conn, sset, cfg, control=args.control)
        out = write_sheet(rows, folder, args.set)
    print(f"wrote {out['questions']} questions to {out['markdown']} and {out['jsonl']}")
    print(f"sheet digest {out['digest']}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate audit-sheet`."""
    p = sub.add_parser("audit-sheet", help="build the review sheet of a label audit")
    p.add_argument("--set", default="gita-split", help="question set (default gita-split)")
    p.add_argument("--control", type=int, default=CONTROL, help="answerable control questions")
    p.add_argument(
        "--folds",
        default="",
        choices=["", "gita"],
        help="the fold audit: one sheet over 05's fold sample of every fold build of this corpus",
    )
    p.add_argument(
        "--fold-ooc", type=int, default=FOLD_OOC, help="out_of_corpus questions per fold build"
    )
    p.add_argument(
        "--fold-control", type=int, default=FOLD_CONTROL, help="answerable controls per fold build"
    )
    p.add_argument("--out", default="", help="output folder (default <var>/audit)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_audit_sheet)
