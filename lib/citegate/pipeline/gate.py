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


def verdict(
    notes: Sequence[Scored], cfg: PipelineConfig, language: str | None = None
) -> GateVerdict:
    """The gate's reading of one round's notes: sufficient (max ≥ sufficient_score and at least
    `sufficient_lectures` lecture chunks), good enough (sufficient, or max ≥ good_enough_score:
    stop fanning out) and bail out (max < bail_out_score: the corpus does not cover the
    question), with the thresholds of `language` (None, or a language without an entry in
    `cfg.language_thresholds`: the global ones)."""
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
    "lecture_count",
    "max_score",
    "question_language",
    "verdict",
]
