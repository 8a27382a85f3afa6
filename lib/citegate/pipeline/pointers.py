"""Pointers: the passages an honest "I don't know" shows, so the reader can look for themselves.

When the corpus cannot support an answer and no fallback model may run (none passed notebook 04's
bar, or the fallback is off), the turn says "I don't know" and lists the nearest of its final
notes as pointers: "the sources touch on this: BG 2.20, BG 2.19". A pointer is never numbered
like an answer's citation and never quoted; it is shown only when its cosine to the question
reaches `PipelineConfig.fallback_admission`, the floor notebook 08 certifies to a precision in
the embedder's own scale (a pointer is the passage the question is about at least that often).
The probes of a fallback answer are admitted at the same floor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from citegate.core.types import Candidate
from citegate.pipeline.render import where

MAX_POINTERS = 3
POINTER_LEAD = {
    "en": "The sources touch on this (pointers to read, not an answer): {where}.",
    "ru": "Об этом говорится в источниках (где почитать, это не ответ): {where}.",
    "hi": "स्रोतों में इसका उल्लेख है (पढ़ने के लिए संकेत, उत्तर नहीं): {where}।",
}


def nearest(
    notes: Sequence[Candidate], floor: float, k: int = MAX_POINTERS
) -> tuple[Candidate, ...]:
    """Up to `k` of `notes` with cosine ≥ `floor`, in the notes' (the reranker's) order, one per
    address shown."""
    seen: set[str] = set()
    out: list[Candidate] = []
    for c in notes:
        label = where(c)
        if c.score >= floor and label not in seen:
            seen.add(label)
            out.append(c)
        if len(out) == k:
            break
    return tuple(out)


def pointer_line(
    pointers: Sequence[Candidate], lang: str, leads: Mapping[str, str] = POINTER_LEAD
) -> str:
    """The sentence listing the pointers in the user's language ("" when there are none)."""
    if not pointers:
        return ""
    lead = leads.get(lang, leads["en"])
    return lead.format(where=", ".join(where(c) for c in pointers))


__all__ = ["MAX_POINTERS", "POINTER_LEAD", "nearest", "pointer_line"]
