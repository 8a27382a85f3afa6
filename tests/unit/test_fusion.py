"""Reciprocal Rank Fusion and the two-scale gate (`pipeline.fusion`): fusion, context cap, top-k."""

from __future__ import annotations

import pytest
from conftest import make_candidate

from citegate.core.config import PipelineConfig
from citegate.core.errors import ConfigError
from citegate.core.types import Candidate, RetrievalTrace
from citegate.pipeline.fusion import context_cap, fusion_scores, rrf_cut, two_scale_verdict
from citegate.pipeline.plan import OfflinePlanner
from citegate.pipeline.retrieve import replay

ARM = PipelineConfig(arm="rrf_hybrid")


def cand(
    score: float,
    lex: int | None = None,
    dense: bool = True,
    source: str = "s",
    length: int = 500,
    rerank: float | None = None,
) -> Candidate:
    """A round-1 verse with a cosine, optional lexical rank, dense hit, source and text length."""
    lanes = (("dense:verses@r1",) if dense else ()) + (("lexical@r1",) if lex else ())
    return make_candidate(
        score=score,
        source_id=source,
        text="",
        lanes=lanes,
        rerank_score=rerank,
        text_len=length,
        lex_rank=lex,
    )


def test_fusion_is_reciprocal_rank_with_k_50() -> None:
    a, b, c = cand(0.9, lex=2), cand(0.8), cand(0.3, lex=1)  # c is below the dense threshold
    fused = fusion_scores([a, b, c], ARM)
    assert fused[a.fragment_id] == pytest.approx(1 / 51 + 1 / 52)
    assert fused[b.fragment_id] == pytest.approx(1 / 52)
    assert fused[c.fragment_id] == pytest.approx(1 / 51)  # lexical only: dense part excluded


def test_cross_encoder_keeps_top_5_and_context_is_capped_per_source() -> None:
    pool = [
        cand(0.9 - i / 100, rerank=i / 10, source="big" if i % 2 else "small", length=1500)
        for i in range(8)
    ]
    notes, stage, _ = rrf_cut(pool, ARM, reranked=True)
    assert [c.rerank_score for c in notes][0] == 0.7  # rerank order, not fusion order
    assert sum(c.text_len for c in notes if c.source_id == "big") <= 4000
    assert len([s for s in stage.values() if s == "dropped:context_cap"]) >= 1
    kept, dropped = context_cap([cand(0.5, length=3000), cand(0.5, length=1001)], 4000)
    assert len(kept) == 1 and len(dropped) == 1


def test_two_scale_gate_uses_the_scale_of_what_ran() -> None:
    notes = [cand(0.9, rerank=0.44)]
    fused = {notes[0].fragment_id: 0.02}
    reranked, sig = two_scale_verdict(notes, fused, ARM, reranked=True)
    assert not reranked.good_enough and sig == pytest.approx(0.44)
    plain, sig = two_scale_verdict(notes, fused, ARM, reranked=False)
    assert plain.good_enough and sig == pytest.approx(0.02)
    # one threshold for both scales fails: 0.45 on the fusion scale abstains on everything
    strict = ARM.replace(two_scale_fusion=0.45)
    assert not two_scale_verdict(notes, fused, strict, reranked=False)[0].good_enough


def test_arm_replays_from_production_traces() -> None:
    pool = [cand(0.9 - i / 100, lex=i + 1 if i < 3 else None) for i in range(12)]
    plan = OfflinePlanner().plan("q")
    trace = RetrievalTrace("q", plan, ARM.collection_key(), ARM.embedder, "none", pool)
    res = replay(trace, ARM.replace(gate="two_scale"))
    assert len(res.notes) == 5 and res.decision == "answer"
    assert res.stage[pool[-1].fragment_id] == "dropped:top_k"


def test_two_scale_gate_needs_the_rrf_arm() -> None:
    with pytest.raises(ConfigError, match="two_scale gate needs"):
        PipelineConfig(gate="two_scale")
