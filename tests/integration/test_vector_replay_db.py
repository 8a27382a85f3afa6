"""Vectorised replay equals the scalar `replay` on real traces: 30 gita-split questions (English,
Russian and Hindi) retrieved from the demo database, a handful of configs (per-language thresholds
included), question by question.

The traces are collected with `retrieve.collect` and slimmed, exactly what
`research.traces.traces_for` caches, without depending on the trace cache or its worker pool."""

from __future__ import annotations

import psycopg
import pytest

from citegate.core.config import PipelineConfig
from citegate.core.types import Stage
from citegate.corpus.questions import load_set
from citegate.models.embed import default_embedder
from citegate.models.rerank import CosineReranker
from citegate.pipeline.gate import question_language
from citegate.pipeline.retrieve import collect, replay
from citegate.research.vector_replay import pack, replay_many, replay_results

pytestmark = pytest.mark.db

CHANGES = (
    {},
    {"max_fanout_rounds": 1},
    {"pre_floor": 0.45, "rerank_top_k": 8, "reserve_floor": 0.3},
    {"pre_floor": 0.0, "cap": 20, "rerank_top_k": 32, "dedup_overlap": 0.2},
    {"reserve_verses": 4, "reserve_library": 4, "reserve_floor": 0.5, "dedup_overlap": 0.9},
    {"sufficient_score": 0.8, "good_enough_score": 0.9, "bail_out_score": 0.6},
    {"dedup_overlap": 0.0, "sufficient_lectures": 0},
    *(
        {**strict, "language_thresholds": lt}
        for strict in (
            {"sufficient_score": 0.9, "good_enough_score": 0.95, "bail_out_score": 0.85},
        )
        for lt in (
            {"ru": {"sufficient_score": 0.5, "good_enough_score": 0.6, "bail_out_score": 0.4}},
            {
                "ru": {"bail_out_score": 0.0},
                "hi": {"sufficient_score": 0.85, "bail_out_score": 0.3},
            },
        )
    ),
)


def test_vectorised_replay_equals_scalar_on_real_traces(demo: psycopg.Connection) -> None:
    emb = default_embedder()
    qset = load_set("gita-split")
    questions = qset.questions[:: max(1, len(qset.questions) // 30)][:30]
    base = PipelineConfig(embedder=emb.id, corpora=(qset.corpus,))
    rr = CosineReranker()
    traces = [collect(demo, q.text, base, emb, rr, exact_check=True).slim() for q in questions]
    assert len(traces) == 30 and all(t.candidates for t in traces)
    packed = pack(traces)
    assert {question_language(t.question) for t in traces} == {"en", "ru", "hi"}
    decisions, stages, rounds, moved = set(), set(), set(), set()
    for change in CHANGES:
        cfg = base.replace(**change)
        fast = replay_many(packed, cfg)
        full = replay_results(packed, cfg)
        for q, t, v, res in zip(questions, traces, fast, full, strict=True):
            want = replay(t, cfg)
            assert v.notes == tuple(c.fragment_id for c in want.notes), (q.id, change)
            assert (v.decision, v.max_score) == (want.decision, want.max_score), (q.id, change)
            assert res == want, (q.id, change)
            decisions.add(v.decision)
            stages |= set(want.stage.values())
            rounds.add(len(want.rounds))
            if cfg.language_thresholds:
                plain = replay(t, cfg.replace(language_thresholds={}))
                if plain.decision != want.decision:
                    moved.add(question_language(t.question))
    assert len(decisions) >= 2, "the configs should reach more than one decision"
    assert rounds == {1, 2}, "some questions should fan out, some not"
    assert {Stage.KEPT_RESERVE, Stage.DROPPED_DEDUP, Stage.DROPPED_CAP} <= stages
    assert moved == {"ru", "hi"}, "per-language thresholds move ru and hi decisions, never en"
