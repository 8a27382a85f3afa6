"""The retrieval lanes, each one parameterized SQL query (user text is never spliced into SQL).

dense   — pgvector HNSW cosine search per kind group (transcripts, verses, other library), each
          group on its own partial index (`store.db.ensure_embedder`);
lexical — `websearch_to_tsquery` over the `russian` (stemmed) and `simple` (exact) tsvectors;
address — canonical verse addresses ("BG 2.13", "Gita 2:13", …) and pg_trgm word similarity over
          `addr_label || source_id || tokens`.
Every lane returns fragment ids with the lane's own rank; cosines are computed for all candidates
by `fetch`, whichever lane found them. `retrieve` runs every lane for every text of both fanout
rounds as ONE statement (`pipeline.lane_batch`), which gives exactly what these calls give.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import psycopg
from psycopg import sql

from citegate.core.romanise import ascii_fold, has_devanagari, romanise
from citegate.core.text import HINDI_STOPWORDS, STOPWORDS
from citegate.core.types import NAMED_LANE
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


def vector_column(dim: int) -> sql.Composable:
    return sql.SQL("embedding::vector({})").format(sql.Literal(dim))


# An exact dense scan ranks equal cosines by fragment id. Duplicate texts have identical
# embeddings (32 pairs in the gita build), so a tie can straddle a lane's LIMIT; without a unique
# tie-breaker which duplicate gets in follows the scan's physical row order (heap layout, parallel
# workers). The HNSW path cannot take one: pgvector's index scan orders by distance alone, and a
# second sort key makes the planner drop the index.
EXACT_TIE_BREAK = ", id"


def tie_break(exact: bool) -> sql.Composable:
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
        v=vector_column(dim),
        d=sql.Literal(dim),
        eid=sql.Literal(embedder_id),
        kinds=db.kinds_array(group),
        tie=tie_break(exact),
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


# A searched set of this many fragments or more makes the unbudgeted PostgreSQL lane slow: a
# full retrieve takes p50 336 ms / p95 999 ms at 100k fragments and 2.8 s / 10.8 s at 1M, against
# 62 / 73 ms and 165 / 194 ms with `lexical_backend: bm25` (`citegate bench-scale`, 2 cores,
# mixtures corpus). The backend is not switched by size the way the dense graph is: the
# lane feeds the gate's signals, so a switch needs the gate re-fit on its traces; `citegate
# doctor` says so instead (`lexical_advice`).
SLOW_LEXICAL_ROWS = 100_000


def lexical_advice(backend: str, budget: int, rows: int) -> str | None:
    """What a user should change about the lexical lane for a searched set of `rows` fragments,
    or None when the lane is fit for it (BM25 or a budget at any size; PostgreSQL below the mark)."""
    if backend != "postgres" or budget or rows < SLOW_LEXICAL_ROWS:
        return None
    return (
        f"the unbudgeted PostgreSQL lane ranks every match: at {rows:,} fragments expect a "
        f"retrieve above 300 ms (bench-scale, 2 cores: p50 336 ms at 100k, 2.8 s at 1M); set "
        "`lexical_backend: bm25` (165 ms at 1M) and re-fit the gate on its traces"
    )


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
    a replay that does not pin spelled-out names sees the other lanes exactly as they are without
    it (`cut.lane_view`)."""
    labels = spelled_labels(question)
    if not labels:
        return []
    params = {"eid": embedder_id, "corpora": list(corpora), "labels": labels, "k": k}
    ids = [r[0] for r in conn.execute(ADDRESS_EXACT_SQL, params).fetchall()]
    return [LaneHit(i, NAMED_LANE, n, 1.0) for n, i in enumerate(ids, 1)]


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
        v=vector_column(dim),
        d=sql.Literal(dim),
    )
    cur = conn.execute(query, {"q": qvec.astype(np.float32), "ids": list(ids)})
    names = [c.name for c in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
