"""`citegate data build|check|card`: rebuild, validate and document the labeled question sets."""

from __future__ import annotations

import argparse

from citegate.core import paths
from citegate.corpus.datacheck import CARD, check_all, check_card, counts_markdown, rebuild
from citegate.corpus.questions import SETS, load_set
from citegate.models.embed import default_embedder
from citegate.store.db import connect


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


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate data`."""
    p = sub.add_parser("data", help="build / check / describe the labeled question sets")
    p.add_argument("action", choices=["build", "check", "card"])
    p.set_defaults(func=cmd_data)
