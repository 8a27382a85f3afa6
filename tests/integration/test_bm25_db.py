"""The BM25 lexical backend (`store.bm25`) on the demo database: it scores PostgreSQL's own
lexemes as BM25 does, the batched lane equals the single call, and a changed fragment set is
served from a new index, never the stale one. The index's upkeep (rebuilt when unreadable,
pruned, built by the ingest, read-only questions) is in test_bm25_upkeep_db.py."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import psycopg
import pytest

from citegate.core.config import PipelineConfig
from citegate.core.fragments import Fragment
from citegate.models.embed import default_embedder
from citegate.pipeline import lane_batch, lanes
from citegate.store import bm25
from citegate.store.tables import refresh_lexemes, write_sources

pytestmark = pytest.mark.db

QUESTIONS = [
    "What does Krishna say about the soul being eternal?",
    "Why should Arjuna fight in the battle?",
    "Что говорит Кришна о душе?",
    "BG 2.47 action without attachment to the fruits",
    "'; DROP TABLE fragments; --",
    "How do I bake sourdough bread?",
]
TERMS_SQL = """
SELECT f.id, 'ru', u.lexeme, greatest(cardinality(u.positions), 1)
FROM fragments f, unnest(f.tsv_russian) u WHERE f.embedder_id = %(eid)s AND f.corpus = 'gita'
UNION ALL
SELECT f.id, 'si', u.lexeme, greatest(cardinality(u.positions), 1)
FROM fragments f, unnest(f.tsv_simple) u WHERE f.embedder_id = %(eid)s AND f.corpus = 'gita'
"""


def _reference(demo: psycopg.Connection, eid: str) -> dict[str, dict]:
    """Per field: each fragment's lexeme counts, its length and the document frequencies."""
    ref: dict[str, dict] = {f: {"tf": {}, "df": Counter()} for f in ("ru", "si")}
    for fid, field, lex, n in demo.execute(TERMS_SQL, {"eid": eid}):
        ref[field]["tf"].setdefault(fid, {})[lex] = n
        ref[field]["df"][lex] += 1
    return ref


def _bm25(ref: dict[str, dict], terms: list[tuple[str, str]], n_docs: int) -> dict[int, float]:
    """BM25 (k1 1.2, b 0.75) per field, summed, with exact lengths (tantivy stores lengths in
    one byte, so its scores differ slightly; the ranking mostly not)."""
    out: dict[int, float] = {}
    for field, lex in terms:
        tf, df = ref[field]["tf"], ref[field]["df"]
        if not df[lex]:
            continue
        lengths = {d: sum(c.values()) for d, c in tf.items()}
        avg = sum(lengths.values()) / n_docs
        idf = math.log(1 + (n_docs - df[lex] + 0.5) / (df[lex] + 0.5))
        for d, counts in tf.items():
            if lex in counts:
                f = counts[lex]
                norm = f * 2.2 / (f + 1.2 * (0.25 + 0.75 * lengths[d] / avg))
                out[d] = out.get(d, 0.0) + idf * norm
    return out


def test_bm25_ranks_the_stored_lexemes_as_bm25_does(demo: psycopg.Connection) -> None:
    eid = default_embedder().id
    ref = _reference(demo, eid)
    n_docs = demo.execute(
        "SELECT count(*) FROM fragments WHERE embedder_id = %s AND corpus = 'gita'", (eid,)
    ).fetchone()[0]
    overlaps = []
    for text in QUESTIONS:
        words = " ".join(lanes.lexical_query(text).split(" or "))
        (terms,) = bm25.query_terms(demo, [words])
        got = lanes.lexical(demo, text, eid, ["gita"], 16, backend="bm25")
        want = _bm25(ref, terms, n_docs)
        if not want:
            assert got == [], text
            continue
        best = sorted(want, key=lambda d: (-want[d], d))[:16]
        scores = [h.lane_score for h in got]
        assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores), text
        # every hit holds a query term, and the sets agree up to the one-byte lengths
        assert all(h.fragment_id in want for h in got), text
        overlaps.append(len({h.fragment_id for h in got} & set(best)) / len(best))
        top = want[got[0].fragment_id]
        assert top >= want[best[0]] * 0.95, (text, top, want[best[0]])
    assert overlaps and np.mean(overlaps) >= 0.8, overlaps


def test_batched_bm25_lane_equals_the_single_call_and_needs_no_sql_lexical_part(
    demo: psycopg.Connection,
) -> None:
    emb = default_embedder()
    corpora = ("gita", "xquad")
    vecs = emb.embed_queries(QUESTIONS)
    ks = [16, 40] * (len(QUESTIONS) // 2)
    got = lane_batch.batch_hits(demo, QUESTIONS, vecs, ks, emb.id, corpora, lexical_backend="bm25")
    pg = lane_batch.batch_hits(demo, QUESTIONS, vecs, ks, emb.id, corpora)
    for text, k, hits, other in zip(QUESTIONS, ks, got, pg, strict=True):
        single = lanes.lexical(demo, text, emb.id, corpora, k, backend="bm25")
        assert [h for h in hits if h.lane == "lexical"] == single, text
        # every other lane is untouched by the backend
        assert [h for h in hits if h.lane != "lexical"] == [h for h in other if h.lane != "lexical"]
    cfg = PipelineConfig(lexical_backend="bm25")
    assert cfg.collection_key()["lexical_backend"] == "bm25"
    assert "lexical_backend" not in PipelineConfig().collection_key()


def test_a_changed_fragment_set_is_served_from_a_new_index(demo: psycopg.Connection) -> None:
    eid = default_embedder().id
    text = "zyzzogeton quokkafruit"
    before = bm25.stamped_sets(demo, eid, ["gita"])
    assert lanes.lexical(demo, text, eid, ["gita"], 16, backend="bm25") == []
    frag = Fragment(
        "bm25-test", "gita", "verse", "bm25-test", "The zyzzogeton eats.", "en", addr_label="BG 1.1"
    )
    vec = np.zeros((1, default_embedder().dim), dtype=np.float32)
    vec[0, 0] = 1.0
    with demo.transaction(force_rollback=True):
        # an ingest's last write: the row and its build's new stamp in one transaction
        write_sources(demo, [frag], vec, eid, "gita", origin=None, lexemes=True)
        after = bm25.stamped_sets(demo, eid, ["gita"])
        assert after != before
        hits = lanes.lexical(demo, text, eid, ["gita"], 16, backend="bm25")
        (fid,) = demo.execute("SELECT id FROM fragments WHERE frag_key = 'bm25-test'").fetchone()
        assert [h.fragment_id for h in hits] == [fid]
        assert (bm25.index_root() / bm25.index_key(eid, after)).is_dir()
        # rows changed outside an ingest leave the stamp behind, and a build only reads (it
        # writes no stamp): lookups keep the stamped index until the next ingest stamps the rows
        demo.execute("DELETE FROM fragments WHERE frag_key = 'bm25-test'")
        assert bm25.stamped_sets(demo, eid, ["gita"]) == after
        built = bm25.build(demo, eid, ["gita"])
        assert bm25.stamped_sets(demo, eid, ["gita"]) == after
        assert built.key == bm25.index_key(eid, before)
        refresh_lexemes(demo, eid, "gita")  # what an ingest's last write does
        assert bm25.stamped_sets(demo, eid, ["gita"]) == before
        assert lanes.lexical(demo, text, eid, ["gita"], 16, backend="bm25") == []
    assert bm25.stamped_sets(demo, eid, ["gita"]) == before


def test_a_build_without_a_stamp_is_counted_and_refresh_stamps_it(
    demo: psycopg.Connection,
) -> None:
    eid = default_embedder().id
    with demo.transaction(force_rollback=True):
        demo.execute("DELETE FROM fragment_stamps WHERE embedder_id = %s", (eid,))
        live = bm25.stamped_sets(demo, eid, ["gita"])  # no stamp: counted now
        assert live["gita"].startswith(
            str(demo.execute("SELECT count(*) FROM fragments WHERE corpus = 'gita'").fetchone()[0])
        )
        refresh_lexemes(demo, eid, "gita")
        (stamp,) = demo.execute(
            "SELECT fragment_set FROM fragment_stamps WHERE embedder_id = %s AND corpus = 'gita'",
            (eid,),
        ).fetchone()
        assert stamp == live["gita"]
