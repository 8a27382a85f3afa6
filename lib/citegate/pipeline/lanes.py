"""The retrieval lanes, each one parameterized SQL query (user text is never spliced into SQL).

dense   — pgvector HNSW cosine search per kind group (transcripts, verses, other library);
lexical — `websearch_to_tsquery` over the `russian` (stemmed) and `simple` (exact) tsvectors;
address — canonical verse addresses ("BG 2.13", "Gita 2:13", …) and pg_trgm word similarity over
          `addr_label || source_id || tokens`.
Every lane returns fragment ids with the lane's own rank; cosines are computed for all candidates
by `cosines`, whichever lane found them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import psycopg
from psycopg import sql

from citegate.core.text import STOPWORDS
from citegate.corpus.sources.address import find_verse_refs, verse_label

KIND_GROUPS: dict[str, tuple[str, ...]] = {
    "transcripts": ("track_transcript",),
    "verses": ("verse",),
    "library": ("commentary", "prose_chapter", "letter"),
}
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


@dataclass(frozen=True)
class LaneHit:
    """One fragment found by one lane, at the lane's rank (1-based) with the lane's own score."""

    fragment_id: int
    lane: str
    rank: int
    lane_score: float


def _vec(dim: int) -> sql.Composable:
    return sql.SQL("embedding::vector({})").format(sql.Literal(dim))


def dense(
    conn: psycopg.Connection,
    qvec: np.ndarray,
    embedder_id: str,
    corpora: Sequence[str],
    group: str,
    k: int,
    *,
    exact: bool = False,
) -> list[LaneHit]:
    """Top-k fragments of one kind group by cosine (HNSW; `exact=True` forces a full scan)."""
    dim = int(qvec.shape[0])
    query = sql.SQL(
        "SELECT id, 1 - ({v} <=> %(q)s::vector({d})) FROM fragments "
        "WHERE embedder_id = {eid} AND corpus = ANY(%(corpora)s) AND kind = ANY(%(kinds)s) "
        "ORDER BY {v} <=> %(q)s::vector({d}) LIMIT %(k)s"
    ).format(v=_vec(dim), d=sql.Literal(dim), eid=sql.Literal(embedder_id))
    params = {
        "q": qvec.astype(np.float32),
        "corpora": list(corpora),
        "kinds": list(KIND_GROUPS[group]),
        "k": k,
    }
    with conn.transaction():
        if exact:
            conn.execute("SET LOCAL enable_indexscan = off")
        rows = conn.execute(query, params, prepare=False).fetchall()
    return [LaneHit(r[0], f"dense:{group}", i, float(r[1])) for i, r in enumerate(rows, 1)]


LEXICAL_SQL = """
WITH q AS (SELECT websearch_to_tsquery('russian', %(t)s) AS ru,
                  websearch_to_tsquery('simple', %(t)s) AS si)
SELECT f.id, greatest(ts_rank_cd(f.tsv_russian, q.ru), ts_rank_cd(f.tsv_simple, q.si)) AS r
FROM fragments f, q
WHERE f.embedder_id = %(eid)s AND f.corpus = ANY(%(corpora)s)
  AND (f.tsv_russian @@ q.ru OR f.tsv_simple @@ q.si)
ORDER BY r DESC, f.id LIMIT %(k)s
"""


def lexical_query(text: str) -> str:
    """An OR query over the question's content words (stopwords dropped, so a natural question
    does not match every row), up to 32 of them."""
    words = [
        w
        for w in "".join(c if c.isalnum() else " " for c in text).split()
        if len(w) > 2 and w.lower() not in STOPWORDS
    ]
    return " or ".join(list(dict.fromkeys(words))[:32])


def lexical(
    conn: psycopg.Connection, text: str, embedder_id: str, corpora: Sequence[str], k: int
) -> list[LaneHit]:
    """Full-text hits ranked by ts_rank_cd, the better of the stemmed and unstemmed configs."""
    q = lexical_query(text)
    if not q:
        return []
    rows = conn.execute(
        LEXICAL_SQL, {"t": q, "eid": embedder_id, "corpora": list(corpora), "k": k}
    ).fetchall()
    return [LaneHit(r[0], "lexical", i, float(r[1])) for i, r in enumerate(rows, 1)]


ADDRESS_EXACT_SQL = """
SELECT id FROM fragments
WHERE embedder_id = %(eid)s AND corpus = ANY(%(corpora)s) AND addr_label = ANY(%(labels)s)
ORDER BY array_position(%(labels)s, addr_label), kind <> 'verse', id LIMIT %(k)s
"""
ADDRESS_TRGM_SQL = """
SELECT id, strict_word_similarity(%(t)s, addr_search) AS s FROM fragments
WHERE embedder_id = %(eid)s AND corpus = ANY(%(corpora)s) AND %(t)s <<%% addr_search
ORDER BY s DESC, id LIMIT %(k)s
"""


def address(
    conn: psycopg.Connection,
    text: str,
    embedder_id: str,
    corpora: Sequence[str],
    k: int,
    trigram_threshold: float = 0.6,
) -> list[LaneHit]:
    """Fragments named by address: canonical verse references first, then trigram matches."""
    labels = [verse_label(c, v) for c, v in find_verse_refs(text)]
    params = {
        "eid": embedder_id,
        "corpora": list(corpora),
        "labels": labels,
        "k": k,
        "t": text[:300],
    }
    ids = [r[0] for r in conn.execute(ADDRESS_EXACT_SQL, params).fetchall()] if labels else []
    hits = [LaneHit(i, "address:exact", n, 1.0) for n, i in enumerate(ids, 1)]
    with conn.transaction():
        conn.execute(
            "SELECT set_config('pg_trgm.strict_word_similarity_threshold', %s, true)",
            (str(trigram_threshold),),
        )
        rows = conn.execute(ADDRESS_TRGM_SQL, params).fetchall()
    for r in rows:
        if r[0] not in ids and len(hits) < k:
            hits.append(LaneHit(r[0], "address", len(hits) + 1, float(r[1])))
    return hits


def fetch(conn: psycopg.Connection, qvec: np.ndarray, ids: Sequence[int]) -> list[dict]:
    """The stored fields of the given fragments plus their exact cosine to the query vector."""
    if not ids:
        return []
    dim = int(qvec.shape[0])
    query = sql.SQL(
        "SELECT {cols}, 1 - ({v} <=> %(q)s::vector({d})) AS cosine FROM fragments "
        "WHERE id = ANY(%(ids)s)"
    ).format(
        cols=sql.SQL(", ").join(map(sql.Identifier, FRAGMENT_COLUMNS)),
        v=_vec(dim),
        d=sql.Literal(dim),
    )
    cur = conn.execute(query, {"q": qvec.astype(np.float32), "ids": list(ids)})
    names = [c.name for c in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
