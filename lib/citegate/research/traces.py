"""The shared retrieval pass: each (question set, fragment set, collection config, models) is
retrieved once and cached on disk as slim traces; every threshold sweep is a `replay` of them.

Traces hold fragment ids, so they are keyed by the fragments they point at: a digest of every
searched corpus's (id, content hash) rows. A re-ingest (new ids) or a changed fragment gives a new
key and the traces are collected afresh, instead of pointing at ids that no longer exist.
"""

from __future__ import annotations

import json
import pickle
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import psycopg
from tqdm.auto import tqdm

from citegate.core import paths
from citegate.core.config import PipelineConfig
from citegate.corpus.questions import Question
from citegate.models.cache import DiskCache, digest
from citegate.models.embed import Embedder
from citegate.models.rerank import Reranker
from citegate.pipeline.retrieve import RETRIEVAL_VERSION, RetrievalTrace, collect

TRACE_FORMAT = "5"  # bump when Candidate / RetrievalTrace or the key payload change shape

# One cheap aggregate per corpus: row count and md5 over "id:content_hash" in id order.
_FRAGMENT_SET_SQL = (
    "SELECT count(*), coalesce(md5(string_agg(id::text || ':' || content_hash, ',' ORDER BY id)), '') "
    "FROM fragments WHERE embedder_id = %s AND corpus = %s"
)


def database_identity(conn: psycopg.Connection | None) -> str:
    """Which database the fragment ids in a trace refer to (cluster id + database name)."""
    if conn is None:
        raise RuntimeError("traces are keyed by database: a connection is required")
    row = conn.execute(
        "SELECT (SELECT system_identifier FROM pg_control_system())::text, current_database()"
    ).fetchone()
    return f"{row[0]}/{row[1]}"


def fragment_sets(
    conn: psycopg.Connection, embedder_id: str, corpora: Sequence[str]
) -> dict[str, str]:
    """corpus -> `count:md5` of its (id, content hash) rows for the embedder: what the fragment
    ids of a trace refer to (changes on any re-ingest, edit or deletion)."""
    out = {}
    for corpus in corpora:
        n, h = conn.execute(_FRAGMENT_SET_SQL, (embedder_id, corpus)).fetchone()
        out[corpus] = f"{n}:{h}"
    return out


def collection_digest(
    cfg: PipelineConfig,
    embedder_id: str,
    reranker_id: str,
    exact_check: bool,
    database: str = "",
    fragments: Mapping[str, str] | None = None,
) -> str:
    """Identity of a retrieval pass: database, the searched fragment sets (`fragment_sets`),
    collection knobs, models, the retrieval code version and the trace format."""
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

    def put(self, key: str, question: Question, trace: RetrievalTrace) -> None:
        """Store one slim trace."""
        blob = zlib.compress(pickle.dumps(trace.slim(), protocol=5), 6)
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
) -> dict[str, RetrievalTrace]:
    """question id -> trace, retrieving only what the cache lacks (a warm run runs no model and
    no retrieval query: the connection only identifies the database and the fragment sets the
    ids belong to, one aggregate query per corpus)."""
    store = store or TraceStore()
    reranker_key = getattr(reranker, "cache_id", reranker.id)  # a retrained model is a new key
    key = collection_digest(
        cfg,
        embedder.id,
        reranker_key,
        exact_check,
        database_identity(conn),
        fragment_sets(conn, embedder.id, cfg.corpora),
    )
    out = store.get_many(key, questions)
    todo = [q for q in questions if q.id not in out]
    for q in tqdm(todo, desc="retrieve", unit="q", disable=not progress or not todo):
        trace = collect(conn, q.text, cfg, embedder, reranker, exact_check=exact_check)
        store.put(key, q, trace)
        out[q.id] = trace.slim()
    return out
