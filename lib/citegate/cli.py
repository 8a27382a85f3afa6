"""The `citegate` command line: ingest, doctor (and the commands later stages add)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from citegate.errors import CitegateError

Handler = Callable[[argparse.Namespace], int]


def cmd_ingest(args: argparse.Namespace) -> int:
    """Ingest a built-in corpus or a path; prints what was written."""
    from citegate.db import connect
    from citegate.embed import default_embedder
    from citegate.ingest import ingest_corpus

    emb = default_embedder()
    with connect() as conn:
        for name in args.corpus:
            rep = ingest_corpus(conn, name, emb, corpus=args.name, lang=args.lang)
            print(
                f"{rep.corpus}: {rep.seen} fragments, {rep.written} written, "
                f"{rep.skipped} unchanged, {rep.deleted} removed  [{rep.embedder_id}]"
            )
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Print the database, extensions, embedder and corpus counts a user needs to trust a setup."""
    from citegate.db import connect, database_url, mask_url, server_facts
    from citegate.embed import default_embedder
    from citegate.store import counts

    url = database_url()
    print(f"database      {mask_url(url)}")
    with connect(url) as conn:
        for k, v in server_facts(conn).items():
            print(f"{k:<13} {v}")
        emb = default_embedder()
        print(f"embedder      {emb.id} (dim {emb.dim})")
        rows = counts(conn)
    print(
        "fragments:"
        if rows
        else "fragments:   none yet (run `citegate ingest --corpus gita xquad`)"
    )
    for eid, corpus, kind, n in rows:
        print(f"  {corpus:<10} {kind:<17} {n:>6}  {eid}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    p = argparse.ArgumentParser(prog="citegate", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    ing = sub.add_parser("ingest", help="embed and store a corpus (idempotent, resumable)")
    ing.add_argument(
        "--corpus",
        nargs="+",
        required=True,
        help="built-in corpus name (gita, xquad) or a path to .srt/.vtt/.json/.txt files",
    )
    ing.add_argument("--name", help="corpus name for a path (default: the path's stem)")
    ing.add_argument("--lang", default="en", help="language of a path's texts (default en)")
    ing.set_defaults(func=cmd_ingest)
    doc = sub.add_parser("doctor", help="show database, extensions, embedder and counts")
    doc.set_defaults(func=cmd_doctor)
    for register in _extensions():
        register(sub)
    return p


def _extensions() -> list[Callable[[argparse._SubParsersAction], None]]:
    """Subcommands contributed by later pipeline stages (kept out of this module's imports)."""
    from citegate import cli_more

    return cli_more.REGISTER


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run one subcommand; a `CitegateError` prints one clear line and exits 2."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CitegateError as exc:
        print(f"citegate: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
