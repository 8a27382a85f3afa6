"""The coverage gate: plain comparisons on `max_score` = the max COSINE of the ranked set.

Never the rerank score: rerank scores are relative to one question and carry no absolute meaning.
The verdict type (`GateVerdict`, with its `GateDecision`) lives in `citegate.core.types`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from citegate.core.config import PipelineConfig
from citegate.core.types import GateVerdict


class Scored(Protocol):
    """A ranked note: its cosine and its kind."""

    score: float
    kind: str


def max_score(notes: Sequence[Scored]) -> float:
    """Max cosine of the ranked set (0.0 when empty)."""
    return max((float(n.score) for n in notes), default=0.0)


def lecture_count(notes: Sequence[Scored]) -> int:
    """How many notes are lecture (transcript) chunks."""
    return sum(1 for n in notes if n.kind == "track_transcript")


def is_coverage_sufficient(notes: Sequence[Scored], cfg: PipelineConfig) -> bool:
    """max ≥ sufficient_score and at least `sufficient_lectures` lecture chunks."""
    return (
        max_score(notes) >= cfg.sufficient_score and lecture_count(notes) >= cfg.sufficient_lectures
    )


def is_coverage_good_enough(notes: Sequence[Scored], cfg: PipelineConfig) -> bool:
    """Sufficient, or max ≥ good_enough_score: stop fanning out."""
    return is_coverage_sufficient(notes, cfg) or max_score(notes) >= cfg.good_enough_score


def should_bail_out(notes: Sequence[Scored], cfg: PipelineConfig) -> bool:
    """max < bail_out_score: the corpus does not cover the question."""
    return max_score(notes) < cfg.bail_out_score


def verdict(notes: Sequence[Scored], cfg: PipelineConfig) -> GateVerdict:
    """Evaluate every gate function on one round's notes."""
    return GateVerdict(
        max_score(notes),
        lecture_count(notes),
        is_coverage_sufficient(notes, cfg),
        is_coverage_good_enough(notes, cfg),
        should_bail_out(notes, cfg),
    )


__all__ = [
    "GateVerdict",
    "is_coverage_good_enough",
    "is_coverage_sufficient",
    "lecture_count",
    "max_score",
    "should_bail_out",
    "verdict",
]
