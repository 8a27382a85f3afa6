"""The coverage gate: plain comparisons on `max_score` = the max COSINE of the ranked set.

Never the rerank score: rerank scores are relative to one question and carry no absolute meaning.
The thresholds are the config's, or its `language_thresholds` entry for the question's language
(`question_language`: cosine is not comparable across languages, e.g. Russian questions against
English translations score lower). The verdict type (`GateVerdict`, with its `GateDecision`) lives
in `citegate.core.types`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from citegate.core.config import PipelineConfig
from citegate.core.text import script_language
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


def question_language(question: str) -> str:
    """The language whose thresholds the gate applies to a question: `script_language` (en, hi, ru,
    the `citegate.core.config.LANGUAGES`), read from the question text alone, so a cached trace
    (which stores its question) needs nothing new."""
    return script_language(question)


def is_coverage_sufficient(
    notes: Sequence[Scored], cfg: PipelineConfig, language: str | None = None
) -> bool:
    """max ≥ sufficient_score (of `language`) and at least `sufficient_lectures` lecture chunks."""
    return (
        max_score(notes) >= cfg.thresholds(language)["sufficient_score"]
        and lecture_count(notes) >= cfg.sufficient_lectures
    )


def is_coverage_good_enough(
    notes: Sequence[Scored], cfg: PipelineConfig, language: str | None = None
) -> bool:
    """Sufficient, or max ≥ good_enough_score (of `language`): stop fanning out."""
    return (
        is_coverage_sufficient(notes, cfg, language)
        or max_score(notes) >= cfg.thresholds(language)["good_enough_score"]
    )


def should_bail_out(
    notes: Sequence[Scored], cfg: PipelineConfig, language: str | None = None
) -> bool:
    """max < bail_out_score (of `language`): the corpus does not cover the question."""
    return max_score(notes) < cfg.thresholds(language)["bail_out_score"]


def verdict(
    notes: Sequence[Scored], cfg: PipelineConfig, language: str | None = None
) -> GateVerdict:
    """Evaluate every gate function on one round's notes, with the thresholds of `language`
    (None, or a language without an entry in `cfg.language_thresholds`: the global ones)."""
    top, lectures = max_score(notes), lecture_count(notes)
    t = cfg.thresholds(language)
    sufficient = top >= t["sufficient_score"] and lectures >= cfg.sufficient_lectures
    return GateVerdict(
        top,
        lectures,
        sufficient,
        sufficient or top >= t["good_enough_score"],
        top < t["bail_out_score"],
    )


__all__ = [
    "GateVerdict",
    "is_coverage_good_enough",
    "is_coverage_sufficient",
    "lecture_count",
    "max_score",
    "question_language",
    "should_bail_out",
    "verdict",
]
