"""BM25 with dynamic pruning over PostgreSQL's own lexemes: the lexical lane's second backend
(`PipelineConfig.lexical_backend = "bm25"`), a tantivy index per searched set of corpus builds.

Why: the PostgreSQL lane ranks every row that shares a word with the question (`ts_rank_cd` on
each), so its cost grows with the number of matches, 10-40% of a 1M-fragment corpus; tantivy's
Block-WAND skips the blocks of postings that cannot reach the top k, so its cost grows with k.

Tokens stay PostgreSQL's: a fragment is indexed as the lexemes of its stored tsvectors (the
stemmed `russian` one in field `ru`, the exact `simple` one in `si`, each lexeme repeated as
often as it occurs there), and a query as the lexemes `to_tsvector` gives the lane's query
words in both configs; the index only scores them (BM25, k1 1.2, b 0.75, per field, summed).

Never stale: an index is named by the fragment-set digests (`tables.fragment_sets`) of the
builds it holds, as the ingest's last write stamps them (`tables.refresh_lexemes`, in that
transaction), so a re-ingest names a new index. A build reads the rows and recomputes their
digests in one snapshot, writes into a private folder and publishes it by an atomic rename:
a reader never sees half an index, and two builders of one index leave one copy.
The index is derived data under `var/index/bm25` (deleting it costs a rebuild, nothing else).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import psycopg
import tantivy

from citegate.core.paths import var_dir
from citegate.store.tables import fragment_sets

BM25_VERSION = "1"  # bump when the schema or the tokens change: every index is rebuilt
WRITER_HEAP = 256_000_000  # bytes the tantivy writer buffers before it flushes a segment
FETCH_ROWS = 5000  # fragments per round trip while a build reads the rows
# A lexeme as one whitespace-free token (the index splits on whitespace; PostgreSQL's parser
# emits none inside a lexeme, but a stored tsvector could hold any).
_TOKEN = "regexp_replace(u.lexeme, '\\s', '_', 'g')"
DOCS_SQL = f"""
SELECT f.id,
       coalesce((SELECT string_agg(repeat({_TOKEN} || ' ', greatest(cardinality(u.positions), 1)),
                                   '') FROM unnest(f.tsv_russian) u), ''),
       coalesce((SELECT string_agg(repeat({_TOKEN} || ' ', greatest(cardinality(u.positions), 1)),
                                   '') FROM unnest(f.tsv_simple) u), '')
FROM fragments f WHERE f.embedder_id = %(eid)s AND f.corpus = ANY(%(corpora)s) ORDER BY f.id
"""
QUERY_SQL = f"""
SELECT t.i, 'ru', {_TOKEN} FROM unnest(%(texts)s::text[]) WITH ORDINALITY AS t(txt, i),
       unnest(to_tsvector('russian', t.txt)) AS u
UNION ALL
SELECT t.i, 'si', {_TOKEN} FROM unnest(%(texts)s::text[]) WITH ORDINALITY AS t(txt, i),
       unnest(to_tsvector('simple', t.txt)) AS u
"""
STAMPS_SQL = """
SELECT corpus, fragment_set FROM fragment_stamps
WHERE embedder_id = %(eid)s AND corpus = ANY(%(corpora)s)
"""


def index_root() -> Path:
    """Where the BM25 indexes live (derived data, safe to delete)."""
    return var_dir() / "index" / "bm25"


def index_key(embedder_id: str, sets: dict[str, str]) -> str:
    """The name of the index over these builds: the version, the embedder and each searched
    corpus's fragment-set digest, in corpus order."""
    parts = [BM25_VERSION, embedder_id, *(f"{c}={sets[c]}" for c in sorted(sets))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def stamped_sets(conn: psycopg.Connection, embedder_id: str, corpora: Sequence[str]) -> dict:
    """corpus -> fragment-set digest as the last ingest stamped it (one primary-key read); a
    build without a stamp (ingested before stamps existed) is counted now (`fragment_sets`)."""
    rows = conn.execute(STAMPS_SQL, {"eid": embedder_id, "corpora": list(corpora)}).fetchall()
    got = dict(rows)
    missing = [c for c in corpora if c not in got]
    if missing:
        got.update(fragment_sets(conn, missing, embedder_id))
    return {c: got[c] for c in corpora}


@dataclass(frozen=True)
class BuildStats:
    """What one index build read and wrote."""

    key: str
    fragments: int
    seconds: float


def _schema() -> Any:
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("id", stored=False, indexed=True, fast=True)
    for field in ("ru", "si"):
        sb.add_text_field(field, stored=False, tokenizer_name="lexemes", index_option="freq")
    return sb.build()


def _register(index: Any) -> Any:
    index.register_tokenizer(
        "lexemes", tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build()
    )
    return index


def _rows(conn: psycopg.Connection, embedder_id: str, corpora: Sequence[str]) -> Iterator[tuple]:
    """Every fragment of the builds as (id, russian tokens, simple tokens), streamed."""
    with conn.cursor(name="citegate_bm25_docs") as cur:
        cur.itersize = FETCH_ROWS
        cur.execute(DOCS_SQL, {"eid": embedder_id, "corpora": list(corpora)})
        yield from cur


def build(
    conn: psycopg.Connection, embedder_id: str, corpora: Sequence[str], root: Path | None = None
) -> BuildStats:
    """Build (or find) the index of the builds' current rows: rows and digests are read in one
    REPEATABLE READ snapshot, the index is written to a private folder, then renamed into place.
    A stamp that no longer matches the rows (they were changed outside an ingest) is replaced
    by the digest the build read, so lookups find the index that matches the rows."""
    clock = time.perf_counter()
    root = root or index_root()
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    n = 0
    with conn.transaction():
        if idle:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        sets = fragment_sets(conn, corpora, embedder_id)
        key = index_key(embedder_id, sets)
        final = root / key
        if not final.exists():
            root.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
            try:
                index = _register(tantivy.Index(_schema(), path=str(tmp), sort_by_field="id"))
                writer = index.writer(WRITER_HEAP, num_threads=min(2, os.cpu_count() or 1))
                for fid, ru, si in _rows(conn, embedder_id, corpora):
                    doc = tantivy.Document()
                    doc.add_unsigned("id", int(fid))
                    doc.add_text("ru", ru)
                    doc.add_text("si", si)
                    writer.add_document(doc)
                    n += 1
                writer.commit()
                writer.wait_merging_threads()
                _publish(tmp, final)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        else:
            n = sum(int(s.split(":", 1)[0]) for s in sets.values())
    _restamp(conn, embedder_id, sets)
    return BuildStats(key, n, time.perf_counter() - clock)


def _publish(tmp: Path, final: Path) -> None:
    """Move a finished index into place; another builder's identical copy wins if it came first."""
    try:
        os.rename(tmp, final)
    except OSError:
        if not final.exists():
            raise


def _restamp(conn: psycopg.Connection, embedder_id: str, sets: dict[str, str]) -> None:
    """Record the digests a build read as the builds' stamps (a no-op when they already are)."""
    with conn.transaction():
        for corpus, digest in sets.items():
            conn.execute(
                "INSERT INTO fragment_stamps (embedder_id, corpus, fragment_set) "
                "VALUES (%s, %s, %s) ON CONFLICT (embedder_id, corpus) DO UPDATE SET "
                "fragment_set = EXCLUDED.fragment_set "
                "WHERE fragment_stamps.fragment_set IS DISTINCT FROM EXCLUDED.fragment_set",
                (embedder_id, corpus, digest),
            )


@lru_cache(maxsize=16)
def _open(path: str) -> Any:
    """An opened index and its searcher (a path names one immutable index, so caching is safe)."""
    index = _register(tantivy.Index.open(path))
    return index, index.searcher()


def query_terms(conn: psycopg.Connection, texts: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Per text, its (field, token) terms: the lexemes PostgreSQL gives it in both configs."""
    out: list[set[tuple[str, str]]] = [set() for _ in texts]
    if texts:
        for i, field, tok in conn.execute(QUERY_SQL, {"texts": list(texts)}).fetchall():
            out[int(i) - 1].add((field, tok))
    return [sorted(s) for s in out]


def search(
    conn: psycopg.Connection,
    texts: Sequence[str],
    ks: Sequence[int],
    embedder_id: str,
    corpora: Sequence[str],
    root: Path | None = None,
) -> list[list[tuple[int, float]]]:
    """Per text, its top ks[i] fragments as (id, BM25 score), best first, equal scores by id;
    the index of the builds' stamped fragment sets is built first when it is missing."""
    root = root or index_root()
    path = root / index_key(embedder_id, stamped_sets(conn, embedder_id, corpora))
    if not path.exists():
        path = root / build(conn, embedder_id, corpora, root).key
    index, searcher = _open(str(path))
    schema = index.schema
    out = []
    for terms, k in zip(query_terms(conn, texts), ks, strict=True):
        if not terms or k <= 0:
            out.append([])
            continue
        q = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.term_query(schema, f, t, index_option="freq"))
                for f, t in terms
            ]
        )
        hits = searcher.search(q, limit=k, count=False).hits
        ids = searcher.fast_field_values("id", [addr for _, addr in hits])
        ranked = sorted(zip(ids, (float(s) for s, _ in hits), strict=True), key=_order)
        out.append([(int(i), s) for i, s in ranked])
    return out


def _order(hit: tuple[int, float]) -> tuple[float, int]:
    return (-hit[1], hit[0])
