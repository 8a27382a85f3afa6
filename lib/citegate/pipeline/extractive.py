"""The extractive composer: an answer made of the notes' own sentences, faithful by construction.

The sentences of the first `max_notes` notes are ranked by the embedder against the question
(the question as a query, each sentence as a passage: one batched call), the best `sentences`
are kept (at most `per_note` from one note, so the answer draws on several sources when it can),
and they are written back in the notes' order, each followed by its note's marker `[n]`. Nothing
is generated, so no claim can say what its note does not; the claim check still runs on it, as
on every answer. A sentence needs `MIN_WORDS` words: a verse number or a heading is no claim;
a paragraph break ends a sentence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from citegate.core.types import CallStatus, Candidate
from citegate.corpus.chunking import split_sentences
from citegate.models.embed import Embedder
from citegate.pipeline.compose import Composed

MIN_WORDS = 4
MAX_NOTES = 5  # the notes shown to every composer (the outline planner's too)
# A blank line ends a sentence: a verse's translation and its IAST text are two paragraphs.
_PARAGRAPH = re.compile(r"\n\s*\n")


@dataclass(frozen=True)
class Sentence:
    """One candidate sentence: its note's number (1-based), its place in the note, its text."""

    note: int
    position: int
    text: str


def note_sentences(notes: Sequence[Candidate], max_notes: int = MAX_NOTES) -> list[Sentence]:
    """Every sentence of the first `max_notes` notes with at least `MIN_WORDS` words."""
    out = []
    for n, note in enumerate(notes[:max_notes], 1):
        paragraphs = (" ".join(p.split()) for p in _PARAGRAPH.split(note.text))
        found = [s for p in paragraphs for s in split_sentences(p)]
        out += [Sentence(n, i, t) for i, t in enumerate(found) if len(t.split()) >= MIN_WORDS]
    return out


def pick(scores: np.ndarray, sentences: Sequence[Sentence], k: int, per_note: int) -> list[int]:
    """Indices of the `k` best-scoring sentences (ties by note order), at most `per_note` from
    one note, returned in the notes' order."""
    taken: list[int] = []
    per: dict[int, int] = {}
    for i in sorted(range(len(sentences)), key=lambda j: (-float(scores[j]), j)):
        note = sentences[i].note
        if per.get(note, 0) < per_note:
            taken.append(i)
            per[note] = per.get(note, 0) + 1
        if len(taken) == k:
            break
    return sorted(taken, key=lambda j: (sentences[j].note, sentences[j].position))


def extract(
    embedder: Embedder,
    question: str,
    notes: Sequence[Candidate],
    *,
    sentences: int = 3,
    max_notes: int = MAX_NOTES,
    per_note: int = 2,
) -> Composed:
    """The extractive answer: one line per chosen sentence, `<sentence> [n]`. `offered` maps
    every shown note's number to its full text. No notes, or none with a sentence, is an
    empty answer with status `no sources` (the turn then has nothing to say from the corpus)."""
    shown = list(notes[:max_notes])
    offered = {str(n): c.text for n, c in enumerate(shown, 1)}
    found = note_sentences(shown, max_notes)
    if not found:
        return Composed("", offered, CallStatus.NO_SOURCES.value)
    query = embedder.embed_queries([question])[0]
    scores = embedder.embed_passages([s.text for s in found]) @ query
    chosen = pick(np.asarray(scores), found, sentences, per_note)
    text = "\n".join(f"{found[i].text} [{found[i].note}]" for i in chosen)
    return Composed(text, offered, CallStatus.OK.value)


__all__ = ["MAX_NOTES", "MIN_WORDS", "Sentence", "extract", "note_sentences", "pick"]
