"""The coverage gate's per-language thresholds: `verdict` applies the language's entry of
`language_thresholds`, and replay (scalar, RRF arm, vectorised) reads the language from the trace's
question, so a Russian question's decision moves while an English one's does not."""

from __future__ import annotations

import pytest
from conftest import make_candidate

from citegate.core.config import PipelineConfig
from citegate.core.types import Candidate, Decision, GateDecision, RetrievalTrace
from citegate.pipeline.gate import question_language, verdict
from citegate.pipeline.plan import OfflinePlanner
from citegate.pipeline.retrieve import replay
from citegate.research.vector_replay import replay_many, replay_results

# Production's global thresholds, with Russian ones lowered (Russian questions against English
# translations score lower cosines).
GLOBAL = {"sufficient_score": 0.8852, "good_enough_score": 0.8934, "bail_out_score": 0.8233}
RU = {"sufficient_score": 0.80, "good_enough_score": 0.82, "bail_out_score": 0.75}
PLAIN = PipelineConfig(**GLOBAL)
PER_LANGUAGE = PLAIN.replace(language_thresholds={"ru": RU})
ENGLISH = "What does Krishna say about steadfast wisdom?"
RUSSIAN = "Что Кришна говорит о стойкой мудрости?"
DIGEST = "cd" * 32


def notes_at(cosine: float) -> list[Candidate]:
    """Two verse notes, the best at `cosine`, no lecture (so only good_enough can answer)."""
    return [make_candidate(score=cosine), make_candidate(score=cosine - 0.1)]


def trace_for(question: str, cands: list[Candidate], cfg: PipelineConfig) -> RetrievalTrace:
    plan = OfflinePlanner().plan(question)
    return RetrievalTrace(question, plan, cfg.collection_key(), cfg.embedder, cfg.reranker, cands)


def test_question_language_is_the_script_of_the_question() -> None:
    assert [question_language(q) for q in (ENGLISH, RUSSIAN, "कृष्ण क्या कहते हैं?")] == [
        "en",
        "ru",
        "hi",
    ]


def test_verdict_applies_the_language_thresholds_and_the_global_ones_otherwise() -> None:
    notes = notes_at(0.84)  # below the global good_enough and above the global bail-out
    ru = verdict(notes, PER_LANGUAGE, "ru")
    assert ru.decision == GateDecision.GOOD_ENOUGH and ru.max_score == pytest.approx(0.84)
    for language in ("en", "hi", None):
        assert verdict(notes, PER_LANGUAGE, language) == verdict(notes, PLAIN)
    assert verdict(notes, PLAIN).decision == GateDecision.BETWEEN
    low = notes_at(0.78)  # under the global bail-out, over the Russian one
    assert verdict(low, PER_LANGUAGE, "ru").decision == GateDecision.BETWEEN
    assert verdict(low, PER_LANGUAGE, "en").decision == GateDecision.BAIL_OUT


@pytest.mark.parametrize("arm", ["production", "rrf_hybrid"])
def test_language_thresholds_move_a_russian_decision_and_not_an_english_one(arm: str) -> None:
    plain, per_language = PLAIN.replace(arm=arm), PER_LANGUAGE.replace(arm=arm)
    cands = [
        make_candidate(
            score=0.84 - i / 100, lanes=("dense:verses@r1", "lexical@r1"), lex_rank=i + 1
        )
        for i in range(3)
    ]
    ru, en = trace_for(RUSSIAN, cands, plain), trace_for(ENGLISH, cands, plain)
    assert replay(ru, plain).decision == Decision.WEAK
    assert replay(ru, per_language).decision == Decision.ANSWER
    assert replay(en, per_language) == replay(en, plain)
    assert replay(en, plain).decision == Decision.WEAK


def test_vectorised_replay_reads_each_questions_language() -> None:
    traces = [
        trace_for(q, notes_at(cos), PLAIN)
        for q in (RUSSIAN, ENGLISH)
        for cos in (0.70, 0.78, 0.84, 0.90)
    ]
    want = [replay(t, PER_LANGUAGE) for t in traces]
    assert replay_results(traces, PER_LANGUAGE) == want
    fast = replay_many(traces, PER_LANGUAGE)
    assert [v.decision for v in fast] == [w.decision for w in want]
    assert [w.decision for w in want] == [
        Decision.INSUFFICIENT,
        Decision.WEAK,
        Decision.ANSWER,
        Decision.ANSWER,  # Russian: 0.78 ≥ bail 0.75, 0.84 ≥ good_enough 0.82
        Decision.INSUFFICIENT,
        Decision.INSUFFICIENT,
        Decision.WEAK,
        Decision.ANSWER,  # English: the global 0.8233 / 0.8934
    ]


def test_the_learned_gate_replays_like_the_coverage_gate() -> None:
    """Its rounds decide the fanout as coverage does; its final decision is applied after replay."""
    learned = PER_LANGUAGE.replace(gate="learned", gate_model="m.json", gate_model_digest=DIGEST)
    for question in (RUSSIAN, ENGLISH):
        trace = trace_for(question, notes_at(0.84), PLAIN)
        assert replay(trace, learned) == replay(trace, PER_LANGUAGE)
