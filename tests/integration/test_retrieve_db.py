"""The retrieval pipeline against real PostgreSQL on the demo corpora."""

from __future__ import annotations

import psycopg
import pytest

from citegate.core.config import PipelineConfig
from citegate.models.embed import default_embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline.retrieve import collect, replay, retrieve

pytestmark = pytest.mark.db


@pytest.fixture(scope="module")
def emb():  # noqa: ANN201
    return default_embedder()


def test_exact_address_returns_that_verse_first(demo: psycopg.Connection, emb) -> None:  # noqa: ANN001
    for query in ("BG 2.13", "Bg. 2.13", "Gita 2:13", "what does 2.13 say?"):
        res = retrieve(demo, query, PipelineConfig(embedder=emb.id), emb, CosineReranker())
        assert res.notes[0].addr_label == "BG 2.13", query


def test_russian_question_finds_russian_xquad_through_both_lanes(
    demo: psycopg.Connection, emb
) -> None:  # noqa: ANN001
    cfg = PipelineConfig(embedder=emb.id, corpora=("xquad",))
    q = "Сколько очков уступила защита Пэнтерс?"
    res = retrieve(demo, q, cfg, emb, CosineReranker())
    top = res.notes[0]
    assert top.lang == "ru" and top.frag_key == "xquad:ru:Super_Bowl_50:1"
    lanes_of_top = " ".join(top.lanes)
    assert "dense" in lanes_of_top and "lexical" in lanes_of_top


@pytest.mark.parametrize(
    "q", ["'; DROP TABLE fragments; --", "%s %(x)s \\ ' \" ; <<% @@ :*", "soul " * 400]
)
def test_sql_metacharacters_and_long_questions_are_harmless(
    demo: psycopg.Connection, emb, q: str
) -> None:  # noqa: ANN001
    res = retrieve(demo, q, PipelineConfig(embedder=emb.id), emb, CosineReranker())
    assert res.decision in {"answer", "weak", "insufficient"}
    assert demo.execute("SELECT count(*) FROM fragments").fetchone()[0] > 4000


GRID = [
    dict(pre_floor=f, rerank_top_k=k, reserve_floor=r, good_enough_score=g)
    for f in (0.0, 0.18, 0.45, 0.85)
    for k in (4, 16)
    for r in (0.4, 0.85)
    for g in (0.65, 0.95)
]


@pytest.mark.parametrize(
    "q", ["Is the soul eternal?", "Что такое карма-йога?", "How do I bake sourdough bread?"]
)
def test_replay_equals_a_fresh_retrieve_for_a_grid_of_configs(
    demo: psycopg.Connection, emb, q: str
) -> None:  # noqa: ANN001
    base = PipelineConfig(embedder=emb.id)
    trace = collect(demo, q, base, emb, CosineReranker())
    for changes in GRID:
        cfg = base.replace(**changes)
        fresh = retrieve(demo, q, cfg, emb, CosineReranker())
        again = replay(trace, cfg)
        assert [c.fragment_id for c in again.notes] == [c.fragment_id for c in fresh.notes]
        assert again.decision == fresh.decision and again.stage == fresh.stage


def test_trace_frame_has_every_candidate_and_its_fate(demo: psycopg.Connection, emb) -> None:  # noqa: ANN001
    res = retrieve(
        demo,
        "What is yoga?",
        PipelineConfig(embedder=emb.id),
        emb,
        CosineReranker(),
        exact_check=True,
    )
    frame = res.trace.to_frame(replay(res.trace, PipelineConfig(embedder=emb.id)).stage)
    assert len(frame) == len(res.trace.candidates) > 16
    assert set(frame["stage"]) <= {
        "kept:top_k",
        "kept:reserve",
        "dropped:pre_floor",
        "dropped:cap",
        "dropped:top_k",
        "dropped:dedup",
        "ann_missed",
        "unused:later_round",
    }
    assert (frame["score"] == frame["score"].clip(-1, 1)).all()
    assert set(res.trace.timings) >= {"embed", "lanes", "fetch", "rerank", "cut"}
