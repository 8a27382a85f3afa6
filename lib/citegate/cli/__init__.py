"""The `citegate` command line: one module per command group, each with a `register(sub)` that
adds its subcommands and `cmd_*` functions that call the domain modules' plain functions.

    corpus   ingest, doctor          data     data build|check|card|import-beir|split|...
    export   export-run (TREC files)
    ask      ask                     run      run (experiments)
    promote  promote                 ltr      ltr train
    bench    bench, rerank-eval      reports  screenshot
    tools    tts-tracks (maintainers)  audit    audit-sheet (label audits)

This package is the top layer: it may import every other subpackage, and it is the only place
that imports argparse. The entry point is `citegate = "citegate.cli:main"` (`python -m citegate`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from citegate.cli import (
    ask,
    audit,
    bench,
    corpus,
    data,
    export,
    ltr,
    promote,
    reports,
    run,
    scale,
    tools,
)
from citegate.core.errors import CitegateError

Handler = Callable[[argparse.Namespace], int]

# Command groups in the order `citegate --help` lists them.
GROUPS = (corpus, ask, data, audit, run, export, promote, ltr, bench, scale, reports, tools)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    p = argparse.ArgumentParser(
        prog="citegate",
        description="citegate: a cite-or-abstain retrieval pipeline and its research suite.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run one subcommand; a `CitegateError` prints one clear line and exits 2."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CitegateError as exc:
        print(f"citegate: error: {exc}", file=sys.stderr)
        return 2


__all__ = ["GROUPS", "Handler", "build_parser", "main"]
