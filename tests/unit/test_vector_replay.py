"""Vectorised replay equals the scalar `replay`, question by question, over random configs (random
per-language thresholds included) and synthetic traces in English, Russian and Hindi (a seeded
generator loop: hypothesis is not a project dependency)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from conftest import make_candidate

from citegate.core.config import LANGUAGES, PipelineConfig
from citegate.core.errors import ConfigError
from citegate.core.types import Candidate, QueryPlan, RetrievalTrace
from citegate.corpus.questions import Question, QuestionSet
from citegate.pipeline.retrieve import replay
from citegate.research.study import StudySet
from citegate.research.vector_replay import pack, replay_many, replay_results

KINDS = ("verse", "commentary", "prose_chapter", "letter", "track_transcript", "other")
LANES = (
    ("dense:verses@r1",),
    ("dense:transcripts@r1",),
    ("lexical@r1",),
    ("address@r1",),
    ("address:exact@r1",),
    ("dense:library@r2", "lexical@r2"),
)
N_CONFIGS = 600
QUESTIONS = ("What is yoga?", "Что такое йога?", "योग क्या है?", "q")
THRESHOLDS = (0.0, 0.3, 0.5, 0.55, 0.7, 1.0)


def random_candidate(rng: random.Random, fid: int) -> Candidate:
    """A candidate with coarse (often tied) scores, repeated texts and overlapping windows."""
    kind = rng.choice(KINDS)
    track = start = end = None
    if kind == "track_transcript" or rng.random() < 0.1:
        track = rng.choice(("t1", "t2", "t3"))
        start = rng.randrange(0, 20) * 1000
        end = start + rng.choice((0, 1000, 2000, 3000, 5000))
    return make_candidate(
        fid,
        kind=kind,
        track_id=track,
        start_ms=start,
        end_ms=end,
        score=round(rng.uniform(-0.1, 0.9), rng.choice((1, 2, 3))),
        rerank_score=None if rng.random() < 0.2 else round(rng.uniform(-3, 3), rng.choice((0, 1))),
        lanes=rng.choice(LANES),
        round=1 if rng.random() < 0.6 else 2,
        ann_missed=rng.random() < 0.05,
        text_sig=rng.choice(("", "", "", "s1", "s2", "s3")),
        text=rng.choice(("same text", f"text {fid}", f"Text  {fid}")),
    )


def random_trace(rng: random.Random, base: PipelineConfig) -> RetrievalTrace:
    n = rng.choice((0, 1, 3, 10, 30, 60))
    ids = rng.sample(range(1, 10_000), n)
    cands = [random_candidate(rng, i) for i in ids]
    cands.sort(key=lambda c: (c.round, -c.score, c.fragment_id))
    question = rng.choice(QUESTIONS)
    plan = QueryPlan(question, (), "offline")
    return RetrievalTrace(
        question, plan, base.collection_key(), base.embedder, base.reranker, cands
    )


def random_language_thresholds(
    rng: random.Random, sufficient: float, bail: float
) -> dict[str, dict[str, float]]:
    """Overrides for a random subset of languages and keys, valid (bail ≤ sufficient per language)."""
    out: dict[str, dict[str, float]] = {}
    for lang in LANGUAGES:
        if rng.random() < 0.4:
            continue
        over: dict[str, float] = {}
        if rng.random() < 0.6:
            over["sufficient_score"] = rng.choice((*THRESHOLDS, round(rng.random(), 2)))
        if rng.random() < 0.5:
            over["good_enough_score"] = rng.choice((*THRESHOLDS, round(rng.random(), 2)))
        suff = over.get("sufficient_score", sufficient)
        if rng.random() < 0.6:
            over["bail_out_score"] = round(rng.uniform(0.0, suff), 2)
        elif bail > suff:
            over["bail_out_score"] = suff
        out[lang] = over
    return out


def random_config(rng: random.Random, base: PipelineConfig) -> PipelineConfig:
    sufficient = rng.choice(THRESHOLDS)
    bail = round(rng.uniform(0.0, sufficient), 2)
    return base.replace(
        pre_floor=rng.choice((0.0, 0.1, 0.18, 0.3, 0.45, 0.6, round(rng.random(), 2))),
        cap=rng.choice((1, 2, 5, 10, 20, 60)),
        rerank_top_k=rng.choice((1, 2, 4, 8, 16, 32)),
        reserve_verses=rng.randrange(0, 5),
        reserve_library=rng.randrange(0, 5),
        reserve_floor=rng.choice((0.0, 0.3, 0.4, 0.5, round(rng.random(), 2))),
        dedup_overlap=rng.choice((0.0, 0.25, 0.5, 0.5, 0.75, 1.0, round(rng.random(), 2))),
        sufficient_score=sufficient,
        sufficient_lectures=rng.randrange(0, 4),
        good_enough_score=rng.choice((0.5, 0.6, 0.65, 0.8, 1.0)),
        bail_out_score=bail,
        max_fanout_rounds=rng.choice((1, 2, 2)),
        language_thresholds=(
            random_language_thresholds(rng, sufficient, bail) if rng.random() < 0.7 else {}
        ),
    )


def test_vectorised_equals_scalar_over_random_configs() -> None:
    rng = random.Random(16)
    base = PipelineConfig()
    checked = overridden = 0
    for _ in range(N_CONFIGS // 20):
        traces = [random_trace(rng, base) for _ in range(rng.choice((1, 5, 20)))]
        packed = pack(traces)
        for _ in range(20):
            cfg = random_config(rng, base)
            fast = replay_many(packed, cfg)
            full = replay_results(packed, cfg)
            for t, v, res in zip(traces, fast, full, strict=True):
                want = replay(t, cfg)
                assert v.notes == tuple(c.fragment_id for c in want.notes), cfg
                assert v.decision == want.decision and v.max_score == want.max_score, cfg
                assert v.rounds == len(want.rounds)
                assert res == want, cfg
                checked += 1
                plain = replay(t, cfg.replace(language_thresholds={}))
                overridden += plain.decision != want.decision
    assert checked >= N_CONFIGS
    assert overridden >= 20  # the per-language thresholds did change decisions


def test_cosine_rerank_scores_rank_as_the_cap_order() -> None:
    """The `none` reranker writes each candidate's cosine as its rerank score; pack then takes
    the cap order as the rank order, which must give replay's notes (ties included)."""
    rng = random.Random(11)
    base = PipelineConfig()
    traces = []
    for _ in range(20):
        t = random_trace(rng, base)
        t.candidates = [replace(c, rerank_score=c.score) for c in t.candidates]
        traces.append(t)
    packed = pack(traces)
    assert packed.rank_perm is packed.cap_perm
    for _ in range(40):
        cfg = random_config(rng, base)
        for t, v in zip(traces, replay_many(packed, cfg), strict=True):
            want = replay(t, cfg)
            assert v.notes == tuple(c.fragment_id for c in want.notes), cfg
            assert v.decision == want.decision and v.max_score == want.max_score, cfg


def test_unpacked_traces_and_empty_sets() -> None:
    rng = random.Random(3)
    base = PipelineConfig()
    traces = [random_trace(rng, base) for _ in range(4)]
    assert [v.notes for v in replay_many(traces, base)] == [
        tuple(c.fragment_id for c in replay(t, base).notes) for t in traces
    ]
    assert replay_many([], base) == [] and replay_results([], base) == []


def test_rrf_arm_falls_back_to_scalar_replay() -> None:
    rng = random.Random(5)
    base = PipelineConfig()
    traces = [random_trace(rng, base) for _ in range(5)]
    cfg = base.replace(arm="rrf_hybrid")
    assert replay_results(traces, cfg) == [replay(t, cfg) for t in traces]
    assert [v.notes for v in replay_many(traces, cfg)] == [
        tuple(c.fragment_id for c in replay(t, cfg).notes) for t in traces
    ]


def test_mismatched_collection_is_refused_like_replay() -> None:
    rng = random.Random(7)
    base = PipelineConfig()
    packed = pack([random_trace(rng, base)])
    with pytest.raises(ConfigError, match="collection settings differ"):
        replay_many(packed, base.replace(lane_k=7))
    one_round = base.replace(max_fanout_rounds=1)
    trace = random_trace(rng, base)
    trace.collection = one_round.collection_key()
    with pytest.raises(ConfigError, match="more fanout rounds"):
        replay_many([trace], base)
    assert len(replay_many([trace], one_round)) == 1


def test_a_study_sets_summaries_equal_its_full_replays() -> None:
    rng = random.Random(7)
    base = PipelineConfig()
    traces = [random_trace(rng, base) for _ in range(25)]
    questions = [
        Question(f"q{i}", f"question {i}", "en", "answerable", ("x",), "t", "test", "gita", f"g{i}")
        for i in range(len(traces))
    ]
    qset = QuestionSet("s", "gita", tuple(questions))
    s = StudySet(
        qset, "gita", questions, {q.id: t for q, t in zip(questions, traces, strict=True)}, {}
    )
    for _ in range(30):
        cfg = random_config(rng, base)
        full, fast = s.replay_all(cfg), s.replay_summaries(cfg)
        assert list(fast) == [q.id for q in questions]
        for qid, res in full.items():
            want = (tuple(c.fragment_id for c in res.notes), res.decision, res.max_score)
            assert (fast[qid].notes, fast[qid].decision, fast[qid].max_score) == want, cfg
