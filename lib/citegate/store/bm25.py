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

A question only reads the database: it looks its index up by the stamps, and when that index is
missing (or the rows were changed outside an ingest) builds one on disk from a read-only snapshot,
named by the digests that snapshot read; it writes no stamp, so it runs on a read-only replica.
The ingest refreshes, in its own step, every index on disk that holds the corpus it wrote, then
prunes (`prune`): indexes whose builds no longer match the database and partial folders of dead
builders (`bm25_folders`). An index that fails its checksums or that tantivy cannot read is
removed and rebuilt, with one warning line saying so. A corpus without fragments gets no index.
The index is derived data under `var/index/bm25` (deleting it costs a rebuild, nothing else).
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import psycopg
import tantivy

from citegate.core.paths import var_dir
from citegate.store import bm25_folders as folders
from citegate.store.tables import fragment_sets, stamped_sets

log = logging.getLogger(__name__)

BM25_VERSION = "2"  # bump when the schema, the tokens or the folder layout change: all rebuilt
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
REASON_CHARS = 120  # of a tantivy error in the warning line (its messages can quote file bytes)


def index_root() -> Path:
    """Where the BM25 indexes live (derived data, safe to delete)."""
    return var_dir() / "index" / "bm25"


def index_key(embedder_id: str, sets: dict[str, str]) -> str:
    """The name of the index over these builds: the version, the embedder and each searched
    corpus's fragment-set digest, in corpus order."""
    parts = [BM25_VERSION, embedder_id, *(f"{c}={sets[c]}" for c in sorted(sets))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def held(sets: dict[str, str]) -> dict[str, str]:
    """The builds of `sets` that hold fragments: a corpus without any ("0:") is in no index."""
    return {c: d for c, d in sets.items() if not d.startswith("0:")}


@dataclass(frozen=True)
class BuildStats:
    """What one index build read and wrote (`key` "" when no searched build holds fragments)."""

    key: str
    fragments: int
    seconds: float


@dataclass(frozen=True)
class Pruned:
    """What `prune` removed: published indexes no reader can use, and dead builders' folders."""

    stale: tuple[str, ...]
    partial: tuple[str, ...]


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
    Only reads the database (a stamp that no longer matches the rows stays as it is: lookups
    then find this index by the rows' digests, `search`). A new index prunes what it replaced."""
    clock = time.perf_counter()
    root = root or index_root()
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    wrote = False
    with conn.transaction():
        if idle:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        sets = held(fragment_sets(conn, corpora, embedder_id))
        if not sets:
            return BuildStats("", 0, time.perf_counter() - clock)
        key = index_key(embedder_id, sets)
        if _load(root / key) is None:
            n = _write(conn, embedder_id, sets, root, key)
            wrote = True
        else:
            n = sum(int(s.split(":", 1)[0]) for s in sets.values())
    if wrote:
        prune(conn, root)
    return BuildStats(key, n, time.perf_counter() - clock)


def _write(
    conn: psycopg.Connection, embedder_id: str, sets: dict[str, str], root: Path, key: str
) -> int:
    """Write the index of the builds `sets` into a private folder, with its manifest, and
    publish it as `root / key`; returns the fragments indexed."""
    n = 0
    with folders.private_folder(root, key) as tmp:
        index = _register(tantivy.Index(_schema(), path=str(tmp), sort_by_field="id"))
        writer = index.writer(WRITER_HEAP, num_threads=min(2, os.cpu_count() or 1))
        for fid, ru, si in _rows(conn, embedder_id, list(sets)):
            doc = tantivy.Document()
            doc.add_unsigned("id", int(fid))
            doc.add_text("ru", ru)
            doc.add_text("si", si)
            writer.add_document(doc)
            n += 1
        writer.commit()
        writer.wait_merging_threads()
        folders.write_manifest(tmp, folders.Manifest(BM25_VERSION, embedder_id, sets))
        folders.publish(tmp, root / key)
    return n


@lru_cache(maxsize=16)
def _open(path: str) -> Any:
    """An opened index and its searcher, its files checked against the manifest first (a path
    names one immutable index, so caching is safe)."""
    folders.verify(Path(path))
    index = _register(tantivy.Index.open(path))
    return index, index.searcher()


def _load(path: Path) -> Any | None:
    """`_open(path)`, or None when there is no index there; an index that cannot be read is
    removed, with one warning line, and None returned (the caller builds it again)."""
    if not path.is_dir():
        return None
    try:
        return _open(str(path))
    except (KeyboardInterrupt, SystemExit, MemoryError):
        raise
    except BaseException as exc:  # tantivy also panics (pyo3's PanicException is no Exception)
        if path.is_dir():  # not merely pruned away by another process meanwhile
            _unreadable(path, exc)
        return None


def _unreadable(path: Path, exc: BaseException) -> None:
    """Say in one line that the index at `path` is unreadable and is rebuilt; remove it."""
    if isinstance(exc, folders.UnreadableIndex):
        reason = str(exc)
    else:
        first = (str(exc).splitlines() or [""])[0][:REASON_CHARS]
        reason = f"{type(exc).__name__}: " + "".join(c if c.isprintable() else "?" for c in first)
    log.warning("BM25 index %s is unreadable (%s); removed, rebuilding it", path, reason)
    _open.cache_clear()
    folders.discard(path)


def query_terms(conn: psycopg.Connection, texts: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Per text, its (field, token) terms: the lexemes PostgreSQL gives it in both configs
    (NUL and lone surrogates, which a PostgreSQL text cannot hold, are read as spaces)."""
    out: list[set[tuple[str, str]]] = [set() for _ in texts]
    clean = [_pg_text(t) for t in texts]
    if texts:
        for i, field, tok in conn.execute(QUERY_SQL, {"texts": clean}).fetchall():
            out[int(i) - 1].add((field, tok))
    return [sorted(s) for s in out]


def _pg_text(text: str) -> str:
    return "".join(" " if c == "\x00" or "\ud800" <= c <= "\udfff" else c for c in text)


def search(
    conn: psycopg.Connection,
    texts: Sequence[str],
    ks: Sequence[int],
    embedder_id: str,
    corpora: Sequence[str],
    root: Path | None = None,
) -> list[list[tuple[int, float]]]:
    """Per text, its top ks[i] fragments as (id, BM25 score), best first, equal scores by id.
    Only reads the database: the index of the builds' stamped fragment sets, else one built on
    disk from the rows (`build`); an index that fails while searched is rebuilt once."""
    root = root or index_root()
    sets = held(stamped_sets(conn, embedder_id, corpora))
    if not sets:
        return [[] for _ in texts]
    terms = query_terms(conn, texts)
    path = root / index_key(embedder_id, sets)
    for attempt in (1, 2):
        opened = _load(path)
        if opened is None:
            built = build(conn, embedder_id, corpora, root)
            if not built.key:
                return [[] for _ in texts]
            path = root / built.key
            opened = _load(path)
            if opened is None:
                raise RuntimeError(f"the BM25 index {path} just built cannot be read")
        try:
            return _rank(opened, terms, ks)
        except (KeyboardInterrupt, SystemExit, MemoryError):
            raise
        except BaseException as exc:  # see `_load`
            if attempt == 2:
                raise
            _unreadable(path, exc)
    raise AssertionError("unreachable")


def _rank(
    opened: Any, terms: Sequence[list[tuple[str, str]]], ks: Sequence[int]
) -> list[list[tuple[int, float]]]:
    """Per text's terms, its top k ids by BM25 in the opened index."""
    index, searcher = opened
    schema = index.schema
    out = []
    for text_terms, k in zip(terms, ks, strict=True):
        if not text_terms or k <= 0:
            out.append([])
            continue
        q = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.term_query(schema, f, t, index_option="freq"))
                for f, t in text_terms
            ]
        )
        hits = searcher.search(q, limit=k, count=False).hits
        ids = searcher.fast_field_values("id", [addr for _, addr in hits])
        ranked = sorted(zip(ids, (float(s) for s, _ in hits), strict=True), key=_order)
        out.append([(int(i), s) for i, s in ranked])
    return out


def _order(hit: tuple[int, float]) -> tuple[float, int]:
    return (-hit[1], hit[0])


def refresh(
    conn: psycopg.Connection, embedder_id: str, corpus: str, root: Path | None = None
) -> list[str]:
    """An ingest's step after its last write committed: rebuild, for the rows now stored, every
    index on disk that holds `corpus` (the searched sets that included it), then `prune`.
    Returns the keys of those indexes. None is made for a corpus no index held yet (the backend
    is off by default: the first BM25 question builds it)."""
    root = root or index_root()
    searched = set()
    for folder in folders.published(root):
        try:
            m = folders.read_manifest(folder)
        except folders.UnreadableIndex:
            continue
        if m.version == BM25_VERSION and m.embedder_id == embedder_id and corpus in m.sets:
            searched.add(tuple(sorted(m.sets)))
    keys = [build(conn, embedder_id, corpora, root).key for corpora in sorted(searched)]
    prune(conn, root)
    return [k for k in keys if k]


def prune(conn: psycopg.Connection, root: Path | None = None) -> Pruned:
    """Remove the indexes no lookup can reach any more: another format's, and those whose builds'
    digests match neither the stamps nor the rows now stored (a re-ingest, import or removal
    replaced them); and the partial folders of builders that died (`bm25_folders`). The folders
    are listed before the database is read, so an index published meanwhile is never judged by
    older rows. Only reads the database."""
    root = root or index_root()
    partial = folders.prune_partial(root)
    stale: list[Path] = []
    current: dict[str, dict[Path, folders.Manifest]] = {}
    for folder in folders.published(root):
        try:
            m = folders.read_manifest(folder)
        except folders.UnreadableIndex:
            stale.append(folder)
            continue
        if m.version == BM25_VERSION:
            current.setdefault(m.embedder_id, {})[folder] = m
        else:
            stale.append(folder)
    for eid, group in current.items():
        corpora = sorted({c for m in group.values() for c in m.sets})
        stamps, rows = stamped_sets(conn, eid, corpora), fragment_sets(conn, corpora, eid)
        for folder, m in group.items():
            if all(m.sets != {c: now[c] for c in m.sets} for now in (stamps, rows)):
                stale.append(folder)
    for folder in stale:
        folders.discard(folder)
    return Pruned(tuple(sorted(f.name for f in stale)), tuple(partial))
