"""The batched lanes (one statement per fanout round) against the one-statement-per-lane path, on
the demo database: the same hits with the same ranks and scores, and the same traces."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import psycopg
import pytest

from citegate.core.config import PipelineConfig
from citegate.core.types import KIND_GROUPS
from citegate.corpus.questions import load_set
from citegate.models.embed import default_embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline import lane_batch, lanes
from citegate.pipeline.plan import keywords
from citegate.pipeline.retrieve import collect, replay
from citegate.research.bench import hnsw_scans

pytestmark = pytest.mark.db

# Addresses (exact and trigram), Russian, SQL metacharacters, a text with no lexical words.
EDGE = [
    "BG 2.13",
    "what does Gita 2:13 and 18.66 say?",
    "Что такое карма-йога?",
    "'; DROP TABLE fragments; --",
    "%s %(x)s \\ ' \" ; <<% @@ :*",
    "is it?",
    "How do I bake sourdough bread?",
]


@pytest.fixture(scope="module")
def emb():  # noqa: ANN201
    return default_embedder()


def _questions(n: int) -> list[str]:
    qs = load_set("gita-split").questions
    return [q.text for q in qs[:: max(1, len(qs) // n)][:n]] + EDGE


def _single(
    conn: psycopg.Connection, text: str, vec: np.ndarray, cfg: PipelineConfig, k: int
) -> list[lanes.LaneHit]:
    hits = [h for g in KIND_GROUPS for h in lanes.dense(conn, vec, cfg.embedder, cfg.corpora, g, k)]
    hits += lanes.lexical(conn, text, cfg.embedder, cfg.corpora, k)
    return hits + lanes.address(conn, text, cfg.embedder, cfg.corpora, k, cfg.address_trgm)


def _by_lane(per_text: list[list[lanes.LaneHit]]) -> list[dict[str, list[tuple]]]:
    """Each text's hits as lane -> [(id, rank, score)], in hit order (a readable diff)."""
    out = []
    for hits in per_text:
        d: dict[str, list[tuple]] = {}
        for h in hits:
            d.setdefault(h.lane, []).append((h.fragment_id, h.rank, h.lane_score))
        out.append(d)
    return out


@contextmanager
def _hnsw_forced(conn: psycopg.Connection) -> Iterator[None]:
    """No plan but the HNSW index scan can order the dense rows (as `bench` forces it)."""
    off = ("enable_seqscan", "enable_bitmapscan", "enable_sort")
    for name in off:
        conn.execute(f"SET {name} = off")
    try:
        yield
    finally:
        for name in off:
            conn.execute(f"RESET {name}")


def test_batch_hits_equal_one_call_per_lane_with_ranks_and_scores(
    demo: psycopg.Connection, emb
) -> None:  # noqa: ANN001
    cfg = PipelineConfig(embedder=emb.id, corpora=("gita", "xquad"))
    texts = _questions(12)
    vecs = emb.embed_queries(texts)
    seen: set[str] = set()
    for k in (cfg.lane_k, 2 * cfg.lane_k):
        for start in range(0, len(texts), 3):  # rounds of 3 texts, as retrieve's round 2 + 1
            chunk = slice(start, start + 3)
            ks = [k] * len(texts[chunk])
            got = lane_batch.batch_hits(
                demo, texts[chunk], vecs[chunk], ks, cfg.embedder, cfg.corpora, cfg.address_trgm
            )
            want = [
                _single(demo, t, v, cfg, k) for t, v in zip(texts[chunk], vecs[chunk], strict=True)
            ]
            diff = [
                (t[:40], lane, a.get(lane), b.get(lane))
                for t, a, b in zip(texts[chunk], _by_lane(got), _by_lane(want), strict=True)
                for lane in sorted(set(a) | set(b))
                if a.get(lane) != b.get(lane)
            ]
            assert not diff, diff
            seen.update(h.lane for hits in got for h in hits)
    assert seen == {
        *(f"dense:{g}" for g in KIND_GROUPS),
        "lexical",
        "address",
        "address:exact",
    }


def test_a_search_shared_by_texts_of_different_depths_is_cut_to_each(
    demo: psycopg.Connection, emb
) -> None:  # noqa: ANN001
    """The question at lane_k and again at twice that (retrieve's two rounds) is searched once by
    every lane, the dense ones included, at the larger depth; each copy gets exactly what its own
    call would, as the planner plans it and over the HNSW index alone."""
    cfg = PipelineConfig(embedder=emb.id)
    for q in ["What does Gita 2:13 say about the soul?", *_questions(4)]:
        texts, ks = [q, keywords(q), q], [cfg.lane_k, 2 * cfg.lane_k, 2 * cfg.lane_k]
        vecs = emb.embed_queries(texts)
        got = lane_batch.batch_hits(
            demo, texts, vecs, ks, cfg.embedder, cfg.corpora, cfg.address_trgm
        )
        want = [_single(demo, t, v, cfg, k) for t, v, k in zip(texts, vecs, ks, strict=True)]
        assert got == want, q
        assert len(got[0]) < len(got[2])  # the depths really differ
        with _hnsw_forced(demo):
            before = hnsw_scans(demo, cfg.embedder)
            got = lane_batch.batch_hits(
                demo, texts, vecs, ks, cfg.embedder, cfg.corpora, text_lanes=False
            )
            scans = hnsw_scans(demo, cfg.embedder) - before
            want = [_single(demo, t, v, cfg, k) for t, v, k in zip(texts, vecs, ks, strict=True)]
        distinct = len({v.astype(np.float32).tobytes() for v in vecs})  # 1 when keywords(q) == q
        assert distinct < len(texts)
        assert scans == distinct * len(KIND_GROUPS), q  # the question's vector once
        assert got == [[h for h in w if h.lane.startswith("dense:")] for w in want], q


def test_batched_and_unbatched_collect_give_identical_traces(demo: psycopg.Connection, emb) -> None:  # noqa: ANN001
    cfg = PipelineConfig(embedder=emb.id)
    rr = CosineReranker()
    for q in _questions(24):
        a = collect(demo, q, cfg, emb, rr, exact_check=True)
        b = collect(demo, q, cfg, emb, rr, exact_check=True, batched_lanes=False)
        assert a.candidates == b.candidates, q
        assert a.candidates, q


def test_batched_dense_uses_the_hnsw_index_and_matches_single_scans(
    demo: psycopg.Connection, emb
) -> None:  # noqa: ANN001
    cfg = PipelineConfig(embedder=emb.id)
    texts = _questions(6)[:6]
    vecs = emb.embed_queries(texts)
    with _hnsw_forced(demo):
        before = hnsw_scans(demo, cfg.embedder)
        ks = [cfg.lane_k] * len(texts)
        got = lane_batch.batch_hits(
            demo, texts, vecs, ks, cfg.embedder, cfg.corpora, text_lanes=False
        )
        scans = hnsw_scans(demo, cfg.embedder) - before
        single_scans = hnsw_scans(demo, cfg.embedder)
        want = [
            [
                h
                for g in KIND_GROUPS
                for h in lanes.dense(demo, v, cfg.embedder, cfg.corpora, g, cfg.lane_k)
            ]
            for v in vecs
        ]
        single_scans = hnsw_scans(demo, cfg.embedder) - single_scans
    assert scans == single_scans == len(texts) * len(KIND_GROUPS)
    assert got == want
    assert all(len(hits) > 0 for hits in got)


def test_the_named_lane_finds_a_spelled_out_verse_that_only_production_pins(
    demo: psycopg.Connection,
    emb,  # noqa: ANN001
) -> None:
    question = "In Chapter 2, Verse 13, what passes from body to body?"
    cfg = PipelineConfig(embedder=emb.id, corpora=("gita",))
    trace = collect(demo, question, cfg, emb, CosineReranker())
    named = [c for c in trace.candidates if any(t.startswith("address:named") for t in c.lanes)]
    assert named and {c.addr_label for c in named} == {"BG 2.13"}
    assert {c.kind for c in named} == {"verse"}
    seed, pinned = replay(trace, cfg), replay(trace, cfg.replace(pin_named_verses=True))
    assert not any(c.pinned for c in seed.notes)
    assert pinned.notes[0].addr_label == "BG 2.13" and pinned.notes[0].pinned
    grouped = replay(trace, cfg.replace(pin_named_verses=True, verse_notes=True))
    labels = [c.addr_label for c in grouped.notes if c.kind == "verse"]
    assert labels.count("BG 2.13") == 1 and len(labels) == len(set(labels))
    # a question naming no verse spelled out collects exactly what it did without the lane
    plain = collect(demo, "What passes from body to body?", cfg, emb, CosineReranker())
    assert not any("address:named" in t for c in plain.candidates for t in c.lanes)


def test_lexeme_counts_are_the_document_frequencies_of_the_build(demo: psycopg.Connection) -> None:
    eid = default_embedder().id
    rows = demo.execute(
        "SELECT config, lexeme, ndoc FROM lexemes WHERE embedder_id = %s AND corpus = 'gita' "
        "ORDER BY ndoc DESC, config, lexeme LIMIT 3",
        (eid,),
    ).fetchall()
    rare = demo.execute(
        "SELECT config, lexeme, ndoc FROM lexemes WHERE embedder_id = %s AND corpus = 'gita' "
        "AND ndoc = 2 ORDER BY config, lexeme LIMIT 3",
        (eid,),
    ).fetchall()
    assert len(rows) == 3 and len(rare) == 3
    for config, lexeme, ndoc in rows + rare:
        column = "tsv_russian" if config == "russian" else "tsv_simple"
        n = demo.execute(
            f"SELECT count(*) FROM fragments WHERE embedder_id = %s AND corpus = 'gita' "
            f"AND {column} @@ %s::tsquery",
            (eid, lanes.tsquery_text([lexeme])),
        ).fetchone()[0]
        assert n == ndoc, (config, lexeme)


def test_a_budget_ranks_a_subset_with_the_same_scores_and_a_big_one_changes_nothing(
    demo: psycopg.Connection,
    emb,  # noqa: ANN001
) -> None:
    corpora = ("gita", "xquad")
    cut = 0
    for text in _questions(16):
        full = lanes.lexical(demo, text, emb.id, corpora, 40)
        assert lanes.lexical(demo, text, emb.id, corpora, 40, 10**9) == full, text
        (tier,) = lanes.lexical_tiers(demo, [text], [40], emb.id, corpora, 64)
        small = lanes.lexical(demo, text, emb.id, corpora, 40, 64)
        every = {
            h.fragment_id: h.lane_score for h in lanes.lexical(demo, text, emb.id, corpora, 10**6)
        }
        assert all(every[h.fragment_id] == h.lane_score for h in small), text  # same score
        scores = [h.lane_score for h in small]
        assert scores == sorted(scores, reverse=True)
        cut += tier.left_out > 0 and {h.fragment_id for h in small} != {h.fragment_id for h in full}
        # batched, the same tiers: equal to the single calls
        vecs = emb.embed_queries([text])
        (got,) = lane_batch.batch_hits(demo, [text], vecs, [40], emb.id, corpora, lexical_budget=64)
        assert [h for h in got if h.lane == "lexical"] == small, text
    assert cut >= 3, "a small budget should change some questions' lexical hits"


def test_a_build_without_lexeme_counts_ranks_every_match(demo: psycopg.Connection, emb) -> None:  # noqa: ANN001
    from citegate.store.tables import refresh_lexemes

    text = "What does Krishna tell Arjuna about the duty of a warrior?"
    full = lanes.lexical(demo, text, emb.id, ("gita",), 40)
    with demo.transaction(force_rollback=True):
        demo.execute("DELETE FROM lexemes WHERE embedder_id = %s AND corpus = 'gita'", (emb.id,))
        assert lanes.lexical_tiers(demo, [text], [40], emb.id, ("gita",), 8) == [
            lanes.LexicalTier.everything()
        ]
        assert lanes.lexical(demo, text, emb.id, ("gita",), 40, 8) == full
        assert refresh_lexemes(demo, emb.id, "gita") > 1000
        assert lanes.lexical_tiers(demo, [text], [40], emb.id, ("gita",), 8)[0].tiered


def test_a_hindi_question_quoting_the_sanskrit_finds_its_verse_only_when_romanised(
    demo: psycopg.Connection,
    emb,  # noqa: ANN001
) -> None:
    """BG 1.38's compound quoted in Devanagari: the corpus holds it only romanised
    ("lobhopahata-chetasaḥ"), so the lexical lane finds the verse through `lexical_romanise`
    and finds nothing without it; batched and single calls agree, and the setting is a
    collection key only when on (traces collected without it keep their keys)."""
    question = "यद्यपि एते न पश्यन्ति लोभोपहतचेतसः का क्या अर्थ है?"
    corpora = ("gita",)
    off = lanes.lexical(demo, question, emb.id, corpora, 16)
    on = lanes.lexical(demo, question, emb.id, corpora, 16, romanised=True)
    labels = demo.execute(
        "SELECT id, addr_label FROM fragments WHERE id = ANY(%s)", ([h.fragment_id for h in on],)
    ).fetchall()
    assert "BG 1.38" in {label for _, label in labels}
    assert "BG 1.38" not in {
        label
        for _, label in demo.execute(
            "SELECT id, addr_label FROM fragments WHERE id = ANY(%s)",
            ([h.fragment_id for h in off],),
        ).fetchall()
    }
    (vec,) = emb.embed_queries([question])
    (batched,) = lane_batch.batch_hits(
        demo, [question], vec[None, :], [16], emb.id, corpora, lexical_romanise=True
    )
    assert [h for h in batched if h.lane == "lexical"] == on
    assert PipelineConfig(lexical_romanise=True).collection_key()["lexical_romanise"] is True
    assert "lexical_romanise" not in PipelineConfig().collection_key()
