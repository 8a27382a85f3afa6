"""Reciprocal Rank Fusion and the two-scale gate score, read from the same lanes and traces.

- The fused cut (`rrf_cut`, replayed by `rrf_replay` under `arm: rrf_hybrid`): lexical (full-text
  rank) and dense (cosine ≥ `rrf_dense_threshold`) fused by Reciprocal Rank Fusion (k =
  `rrf_k`), then the cross-encoder keeps the top `rrf_top_k`, with the context capped at
  `rrf_context_chars` per source (`context_cap`).
- The two-scale gate (`two_scale_verdict`, `gate_signal`): answer when the reranker's score
  reaches `two_scale_rerank` (sigmoid scale), or, when no reranker ran, when the fusion score
  reaches `two_scale_fusion` (RRF scale).

Production's learned gate reads the two-scale score of every question as one of its signals
(`signals.two_scale_score`: this module's cut and gate replayed from the production trace), and
`decide` explains a two-scale decision with `gate_signal`; `retrieve.replay` runs the fused cut
for a config whose arm is `rrf_hybrid`.
"""

from __future__ import annotations

from collections.abc import Sequence

from citegate.core.config import PipelineConfig
from citegate.core.types import (
    Candidate,
    GateVerdict,
    RetrievalResult,
    RetrievalTrace,
    RoundResult,
    Stage,
)
from citegate.pipeline.cut import lane_view
from citegate.pipeline.gate import lecture_count, max_score, question_language, verdict


def fusion_scores(pool: Sequence[Candidate], cfg: PipelineConfig) -> dict[int, float]:
    """RRF score of each round-1 candidate: Σ 1/(k + rank) over the dense list (cosine order,
    cosine ≥ the dense threshold) and the lexical list (full-text rank order)."""
    dense = sorted(
        (c for c in pool if _dense(c) and c.score >= cfg.rrf_dense_threshold),
        key=lambda c: (-c.score, c.fragment_id),
    )
    fused = {c.fragment_id: 1.0 / (cfg.rrf_k + r) for r, c in enumerate(dense, 1)}
    for c in pool:
        if c.lex_rank is not None:
            fused[c.fragment_id] = fused.get(c.fragment_id, 0.0) + 1.0 / (cfg.rrf_k + c.lex_rank)
    return fused


def _dense(c: Candidate) -> bool:
    return any(t.startswith("dense:") and t.endswith("@r1") for t in c.lanes)


def context_cap(notes: Sequence[Candidate], chars: int) -> tuple[list[Candidate], list[Candidate]]:
    """Keep notes in order while each source's accumulated text stays within `chars`."""
    used: dict[str, int] = {}
    kept: list[Candidate] = []
    dropped: list[Candidate] = []
    for c in notes:
        if used.get(c.source_id, 0) + c.text_len > chars:
            dropped.append(c)
            continue
        used[c.source_id] = used.get(c.source_id, 0) + c.text_len
        kept.append(c)
    return kept, dropped


def rrf_cut(
    pool: Sequence[Candidate],
    cfg: PipelineConfig,
    reranked: bool,
) -> tuple[list[Candidate], dict[int, Stage], dict[int, float]]:
    """Fuse, cap, rerank (when a reranker ran), keep the top k, cap the context per source."""
    live = [c for c in pool if c.round == 1 and not c.ann_missed]
    fused = fusion_scores(live, cfg)
    stage = {c.fragment_id: Stage.DROPPED_NOT_FUSED for c in pool}
    ranked = sorted(
        (c for c in live if c.fragment_id in fused),
        key=lambda c: (-fused[c.fragment_id], c.fragment_id),
    )[: cfg.cap]
    if reranked:
        ranked.sort(key=lambda c: (-(c.rerank_score or 0.0), -fused[c.fragment_id], c.fragment_id))
    stage.update((c.fragment_id, Stage.DROPPED_TOP_K) for c in ranked[cfg.rrf_top_k :])
    notes, over = context_cap(ranked[: cfg.rrf_top_k], cfg.rrf_context_chars)
    stage.update((c.fragment_id, Stage.DROPPED_CONTEXT_CAP) for c in over)
    stage.update((c.fragment_id, Stage.KEPT_TOP_K) for c in notes)
    return notes, stage, fused


def two_scale_verdict(
    notes: Sequence[Candidate], fused: dict[int, float], cfg: PipelineConfig, reranked: bool
) -> tuple[GateVerdict, float]:
    """The two-scale gate: which threshold applies depends on whether reranking ran."""
    if reranked:
        signal = max((c.rerank_score or 0.0 for c in notes), default=0.0)
        ok = signal >= cfg.two_scale_rerank
    else:
        signal = max((fused.get(c.fragment_id, 0.0) for c in notes), default=0.0)
        ok = signal >= cfg.two_scale_fusion
    return GateVerdict(max_score(notes), lecture_count(notes), ok, ok, not ok), signal


def rrf_replay(trace: RetrievalTrace, cfg: PipelineConfig) -> RetrievalResult:
    """`replay` for the `rrf_hybrid` arm: one round, fusion cut, the configured gate."""
    reranked = trace.reranker_id != "none"
    notes, stage, fused = rrf_cut(lane_view(trace.candidates, cfg.pin_named_verses), cfg, reranked)
    if cfg.gate == "two_scale":
        gate, _ = two_scale_verdict(notes, fused, cfg, reranked)
    else:
        gate = verdict(notes, cfg, question_language(trace.question))
    decision = gate.retrieval_decision
    return RetrievalResult(
        tuple(notes), decision, (RoundResult(1, tuple(notes), stage, gate),), trace
    )


def gate_signal(result: RetrievalResult, cfg: PipelineConfig) -> float:
    """The value the configured gate thresholds: max cosine, or the two-scale signal."""
    if cfg.arm != "rrf_hybrid" or cfg.gate != "two_scale":
        return float(result.max_score)
    reranked = result.trace.reranker_id != "none"
    pool = lane_view(result.trace.candidates, cfg.pin_named_verses)
    fused = fusion_scores([c for c in pool if c.round == 1], cfg)
    return two_scale_verdict(result.notes, fused, cfg, reranked)[1]
