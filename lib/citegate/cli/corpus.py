"""`citegate ingest` and `citegate doctor`: store corpora, and show what a setup holds."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

import psycopg

from citegate.core.config_files import production
from citegate.core.errors import ConfigError, EmptyCorpus
from citegate.core.inputs import MAX_SOURCE_MB, check_name
from citegate.models.embed import default_embedder
from citegate.pipeline.lanes import lexical_advice
from citegate.store import db, sizing
from citegate.store.db import connect, database_url, mask_url, server_facts
from citegate.store.ingest import demo_readers, ingest_corpus
from citegate.store.presence import ingest_hint
from citegate.store.tables import counts


def check_ingest_args(args: argparse.Namespace, builtin: Sequence[str]) -> None:
    """Refuse flag combinations that would be silently ignored or merge sources by accident."""
    if args.max_source_mb <= 0:
        raise ConfigError(f"--max-source-mb must be positive, not {args.max_source_mb:g}")
    if args.name is None:
        return
    check_name("--name", args.name)
    named = [c for c in args.corpus if c in builtin]
    if named:
        raise ConfigError(
            f"--name cannot rename the built-in corpus {named[0]!r} (built-in corpora keep their "
            "names; use --name only with a path)"
        )
    if len(args.corpus) > 1:
        raise ConfigError("--name names one corpus: give a single path with --name")


def cmd_ingest(args: argparse.Namespace) -> int:
    """Ingest built-in corpora or paths; prints what was written."""
    check_ingest_args(args, list(demo_readers()))
    emb = default_embedder()
    with connect() as conn:
        for name in args.corpus:
            rep = ingest_corpus(
                conn,
                name,
                emb,
                corpus=args.name,
                lang=args.lang,
                replace=args.replace,
                max_source_bytes=int(args.max_source_mb * 1024 * 1024),
            )
            hidden = f", {rep.hidden} hidden files skipped" if rep.hidden else ""
            print(
                f"{rep.corpus}: {rep.seen} fragments, {rep.written} written, "
                f"{rep.skipped} unchanged, {rep.deleted} removed{hidden}  [{rep.embedder_id}]"
            )
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Print the database, extensions, embedder and corpus counts a user needs to trust a setup."""
    url = database_url()
    print(f"database      {mask_url(url)}")
    with connect(url) as conn:
        for k, v in server_facts(conn).items():
            print(f"{k:<13} {v}")
        _print_sizing(conn, external=bool(os.environ.get("DATABASE_URL")), apply=args.size_server)
        emb = default_embedder()
        print(f"embedder      {emb.id} (dim {emb.dim})")
        _print_dense_index(conn, emb.id)
        rows = counts(conn)
    print(
        "fragments:"
        if rows
        else "fragments:   none yet (run `citegate ingest --corpus gita xquad`)"
    )
    for eid, corpus, kind, n in rows:
        print(f"  {corpus:<10} {kind:<17} {n:>6}  {eid}")
    empty, unreadable = _print_lexical_lane(rows)
    if unreadable is not None:  # printed in its place above; the command still fails, exit 2
        raise unreadable
    if empty:  # every line above is printed first; the problem is the last line, exit 2
        raise EmptyCorpus(
            f"production searches {', '.join(empty)} under {production().embedder}, and "
            f"{'it holds' if len(empty) == 1 else 'they hold'} no fragments: every question "
            f"would be answered 'insufficient'. Ingest first ("
            + "; ".join(f"{c}: {ingest_hint(c)}" for c in empty)
            + ")"
        )
    return 0


def _print_lexical_lane(
    rows: Sequence[tuple[str, str, str, int]],
) -> tuple[list[str], ConfigError | None]:
    """The production config's lexical backend over the fragments it searches, with what to
    change when that backend is slow at this size (`lanes.lexical_advice`); returns the
    production corpora that hold no fragment for its embedder (a problem, never "ok"), and the
    error of a production file that cannot be read (the doctor then fails)."""
    try:
        cfg = production()
    except ConfigError as e:
        print("lexical lane  production config unreadable (the error line says why)")
        return [], e
    held = {corpus for eid, corpus, _, c in rows if eid == cfg.embedder and c > 0}
    empty = [c for c in cfg.corpora if c not in held]
    n = sum(c for eid, corpus, _, c in rows if eid == cfg.embedder and corpus in cfg.corpora)
    budget = f"budget {cfg.lexical_budget:,}" if cfg.lexical_budget else "unbudgeted"
    print(
        f"lexical lane  production: {cfg.lexical_backend}, {budget}, over {n:,} fragments "
        f"of {', '.join(cfg.corpora)}"
    )
    advice = lexical_advice(cfg.lexical_backend, cfg.lexical_budget, n)
    if advice:
        print(f"  warning: {advice}")
    if empty:
        print(f"  problem: no fragments of {', '.join(empty)} for {cfg.embedder}")
    if not advice and not empty:
        print("  ok")
    return empty, None


def _print_sizing(conn: psycopg.Connection, *, external: bool, apply: bool) -> None:
    """The server's memory and parallel settings beside what this machine's sizing wants;
    `apply` writes them (ALTER SYSTEM), the only way an external server is changed."""
    machine = sizing.this_machine()
    wanted = sizing.sized_settings(machine)
    if apply:
        _print_applied(sizing.size_server(conn, wanted))
    print(f"sizing        for {machine.memory / sizing.GB:.1f} GiB, {machine.cores} cores")
    for st in sizing.states(conn, wanted):
        print(f"  {st.name:<33} {st.current:<8} {_sizing_mark(st)}")
    if external and not apply and not all(s.ok for s in sizing.states(conn, wanted)):
        print("  (DATABASE_URL: left as it is; `citegate doctor --size-server` applies the sizing)")


def _sizing_mark(st: sizing.SettingState) -> str:
    if st.pending_restart:
        return "pending restart" if not st.ok else "ok now; another value waits for a restart"
    return "ok" if st.ok else f"sized: {st.wanted}"


def _print_applied(done: sizing.Sizing) -> None:
    """Each setting written with its old and new value, what waits for a restart (as the
    server's pg_settings says), and the one line that undoes the change."""
    print(f"sizing        applied: {len(done.changes)} setting(s) written")
    for c in done.changes:
        was = f" (ALTER SYSTEM had {c.previous})" if c.previous not in (None, c.old) else ""
        print(f"  {c.name:<33} {c.old} -> {c.new}{was}")
    print(f"  restart the server for: {', '.join(done.waiting) or 'nothing'}")
    if done.changes:
        print(f"  to undo: {done.undo_command()}")


def _print_dense_index(conn: psycopg.Connection, embedder_id: str) -> None:
    """Each kind group's HNSW graph beside the one its rows call for (`db.graph_for`: a larger
    one from `db.LARGE_GROUP_ROWS` vectors), and the session's dense-lane settings."""
    have = db.hnsw_graphs(conn, embedder_id)
    print(f"dense index   a group of {db.LARGE_GROUP_ROWS:,}+ vectors: {db.LARGE_GRAPH.label}")
    for group, n in db.group_rows(conn, embedder_id).items():
        name = db.hnsw_index_name(embedder_id, group)
        graph, wanted = db.HnswGraph.from_options(have.get(name)), db.graph_for(n)
        mark = "ok" if graph.covers(wanted) else f"the next ingest builds {wanted.label}"
        print(f"  {group:<12} {n:>9,} rows  {graph.label:<12} {mark}")
    settings = db.search_settings(conn)
    print("  " + ", ".join(f"{k} {v}" for k, v in settings.items()))


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate ingest` and `citegate doctor`."""
    ing = sub.add_parser(
        "ingest",
        help="embed and store a corpus (idempotent, resumable)",
        description="Embed and store built-in corpora or folders of .srt/.vtt/.json/.txt/.md "
        "files. Each file (each built-in build) is stored all-or-nothing; re-running the same "
        "command skips what is stored and resumes after a failure. Hidden files are skipped; "
        "symbolic links out of the folder are refused.",
    )
    ing.add_argument(
        "--corpus",
        nargs="+",
        required=True,
        help="built-in corpus (gita, xquad, gita-split, xquad-split, gita-fold1..6, xquad-fold1..4) or a file or folder of "
        ".srt/.vtt/.json/.txt/.md files",
    )
    ing.add_argument(
        "--name", help="corpus name for one path (default: the path's stem; not for built-ins)"
    )
    ing.add_argument("--lang", default="en", help="language of a path's texts (default en)")
    ing.add_argument(
        "--replace",
        action="store_true",
        help="let an ingest replace a stored corpus that came from another source, remove rows "
        "of a corpus of unknown origin, or empty one (without it such an ingest stops and "
        "changes nothing)",
    )
    ing.add_argument(
        "--max-source-mb",
        type=float,
        default=MAX_SOURCE_MB,
        metavar="MB",
        help=f"refuse a file larger than this (default {MAX_SOURCE_MB:g} MB, about 5,000 "
        "fragments to embed)",
    )
    ing.set_defaults(func=cmd_ingest)
    doc = sub.add_parser("doctor", help="show database, extensions, embedder and counts")
    doc.add_argument(
        "--size-server",
        action="store_true",
        help="write the machine's memory and parallel settings to the server (ALTER SYSTEM; "
        "the embedded server gets them on start, a DATABASE_URL server only with this flag)",
    )
    doc.set_defaults(func=cmd_doctor)
