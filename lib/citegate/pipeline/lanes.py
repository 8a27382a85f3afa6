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


# ---------------------------------------------------------------- batched: one statement per round
#
# `round_hits` answers every lane for every text of one fanout round in ONE statement: each lane
# query above becomes a LATERAL subquery over a VALUES list of the texts (and their vectors), with
# the same WHERE, ORDER BY and LIMIT, so it is planned as the single query is (an HNSW index scan
# per outer row when the planner picks the index: pgvector rescans the index per row, resetting
# its iterative-scan state, under the session's ef_search and iterative_scan). Each subquery
# folds its ranked rows into arrays (`array_agg` over the ordered, limited subquery keeps the
# order), so ranks survive whatever order the outer rows come back in. Scores travel as text and
# are parsed as psycopg parses a single query's text result: ts_rank_cd and trigram similarity are
# `real`, and a binary float4 would not round to the same Python float.

_DENSE_PART = """
SELECT {lane}::text AS lane, q.i, h.ids, h.scores FROM q CROSS JOIN LATERAL (
  SELECT array_agg(s.id) AS ids, array_agg(s.c::text) AS scores FROM (
    SELECT id, 1 - ({v} <=> q.v) AS c FROM fragments
    WHERE embedder_id = {eid} AND corpus = ANY(%(corpora)s) AND kind = ANY({kinds})
    ORDER BY {v} <=> q.v LIMIT %(k)s) s) h"""
_LEXICAL_PART = """
SELECT 'lexical'::text, q.i, h.ids, h.scores FROM q CROSS JOIN LATERAL (
  SELECT array_agg(s.id) AS ids, array_agg(s.r::text) AS scores FROM (
    SELECT f.id, greatest(ts_rank_cd(f.tsv_russian, w.ru), ts_rank_cd(f.tsv_simple, w.si)) AS r
    FROM fragments f, (SELECT websearch_to_tsquery('russian', q.lex) AS ru,
                              websearch_to_tsquery('simple', q.lex) AS si) w
    WHERE f.embedder_id = %(eid)s AND f.corpus = ANY(%(corpora)s)
      AND (f.tsv_russian @@ w.ru OR f.tsv_simple @@ w.si)
    ORDER BY r DESC, f.id LIMIT %(k)s) s) h
WHERE q.lex <> ''"""
_EXACT_PART = """
SELECT 'address:exact'::text, q.i, h.ids, NULL::text[] FROM q CROSS JOIN LATERAL (
  SELECT array_agg(s.id) AS ids FROM (
    SELECT id FROM fragments
    WHERE embedder_id = %(eid)s AND corpus = ANY(%(corpora)s) AND addr_label = ANY(q.labels)
    ORDER BY array_position(q.labels, addr_label), kind <> 'verse', id LIMIT %(k)s) s) h
WHERE cardinality(q.labels) > 0"""
_TRGM_PART = """
SELECT 'address'::text, q.i, h.ids, h.scores FROM q CROSS JOIN LATERAL (
  SELECT array_agg(s.id) AS ids, array_agg(s.s::text) AS scores FROM (
    SELECT id, strict_word_similarity(q.t, addr_search) AS s FROM fragments
    WHERE embedder_id = %(eid)s AND corpus = ANY(%(corpora)s) AND q.t <<%% addr_search
    ORDER BY s DESC, id LIMIT %(k)s) s) h"""


def _round_sql(
    n: int, dim: int, embedder_id: str, groups: Sequence[str], text_lanes: bool
) -> sql.Composed:
    """The one statement of a round: a VALUES list of the n queries, then one LATERAL part per
    dense group (and, with `text_lanes`, the lexical and both address parts), UNION ALL."""
    values = sql.SQL(", ").join(
        sql.SQL("({i}, %(v{i})s::vector({d}), %(lex{i})s, %(labels{i})s::text[], %(t{i})s)").format(
            i=sql.Literal(i), d=sql.Literal(dim)
        )
        for i in range(n)
    )
    dense_parts = [
        sql.SQL(_DENSE_PART).format(
            lane=sql.Literal(f"dense:{g}"),
            v=_vec(dim),
            eid=sql.Literal(embedder_id),
            kinds=sql.Placeholder(f"kinds_{g}"),
        )
        for g in groups
    ]
    text_parts = (
        [sql.SQL(p) for p in (_LEXICAL_PART, _EXACT_PART, _TRGM_PART)] if text_lanes else []
    )
    return sql.SQL("WITH q(i, v, lex, labels, t) AS (VALUES {values})\n{parts}").format(
        values=values, parts=sql.SQL("\nUNION ALL").join([*dense_parts, *text_parts])
    )


def round_hits(
    conn: psycopg.Connection,
    texts: Sequence[str],
    qvecs: np.ndarray,
    embedder_id: str,
    corpora: Sequence[str],
    k: int,
    trigram_threshold: float = 0.6,
    *,
    groups: Sequence[str] = tuple(KIND_GROUPS),
    text_lanes: bool = True,
    exact: bool = False,
) -> list[list[LaneHit]]:
    """Per text, the hits `dense` (each group in `groups`), `lexical` and `address` give it, in
    that order, each lane ranked as the single-text call ranks it; in ONE statement for all texts.
    `text_lanes=False` runs the dense lanes only; `exact=True` forces exact dense scans."""
    if not len(texts):
        return []
    params: dict[str, object] = {"corpora": list(corpora), "k": k, "eid": embedder_id}
    params.update({f"kinds_{g}": list(KIND_GROUPS[g]) for g in groups})
    for i, (text, vec) in enumerate(zip(texts, qvecs, strict=True)):
        labels = [verse_label(c, v) for c, v in find_verse_refs(text)] if text_lanes else []
        params.update(
            {
                f"v{i}": np.asarray(vec, dtype=np.float32),
                f"lex{i}": lexical_query(text) if text_lanes else "",
                f"labels{i}": labels,
                f"t{i}": text[:300],
            }
        )
    query = _round_sql(len(texts), int(qvecs.shape[1]), embedder_id, groups, text_lanes)
    with conn.transaction():
        if exact:
            conn.execute("SET LOCAL enable_indexscan = off")
        if text_lanes:
            conn.execute(
                "SELECT set_config('pg_trgm.strict_word_similarity_threshold', %s, true)",
                (str(trigram_threshold),),
            )
        rows = conn.execute(query, params, prepare=False).fetchall()
    return _assemble(rows, len(texts), groups, k)


def _assemble(rows: Sequence[tuple], n: int, groups: Sequence[str], k: int) -> list[list[LaneHit]]:
    """The statement's (lane, text, ids, scores) rows as each text's hits in the single-call
    order: dense groups, lexical, exact addresses, then trigram addresses not already found."""
    got = {(lane, i): (ids or [], scores or []) for lane, i, ids, scores in rows}
    out: list[list[LaneHit]] = []
    for i in range(n):
        hits = []
        for lane in [f"dense:{g}" for g in groups] + ["lexical"]:
            ids, scores = got.get((lane, i), ([], []))
            ranked = enumerate(zip(ids, scores, strict=True), 1)
            hits += [LaneHit(f, lane, r, float(s)) for r, (f, s) in ranked]
        exact_ids = got.get(("address:exact", i), ([], []))[0]
        addr = [LaneHit(f, "address:exact", r, 1.0) for r, f in enumerate(exact_ids, 1)]
        trgm_ids, trgm_scores = got.get(("address", i), ([], []))
        for f, s in zip(trgm_ids, trgm_scores, strict=True):
            if f not in exact_ids and len(addr) < k:
                addr.append(LaneHit(f, "address", len(addr) + 1, float(s)))
        out.append(hits + addr)
    return out


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
