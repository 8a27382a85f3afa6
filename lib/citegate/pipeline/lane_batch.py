"""Every lane for every text of a retrieve as ONE statement (`batch_hits`), giving exactly what the
single-text calls of `pipeline.lanes` give: one round trip instead of one per lane and text, and
one search for texts that ask the same thing.

`batch_hits` answers every lane for a list of texts (each with its vector and depth k; both
fanout rounds of a question at once). Each single-text query of `lanes` becomes a
LATERAL subquery over a VALUES list of the texts, with the same WHERE, ORDER BY and LIMIT:
- dense: one subquery per kind group and depth, with the depth as a literal LIMIT, so it is
  planned as the single query is; when the planner picks the HNSW index, pgvector rescans it per
  outer row (resetting its iterative-scan state) under the session's ef_search/iterative_scan.
  Texts with the same vector (the question, searched in round 1 and again in round 2) share one
  search at the largest depth asked (`shared_searches`): each text gets its first k hits. Over an
  HNSW index that is what a search at depth k gives (the index hands rows over in one fixed
  order and the LIMIT only stops reading), and so is an exact scan's, whose order is total; it
  differs only where the planner would pick another plan at the smaller depth (on the demo
  database it picks the same at 40 and 80: `test_lanes_db`).
- lexical and address: their ORDER BY is total (ties broken by id), so the top-k is exactly the
  first k of a deeper top-n. Texts whose tsqueries (or address texts) are equal, such as the
  question in round 1 and again in round 2, are searched once at the largest depth asked.
Each subquery folds its ranked rows into arrays (`array_agg` over the ordered, limited subquery
keeps the order), so ranks survive whatever order the outer rows come back in. Scores travel as
text and are parsed as psycopg parses a single query's text result: ts_rank_cd and trigram
similarity are `real`, and a binary float4 would not round to the same Python float.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import psycopg
from psycopg import sql

from citegate.core.types import KIND_GROUPS
from citegate.corpus.sources.address import find_verse_refs, verse_label
from citegate.pipeline import lanes
from citegate.store import db

_DENSE_PART = """
SELECT {lane}::text AS lane, dv.j, h.ids, h.scores FROM dv CROSS JOIN LATERAL (
  SELECT array_agg(s.id) AS ids, array_agg(s.c::text) AS scores FROM (
    SELECT id, 1 - ({v} <=> dv.v) AS c FROM fragments
    WHERE embedder_id = {eid} AND corpus = ANY(%(corpora)s) AND kind = ANY ({kinds})
    ORDER BY {v} <=> dv.v{tie} LIMIT {k}) s) h
WHERE dv.k = {k}"""
_TEXT_CTES = """,
lx AS (SELECT i, k, websearch_to_tsquery('russian', lex) AS ru,
              websearch_to_tsquery('simple', lex) AS si,
              CASE WHEN tiered THEN tru::tsquery ELSE websearch_to_tsquery('russian', lex) END AS mru,
              CASE WHEN tiered THEN tsi::tsquery ELSE websearch_to_tsquery('simple', lex) END AS msi
       FROM q WHERE lex <> ''),
lxd AS (SELECT ru, si, mru, msi, max(k) AS k FROM lx GROUP BY ru, si, mru, msi),
lxh AS MATERIALIZED (SELECT lxd.ru, lxd.si, lxd.mru, lxd.msi, h.ids, h.scores
  FROM lxd CROSS JOIN LATERAL (
  SELECT array_agg(s.id) AS ids, array_agg(s.r::text) AS scores FROM (
    SELECT f.id, greatest(ts_rank_cd(f.tsv_russian, lxd.ru), ts_rank_cd(f.tsv_simple, lxd.si)) AS r
    FROM fragments f
    WHERE f.embedder_id = %(eid)s AND f.corpus = ANY(%(corpora)s)
      AND (f.tsv_russian @@ lxd.mru OR f.tsv_simple @@ lxd.msi)
    ORDER BY r DESC, f.id LIMIT lxd.k) s) h),
ad AS (SELECT labels, max(k) AS k FROM q WHERE cardinality(labels) > 0 GROUP BY labels),
adh AS MATERIALIZED (SELECT ad.labels, h.ids FROM ad CROSS JOIN LATERAL (
  SELECT array_agg(s.id) AS ids FROM (
    SELECT id FROM fragments
    WHERE embedder_id = %(eid)s AND corpus = ANY(%(corpora)s) AND addr_label = ANY(ad.labels)
    ORDER BY array_position(ad.labels, addr_label), kind <> 'verse', id LIMIT ad.k) s) h),
tg AS (SELECT t, max(k) AS k FROM q GROUP BY t),
tgh AS MATERIALIZED (SELECT tg.t, h.ids, h.scores FROM tg CROSS JOIN LATERAL (
  SELECT array_agg(s.id) AS ids, array_agg(s.s::text) AS scores FROM (
    SELECT id, strict_word_similarity(tg.t, addr_search) AS s FROM fragments
    WHERE embedder_id = %(eid)s AND corpus = ANY(%(corpora)s) AND tg.t <<%% addr_search
    ORDER BY s DESC, id LIMIT tg.k) s) h)"""
# Each distinct search runs once inside its MATERIALIZED CTE; only then is it joined back to the
# texts that share it (joined first, the planner would run the subquery once per text).
_TEXT_PARTS = """
SELECT 'lexical'::text, lx.i, lxh.ids, lxh.scores FROM lxh
JOIN lx ON lx.ru = lxh.ru AND lx.si = lxh.si
       AND lx.mru IS NOT DISTINCT FROM lxh.mru AND lx.msi IS NOT DISTINCT FROM lxh.msi
UNION ALL
SELECT 'address:exact'::text, q.i, adh.ids, NULL::text[] FROM adh JOIN q ON q.labels = adh.labels
UNION ALL
SELECT 'address'::text, q.i, tgh.ids, tgh.scores FROM tgh JOIN q ON q.t = tgh.t"""


def shared_searches(qvecs: np.ndarray, ks: Sequence[int]) -> tuple[list[int], list[int]]:
    """Which dense search each text reads (equal vectors share one) and each search's depth (the
    largest its texts ask for): (search index per text, depth per search)."""
    first: dict[bytes, int] = {}
    which: list[int] = []
    depths: list[int] = []
    for vec, k in zip(np.asarray(qvecs, dtype=np.float32), ks, strict=True):
        j = first.setdefault(vec.tobytes(), len(depths))
        if j == len(depths):
            depths.append(int(k))
        depths[j] = max(depths[j], int(k))
        which.append(j)
    return which, depths


def _batch_sql(
    n: int,
    depths: Sequence[int],
    dim: int,
    embedder_id: str,
    groups: Sequence[str],
    text_lanes: bool,
    exact: bool = False,
) -> sql.Composed:
    """The one statement: a VALUES list of the n texts and one of the distinct dense searches
    (vector and depth each, `shared_searches`), one LATERAL part per dense group and depth, and
    (with `text_lanes`) the lexical and both address parts, UNION ALL; `exact` ranks equal dense
    cosines by fragment id (`EXACT_TIE_BREAK`)."""
    values = sql.SQL(", ").join(
        sql.SQL(
            "({i}, %(lex{i})s::text, %(labels{i})s::text[], %(t{i})s::text, %(k{i})s::int, "
            "%(tiered{i})s::bool, %(tru{i})s::text, %(tsi{i})s::text)"
        ).format(i=sql.Literal(i))
        for i in range(n)
    )
    searches = sql.SQL(", ").join(
        sql.SQL("({j}, %(v{j})s::vector({d}), {k}::int)").format(
            j=sql.Literal(j), d=sql.Literal(dim), k=sql.Literal(k)
        )
        for j, k in enumerate(depths)
    )
    parts = [
        sql.SQL(_DENSE_PART).format(
            lane=sql.Literal(f"dense:{g}"),
            v=lanes.vector_column(dim),
            eid=sql.Literal(embedder_id),
            kinds=db.kinds_array(g),
            k=sql.Literal(k),
            tie=lanes.tie_break(exact),
        )
        for g in groups
        for k in sorted(set(depths))
    ]
    if text_lanes:
        parts.append(sql.SQL(_TEXT_PARTS))
    head = (
        "WITH q(i, lex, labels, t, k, tiered, tru, tsi) AS (VALUES {values}),\n"
        "dv(j, v, k) AS (VALUES {searches}){ctes}\n{parts}"
    )
    return sql.SQL(head).format(
        values=values,
        searches=searches,
        ctes=sql.SQL(_TEXT_CTES if text_lanes else ""),
        parts=sql.SQL("\nUNION ALL").join(parts),
    )


def batch_hits(
    conn: psycopg.Connection,
    texts: Sequence[str],
    qvecs: np.ndarray,
    ks: Sequence[int],
    embedder_id: str,
    corpora: Sequence[str],
    trigram_threshold: float = 0.6,
    *,
    groups: Sequence[str] = tuple(KIND_GROUPS),
    text_lanes: bool = True,
    exact: bool = False,
    lexical_budget: int = 0,
    lexical_backend: str = "postgres",
    lexical_romanise: bool = False,
) -> list[list[lanes.LaneHit]]:
    """Per text, the hits `dense` (each group in `groups`), `lexical` and `address` give it at its
    depth `ks[i]`, in that order and ranked as the single-text calls rank them (texts with equal
    vectors share one dense search at their largest depth, `shared_searches`, each cut to its own);
    in ONE statement for all texts (and one more to read the lexeme counts when a `lexical_budget`
    is set).
    `text_lanes=False` runs the dense lanes only; `exact=True` forces exact dense scans (equal
    cosines ranked by fragment id); `lexical_backend="bm25"` ranks the lexical lane by BM25
    (`bm25_hits`) beside the statement, which then runs no lexical part."""
    if not len(texts):
        return []
    by_bm25 = text_lanes and lexical_backend == "bm25"
    params: dict[str, object] = {"corpora": list(corpora), "eid": embedder_id}
    budget = lexical_budget if text_lanes and not by_bm25 else 0
    tiers = lanes.lexical_tiers(conn, texts, ks, embedder_id, corpora, budget, lexical_romanise)
    which, depths = shared_searches(qvecs, ks)
    first_text = {j: which.index(j) for j in range(len(depths))}
    params.update({f"v{j}": np.asarray(qvecs[i], dtype=np.float32) for j, i in first_text.items()})
    for i, (text, k, tier) in enumerate(zip(texts, ks, tiers, strict=True)):
        labels = [verse_label(c, v) for c, v in find_verse_refs(text)] if text_lanes else []
        params.update(
            {
                f"lex{i}": (
                    lanes.lexical_query(text, lexical_romanise)
                    if text_lanes and not by_bm25
                    else ""
                ),
                f"labels{i}": labels,
                f"t{i}": text[:300],
                f"k{i}": int(k),
                f"tiered{i}": tier.tiered,
                f"tru{i}": tier.ru,
                f"tsi{i}": tier.si,
            }
        )
    dim = int(qvecs.shape[1])
    query = _batch_sql(len(texts), depths, dim, embedder_id, groups, text_lanes, exact)
    with conn.transaction():
        if exact:
            conn.execute("SET LOCAL enable_indexscan = off")
        if text_lanes:
            conn.execute(
                "SELECT set_config('pg_trgm.strict_word_similarity_threshold', %s, true)",
                (str(trigram_threshold),),
            )
        rows = _per_text(conn.execute(query, params, prepare=False).fetchall(), which)
    if by_bm25:
        bm25_lane = lanes.bm25_hits(conn, texts, ks, embedder_id, corpora, lexical_romanise)
        for i, hits in enumerate(bm25_lane):
            ids = [h.fragment_id for h in hits]
            rows.append(("lexical", i, ids, [h.lane_score for h in hits]))
    return _assemble(rows, groups, ks)


def _per_text(rows: Sequence[tuple], which: Sequence[int]) -> list[tuple]:
    """The statement's rows with each dense search's row repeated for every text that reads it
    (`shared_searches`); the text lanes' rows are per text already."""
    readers: dict[int, list[int]] = {}
    for i, j in enumerate(which):
        readers.setdefault(j, []).append(i)
    out: list[tuple] = []
    for lane, n, ids, scores in rows:
        if lane.startswith("dense:"):
            out += [(lane, i, ids, scores) for i in readers.get(n, [])]
        else:
            out.append((lane, n, ids, scores))
    return out


def _assemble(
    rows: Sequence[tuple], groups: Sequence[str], ks: Sequence[int]
) -> list[list[lanes.LaneHit]]:
    """The statement's (lane, text, ids, scores) rows as each text's hits in the single-call
    order: dense groups, lexical, exact addresses, then trigram addresses not already found; a
    shared lexical or address search is cut to each text's own depth first."""
    got = {(lane, i): (ids or [], scores or []) for lane, i, ids, scores in rows}
    out: list[list[lanes.LaneHit]] = []
    for i, k in enumerate(ks):
        hits = []
        for lane in [f"dense:{g}" for g in groups] + ["lexical"]:
            ids, scores = got.get((lane, i), ([], []))
            ranked = enumerate(zip(ids[:k], scores[:k], strict=True), 1)
            hits += [lanes.LaneHit(f, lane, r, float(s)) for r, (f, s) in ranked]
        exact_ids = got.get(("address:exact", i), ([], []))[0][:k]
        addr = [lanes.LaneHit(f, "address:exact", r, 1.0) for r, f in enumerate(exact_ids, 1)]
        trgm_ids, trgm_scores = got.get(("address", i), ([], []))
        for f, s in zip(trgm_ids[:k], trgm_scores[:k], strict=True):
            if f not in exact_ids and len(addr) < k:
                addr.append(lanes.LaneHit(f, "address", len(addr) + 1, float(s)))
        out.append(hits + addr)
    return out
