"""`citegate audit-sheet`: build the review sheet of a label audit (what the judge reads)."""

from __future__ import annotations

import argparse
from pathlib import Path

from citegate.research.audit_sheet import CONTROL, build_sheet, study_set, write_sheet
from citegate.store.db import connect


def cmd_audit_sheet(args: argparse.Namespace) -> int:
    """Replay the cached traces of the audit sample and write the sheet (JSONL + Markdown)."""
    sset, cfg = study_set(args.set, progress=not args.quiet)
    with connect() as conn:
        rows = build_sheet(conn, sset, cfg, control=args.control)
    out = write_sheet(rows, Path(args.out) if args.out else None, args.set)
    print(f"wrote {out['questions']} questions to {out['markdown']} and {out['jsonl']}")
    print(f"sheet digest {out['digest']}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate audit-sheet`."""
    p = sub.add_parser("audit-sheet", help="build the review sheet of a label audit")
    p.add_argument("--set", default="gita-split", help="question set (default gita-split)")
    p.add_argument("--control", type=int, default=CONTROL, help="answerable control questions")
    p.add_argument("--out", default="", help="output folder (default <var>/audit)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_audit_sheet)
