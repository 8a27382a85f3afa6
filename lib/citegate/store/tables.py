"""Writing fragments to PostgreSQL, and the fragment-table reads more than one layer shares: the
column list, each corpus's fragment-set digest, fragment texts by id, corpus statistics.

The retrieval lanes (dense, lexical, address) live in `citegate.pipeline.lanes`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import psycopg
from psycopg import sql

from citegate.core.fragments import Fragment

# What a read of a fragment returns (the lanes' `fetch`, `retrieve`'s candidates).
FRAGMENT_COLUMNS = (
    "id",
    "frag_key",
    "corpus",
    "kind",
    "source_id",
    "track_id",
    "start_ms",
    "end_ms",
    "book",
    "loc_token",
    "addr_label",
    "text",
    "lang",
)
# What a write stores: every read column but the id, then the search and embedding columns.
_COLUMNS = (*FRAGMENT_COLUMNS[1:], "tokens", "content_hash", "embedder_id", "dim", "embedding")

# One cheap aggregate per corpus: row count and md5 over "id:content_hash" in id order.
FRAGMENT_SETS_SQL = """
SELECT corpus, count(*),
       coalesce(md5(string_agg(id::text || ':' || content_hash, ',' ORDER BY id)), '')
FROM fragments WHERE embedder_id = %(eid)s AND corpus = ANY(%(corpora)s)
GROUP BY corpus
"""
TEXTS_SQL = "SELECT id, text FROM fragments WHERE id = ANY(%s)"
TEXTS_CHUNK = 5000  # ids per TEXTS_SQL statement

UPSERT_SQL = (
    f"INSERT INTO fragments ({', '.join(_COLUMNS)}) VALUES ({', '.join(['%s'] * len(_COLUMNS))}) "
    "ON CONFLICT (embedder_id, corpus, frag_key) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in _COLUMNS[2:])
    + " WHERE fragments.content_hash IS DISTINCT FROM EXCLUDED.content_hash"
)


@contextmanager
def corpus_lock(conn: psycopg.Connection, embedder_id: str, corpus: str) -> Iterator[None]:
    """Hold a session advisory lock on (embedder, corpus) for the block: a second ingest of the
    same corpus waits for the first, then reads what it stored (so it reports those fragments
    unchanged instead of embedding them again and writing nothing)."""
    key = f"citegate-ingest|{embedder_id}|{corpus}"
    conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
    try:
        yield
    finally:
        conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))


def stored_hashes(conn: psycopg.Connection, embedder_id: str, corpus: str) -> dict[str, str]:
    """frag_key -> content_hash of what is already stored for (embedder, corpus)."""
    rows = conn.execute(
        "SELECT frag_key, content_hash FROM fragments WHERE embedder_id = %s AND corpus = %s",
        (embedder_id, corpus),
    )
    return dict(rows.fetchall())


def _rows(frags: Sequence[Fragment], vectors: np.ndarray, embedder_id: str) -> list[tuple]:
    dim = int(vectors.shape[1]) if len(frags) else 0
    return [
        (
            f.key,
            f.corpus,
            f.kind,
            f.source_id,
            f.track_id,
            f.start_ms,
            f.end_ms,
            f.book,
            f.loc_token,
            f.addr_label,
            f.text,
            f.lang,
            f.tokens,
            f.content_hash,
            embedder_id,
            dim,
            vec,
        )
        for f, vec in zip(frags, vectors, strict=True)
    ]


def _upsert(
    conn: psycopg.Connection, frags: Sequence[Fragment], vectors: np.ndarray, eid: str
) -> int:
    if not frags:
        return 0
    with conn.cursor() as cur:
        cur.executemany(UPSERT_SQL, _rows(frags, vectors, eid))
        return max(cur.rowcount, 0)


def write_batch(
    conn: psycopg.Connection, frags: Sequence[Fragment], vectors: np.ndarray, embedder_id: str
) -> int:
    """Upsert one batch in one transaction: all of it lands, or none of it. Returns rows written."""
    with conn.transaction():
        return _upsert(conn, frags, vectors, embedder_id)


def write_sources(
    conn: psycopg.Connection,
    frags: Sequence[Fragment],
    vectors: np.ndarray,
    embedder_id: str,
    corpus: str,
    *,
    origin: str | None,
    delete: Sequence[str] = (),
    lexemes: bool = False,
) -> tuple[int, int]:
    """In ONE transaction: upsert whole sources' fragments, delete the `delete` keys of the corpus,
    record where the corpus came from and (`lexemes`, on an ingest's last write) recount its
    lexemes' document frequencies. Returns (rows written, rows deleted)."""
    with conn.transaction():
        written = _upsert(conn, frags, vectors, embedder_id)
        deleted = 0
        if delete:
            deleted = conn.execute(
                "DELETE FROM fragments WHERE embedder_id = %s AND corpus = %s AND frag_key = ANY(%s)",
                (embedder_id, corpus, list(delete)),
            ).rowcount
        if origin is not None:
            record_origin(conn, embedder_id, corpus, origin)
        if lexemes:
            refresh_lexemes(conn, embedder_id, corpus)
        return written, max(deleted, 0)


def refresh_lexemes(conn: psycopg.Connection, embedder_id: str, corpus: str) -> int:
    """Recount, from the stored tsvectors, how many fragments of (embedder, corpus) hold each
    lexeme, per text-search config (`ts_stat`: one pass over the build); returns the rows written.
    The lexical lane's tiers read these (`lanes.lexical_tiers`). The same transaction stamps the
    build's fragment-set digest (`fragment_sets`), which names its BM25 index (`store.bm25`)."""
    conn.execute(
        "DELETE FROM lexemes WHERE embedder_id = %s AND corpus = %s", (embedder_id, corpus)
    )
    (digest,) = fragment_sets(conn, [corpus], embedder_id).values()
    conn.execute(
        "INSERT INTO fragment_stamps (embedder_id, corpus, fragment_set) VALUES (%s, %s, %s) "
        "ON CONFLICT (embedder_id, corpus) DO UPDATE SET fragment_set = EXCLUDED.fragment_set",
        (embedder_id, corpus, digest),
    )
    n = 0
    for config, column in (("russian", "tsv_russian"), ("simple", "tsv_simple")):
        inner = sql.SQL("SELECT {col} FROM fragments WHERE embedder_id = {e} AND corpus = {c}")
        query = inner.format(
            col=sql.Identifier(column), e=sql.Literal(embedder_id), c=sql.Literal(corpus)
        ).as_string(conn)
        n += conn.execute(
            "INSERT INTO lexemes (embedder_id, corpus, config, lexeme, ndoc) "
            "SELECT %s, %s, %s, word, ndoc FROM ts_stat(%s)",
            (embedder_id, corpus, config, query),
        ).rowcount
    return n


def has_lexemes(conn: psycopg.Connection, embedder_id: str, corpus: str) -> bool:
    """Whether (embedder, corpus) has its lexeme counts (a build ingested before they existed
    has none until its next ingest writes or finds it unchanged)."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM lexemes WHERE embedder_id = %s AND corpus = %s)",
        (embedder_id, corpus),
    ).fetchone()
    return bool(row[0])


def record_origin(conn: psycopg.Connection, embedder_id: str, corpus: str, origin: str) -> None:
    """Remember the source a corpus was ingested from (a built-in build or a resolved path)."""
    conn.execute(
        "INSERT INTO corpora (embedder_id, corpus, origin) VALUES (%s, %s, %s) "
        "ON CONFLICT (embedder_id, corpus) DO UPDATE SET origin = EXCLUDED.origin, updated_at = now()",
        (embedder_id, corpus, origin),
    )


def corpus_origin(conn: psycopg.Connection, embedder_id: str, corpus: str) -> str | None:
    """The recorded origin of (embedder, corpus); None when it was never recorded."""
    row = conn.execute(
        "SELECT origin FROM corpora WHERE embedder_id = %s AND corpus = %s", (embedder_id, corpus)
    ).fetchone()
    return row[0] if row else None


def counts(conn: psycopg.Connection) -> list[tuple[str, str, str, int]]:
    """(embedder, corpus, kind, fragments) for `citegate doctor`."""
    return conn.execute(
        "SELECT embedder_id, corpus, kind, count(*) FROM fragments "
        "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
    ).fetchall()


def vacuum(conn: psycopg.Connection) -> None:
    """VACUUM ANALYZE after writes: flushes the GIN pending lists (the trigram address lane ran
    ~28x slower as a sequential scan until autovacuum got to it) and refreshes planner statistics.
    Skipped inside an open transaction (VACUUM cannot run in one): whoever opened it, e.g. the
    one transaction of all fold builds of an import, vacuums after committing."""
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    if conn.autocommit and idle:
        conn.execute("VACUUM (ANALYZE) fragments")


def drop_corpus(conn: psycopg.Connection, embedder_id: str, corpus: str) -> int:
    """Remove every fragment of (embedder, corpus) and its recorded origin, in one transaction
    (a savepoint inside the caller's); returns the fragments deleted. Used when a replaced fold
    rule makes fewer fold builds than before."""
    with conn.transaction():
        n = conn.execute(
            "DELETE FROM fragments WHERE embedder_id = %s AND corpus = %s", (embedder_id, corpus)
        ).rowcount
        for table in ("corpora", "lexemes", "fragment_stamps"):
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE embedder_id = %s AND corpus = %s").format(
                    sql.Identifier(table)
                ),
                (embedder_id, corpus),
            )
    return max(n, 0)


def fragment_sets(
    conn: psycopg.Connection, corpora: Sequence[str], embedder_id: str
) -> dict[str, str]:
    """corpus -> "count:md5" of its (id, content hash) rows for the embedder, in one query: what
    the fragment ids of a cached trace (and the index facts cached with them) refer to, so it
    changes on any re-ingest, edit or deletion. A corpus without fragments gives "0:"."""
    rows = conn.execute(FRAGMENT_SETS_SQL, {"eid": embedder_id, "corpora": list(corpora)})
    found = {corpus: f"{n}:{h}" for corpus, n, h in rows.fetchall()}
    return {c: found.get(c, "0:") for c in corpora}


STAMPS_SQL = """
SELECT corpus, fragment_set FROM fragment_stamps
WHERE embedder_id = %(eid)s AND corpus = ANY(%(corpora)s)
"""


def stamped_sets(conn: psycopg.Connection, embedder_id: str, corpora: Sequence[str]) -> dict:
    """corpus -> fragment-set digest as the last ingest stamped it (one primary-key read, where
    `fragment_sets` aggregates every row: 1.2 s per call at 1M fragments); a build without a stamp
    (ingested before stamps existed) is counted now (`fragment_sets`). What derived data of a
    build (its BM25 index, the gate's index facts) is named by, so a re-ingest names new data."""
    rows = conn.execute(STAMPS_SQL, {"eid": embedder_id, "corpora": list(corpora)}).fetchall()
    got = dict(rows)
    missing = [c for c in corpora if c not in got]
    if missing:
        got.update(fragment_sets(conn, missing, embedder_id))
    return {c: got[c] for c in corpora}


def fragment_texts(conn: psycopg.Connection, ids: Iterable[int]) -> dict[int, str]:
    """The stored text of each fragment id (slim traces keep none); unknown ids are absent."""
    wanted = sorted(set(ids))
    out: dict[int, str] = {}
    for start in range(0, len(wanted), TEXTS_CHUNK):
        chunk = wanted[start : start + TEXTS_CHUNK]
        out.update(conn.execute(TEXTS_SQL, (chunk,)))
    return out
