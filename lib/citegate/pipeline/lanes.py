"""The retrieval lanes, each one parameterized SQL query (user text is never spliced into SQL).

dense   — pgvector HNSW cosine search per kind group (transcripts, verses, other library), each
          group on its own partial index (`store.db.ensure_embedder`);
lexical — `websearch_to_tsquery` over the `russian` (stemmed) and `simple` (exact) tsvectors;
address — canonical verse addresses ("BG 2.13", "Gita 2:13", …) and pg_trgm word similarity over
          `addr_label || source_id || tokens`.
Every lane returns fragment ids with the lane's own rank; cosines are computed for all candidates
by `fetch`, whichever lane found them. `retrieve` runs every lane for every text of both fanout
rounds as ONE statement (`batch_hits`), which gives exactly what the single-text calls give.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from citegate.core.romanise import ascii_fold, has_devanagari, romanise
from citegate.core.text import HINDI_STOPWORDS, STOPWORDS
from citegate.core.types import KIND_GROUPS, NAMED_LANE
from citegate.corpus.sources.address import find_verse_refs, named_verses, verse_label
from citegate.store import bm25, db
from citegate.store.tables import FRAGMENT_COLUMNS


@dataclass(frozen=True)
class LaneHit:
    """One fragment found by one lane, at the lane's rank (1-based) with the lane's own score."""

    fragment_id: int
    lane: str
    rank: int
    lane_score: float


def _vec(dim: int) -> sql.Composable:
    return sql.SQL("embedding::vector({})").format(sql.Literal(dim))


# An exact dense scan ranks equal cosines by fragment id. Duplicate texts have identical
# embeddings (32 pairs in the gita build), so a tie can straddle a lane's LIMIT; without a unique
# tie-breaker which duplicate gets in follows the scan's physical row order (heap layout, parallel
# workers). The HNSW path cannot take one: pgvector's index scan orders by distance alone, and a
# second sort key makes the planner drop the index.
EXACT_TIE_BREAK = ", id"


def _tie_break(exact: bool) -> sql.Composable:
    return sql.SQL(EXACT_TIE_BREAK if exact else "")


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
    """Top-k fragments of one kind group by cosine (HNSW; `exact=True` forces a full scan,
    whose equal cosines are ranked by fragment id: `EXACT_TIE_BREAK`)."""
    dim = int(qvec.shape[0])
    query = sql.SQL(
        "SELECT id, 1 - ({v} <=> %(q)s::vector({d})) FROM fragments "
        "WHERE embedder_id = {eid} AND corpus = ANY(%(corpora)s) AND kind = ANY ({kinds}) "
        "ORDER BY {v} <=> %(q)s::vector({d}){tie} LIMIT %(k)s"
    ).format(
        v=_vec(dim),
        d=sql.Literal(dim),
        eid=sql.Literal(embedder_id),
        kinds=db.kinds_array(group),
        tie=_tie_break(exact),
    )
    params = {
        "q": qvec.astype(np.float32),
        "corpora": list(corpora),
        "k": k,
    }
    with conn.transaction():
        if exact:
            conn.execute("SET LOCAL enable_indexscan = off")
        rows = conn.execute(query, params, prepare=False).fetchall()
    return [LaneHit(r[0], f"dense:{group}", i, float(r[1])) for i, r in enumerate(rows, 1)]


# `mru`/`msi` select the rows to rank (the whole query, or a tier of its rarest terms: NULL for a
# config the tier has no term in, and `@@ NULL` matches nothing); every row is ranked with the
# whole query, so a tier changes which rows are ranked, never a row's score.
LEXICAL_SQL = """
WITH q AS (SELECT websearch_to_tsquery('russian', %(t)s) AS ru,
                  websearch_to_tsquery('simple', %(t)s) AS si,
                  CASE WHEN %(tiered)s THEN %(tru)s::tsquery
                       ELSE websearch_to_tsquery('russian', %(t)s) END AS mru,
                  CASE WHEN %(tiered)s THEN %(tsi)s::tsquery
                       ELSE websearch_to_tsquery('simple', %(t)s) END AS msi)
SELECT f.id, greatest(ts_rank_cd(f.tsv_russian, q.ru), ts_rank_cd(f.tsv_simple, q.si)) AS r
FROM fragments f, q
WHERE f.embedder_id = %(eid)s AND f.corpus = ANY(%(corpora)s)
  AND (f.tsv_russian @@ q.mru OR f.tsv_simple @@ q.msi)
ORDER BY r DESC, f.id LIMIT %(k)s
"""


@dataclass(frozen=True)
class LexicalTier:
    """Which rows the lexical lane ranks: the tsqueries (text form, None for a config with no
    term) of the rarest terms of the question, and how many matching terms were left out."""

    tiered: bool  # False: rank every row that matches any term (the lane without a budget)
    ru: str | None = None
    si: str | None = None
    left_out: int = 0
    postings: int = 0  # the chosen terms' summed document frequencies: at most the rows ranked

    @classmethod
    def everything(cls) -> LexicalTier:
        return cls(False)


# Document frequency of each of a text's lexemes over the searched builds, and whether every
# searched build has its counts (`tables.refresh_lexemes`; a build ingested before they existed
# has none, and its lexical lane then ranks every match, as without a budget).
TERMS_SQL = """
WITH t(txt, i) AS (SELECT * FROM unnest(%(texts)s::text[]) WITH ORDINALITY AS u(txt, i)),
w AS (SELECT t.i, 'russian'::text AS config, x.lexeme
      FROM t, unnest(tsvector_to_array(to_tsvector('russian', t.txt))) AS x(lexeme)
      UNION SELECT t.i, 'simple'::text, x.lexeme
      FROM t, unnest(tsvector_to_array(to_tsvector('simple', t.txt))) AS x(lexeme))
SELECT w.i, w.config, w.lexeme, coalesce(sum(l.ndoc), 0)::bigint,
       (SELECT bool_and(EXISTS (SELECT 1 FROM lexemes c WHERE c.embedder_id = %(eid)s
                                AND c.corpus = b))
        FROM unnest(%(corpora)s::text[]) AS b)
FROM w LEFT JOIN lexemes l ON l.embedder_id = %(eid)s AND l.corpus = ANY(%(corpora)s)
                          AND l.config = w.config AND l.lexeme = w.lexeme
GROUP BY w.i, w.config, w.lexeme
"""


def tsquery_text(lexemes: Sequence[str]) -> str | None:
    """An OR tsquery over already-normalised lexemes, quoted as tsquery input wants them."""
    if not lexemes:
        return None
    quoted = ("'" + x.replace("\\", "\\\\").replace("'", "''") + "'" for x in lexemes)
    return " | ".join(quoted)


def choose_tier(terms: Sequence[tuple[str, str, int]], k: int, budget: int) -> LexicalTier:
    """The rarest terms first: (config, lexeme, document frequency) terms are taken in rising
    frequency while their frequencies sum to less than `k` (so a tier can fill the lane's k),
    then while the sum stays within `budget`; the first term that fits neither ends the tier, and
    every more frequent one is left out. Terms no searched fragment holds are dropped (they match
    nothing). The rows ranked are then at most max(budget, the frequency that first reached k)."""
    live = sorted((df, config, lex) for config, lex, df in terms if df > 0)
    chosen: list[tuple[str, str]] = []
    total = 0
    for df, config, lex in live:
        if total >= k and total + df > budget:
            break
        chosen.append((config, lex))
        total += df
    by = {c: sorted(x for cc, x in chosen if cc == c) for c in ("russian", "simple")}
    return LexicalTier(
        True,
        tsquery_text(by["russian"]),
        tsquery_text(by["simple"]),
        len(live) - len(chosen),
        total,
    )


def lexical_tiers(
    conn: psycopg.Connection,
    texts: Sequence[str],
    ks: Sequence[int],
    embedder_id: str,
    corpora: Sequence[str],
    budget: int,
    romanised: bool = False,
) -> list[LexicalTier]:
    """Each text's tier (`choose_tier`) from the builds' lexeme counts, in one statement; with no
    budget, or a searched build without counts, every text ranks every match."""
    words = query_words(texts, romanised)
    if budget <= 0 or not any(words):
        return [LexicalTier.everything() for _ in texts]
    rows = conn.execute(
        TERMS_SQL, {"texts": words, "eid": embedder_id, "corpora": list(corpora)}
    ).fetchall()
    if rows and not all(r[4] for r in rows):
        return [LexicalTier.everything() for _ in texts]
    per: dict[int, list[tuple[str, str, int]]] = {}
    for i, config, lexeme, df, _ in rows:
        per.setdefault(int(i) - 1, []).append((config, lexeme, int(df)))
    return [choose_tier(per.get(i, []), k, budget) for i, k in enumerate(ks)]


def lexical_query(text: str, romanised: bool = False) -> str:
    """An OR query over the question's content words (stopwords dropped, so a natural question
    does not match every row), up to 32 of them. With `romanised` and Devanagari in the text,
    its words are kept whole (vowel signs are not letters to `isalnum`), Hindi function words
    are dropped, and each word is followed by its romanisation and that without diacritics."""
    if romanised and has_devanagari(text):
        return " or ".join(_romanised_words(text)[:32])
    words = [
        w
        for w in "".join(c if c.isalnum() else " " for c in text).split()
        if len(w) > 2 and w.lower() not in STOPWORDS
    ]
    return " or ".join(list(dict.fromkeys(words))[:32])


def query_words(texts: Sequence[str], romanised: bool = False) -> list[str]:
    """Each text's `lexical_query` words, space-separated: what the lexeme counts (tiers) and
    the BM25 index look up."""
    return [" ".join(lexical_query(t, romanised).split(" or ")) for t in texts]


def _romanised_words(text: str) -> list[str]:
    """The content words of a text with Devanagari, each then its romanised forms, deduplicated."""
    kept = "".join(
        c if c.isalnum() or unicodedata.category(c).startswith("M") else " " for c in text
    )
    out: list[str] = []
    for w in kept.split():
        if w in HINDI_STOPWORDS:
            continue
        r = romanise(w)
        for form in (w, r, ascii_fold(r)):
            if len(form) > 2 and form.lower() not in STOPWORDS and form not in out:
                out.append(form)
    return out


def lexical(
    conn: psycopg.Connection,
    text: str,
    embedder_id: str,
    corpora: Sequence[str],
    k: int,
    budget: int = 0,
    backend: str = "postgres",
    romanised: bool = False,
) -> list[LaneHit]:
    """Full-text hits ranked by ts_rank_cd, the better of the stemmed and unstemmed configs; with
    a `budget`, only the rows the question's rarest terms match are ranked (`choose_tier`).
    `backend="bm25"` ranks the same query words' lexemes by BM25 instead (`bm25_hits`);
    `romanised` adds Devanagari words' romanisations (`lexical_query`)."""
    q = lexical_query(text, romanised)
    if not q:
        return []
    if backend == "bm25":
        return bm25_hits(conn, [text], [k], embedder_id, corpora, romanised)[0]
    (tier,) = lexical_tiers(conn, [text], [k], embedder_id, corpora, budget, romanised)
    params = {"t": q, "eid": embedder_id, "corpora": list(corpora), "k": k}
    params.update({"tiered": tier.tiered, "tru": tier.ru, "tsi": tier.si})
    rows = conn.execute(LEXICAL_SQL, params).fetchall()
    return [LaneHit(r[0], "lexical", i, float(r[1])) for i, r in enumerate(rows, 1)]


def bm25_hits(
    conn: psycopg.Connection,
    texts: Sequence[str],
    ks: Sequence[int],
    embedder_id: str,
    corpora: Sequence[str],
    romanised: bool = False,
) -> list[list[LaneHit]]:
    """Per text, the lexical lane by BM25 (`store.bm25`): the lexemes of its query words
    (`lexical_query`, the words the PostgreSQL backend searches), top ks[i], ties by id."""
    words = query_words(texts, romanised)
    ranked = bm25.search(conn, words, ks, embedder_id, corpora)
    return [[LaneHit(f, "lexical", r, s) for r, (f, s) in enumerate(hits, 1)] for hits in ranked]


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


def spelled_labels(question: str) -> list[str]:
    """The verse addresses a question names only spelled out ("Chapter 2, Verse 13", "Глава 2,
    стих 13", "अध्याय २, श्लोक १३"), not as a canonical reference the address lane reads."""
    canonical = set(find_verse_refs(question))
    return [verse_label(c, v) for c, v in named_verses(question) if (c, v) not in canonical]


def named(
    conn: psycopg.Connection,
    question: str,
    embedder_id: str,
    corpora: Sequence[str],
    k: int,
) -> list[LaneHit]:
    """The named lane: the fragments of the verses the question names spelled out (in the order
    named, verses before other kinds, then by id), tagged `address:named`. A lane of its own, so
    a replay that does not pin spelled-out names sees the other lanes exactly as before
    (`cut.lane_view`)."""
    labels = spelled_labels(question)
    if not labels:
        return []
    params = {"eid": embedder_id, "corpora": list(corpora), "labels": labels, "k": k}
    ids = [r[0] for r in conn.execute(ADDRESS_EXACT_SQL, params).fetchall()]
    return [LaneHit(i, NAMED_LANE, n, 1.0) for n, i in enumerate(ids, 1)]


# ---------------------------------------------------------------- batched: one statement for many texts
#
# `batch_hits` answers every lane for a list of texts (each with its vector and depth k; both
# fanout rounds of a question at once) in ONE statement. Each single-text query above becomes a
# LATERAL subquery over a VALUES list of the texts, with the same WHERE, ORDER BY and LIMIT:
# - dense: one subquery per kind group and depth, with the depth as a literal LIMIT, so it is
#   planned as the single query is; when the planner picks the HNSW index, pgvector rescans it per
#   outer row (resetting its iterative-scan state) under the session's ef_search/iterative_scan.
#   Texts with the same vector (the question, searched in round 1 and again in round 2) share one
#   search at the largest depth asked (`shared_searches`): each text gets its first k hits. Over an
#   HNSW index that is what a search at depth k gives (the index hands rows over in one fixed
#   order and the LIMIT only stops reading), and so is an exact scan's, whose order is total; it
#   differs only where the planner would pick another plan at the smaller depth (on the demo
#   database it picks the same at 40 and 80: `test_lanes_db`).
# - lexical and address: their ORDER BY is total (ties broken by id), so the top-k is exactly the
#   first k of a deeper top-n. Texts whose tsqueries (or address texts) are equal, such as the
#   question in round 1 and again in round 2, are searched once at the largest depth asked.
# Each subquery folds its ranked rows into arrays (`array_agg` over the ordered, limited subquery
# keeps the order), so ranks survive whatever order the outer rows come back in. Scores travel as
# text and are parsed as psycopg parses a single query's text result: ts_rank_cd and trigram
# similarity are `real`, and a binary float4 would not round to the same Python float.

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
            v=_vec(dim),
            eid=sql.Literal(embedder_id),
            kinds=db.kinds_array(g),
            k=sql.Literal(k),
            tie=_tie_break(exact),
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
) -> list[list[LaneHit]]:
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
    tiers = lexical_tiers(conn, texts, ks, embedder_id, corpora, budget, lexical_romanise)
    which, depths = shared_searches(qvecs, ks)
    first_text = {j: which.index(j) for j in range(len(depths))}
    params.update({f"v{j}": np.asarray(qvecs[i], dtype=np.float32) for j, i in first_text.items()})
    for i, (text, k, tier) in enumerate(zip(texts, ks, tiers, strict=True)):
        labels = [verse_label(c, v) for c, v in find_verse_refs(text)] if text_lanes else []
        params.update(
            {
                f"lex{i}": (
                    lexical_query(text, lexical_romanise) if text_lanes and not by_bm25 else ""
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
        bm25_lane = bm25_hits(conn, texts, ks, embedder_id, corpora, lexical_romanise)
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


def round_hits(
    conn: psycopg.Connection,
    texts: Sequence[str],
    qvecs: np.ndarray,
    embedder_id: str,
    corpora: Sequence[str],
    k: int,
    trigram_threshold: float = 0.6,
    **kw: Any,
) -> list[list[LaneHit]]:
    """`batch_hits` with one depth for every text (one fanout round)."""
    ks = [k] * len(texts)
    return batch_hits(conn, texts, qvecs, ks, embedder_id, corpora, trigram_threshold, **kw)


def _assemble(
    rows: Sequence[tuple], groups: Sequence[str], ks: Sequence[int]
) -> list[list[LaneHit]]:
    """The statement's (lane, text, ids, scores) rows as each text's hits in the single-call
    order: dense groups, lexical, exact addresses, then trigram addresses not already found; a
    shared lexical or address search is cut to each text's own depth first."""
    got = {(lane, i): (ids or [], scores or []) for lane, i, ids, scores in rows}
    out: list[list[LaneHit]] = []
    for i, k in enumerate(ks):
        hits = []
        for lane in [f"dense:{g}" for g in groups] + ["lexical"]:
            ids, scores = got.get((lane, i), ([], []))
            ranked = enumerate(zip(ids[:k], scores[:k], strict=True), 1)
            hits += [LaneHit(f, lane, r, float(s)) for r, (f, s) in ranked]
        exact_ids = got.get(("address:exact", i), ([], []))[0][:k]
        addr = [LaneHit(f, "address:exact", r, 1.0) for r, f in enumerate(exact_ids, 1)]
        trgm_ids, trgm_scores = got.get(("address", i), ([], []))
        for f, s in zip(trgm_ids[:k], trgm_scores[:k], strict=True):
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
